"""Continuous batching with speculation: every row's greedy output equals its solo output."""

from __future__ import annotations

from dataclasses import replace

import mlx.core as mx
import numpy as np
import pytest

from specchat.engine import Engine, GenerationConfig
from specchat.engine.batch.decoder import BatchDecoder, batch_refusal
from specchat.engine.batch.row_cache import RowKVCache
from specchat.engine.events import Finished, PrefillProgress, RoundResult, TextChunk

from .batch_helpers import assert_samples_follow, run_all, solo_tokens, submit
from .helpers import greedy, prompt_ids

PAIRS = [
    ("dense_target", "dense_draft_partial"),
    ("dense_target", "hybrid_draft_partial"),
    ("hybrid_target", "dense_draft_partial"),
    ("hybrid_target", "hybrid_draft_partial"),
]
# The dense pair and the hybrid one; the fast subset (-m "not slow") keeps the dense pair (and
# test_a_prompt_longer_than_a_chunk_is_read_between_rounds batches the hybrid pair).
DENSE_AND_HYBRID = [PAIRS[0], pytest.param(*PAIRS[3], marks=pytest.mark.slow)]
TEXTS = [
    "Hello there, how are you",
    "Write a function",
    "The quick brown fox jumps over the lazy dog and then",
    "Once upon a time",
    "def fib(n):",
    "a",
]


def streamed_text(events) -> str:
    return "".join(e.text for e in events if isinstance(e, TextChunk))


def auto(cfg: GenerationConfig) -> GenerationConfig:
    return replace(cfg, num_draft_tokens="auto")


def mixed_configs(n: int = 32) -> list[GenerationConfig]:
    return [
        greedy("draft", 4, n=n),
        auto(greedy("draft", 3, n=n)),
        auto(greedy("lookup", 4, n=n)),
        greedy("baseline", n=n),
        greedy("draft", 2, n=n),
        greedy("draft", 1, n=n),
    ]


@pytest.mark.parametrize(
    "target_name,draft_name",
    [PAIRS[0]] + [pytest.param(*pair, marks=pytest.mark.slow) for pair in PAIRS[1:]],
)
@pytest.mark.slow
def test_rows_that_join_and_leave_give_their_solo_output(request, target_name, draft_name):
    engine = Engine.load(request.getfixturevalue(target_name), request.getfixturevalue(draft_name))
    prompts = [prompt_ids(engine, t) for t in TEXTS]
    cfgs = mixed_configs()
    solo = [solo_tokens(engine, p, c) for p, c in zip(prompts, cfgs)]
    decoder = BatchDecoder(engine, max_batch=8)
    # three at once, two more while those run, the last when the first ones may have ended
    joins = {0: list(zip(prompts[:3], cfgs[:3])), 3: list(zip(prompts[3:5], cfgs[3:5])), 12: [(prompts[5], cfgs[5])]}
    added = run_all(decoder, joins)
    got = added[0] + added[3] + added[12]
    for i, (g, expected) in enumerate(zip(got, solo)):
        assert g.tokens == expected, f"request {i} ({cfgs[i].mode}) differs from its solo output"
    sizes = [g.end.stats.batch_rows_max for g in got]
    assert max(sizes) >= 5, sizes


def test_a_draft_row_speculates_in_the_batch_and_is_counted(dense_target, dense_draft_partial):
    engine = Engine.load(dense_target, dense_draft_partial)
    decoder = BatchDecoder(engine, max_batch=4)
    prompts = [prompt_ids(engine, t) for t in TEXTS[:3]]
    added = run_all(decoder, {0: [(p, greedy("draft", 3, n=24)) for p in prompts]})
    for got, prompt in zip(added[0], prompts):
        stats = got.end.stats
        assert stats.drafted > 0 and 0 < stats.accepted <= stats.drafted
        assert stats.batch_rows_max == 3 and 1.0 <= stats.batch_rows_mean <= 3.0
        rounds = [e for e in got.events if isinstance(e, RoundResult)]
        assert sum(r.emitted for r in rounds) == len(got.tokens)
        solo = list(engine.stream(prompt, greedy("draft", 3, n=24)))
        assert streamed_text(got.events) == streamed_text(solo)
        assert got.end.text == solo[-1].text


def test_a_prompt_longer_than_a_chunk_is_read_between_rounds(hybrid_target, hybrid_draft_partial):
    engine = Engine.load(hybrid_target, hybrid_draft_partial)
    decoder = BatchDecoder(engine, max_batch=4)
    decoder.prefill_chunk = 8
    short, long = prompt_ids(engine, TEXTS[1]), prompt_ids(engine, " ".join(TEXTS * 3))
    cfg = greedy("draft", 3, n=24)
    first = submit(decoder, short, cfg)
    for _ in range(3):
        decoder.step()
    second = submit(decoder, long, cfg)
    run_all(decoder)
    progress = [e for e in second.events if isinstance(e, PrefillProgress)]
    assert len(progress) >= 2 * ((len(long) - 1) // 8)  # target then draft, chunk by chunk
    assert first.tokens == solo_tokens(engine, short, cfg)
    assert second.tokens == solo_tokens(engine, long, cfg)
    # the first row kept streaming while the second one's prompt was read
    first_chunks = [i for i, e in enumerate(first.events) if isinstance(e, TextChunk)]
    assert len(first_chunks) > 3


def test_cancel_ends_only_that_row(dense_target, dense_draft_partial):
    engine = Engine.load(dense_target, dense_draft_partial)
    decoder = BatchDecoder(engine, max_batch=4)
    prompts = [prompt_ids(engine, t) for t in TEXTS[:3]]
    cfg = greedy("draft", 2, n=40)
    rows = [submit(decoder, p, cfg) for p in prompts]
    for _ in range(4):
        decoder.step()
    rows[1].cancel.set()
    run_all(decoder)
    assert rows[1].end.cancelled and rows[1].end.stats.stop_reason == "cancelled"
    assert len(rows[1].tokens) < len(rows[0].tokens)
    for i in (0, 2):
        assert rows[i].tokens == solo_tokens(engine, prompts[i], cfg)


def test_max_batch_is_the_most_rows_in_a_round(dense_target, dense_draft_partial):
    engine = Engine.load(dense_target, dense_draft_partial)
    decoder = BatchDecoder(engine, max_batch=2)
    prompts = [prompt_ids(engine, t) for t in TEXTS[:4]]
    cfg = greedy("draft", 2, n=12)
    rows = []
    pending = list(prompts)
    while pending or decoder.active:
        while pending and decoder.room > 0:
            rows.append(submit(decoder, pending.pop(0), cfg))
        assert decoder.active <= 2
        decoder.step()
    assert [r.tokens for r in rows] == [solo_tokens(engine, p, cfg) for p in prompts]
    assert max(r.end.stats.batch_rows_max for r in rows) == 2


@pytest.mark.parametrize("target_name,draft_name", DENSE_AND_HYBRID)
def test_an_extra_row_costs_its_caches_only(request, target_name, draft_name):
    engine = Engine.load(request.getfixturevalue(target_name), request.getfixturevalue(draft_name))
    decoder = BatchDecoder(engine, max_batch=4)
    decoder.solo_lead = False  # the first request joins the batch at once
    prompt = prompt_ids(engine, TEXTS[2])
    submit(decoder, prompt, greedy("draft", 2, n=200))
    while not decoder.rows:
        decoder.step()

    def cache_bytes() -> int:
        arrays = [a for c in decoder.target.caches for a in (c.state if isinstance(c, RowKVCache) else c.cache)]
        return sum(a.nbytes for a in arrays if a is not None)  # key/value rows, Gated DeltaNet states

    one = cache_bytes()
    submit(decoder, prompt, greedy("draft", 2, n=200))
    while len(decoder.rows) < 2:
        decoder.step()
    assert cache_bytes() == 2 * one  # the same capacity per row: the second row adds exactly its own


def test_refused_configs_name_why(dense_target, dense_draft_partial):
    engine = Engine.load(dense_target, dense_draft_partial)
    assert batch_refusal(engine, greedy("draft", 2)) is None
    assert "no MTP head" in batch_refusal(engine, greedy("mtp", 1))  # the solo path's own reason
    assert batch_refusal(object(), greedy()) is not None


@pytest.mark.slow
def test_sampled_rows_keep_the_target_distribution(dense_target, dense_draft_unrelated):
    """E[log p(X)] equals -H(p) when X ~ p; 300 rows with their own seeds in one batch."""
    engine = Engine.load(dense_target, dense_draft_unrelated)
    ids = prompt_ids(engine)
    p = np.array(mx.softmax(engine.target.model(mx.array(ids)[None])[0, -1].astype(mx.float32)))
    q = np.array(mx.softmax(engine.draft.model(mx.array(ids)[None])[0, -1].astype(mx.float32)))
    runs = 300
    decoder = BatchDecoder(engine, max_batch=runs)
    cfg = GenerationConfig(mode="draft", num_draft_tokens=2, max_tokens=1, temperature=1.0)
    added = run_all(decoder, {0: [(ids, replace(cfg, seed=s)) for s in range(runs)]})
    assert_samples_follow([g.tokens[0] for g in added[0]], p, q)
    assert sum(g.end.stats.drafted for g in added[0]) == runs  # every row drafted and was verified


def test_a_finished_row_reports_once(dense_target):
    engine = Engine.load(dense_target)
    decoder = BatchDecoder(engine, max_batch=2)
    got = run_all(decoder, {0: [(prompt_ids(engine), greedy(n=5))]})[0][0]
    assert sum(isinstance(e, Finished) for e in got.events) == 1
    assert got.tokens == solo_tokens(engine, prompt_ids(engine), greedy(n=5))


def test_logprobs_in_a_batch_equal_the_solo_ones(hybrid_target, hybrid_draft_partial):
    engine = Engine.load(hybrid_target, hybrid_draft_partial)
    prompts = [prompt_ids(engine, t) for t in TEXTS[:3]]
    cfgs = [replace(greedy(m, 3, n=16), logprobs=3) for m in ("draft", "lookup", "baseline")]
    decoder = BatchDecoder(engine, max_batch=4)
    added = run_all(decoder, {0: list(zip(prompts, cfgs))})[0]
    for got, prompt, cfg in zip(added, prompts, cfgs):
        solo = [lp for e in engine.stream(prompt, cfg) if isinstance(e, TextChunk) for lp in e.logprobs]
        mine = [lp for e in got.events if isinstance(e, TextChunk) for lp in e.logprobs]
        assert [lp.token for lp in mine] == [lp.token for lp in solo] == got.tokens
        for a, b in zip(mine, solo):
            assert a.logprob == pytest.approx(b.logprob, abs=1e-4)
            assert [t for t, _ in a.top] == [t for t, _ in b.top]


@pytest.mark.parametrize("target_name,draft_name", DENSE_AND_HYBRID)
def test_a_follow_up_starts_from_the_finished_rows_caches(request, target_name, draft_name):
    engine = Engine.load(request.getfixturevalue(target_name), request.getfixturevalue(draft_name))
    cfg = greedy("draft", 3, n=12)
    first_prompt = prompt_ids(engine, TEXTS[0])
    first = run_all(BatchDecoder(engine, max_batch=4), {0: [(first_prompt, cfg)]})[0][0]
    assert first.end.stats.cached_prompt_tokens == 0
    follow_up = first_prompt + first.tokens + prompt_ids(engine, TEXTS[1])
    # the next batch (a new decoder, as the host makes one per batch) finds the finished row's caches
    again = run_all(BatchDecoder(engine, max_batch=4), {0: [(follow_up, cfg)]})[0][0]
    cached = again.end.stats.cached_prompt_tokens
    assert len(first_prompt) <= cached <= len(first_prompt) + len(first.tokens)
    engine.batch_carry.clear()
    assert again.tokens == solo_tokens(engine, follow_up, cfg)


@pytest.mark.parametrize("target_name,draft_name", DENSE_AND_HYBRID)
@pytest.mark.parametrize("mode", ["draft", "lookup", "baseline"])
def test_a_lone_request_runs_on_the_solo_loop_and_moves_in_when_another_comes(request, target_name, draft_name, mode):
    engine = Engine.load(request.getfixturevalue(target_name), request.getfixturevalue(draft_name))
    cfg = auto(greedy(mode, 4, n=40)) if mode != "baseline" else greedy(n=40)
    lead_prompt, other_prompt = prompt_ids(engine, TEXTS[0]), prompt_ids(engine, TEXTS[2])
    solo_events = list(engine.stream(lead_prompt, cfg))
    engine.reset()
    decoder = BatchDecoder(engine, max_batch=4)
    lead = submit(decoder, lead_prompt, cfg)
    for _ in range(4):
        decoder.step()
    assert decoder.lead is not None and not decoder.rows  # alone: the engine's own loop
    streamed = len([e for e in lead.events if isinstance(e, TextChunk)])
    assert 0 < streamed < len(solo_events)
    other = submit(decoder, other_prompt, cfg)
    run_all(decoder)
    assert lead.tokens == list(solo_events[-1].tokens)
    assert streamed_text(lead.events) == streamed_text(solo_events)
    assert lead.end.stats.generated_tokens == len(lead.tokens)
    assert lead.end.stats.batch_rows_max == 2
    assert other.tokens == solo_tokens(engine, other_prompt, cfg)


@pytest.mark.slow
@pytest.mark.parametrize("target_name,draft_name", DENSE_AND_HYBRID)
def test_structured_rows_follow_their_grammar_in_the_batch(request, target_name, draft_name):
    from specchat.engine.grammar import Grammar

    from .test_grammar import PERSON, check_person

    engine = Engine.load(request.getfixturevalue(target_name), request.getfixturevalue(draft_name))
    schema = replace(greedy("draft", 3, n=160), grammar=Grammar.json_schema(PERSON))
    cfgs = [schema, greedy("draft", 3, n=40), replace(auto(greedy("lookup", 3, n=160)), grammar=Grammar.json_object())]
    prompts = [prompt_ids(engine, t) for t in TEXTS[:3]]
    solo = [list(engine.stream(p, c))[-1] for p, c in zip(prompts, cfgs)]
    engine.reset()
    decoder = BatchDecoder(engine, max_batch=4)
    decoder.solo_lead = False
    added = run_all(decoder, {0: list(zip(prompts, cfgs))})[0]
    for got, alone in zip(added, solo):
        assert got.tokens == list(alone.tokens)  # greedy under a grammar: the same as alone
        assert got.end.stats.batch_rows_max == 3
    check_person(added[0].end.text)


@pytest.mark.parametrize("target_name,draft_name", DENSE_AND_HYBRID)
@pytest.mark.parametrize("steps_before", [0, 1])
def test_a_lead_moved_in_before_its_runners_reached_its_prompt(request, target_name, draft_name, steps_before):
    """The engine's runners still hold an earlier conversation: the lead moves in before (0 steps) or while
    (1 step: a target prefill chunk, the draft model not reached) it reads its prompt."""
    engine = Engine.load(request.getfixturevalue(target_name), request.getfixturevalue(draft_name))
    cfg = greedy("draft", 3, n=20)
    long_text = " ".join(TEXTS * 2)  # longer than what the runners hold: only their tokens tell them apart
    earlier, lead_prompt, other_prompt = (prompt_ids(engine, t) for t in (TEXTS[5], long_text, TEXTS[2]))
    expected = [solo_tokens(engine, p, cfg) for p in (lead_prompt, other_prompt)]
    engine.generate(earlier, cfg)  # the runners now hold another conversation
    engine.runner.prefill_chunk = 4
    decoder = BatchDecoder(engine, max_batch=4)
    lead = submit(decoder, lead_prompt, cfg)
    for _ in range(steps_before):
        decoder.step()
    other = submit(decoder, other_prompt, cfg)
    run_all(decoder)
    assert [lead.tokens, other.tokens] == expected


def test_a_row_cut_short_mid_round_leaves_no_wrong_state_for_a_follow_up(hybrid_target):
    """A self-draft accepts every draft, so max_tokens ends the reply inside a round: a follow-up that starts
    from the finished row's caches (a recurrent state that cannot give tokens back) gives its solo output."""
    engine = Engine.load(hybrid_target, hybrid_target)
    cfg = greedy("draft", 4, n=7)
    prompt = prompt_ids(engine, TEXTS[0])

    def batched(p):
        decoder = BatchDecoder(engine, max_batch=4)
        decoder.solo_lead = False
        return run_all(decoder, {0: [(p, cfg)]})[0][0]

    first = batched(prompt)
    assert len(first.tokens) == 7 and first.end.stats.stop_reason == "length"
    follow_up = prompt + first.tokens + prompt_ids(engine, TEXTS[1])
    again = batched(follow_up)
    engine.batch_carry.clear()
    assert again.tokens == solo_tokens(engine, follow_up, cfg)
