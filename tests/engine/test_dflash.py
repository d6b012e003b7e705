"""DFlash block drafting: identity with plain decoding, the budget and EOS inside a block, exact context cache."""

from __future__ import annotations

import shutil

import mlx.core as mx
import numpy as np
import pytest

from specchat.engine import Engine, GenerationConfig, RoundResult
from specchat.engine import dflash as dflash_module
from specchat.engine.dflash import DFlashDrafter
from specchat.engine.dflash_model import DFlashModel
from specchat.engine.grammar import Grammar
from specchat.upstream.hidden_capture import capture_forward
from tests.fixtures import tiny_models as tm
from tests.fixtures.dflash_models import build_dflash, build_llama

from .helpers import greedy, mlx_lm_greedy, prompt_ids

EOS_ROW_GAIN = 6.0  # the dense target with its EOS row scaled so: greedy stops after 27 tokens of PROMPT


@pytest.fixture(scope="module")
def eos_engine(dense_target, dflash_root):
    folder = dflash_root / "eos_target"
    shutil.copytree(dense_target, folder)
    weights = dict(mx.load(str(folder / "model.safetensors")))
    eos = Engine.load(dense_target).tokenizer.eos_token_ids
    embed = weights["model.embed_tokens.weight"]
    embed[list(eos)[0]] = embed[list(eos)[0]] * EOS_ROW_GAIN
    weights["model.embed_tokens.weight"] = embed
    tm._save_weights(folder, weights)
    return Engine.load(folder, dflash=build_dflash(dflash_root / "eos", folder))


class Oracle:
    """Replaces the drafter's projection to the vocabulary: the block's rows become the target's own greedy
    continuation (`full`), except at absolute positions where `wrong(position)` holds."""

    def __init__(self, monkeypatch, engine: Engine, full: list[int], wrong=lambda position: False):
        self.full, self.wrong, self.seq = full, wrong, []
        self.vocab = engine.drafters["dflash"]._vocab()
        drafter = engine.drafters["dflash"]
        original = drafter.propose

        def propose(request):
            self.seq = request.seq
            return original(request)

        monkeypatch.setattr(drafter, "propose", propose)
        monkeypatch.setattr(dflash_module, "project_logits", self.logits)

    def token(self, position: int) -> int:
        right = self.full[position] if position < len(self.full) else 0
        return (right + 1) % self.vocab if self.wrong(position) else right

    def logits(self, model, hidden: mx.array) -> mx.array:
        rows = np.full((hidden.shape[0], self.vocab), -30.0, dtype=np.float32)
        for i in range(hidden.shape[0]):
            rows[i, self.token(len(self.seq) + i)] = 30.0
        return mx.array(rows)


def rounds_of(events) -> list[RoundResult]:
    return [e for e in events if isinstance(e, RoundResult)]


@pytest.mark.parametrize("which", ["dense_engine", "hybrid_engine"])
def test_random_drafter_gives_plain_greedy_output_at_every_k(request, which):
    engine = request.getfixturevalue(which)
    ids = prompt_ids(engine)
    baseline = engine.generate(ids, greedy(n=40))
    assert baseline.tokens == mlx_lm_greedy(engine, ids, 40)
    for k in (1, 3, 15):
        result = engine.generate(ids, greedy("dflash", k, n=40))
        assert result.tokens == baseline.tokens, f"K={k} differs from plain decoding"
        assert result.stats.mode == "dflash" and result.stats.num_draft_tokens == k
    auto = engine.generate(ids, greedy("dflash", "auto", n=40))
    assert auto.tokens == baseline.tokens


def test_a_round_drafts_k_tokens_from_one_block_pass(monkeypatch, dense_engine):
    passes = []
    block = DFlashModel.block

    def counted(self, embeds, caches):
        passes.append(embeds.shape[0])
        return block(self, embeds, caches)

    monkeypatch.setattr(DFlashModel, "block", counted)
    ids = prompt_ids(dense_engine)
    for k in (1, 3, 15):
        passes.clear()
        rounds = rounds_of(dense_engine.stream(ids, greedy("dflash", k, n=60)))
        assert rounds and all(r.drafted <= k for r in rounds)
        assert max(r.drafted for r in rounds) == k
        assert passes == [16] * len(rounds)  # one pass of the whole block per round, whatever K


@pytest.mark.parametrize("which", ["dense_engine", "hybrid_engine"])
def test_oracle_blocks_are_accepted_whole_and_output_is_unchanged(monkeypatch, request, which):
    engine = request.getfixturevalue(which)
    ids = prompt_ids(engine)
    baseline = engine.generate(ids, greedy(n=46)).tokens
    Oracle(monkeypatch, engine, ids + baseline)
    events = list(engine.stream(ids, greedy("dflash", 15, n=46)))
    result = events[-1]
    assert list(result.tokens) == baseline
    rounds = rounds_of(events)
    # 46 tokens in blocks of 15 accepted drafts + the target's own token: 16 + 16, then 14 drafts, all kept.
    assert [r.accepted for r in rounds] == [15, 15, 14]
    assert [r.emitted for r in rounds] == [16, 16, 14]


def test_partly_wrong_oracle_exercises_partial_accepts(monkeypatch, hybrid_engine):
    engine = hybrid_engine
    ids = prompt_ids(engine)
    baseline = engine.generate(ids, greedy(n=40)).tokens
    Oracle(monkeypatch, engine, ids + baseline, wrong=lambda position: position % 5 == 0)
    events = list(engine.stream(ids, greedy("dflash", 6, n=40)))
    assert list(events[-1].tokens) == baseline
    accepted = [r.accepted for r in rounds_of(events)]
    assert any(0 < a < 6 for a in accepted)
    assert_context_equals_a_clean_pass(engine)


@pytest.mark.parametrize("n", [1, 2, 15, 16, 17, 31])
def test_never_more_tokens_than_max_tokens(monkeypatch, dense_engine, n):
    engine = dense_engine
    ids = prompt_ids(engine)
    baseline = engine.generate(ids, greedy(n=40)).tokens
    Oracle(monkeypatch, engine, ids + baseline)
    events = list(engine.stream(ids, greedy("dflash", 15, n=n)))
    assert list(events[-1].tokens) == baseline[:n]
    assert events[-1].stats.stop_reason == "length"
    assert all(r.drafted <= n for r in rounds_of(events))


def test_eos_inside_an_accepted_block_ends_the_reply_there(monkeypatch, eos_engine):
    engine = eos_engine
    ids = prompt_ids(engine)
    baseline = engine.generate(ids, greedy(n=60))
    assert baseline.stats.stop_reason == "eos" and 10 < len(baseline.tokens) < 40
    eos = list(engine.tokenizer.eos_token_ids)[0]
    full = ids + baseline.tokens + [eos] + baseline.tokens  # drafts past the EOS must never be emitted
    Oracle(monkeypatch, engine, full)
    events = list(engine.stream(ids, greedy("dflash", 15, n=60)))
    assert list(events[-1].tokens) == baseline.tokens
    assert events[-1].stats.stop_reason == "eos"
    rounds = rounds_of(events)
    last = rounds[-1]
    assert sum(r.emitted for r in rounds) == len(baseline.tokens)
    assert last.drafted == 15 and last.emitted < 14 and last.accepted > last.emitted  # EOS: a kept mid-block draft


def test_eos_from_the_target_mid_block_with_a_random_drafter(eos_engine):
    ids = prompt_ids(eos_engine)
    baseline = eos_engine.generate(ids, greedy(n=60))
    for k in (3, 15):
        result = eos_engine.generate(ids, greedy("dflash", k, n=60))
        assert result.tokens == baseline.tokens and result.stats.stop_reason == "eos"


def assert_context_equals_a_clean_pass(engine: Engine) -> None:
    """The drafter's context cache equals feeding it, in one pass, the target's layers over what it has seen."""
    drafter = engine.drafters["dflash"]
    assert isinstance(drafter, DFlashDrafter)
    m, seen = drafter.entries, drafter.seen
    assert len(seen) == m > 0
    _, layers = capture_forward(engine.target.model, mx.array(seen)[None], None, drafter.config.target_layer_ids)
    fresh = drafter.model.make_cache()
    drafter.model.add_context(mx.concatenate(layers, axis=-1)[0], fresh)
    for got, want in zip(drafter.cache, fresh):
        assert got.offset == want.offset == m
        assert mx.array_equal(got.keys[..., :m, :], want.keys[..., :m, :]).item()
        assert mx.array_equal(got.values[..., :m, :], want.values[..., :m, :]).item()


@pytest.mark.parametrize("which", ["dense_engine", "hybrid_engine"])
def test_context_cache_after_rejections_equals_one_built_from_the_kept_tokens(request, which):
    engine = request.getfixturevalue(which)
    ids = prompt_ids(engine)
    result = engine.generate(ids, greedy("dflash", 4, n=30))
    drafter = engine.drafters["dflash"]
    assert drafter.seen == (ids + result.tokens)[:-1]  # the target holds all but the last token
    assert_context_equals_a_clean_pass(engine)


def test_a_changed_prompt_trims_the_context_and_other_modes_are_replayed(dense_engine):
    engine = dense_engine
    ids = prompt_ids(engine)
    first = engine.generate(ids, greedy("dflash", 3, n=20))
    other = prompt_ids(engine, "The quick brown fox")
    engine.generate(other, greedy(n=12))  # the target reads it without capturing its layers
    again = engine.generate(other, greedy("dflash", 3, n=24))
    assert again.tokens == engine.generate(other, greedy(n=24)).tokens
    assert_context_equals_a_clean_pass(engine)
    assert engine.generate(ids, greedy("dflash", 3, n=20)).tokens == first.tokens
    assert_context_equals_a_clean_pass(engine)


def test_capture_forward_equals_the_models_own_call_and_layer_outputs(hybrid_target):
    engine = Engine.load(hybrid_target)
    model = engine.target.model
    ids = mx.array(prompt_ids(engine))[None]
    seen: dict[int, mx.array] = {}
    layers = model.layers
    for i in (1, 3):
        layer = layers[i]

        class Spy(type(layer)):
            def __call__(self, *args, _i=i, **kwargs):
                out = super().__call__(*args, **kwargs)
                seen[_i] = out
                return out

        layer.__class__ = Spy
    try:
        want = model(ids)
    finally:
        for i in (1, 3):
            layers[i].__class__ = type(layers[i]).__mro__[1]
    got, captured = capture_forward(model, ids, None, (3, 1))
    assert mx.array_equal(got, want).item()
    assert mx.array_equal(captured[0], seen[3]).item() and mx.array_equal(captured[1], seen[1]).item()


def test_sampled_dflash_keeps_the_target_distribution(dense_engine):
    """E[log p(X)] equals -H(p) when X ~ p; drawing from the drafter's first row moves it by many standard errors."""
    import math

    engine = dense_engine
    ids = prompt_ids(engine)
    p = np.array(mx.softmax(engine.target.model(mx.array(ids)[None])[0, -1].astype(mx.float32)))
    drafter = engine.drafters["dflash"]
    drafter.reset()
    engine.generate(ids, greedy(n=1))  # the target holds ids[:-1] with nothing captured: the drafter replays
    log_p = np.log(np.maximum(p, 1e-30))
    mean_p, var_p = (p * log_p).sum(), (p * log_p**2).sum() - (p * log_p).sum() ** 2
    runs = 300
    cfg = [
        GenerationConfig(mode="dflash", num_draft_tokens=2, max_tokens=1, temperature=1.0, seed=s) for s in range(runs)
    ]
    tokens = [engine.generate(ids, c).tokens[0] for c in cfg]
    observed = np.mean([log_p[t] for t in tokens])
    se = math.sqrt(var_p / runs)
    assert abs(observed - mean_p) < 4 * se
    q = np.array(mx.softmax(draft_row_logits(engine, ids).astype(mx.float32)))
    assert abs((q * log_p).sum() - mean_p) > 8 * se, "the drafter's row is too close to the target: vacuous"


def draft_row_logits(engine: Engine, ids: list[int]) -> mx.array:
    """The drafter's first draft row's logits for the sequence ids, from a fresh context."""
    drafter = engine.drafters["dflash"]
    model, cfg = drafter.model, drafter.config
    _, layers = capture_forward(engine.target.model, mx.array(ids[:-1])[None], None, cfg.target_layer_ids)
    cache = model.make_cache()
    model.add_context(mx.concatenate(layers, axis=-1)[0], cache)
    block = mx.array([ids[-1]] + [cfg.mask_token_id] * (cfg.block_size - 1))
    embed = engine.target.model.model.embed_tokens
    hidden = model.block(embed(block), cache)
    return embed.as_linear(hidden[1])


GRAMMARS = {
    "object": Grammar.json_object(),
    "lark": Grammar.lark('start: "Name: " /[a-z ]{1,20}/ "\\nAge: " /[0-9]{1,2}/ "\\n"'),
}


@pytest.mark.parametrize("grammar", list(GRAMMARS))
def test_greedy_dflash_under_a_grammar_equals_constrained_plain_decoding(monkeypatch, hybrid_engine, grammar):
    engine = hybrid_engine
    ids = prompt_ids(engine)
    plain = engine.generate(ids, greedy(n=48, grammar=GRAMMARS[grammar]))
    assert plain.tokens
    for k in (1, 4, 15, "auto"):
        result = engine.generate(ids, greedy("dflash", k, n=48, grammar=GRAMMARS[grammar]))
        assert result.tokens == plain.tokens and result.stats.stop_reason == plain.stats.stop_reason, f"K={k}"
    # Drafts the grammar allows are kept: with the target's own continuation as drafts, most of them.
    Oracle(monkeypatch, engine, ids + plain.tokens)
    result = engine.generate(ids, greedy("dflash", 15, n=48, grammar=GRAMMARS[grammar]))
    assert result.tokens == plain.tokens and result.stats.acceptance_rate > 0.5


def test_a_llama_target_is_read_and_decoded_exactly(dflash_root):
    target = build_llama(dflash_root / "llama_target")
    engine = Engine.load(target, dflash=build_dflash(dflash_root / "llama", target))
    ids = prompt_ids(engine)
    want = engine.target.model(mx.array(ids)[None])
    got, layers = capture_forward(engine.target.model, mx.array(ids)[None], None, (0, 1))
    assert mx.array_equal(got, want).item() and len(layers) == 2
    baseline = engine.generate(ids, greedy(n=32))
    assert baseline.tokens == mlx_lm_greedy(engine, ids, 32)
    for k in (2, 15):
        assert engine.generate(ids, greedy("dflash", k, n=32)).tokens == baseline.tokens
    assert_context_equals_a_clean_pass(engine)
