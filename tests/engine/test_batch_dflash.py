"""DFlash rows in a batch: each row drafts from its own context cache, fed the target's layers by the batch's
verify pass; every row gives its solo output, and a DFlash lead moves in with its drafter's context."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import mlx.core as mx
import numpy as np
import pytest

from specchat.engine import Engine, GenerationConfig
from specchat.engine import dflash as dflash_module
from specchat.engine.batch.decoder import BatchDecoder, batch_refusal
from specchat.engine.dflash import DFlashDrafter
from specchat.engine.events import PrefillProgress, TextChunk

from .batch_helpers import assert_samples_follow, lead_then_joiner, run_all, solo_tokens, verdicts
from .helpers import greedy, prompt_ids

TEXTS = ["Hello there, how are you", "Write a function", "Once upon a time", "def fib(n):", "The quick brown fox"]


class RowsOracle:
    """Every DFlash drafter's block rows become the target's own greedy continuation of the sequence it drafts
    for (one of `fulls`), except at absolute positions where `wrong(position)` holds: drafts that are partly
    accepted, the same for a row alone and in a batch."""

    def __init__(self, monkeypatch, engine: Engine, fulls: list[list[int]], wrong=lambda position: False):
        self.fulls, self.wrong, self.seq = fulls, wrong, []
        self.vocab = engine.drafters["dflash"]._vocab()
        original = DFlashDrafter.propose

        def propose(drafter, request):
            self.seq = request.seq
            return original(drafter, request)

        monkeypatch.setattr(DFlashDrafter, "propose", propose)
        monkeypatch.setattr(dflash_module, "project_logits", self.logits)

    def full(self) -> list[int]:
        return next(f for f in self.fulls if f[: len(self.seq)] == self.seq)

    def logits(self, model, hidden: mx.array) -> mx.array:
        full, rows = self.full(), np.full((hidden.shape[0], self.vocab), -30.0, dtype=np.float32)
        for i in range(hidden.shape[0]):
            position = len(self.seq) + i
            right = full[position] if position < len(full) else 0
            rows[i, (right + 1) % self.vocab if self.wrong(position) else right] = 30.0
        return mx.array(rows)


def mixed_configs() -> list[GenerationConfig]:
    return [
        greedy("dflash", 3, n=30),
        replace(greedy("dflash", 2, n=24), num_draft_tokens="auto"),
        greedy("baseline", n=20),
        replace(greedy("lookup", 3, n=28), num_draft_tokens="auto"),
        greedy("dflash", 6, n=16),
    ]


def run_mixed(engine: Engine, prompts: list[list[int]], cfgs: list[GenerationConfig]):
    """Five requests, three at step 0 and two at step 4, in one batch; their runs, in order. The engine's own
    runner never reads: every layer a DFlash row drafts from came from the batch's passes (none replayed)."""
    decoder = BatchDecoder(engine, max_batch=8)
    decoder.solo_lead = False
    with no_replay(engine):
        added = run_all(decoder, {0: list(zip(prompts[:3], cfgs[:3])), 4: list(zip(prompts[3:], cfgs[3:]))})
    return added[0] + added[4]


@contextmanager
def no_replay(engine: Engine) -> Iterator[None]:
    """Fails the test if the engine's own runner reads (a DFlash row whose layers the batch did not bring)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine.runner, "prepare", lambda seq: pytest.fail("a DFlash row's layers were replayed"))
        yield


@pytest.mark.slow
@pytest.mark.parametrize("which", ["dense_engine", "hybrid_engine"])
def test_dflash_rows_joining_and_leaving_give_their_solo_output(request, which):
    engine = request.getfixturevalue(which)
    cfgs, prompts = mixed_configs(), [prompt_ids(engine, t) for t in TEXTS]
    solo = [solo_tokens(engine, p, c) for p, c in zip(prompts, cfgs)]
    engine.reset()
    got = run_mixed(engine, prompts, cfgs)
    for i, (g, expected) in enumerate(zip(got, solo)):
        assert g.tokens == expected, f"request {i} ({cfgs[i].mode}) differs from its solo output"
    assert got[0].end.stats.drafted > 0 and got[0].end.stats.batch_rows_max >= 2


@pytest.mark.parametrize("which", ["dense_engine", "hybrid_engine"])
def test_dflash_rows_draft_in_the_batch_what_they_draft_alone(monkeypatch, request, which):
    engine = request.getfixturevalue(which)
    cfgs, prompts = mixed_configs(), [prompt_ids(engine, t) for t in TEXTS]
    fulls = [p + solo_tokens(engine, p, greedy(n=c.max_tokens)) for p, c in zip(prompts, cfgs)]
    RowsOracle(monkeypatch, engine, fulls, wrong=lambda position: position % 5 == 0)
    alone = [list(engine.stream(p, c)) for p, c in zip(prompts, cfgs)]
    engine.reset()
    got = run_mixed(engine, prompts, cfgs)
    for i, (g, solo) in enumerate(zip(got, alone)):
        assert g.tokens == list(solo[-1].tokens), f"request {i} ({cfgs[i].mode}) differs from its solo output"
    for i in (0, 4):  # fixed K: each round drafts what it drafts alone, and the target keeps the same prefix
        stats = got[i].end.stats
        assert 0 < stats.accepted < stats.drafted and stats.batch_rows_max >= 2
        assert verdicts(got[i].events) == verdicts(alone[i])


def test_a_dflash_lead_moves_into_the_batch_with_its_context(monkeypatch, dense_engine):
    engine = dense_engine
    cfg = greedy("dflash", 4, n=36)
    lead_prompt, other_prompt = prompt_ids(engine, TEXTS[0]), prompt_ids(engine, TEXTS[2])
    fulls = [p + solo_tokens(engine, p, greedy(n=36)) for p in (lead_prompt, other_prompt)]
    RowsOracle(monkeypatch, engine, fulls, wrong=lambda position: position % 7 == 0)
    expected = [solo_tokens(engine, p, cfg) for p in (lead_prompt, other_prompt)]
    lead, other = lead_then_joiner(engine, (lead_prompt, other_prompt), cfg, lead_steps=4, joining=no_replay(engine))
    assert [lead.tokens, other.tokens] == expected
    first_text = next(i for i, e in enumerate(lead.events) if isinstance(e, TextChunk))
    reread = [e.total for e in lead.events[first_text:] if isinstance(e, PrefillProgress) and e.model == "target"]
    assert all(total < len(lead_prompt) for total in reread)  # the move read none of what the target held
    assert lead.end.stats.batch_rows_max == 2 and verdicts(lead.events)[-1][0] > 0


def test_dflash_rows_are_admitted(dense_engine):
    assert batch_refusal(dense_engine, greedy("dflash", 3)) is None
    assert batch_refusal(dense_engine, replace(greedy("dflash", 3), num_draft_tokens="auto")) is None


@pytest.mark.slow
def test_sampled_dflash_rows_keep_the_target_distribution(monkeypatch, dense_engine):
    """E[log p(X)] equals -H(p) when X ~ p; 300 DFlash rows with their own seeds, drafts from a random block."""
    engine = dense_engine
    ids = prompt_ids(engine)
    p = np.array(mx.softmax(engine.target.model(mx.array(ids)[None])[0, -1].astype(mx.float32)))
    firsts: list[mx.array] = []
    original = DFlashDrafter.propose

    def propose(drafter, request):
        draft = original(drafter, request)
        if draft.probs is not None and draft.probs.shape[0]:
            firsts.append(draft.probs[0])
        return draft

    monkeypatch.setattr(DFlashDrafter, "propose", propose)
    runs = 300
    cfg = GenerationConfig(mode="dflash", num_draft_tokens=2, max_tokens=1, temperature=1.0)
    engine.generate(ids, cfg)
    q = np.array(firsts[0].astype(mx.float32))  # the block's first draft distribution for the first token
    decoder = BatchDecoder(engine, max_batch=runs)
    decoder.solo_lead = False
    with no_replay(engine):
        added = run_all(decoder, {0: [(ids, replace(cfg, seed=s)) for s in range(runs)]})
    assert_samples_follow([g.tokens[0] for g in added[0]], p, q)
    assert sum(g.end.stats.drafted for g in added[0]) == runs  # every row drafted (K cut to its one token), verified
