"""MTP self-speculation: detection, identity with plain decoding, acceptance, exact head rollback."""

import json
import subprocess
import sys

import mlx.core as mx
import pytest
from mlx_lm.utils import load as mlx_load

from specchat.cli import build_parser, generation_config
from specchat.engine import ConfigError, Engine, EngineError, GenerationConfig, runner
from specchat.engine.drafters import DraftRequest
from specchat.engine.mtp_detect import detect_mtp
from specchat.engine.runner import common_prefix_len
from specchat.engine.sampling import Sampler
from tests.fixtures.tiny_models import _write_json

from .helpers import PROMPT as PROMPT_TEXT
from .helpers import greedy, mlx_lm_greedy, prompt_ids

HEADS = ["mtp_agree", "mtp_partial", "mtp_random_embedded"]
# Every head in the full suite; the fast subset (-m "not slow") keeps the partial one (accepts and rejects).
HEADS_FAST_PARTIAL = [pytest.param(name, marks=() if name == "mtp_partial" else pytest.mark.slow) for name in HEADS]


@pytest.fixture(scope="module")
def engines(request):
    """One loaded engine per MTP fixture, shared by this module."""
    return {name: Engine.load(request.getfixturevalue(name)) for name in HEADS}


def plain_greedy(folder, ids, n):
    """mlx-lm's own greedy decoding of a freshly loaded model (no MTP attached)."""
    model, tokenizer = mlx_load(str(folder))

    class Plain:
        target = type("T", (), {"model": model})

    Plain.tokenizer = tokenizer
    return mlx_lm_greedy(Plain, ids, n)


@pytest.mark.parametrize("name", HEADS_FAST_PARTIAL)
def test_mtp_equals_baseline_and_plain_mlx_lm_at_every_depth(request, engines, name):
    engine = engines[name]
    ids = prompt_ids(engine)
    baseline = engine.generate(ids, greedy(n=40))
    assert baseline.tokens == plain_greedy(request.getfixturevalue(name), ids, 40)
    for depth in range(1, 5):
        result = engine.generate(ids, greedy("mtp", depth, n=40))
        assert result.tokens == baseline.tokens, f"depth {depth} differs from baseline"
        assert result.stats.mode == "mtp" and result.stats.num_draft_tokens == depth
    auto = engine.generate(ids, greedy("mtp", "auto", n=40))
    assert auto.tokens == baseline.tokens and auto.stats.auto_k and auto.stats.num_draft_tokens == 4


def test_agreeing_head_is_accepted(engines):
    engine = engines["mtp_agree"]
    ids = prompt_ids(engine)
    for depth in (1, 4):
        result = engine.generate(ids, greedy("mtp", depth, n=40))
        assert result.stats.acceptance_rate > 0.9
        assert result.stats.mean_accepted_per_round > 0.9 * depth


def test_agreeing_head_is_accepted_when_sampling(engines):
    engine = engines["mtp_agree"]
    cfg = GenerationConfig(mode="mtp", num_draft_tokens=3, max_tokens=40, temperature=1.0, seed=5)
    result = engine.generate(prompt_ids(engine), cfg)
    assert result.stats.acceptance_rate > 0.9
    assert engine.generate(prompt_ids(engine), cfg).tokens == result.tokens  # same seed


def test_random_head_is_rejected_but_output_is_unchanged(engines):
    engine = engines["mtp_random_embedded"]
    ids = prompt_ids(engine)
    events = list(engine.stream(ids, greedy("mtp", 4, n=24)))
    rounds = [e for e in events if type(e).__name__ == "RoundResult"]
    assert events[-1].stats.acceptance_rate < 0.2
    assert any(r.rejection is not None for r in rounds)
    assert list(events[-1].tokens) == engine.generate(ids, greedy(n=24)).tokens


def test_partial_head_exercises_accept_and_reject(engines):
    engine = engines["mtp_partial"]
    rate = engine.generate(prompt_ids(engine), greedy("mtp", 3, n=40)).stats.acceptance_rate
    assert 0.05 < rate < 0.95


def assert_head_equals_a_clean_pass(engine):
    """The head's KV cache equals feeding it, in one pass, the target's hidden states of what it has seen."""
    drafter = engine.drafters["mtp"]
    m, seen = drafter.entries, drafter.seen
    assert len(seen) == m + 1
    model = engine.target.model
    _, hidden = model(mx.array(seen[:m])[None], cache=None, return_hidden=True)
    fresh = model.make_mtp_cache()
    model.mtp_forward(hidden, mx.array(seen[1 : m + 1])[None], mtp_cache=fresh)
    assert fresh[0].offset == m
    for name in ("keys", "values"):
        got, want = (getattr(c, name)[..., :m, :] for c in (drafter.cache[0], fresh[0]))
        assert mx.array_equal(got, want).item(), name


def test_head_cache_equals_feeding_only_the_kept_positions(engines):
    """After rounds of drafting and rollback, the head's KV cache is what one clean pass gives."""
    engine = engines["mtp_partial"]
    ids = prompt_ids(engine)
    result = engine.generate(ids, greedy("mtp", 4, n=30, mtp_history=True))
    assert 0 < result.stats.acceptance_rate < 1
    drafter = engine.drafters["mtp"]
    assert drafter.entries > len(ids)
    assert drafter.seen == (ids + result.tokens)[: drafter.entries + 1]
    assert_head_equals_a_clean_pass(engine)


def test_with_history_a_round_compares_only_its_own_tokens(monkeypatch, engines):
    # The head checks what it has seen against the sequence once per generation, then only appends:
    # a long conversation must not make every round cost O(its length).
    engine = engines["mtp_partial"]
    compared = []

    def recording(a, b):
        if a is engine.drafters["mtp"].seen:  # the head's comparisons, not the target runner's
            compared.append(min(len(a), len(b)))
        return common_prefix_len(a, b)

    ids = prompt_ids(engine, PROMPT_TEXT * 12)
    first = engine.generate(ids, greedy("mtp", 3, n=8, mtp_history=True)).tokens
    monkeypatch.setattr(runner, "common_prefix_len", recording)
    result = engine.generate(ids + first, greedy("mtp", 3, n=30, mtp_history=True))
    assert len(ids) > 100 and 0 < result.stats.acceptance_rate < 1 and result.stats.rounds > 5
    assert len([n for n in compared if n > 8]) <= 1, compared
    assert_head_equals_a_clean_pass(engine)


def test_positions_decoded_without_the_head_are_replayed_for_it(mtp_partial, engines):
    engine = engines["mtp_partial"]
    ids = prompt_ids(engine)
    first = engine.generate(ids, greedy("mtp", 2, n=12, mtp_history=True)).tokens
    more = engine.generate(ids + first, greedy(n=12)).tokens  # baseline: no hidden states kept
    follow = ids + first + more
    result = engine.generate(follow, greedy("mtp", 3, n=12, mtp_history=True))
    assert result.stats.cached_prompt_tokens >= len(ids + first)
    assert engine.drafters["mtp"].entries > len(ids + first + more)
    assert_head_equals_a_clean_pass(engine)
    assert result.tokens == Engine.load(mtp_partial).generate(follow, greedy(n=12)).tokens


def test_cached_prompt_and_mode_switches_match_a_fresh_engine(mtp_partial, engines):
    engine = engines["mtp_partial"]
    ids = prompt_ids(engine)
    first = engine.generate(ids, greedy("mtp", 2, n=16, mtp_history=True))
    engine.generate(ids[:3], greedy(n=4))  # rewinds the target below what the head consumed
    follow = ids + first.tokens + ids[:5]
    again = engine.generate(follow, greedy("mtp", 3, n=16, mtp_history=True))
    assert again.stats.cached_prompt_tokens > 0
    assert again.tokens == Engine.load(mtp_partial).generate(follow, greedy(n=16)).tokens


def test_mtp_on_a_model_without_head_names_what_was_looked_for(hybrid_target):
    engine = Engine.load(hybrid_target)
    reason = engine.available_modes()["mtp"]
    assert "mtp_num_hidden_layers" in reason and "num_nextn_predict_layers" in reason
    with pytest.raises(EngineError, match="mode 'mtp' is not available: no MTP head"):
        engine.generate(prompt_ids(engine), greedy("mtp", 2, n=4))
    with pytest.raises(ConfigError):
        engine._drafter_for(greedy("mtp", 2, n=4))


def test_detection(mtp_agree, mtp_partial, mtp_random_embedded, hybrid_target):
    assert detect_mtp(mtp_agree).source == "sidecar" and "mtp.safetensors" in detect_mtp(mtp_agree).reason
    assert detect_mtp(mtp_partial).source == "sidecar" and "optiq/mtp.safetensors" in detect_mtp(mtp_partial).reason
    found = detect_mtp(mtp_random_embedded)
    assert found.available and found.source == "embedded" and found.num_layers == 1
    missing = detect_mtp(hybrid_target)
    assert not missing.available and missing.source is None and "text_config" in missing.reason


def test_detection_reads_the_index_and_names_what_is_missing(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    _write_json(folder / "config.json", {"text_config": {"num_nextn_predict_layers": 2}})
    mx.save_safetensors(str(folder / "model.safetensors"), {"model.embed_tokens.weight": mx.zeros((2, 2))})
    missing = detect_mtp(folder)
    assert not missing.available and missing.num_layers == 2
    assert "optiq/mtp.safetensors" in missing.reason and "model.safetensors" in missing.reason
    _write_json(
        folder / "model.safetensors.index.json",
        {"weight_map": {"model.embed_tokens.weight": "model.safetensors", "mtp.fc.weight": "model-00002.safetensors"}},
    )
    found = detect_mtp(folder)
    assert found.available and found.source == "embedded" and "index" in found.reason
    mx.save_safetensors(str(folder / "mtp.safetensors"), {"other.weight": mx.zeros((2,))})
    empty = detect_mtp(folder)
    assert not empty.available and "holds no mtp.* tensors" in empty.reason
    _write_json(folder / "config.json", {"mtp_num_hidden_layers": 0})
    assert "declares no MTP layers" in detect_mtp(folder).reason
    assert "cannot read" in detect_mtp(tmp_path / "nowhere").reason


@pytest.mark.slow
def test_cli_generate_mode_mtp(mtp_agree, engines):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "specchat",
            "generate",
            "--target",
            str(mtp_agree),
            "--mode",
            "mtp",
            "--draft-tokens",
            "2",
            "--max-tokens",
            "10",
            "--raw",
            "--prompt",
            "def f(x):",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    engine = engines["mtp_agree"]
    expected = engine.generate(engine.tokenizer.encode("def f(x):"), greedy(n=10))
    assert out["tokens"] == expected.tokens
    assert out["stats"]["mode"] == "mtp" and out["stats"]["acceptance_rate"] > 0.9


@pytest.mark.parametrize("name", HEADS)
def test_catch_up_projects_only_the_last_position_with_the_same_numbers(engines, name):
    """The catch-up call skips the vocabulary projection of all but its last row; what it returns and
    what it leaves in the head's cache equal mlx-optiq's own mtp_forward (tied and untied embeddings)."""
    engine = engines[name]
    drafter = engine.drafters["mtp"]
    model = engine.target.model
    seq = prompt_ids(engine)[:7]
    _, hidden = model(mx.array(seq[:-1])[None], cache=None, return_hidden=True)
    want_cache = model.make_mtp_cache()
    want_logits, want_hidden = model.mtp_forward(
        hidden, mx.array(seq[1:])[None], mtp_cache=want_cache, return_hidden=True
    )
    drafter.reset()
    logits, out = drafter._catch_up(hidden[0], seq[1:])
    assert logits.shape == (1, want_logits.shape[-1])
    assert mx.allclose(logits[0], want_logits[0, -1], atol=1e-5).item()
    assert mx.array_equal(out, want_hidden[0]).item()
    assert mx.array_equal(drafter.cache[0].keys[..., :6, :], want_cache[0].keys[..., :6, :]).item()
    drafter.reset()


def test_catch_up_fixtures_cover_tied_and_untied_projections(engines):
    ties = {engines[n].target.model.language_model.args.tie_word_embeddings for n in HEADS}
    assert ties == {True, False}


@pytest.mark.parametrize("name", HEADS_FAST_PARTIAL)
def test_with_history_output_is_baseline_at_every_depth(engines, name):
    engine = engines[name]
    ids = prompt_ids(engine)
    baseline = engine.generate(ids, greedy(n=30)).tokens
    for depth in range(1, 5):
        result = engine.generate(ids, greedy("mtp", depth, n=30, mtp_history=True))
        assert result.tokens == baseline, f"depth {depth} with history differs from baseline"


def test_without_history_drafts_are_mlx_optiqs(mtp_partial, engines):
    """Each head step seeing only itself is exactly how mlx-optiq's engine drafts (its own model copy)."""
    from optiq.runtime.engine import OptiqEngine

    optiq = OptiqEngine(str(mtp_partial))
    engine = engines["mtp_partial"]
    drafter = engine.drafters["mtp"]
    seq = prompt_ids(engine)
    _, hidden = engine.target.model(mx.array(seq[:-1])[None], return_hidden=True)
    drafter.reset()
    drafter.history = False
    drafter.receive_hidden(0, hidden[0])
    ours = drafter.propose(DraftRequest(seq, 4, Sampler(greedy("mtp", 4)))).tokens.tolist()
    theirs, h, token = [], hidden[:, -1:, :], seq[-1]
    for _ in range(4):
        logits, h = optiq._mtp_draft(h, token, [None])
        token = mx.argmax(logits[0, -1]).item()
        theirs.append(token)
    assert ours == theirs
    assert drafter.entries == 0  # the head's own cache was not touched
    drafter.reset()


def test_switching_history_off_and_on_in_a_conversation_matches_a_fresh_engine(mtp_partial, engines):
    engine = engines["mtp_partial"]
    ids = prompt_ids(engine)
    first = engine.generate(ids, greedy("mtp", 2, n=12, mtp_history=True)).tokens
    second = engine.generate(ids + first, greedy("mtp", 3, n=12)).tokens
    follow = ids + first + second
    result = engine.generate(follow, greedy("mtp", 3, n=12, mtp_history=True))
    assert engine.drafters["mtp"].entries > len(follow)
    assert_head_equals_a_clean_pass(engine)
    assert result.tokens == Engine.load(mtp_partial).generate(follow, greedy(n=12)).tokens


def test_cli_mtp_history_flag(tmp_path):
    def cfg(*flags):
        return generation_config(
            build_parser().parse_args(["generate", "--target", str(tmp_path), "--mode", "mtp", "--prompt", "p", *flags])
        )

    assert cfg().mtp_history is False
    assert cfg("--mtp-history").mtp_history is True
