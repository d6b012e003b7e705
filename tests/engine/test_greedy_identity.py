"""Greedy speculative decoding must reproduce plain decoding token for token."""

import os
import subprocess
import sys

import pytest

from specchat.engine import Engine, RoundResult, TextChunk, speculative

from .helpers import greedy, mlx_lm_greedy, prompt_ids

SLOW = pytest.mark.slow
PAIRS = [  # the fast subset keeps the dense pair; the hybrid models' rollback is covered there by test_rollback.py
    ("dense_target", "dense_draft_partial"),
    pytest.param("dense_target", "hybrid_draft_partial", marks=SLOW),
    pytest.param("hybrid_target", "dense_draft_partial", marks=SLOW),
    pytest.param("hybrid_target", "hybrid_draft_partial", marks=SLOW),
]


@pytest.mark.slow
@pytest.mark.parametrize("target_name,draft_name", PAIRS)
def test_draft_mode_equals_baseline_and_mlx_lm_for_every_k(request, target_name, draft_name):
    engine = Engine.load(request.getfixturevalue(target_name), request.getfixturevalue(draft_name))
    ids = prompt_ids(engine)
    baseline = engine.generate(ids, greedy(n=40))
    assert baseline.tokens == mlx_lm_greedy(engine, ids, 40)
    rates = []
    for k in range(1, 9):
        result = engine.generate(ids, greedy("draft", k, n=40))
        assert result.tokens == baseline.tokens, f"K={k} differs from baseline"
        rates.append(result.stats.acceptance_rate)
    if target_name.split("_")[0] == draft_name.split("_")[0]:
        # A noisy copy of the target must exercise both the accept and the rollback paths.
        # (Across architectures the random draft is unrelated, so almost all is rejected.)
        assert any(0.2 < r < 1 for r in rates), rates


def test_unrelated_draft_is_rejected_but_output_is_unchanged(dense_target, dense_draft_unrelated):
    engine = Engine.load(dense_target, dense_draft_unrelated)
    ids = prompt_ids(engine)
    baseline = engine.generate(ids, greedy(n=32))
    result = engine.generate(ids, greedy("draft", 4, n=32))
    assert result.tokens == baseline.tokens
    assert result.stats.acceptance_rate < 0.3


def test_self_draft_accepts_everything(hybrid_target):
    engine = Engine.load(hybrid_target, hybrid_target)
    ids = prompt_ids(engine)
    result = engine.generate(ids, greedy("draft", 4, n=32))
    assert result.tokens == engine.generate(ids, greedy(n=32)).tokens
    assert result.stats.acceptance_rate == 1.0
    assert result.stats.mean_accepted_per_round == pytest.approx(4.0, abs=0.5)


@pytest.mark.slow
@pytest.mark.parametrize("first", [True, pytest.param(False, marks=SLOW)])
def test_both_verify_dispatch_orders_give_baseline_output_and_round_timings(
    monkeypatch, hybrid_target, hybrid_draft_partial, first
):
    # The GPU order (verify queued before the drafts are awaited) runs here on the CPU too.
    monkeypatch.setattr(speculative, "QUEUE_VERIFY_FIRST", first)
    engine = Engine.load(hybrid_target, hybrid_draft_partial)
    ids = prompt_ids(engine)
    baseline = engine.generate(ids, greedy(n=32)).tokens
    for k in (1, 3, 6):
        events = list(engine.stream(ids, greedy("draft", k, n=32)))
        tokens = [t for e in events if isinstance(e, TextChunk) for t in e.token_ids]
        rounds = [e for e in events if isinstance(e, RoundResult)]
        assert tokens == baseline, f"K={k}, verify queued first={first}"
        assert all(r.draft_s > 0 and r.verify_s > 0 for r in rounds)


def _tf32_seen_by_the_engine(env: dict[str, str]) -> str:
    """MLX_ENABLE_TF32 as a fresh process sees it once specchat.engine is imported."""
    script = "import os, specchat.engine; print(os.environ['MLX_ENABLE_TF32'])"
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def test_the_engine_asks_mlx_for_full_float32_matmuls_unless_the_user_chose():
    base = {k: v for k, v in os.environ.items() if k != "MLX_ENABLE_TF32"}
    assert _tf32_seen_by_the_engine(base) == "0"  # TF32 (MLX's CUDA default) rounds a verify pass unlike a step
    assert _tf32_seen_by_the_engine({**base, "MLX_ENABLE_TF32": "1"}) == "1"
