"""Our draft-mode loop asks no more of either model than mlx-lm's stock speculative loop does.

Speed on the CPU backend cannot separate the two loops (bench/draft_vs_mlx_lm.py: parity within noise),
so the work itself is checked here, exactly: token rows fed to the target and to the draft.
"""

import mlx.core as mx
import pytest

from app.engine import Engine
from tests.fixtures.model_work import counting

from .helpers import greedy, mlx_lm_speculative, prompt_ids


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
