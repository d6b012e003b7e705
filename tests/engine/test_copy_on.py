"""Auto copies on after the model's draft where its end is a phrase the conversation holds (copy_on.py)."""

from __future__ import annotations

from dataclasses import replace

import mlx.core as mx
import numpy as np
import pytest

from specchat.engine import Engine, Finished, GenerationConfig, RoundResult
from specchat.engine.auto_drafter import AutoDrafter, SourceRecord
from specchat.engine.autok import AutoK
from specchat.engine.copy_on import appended, copy_depth, led_copy
from specchat.engine.draft_stop import RoundPlan
from specchat.engine.drafters import Draft, DraftRequest
from specchat.engine.lookup import PromptLookupDrafter
from specchat.engine.modes import DraftOutcome
from specchat.engine.pass_costs import Acceptance, PassCosts
from specchat.engine.sampling import Sampler

from .test_auto_drafter import COPYABLE, EchoModel, model_favoured

GREEDY = Sampler(GenerationConfig())


def test_a_model_draft_ending_in_a_phrase_of_the_conversation_is_copied_on_and_each_part_learned():
    auto = model_favoured(EchoModel([5, 9]))  # 3, 4, 5, 9 occurred before: 8, 7, 1, 2, 3, 4 followed it
    draft = auto.propose(DraftRequest(list(COPYABLE), 2, GREEDY, reach=8))
    assert np.array(draft.tokens).tolist() == [5, 9, 8, 7, 1, 2, 3, 4]
    assert (draft.source, draft.copied, draft.costless) == ("draft", 6, False)
    model_before = SourceRecord(9.5, 10.0)
    auto.observe([*COPYABLE, 5, 9, 8, 7, 1, 6])  # both model tokens and three copied ones kept, then 6 for 2
    model = auto.records["draft"]
    assert (model.accepted, model.checked) == (pytest.approx(model_before.accepted * 0.95 + 2), pytest.approx(11.5))
    four = auto.records["lookup@4"]  # the copy followed a four-token tail, the model's two tokens its end
    assert (four.accepted, four.checked) == (1.0, 1.0)
    second, third, fourth = (auto.records[f"lookup+{n}"] for n in (2, 3, 4))
    assert (second.accepted, second.checked) == (pytest.approx(0.8 * 0.95 + 1), pytest.approx(0.95 + 1))
    assert (third.accepted, third.checked) == (pytest.approx(0.8 * 0.95 + 1), pytest.approx(0.95 + 1))
    assert (fourth.accepted, fourth.checked) == (pytest.approx(0.8 * 0.95), pytest.approx(0.95 + 1))  # refused


def test_a_copy_after_a_refused_model_token_teaches_lookup_nothing():
    auto = model_favoured(EchoModel([5, 9]))
    auto.propose(DraftRequest(list(COPYABLE), 2, GREEDY, reach=8))
    auto.observe([*COPYABLE, 5, 6])  # the model's second token refused: the copy was never reached
    assert auto.records["lookup@4"].checked == 0.0
    assert auto.records["draft"].checked == pytest.approx(10.0 * 0.95 + 2)


@pytest.mark.parametrize(
    ("drafts", "k", "reach", "why"),
    [
        ([5, 9], 2, 2, "no room past K"),
        ([5, 6], 2, 8, "its end (5, 6) never occurred before"),
    ],
)
def test_no_copy_on(drafts, k, reach, why):
    auto = model_favoured(EchoModel(drafts))
    draft = auto.propose(DraftRequest(list(COPYABLE), k, GREEDY, reach=reach))
    assert np.array(draft.tokens).tolist() == drafts and draft.copied == 0, why


def test_the_copy_is_as_deep_as_its_tokens_pay_for_the_deeper_verify_pass():
    flat, steep = PassCosts.flat(12, 0.3), PassCosts(tuple(1.0 + 0.5 * k for k in range(13)), 0.3)
    sure, doubtful = Acceptance(0.9, (0.9,)), Acceptance(0.2, (0.5,))
    assert copy_depth(flat, 0.9, 2, sure, 6) == 6  # more positions cost nothing: the whole copy
    # the round gives 2.71 tokens in 2.6 s (1.04/s); half a pass buys 0.16 more of a doubtful copy: none pays
    assert copy_depth(steep, 0.9, 2, doubtful, 6) == 0
    assert copy_depth(flat, 0.0, 2, sure, 6) == 0  # the model's tokens are never kept: the copy is never reached
    assert copy_depth(flat, 0.9, 2, sure, 6, reached=0.0) == 0  # nor where Auto K's plan says so
    # positions at 0.05 of a pass: 2.44 tokens in 1.7 s, copies reached at 0.64; depth 3 gives 3.45 in 1.85 s
    # (1.864/s), depth 2 3.30 in 1.8 s (1.836), depth 4 3.52 in 1.9 s (1.853)
    gentle = PassCosts(tuple(1.0 + 0.05 * k for k in range(13)), 0.3)
    assert copy_depth(gentle, 0.8, 2, Acceptance(0.9, (0.5,)), 6) == 3


def test_copied_tokens_carry_one_hot_probabilities_when_sampling():
    probs = mx.softmax(mx.random.normal((2, 16)), axis=-1)
    draft = appended(Draft(mx.array([3, 4], dtype=mx.uint32), probs), [7, 1])
    assert np.array(draft.tokens).tolist() == [3, 4, 7, 1] and draft.copied == 2
    assert draft.probs is not None
    assert np.allclose(np.array(draft.probs[:2]), np.array(probs))
    assert np.array(draft.probs[2:]).argmax(axis=-1).tolist() == [7, 1]
    assert np.array(draft.probs[2:]).sum(axis=-1).tolist() == [1.0, 1.0]


class TwoTokens:
    """The engine's model drafter, drafting at most two tokens a round (as Auto K's plan stops it), so a K of
    eight leaves room to copy on."""

    def __init__(self, inner):
        self.inner, self.name, self.one_pass_draft = inner, inner.name, False

    def __getattr__(self, attr):
        return getattr(self.inner, attr)

    def propose(self, request):
        return self.inner.propose(replace(request, k=min(request.k, 2)))


def test_copied_on_rounds_give_exactly_plain_decoding(dense_target):
    """The target as its own draft model: its drafts are kept, and their ends in earlier text get copied on."""
    engine = Engine.load(dense_target, dense_target)
    ids = list(engine.tokenizer.encode("one two three four five six seven eight nine ten " * 6))
    plain = engine.generate(ids, GenerationConfig(max_tokens=96)).tokens
    auto = engine.drafters["auto"]
    assert isinstance(auto, AutoDrafter) and auto.model is not None
    auto.model = TwoTokens(auto.model)
    auto.records["draft"] = SourceRecord(9.9, 10.0)  # the model drafts each round: lookup only copies on
    events = list(engine.stream(ids, GenerationConfig(mode="auto", num_draft_tokens=8, max_tokens=96)))
    finished = events[-1]
    assert isinstance(finished, Finished) and list(finished.tokens) == list(plain)
    rounds = [e for e in events if isinstance(e, RoundResult) and e.drafted]
    assert all(r.drafter == "draft" for r in rounds)
    deeper = [r for r in rounds if r.drafted > 2]
    assert deeper, "no model draft was copied on: the test would not exercise it"
    assert any(r.accepted > 2 for r in deeper)  # copied tokens the target kept


def test_the_tail_a_copy_follows_is_at_most_lookups_longest():
    auto = AutoDrafter(EchoModel([5, 9]), PromptLookupDrafter(64, ngram_max=2))  # type: ignore[arg-type]
    auto.records["draft"], auto.records["lookup"] = SourceRecord(9.5, 10.0), SourceRecord(1.0, 10.0)
    auto.propose(DraftRequest(list(COPYABLE), 2, GREEDY, reach=8))
    assert auto.pending is not None and auto.pending.copy_tail == 2


def test_auto_k_prices_a_copied_on_verify_pass_at_its_depth_and_counts_the_models_tokens_alone():
    controller = AutoK(k_max=16)
    controller.observe(2, 2, 0.2, 0.7, verified=8)  # two model tokens kept, six copied after them
    assert controller.verify_s == {8: 0.7} and controller.verify_rounds == {8: 1}
    assert controller.entry == DraftOutcome.FULL  # the model's own draft was taken whole


CPU = PassCosts(tuple(0.44 + 0.025 * k for k in range(17)), 0.15)  # the real pair here: a draft step a third of a pass


def test_a_copy_in_doubt_is_led_by_one_model_token_where_a_draft_step_is_cheap():
    prose, code, guess = Acceptance(0.35, (0.7,)), Acceptance(0.95, (0.95,)), Acceptance(0.05, (0.7,))
    model = CPU.best(Acceptance.iid(0.86), 16, drafted=True)[1]  # 3.35 tokens a second
    # a phrase of the source, joined on one time in three: 3.94/s led, 3.49/s copied at once
    assert led_copy(CPU, prose, 0.86, 16)[1] > max(CPU.best(prose, 16, drafted=False)[1], model)
    assert led_copy(CPU, code, 0.86, 16)[1] < CPU.best(code, 16, drafted=False)[1]  # a sure copy: the step is waste
    assert led_copy(CPU, guess, 0.86, 16)[1] < model  # a guess: a one-token model round, below the model's own K
    dear = replace(CPU, draft_step=0.5)  # a draft step as dear as a target pass
    assert led_copy(dear, prose, 0.86, 16)[1] < CPU.best(prose, 16, drafted=False)[1]


def prose_like(model: EchoModel) -> tuple[AutoDrafter, DraftRequest]:
    """Auto where copies after a four-token tail were taken at their first token one time in three, and a request
    on COPYABLE (lookup's match there: 5, 9, 8, 7 after 1, 2, 3, 4) at this CPU's costs."""
    auto = model_favoured(model)
    auto.records["draft"], auto.records["lookup@4"] = SourceRecord(8.6, 10.0), SourceRecord(3.5, 10.0)
    auto.records.update({name: SourceRecord(9.0, 10.0) for name in auto.records if name.startswith("lookup+")})
    return auto, DraftRequest(list(COPYABLE), 16, GREEDY, RoundPlan(16, "start", None, passes=CPU), reach=16)


def test_a_led_copy_follows_the_models_token_where_it_is_the_copys_first_and_teaches_both():
    auto, request = prose_like(EchoModel([5, 6, 6]))
    pick = auto.choose(request)
    assert (pick.source, pick.k) == ("draft", 1) and pick.lead >= 4
    draft = auto.propose(request)
    assert np.array(draft.tokens).tolist() == [5, 9, 8, 7, 1, 2, 3, 4][: pick.lead]
    assert (draft.source, draft.copied, draft.costless) == ("draft", pick.lead - 1, False)
    auto.observe([*COPYABLE, 5, 9, 8, 6])  # the model's token and two copied ones kept
    model, four = auto.records["draft"], auto.records["lookup@4"]
    assert (model.accepted, model.checked) == (pytest.approx(8.6 * 0.95 + 1), pytest.approx(10.0 * 0.95 + 1))
    assert (four.accepted, four.checked) == (pytest.approx(3.5 * 0.95 + 1), pytest.approx(10.0 * 0.95 + 1))
    second, fourth = auto.records["lookup+2"], auto.records["lookup+4"]  # positions of the copy: 9 kept, 6 for 7
    assert (second.accepted, second.checked) == (pytest.approx(9.0 * 0.95 + 1), pytest.approx(10.0 * 0.95 + 1))
    assert (fourth.accepted, fourth.checked) == (pytest.approx(9.0 * 0.95), pytest.approx(10.0 * 0.95 + 1))


def test_a_led_copy_whose_first_token_the_model_did_not_propose_is_a_one_token_round_and_lookup_learns_the_refusal():
    auto, request = prose_like(EchoModel([6, 5, 9]))
    draft = auto.propose(request)
    assert np.array(draft.tokens).tolist() == [6] and draft.copied == 0  # nothing appended after another token
    auto.observe([*COPYABLE, 6, 7])  # the model's token kept, where lookup had 5
    four = auto.records["lookup@4"]
    assert (four.accepted, four.checked) == (pytest.approx(3.5 * 0.95), pytest.approx(10.0 * 0.95 + 1))
    assert auto.records["draft"].accepted == pytest.approx(8.6 * 0.95 + 1)


def test_a_sure_copy_is_not_led():
    auto, request = prose_like(EchoModel([5, 9]))
    auto.records["lookup@4"] = SourceRecord(9.5, 10.0)  # code: copies after four tokens taken
    assert auto.choose(request).source == "lookup"
