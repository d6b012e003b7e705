"""Our draft-mode loop asks no more of either model than mlx-lm's stock speculative loop does.

Speed on the CPU backend cannot separate the two loops (bench/draft_vs_mlx_lm.py: parity within noise),
so the work itself is checked here, exactly: token rows fed to the target and to the draft.
"""

import mlx.core as mx
import pytest

from specchat.engine import Engine, runner
from specchat.engine.runner import common_prefix_len
from tests.fixtures.model_work import counting

from .helpers import PROMPT, greedy, mlx_lm_speculative, prompt_ids


@pytest.mark.parametrize("k", [1, 2, 3, 4, 6])
def test_draft_mode_feeds_each_model_no_more_rows_than_mlx_lm(dense_target, dense_draft_partial, k):
    engine = Engine.load(dense_target, dense_draft_partial)
    ids = prompt_ids(engine)
    with counting(engine.target.model, engine.draft.model) as (their_target, their_draft):
        theirs = mlx_lm_speculative(engine, ids, k, 40)
    with counting(engine.target.model, engine.draft.model) as (our_target, our_draft):
        ours = engine.generate(ids, greedy("draft", k, n=40))
    assert ours.tokens == theirs
    assert 0 < ours.stats.acceptance_rate < 1  # both paths: full and partial accepts
    assert our_target.rows <= their_target.rows, (our_target, their_target)
    assert our_draft.rows <= their_draft.rows, (our_draft, their_draft)
    assert our_target.calls <= their_target.calls
    assert our_draft.calls <= their_draft.calls


def test_counting_sees_rows_fed_and_restores_the_model(dense_target):
    engine = Engine.load(dense_target)
    model = engine.target.model
    with counting(model) as (work,):
        model(mx.array([[1, 2, 3]]))
        model(mx.array([[4]]))
    assert (work.calls, work.rows) == (2, 4)
    assert type(model).__name__ == "Model"


@pytest.mark.parametrize("mode", ["baseline", "draft"])
def test_rounds_compare_their_own_tokens_not_the_whole_conversation(
    monkeypatch, dense_target, dense_draft_partial, mode
):
    # Each runner checks its cache against the sequence once per generation; a round after that
    # compares only the tokens it fed (mlx-lm's loop keeps counts; a long chat must not cost more).
    compared = []

    def recording(a, b):
        compared.append(min(len(a), len(b)))
        return common_prefix_len(a, b)

    monkeypatch.setattr(runner, "common_prefix_len", recording)
    engine = Engine.load(dense_target, dense_draft_partial)
    ids = prompt_ids(engine, PROMPT * 12)
    result = engine.generate(ids, greedy(mode, 4, n=40))
    assert len(ids) > 100 and len(result.tokens) == 40
    assert 0 < result.stats.acceptance_rate < 1 or mode == "baseline"
    long = [n for n in compared if n > 8]
    assert len(long) <= (2 if mode == "draft" else 1), long
