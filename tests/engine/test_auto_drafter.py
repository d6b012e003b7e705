"""The Auto mode: each round's drafter picked between prompt lookup and the model drafter. Output is the
target's whichever drafts (greedy identical to plain decoding, sampled keeps its distribution), lookup takes
the rounds where the conversation repeats itself, and the stats say which drafter took how many rounds."""

import math
from dataclasses import replace

import mlx.core as mx
import numpy as np
import pytest

from specchat.engine import Engine, Finished, GenerationConfig, RoundResult
from specchat.engine.auto_drafter import AutoDrafter, Pick, SourceRecord
from specchat.engine.draft_stop import RoundPlan
from specchat.engine.drafters import NO_TAPS, Draft, DraftRequest
from specchat.engine.lookup import PromptLookupDrafter
from specchat.engine.pass_costs import Acceptance, PassCosts, expected_tokens
from specchat.engine.policy import DEFAULT_POLICY
from specchat.engine.sampling import Sampler
from specchat.engine.summary import speculation_text

from .helpers import greedy, prompt_ids

REPEATING = "one two three four five six seven eight nine ten " * 6


@pytest.fixture(scope="module")
def engine(dense_target, dense_draft_partial):
    return Engine.load(dense_target, dense_draft_partial)


def rounds_of(events) -> list[RoundResult]:
    return [e for e in events if isinstance(e, RoundResult)]


@pytest.mark.parametrize("k", [2, 4, "auto"])
def test_auto_gives_exactly_plain_decoding(engine, k):
    for ids in (prompt_ids(engine), list(engine.tokenizer.encode(REPEATING))):
        plain = engine.generate(ids, greedy(n=40)).tokens
        events = list(engine.stream(ids, GenerationConfig(mode="auto", num_draft_tokens=k, max_tokens=40)))
        assert isinstance(events[-1], Finished) and list(events[-1].tokens) == plain
        assert all(r.drafter in ("draft", "lookup") for r in rounds_of(events) if r.num_draft_tokens)


def test_lookup_drafts_where_the_conversation_repeats_and_the_model_elsewhere(engine):
    history = list(engine.tokenizer.encode(REPEATING))
    reply = engine.generate(history, greedy(n=30)).tokens
    copying = history + reply + history[:6]  # the reply so far repeats: lookup has long matches
    events = list(engine.stream(copying, GenerationConfig(mode="auto", num_draft_tokens=4, max_tokens=30)))
    stats = events[-1].stats
    assert set(stats.drafter_rounds) <= {"draft", "lookup"} and stats.drafter_rounds
    assert sum(n for n, _ in stats.drafter_rounds.values()) == sum(1 for r in rounds_of(events) if r.drafted)
    fresh = list(engine.stream(prompt_ids(engine), GenerationConfig(mode="auto", num_draft_tokens=4, max_tokens=30)))
    assert fresh[-1].stats.drafter_rounds.get("draft", (0, 0))[0] > 0  # no match: the draft model drafts


def test_the_choice_follows_what_each_source_was_worth():
    class Model:
        name = "draft"
        one_pass_draft = False

    class Lookup:
        ngram_max = 4

    auto = AutoDrafter(Model(), Lookup())  # type: ignore[arg-type]
    request = DraftRequest([1, 2, 3, 9, 1, 2, 3], 4, Sampler(GenerationConfig()))  # lookup's match: 9, 1, 2, 3
    auto.records.update({"lookup": SourceRecord(0.0, 10.0), "draft": SourceRecord(9.0, 10.0)})
    assert auto.choose(request).source == "draft"  # its matches never held: the model drafts
    auto.records.update({"lookup": SourceRecord(9.0, 10.0), "draft": SourceRecord(5.0, 10.0)})
    assert auto.choose(request).source == "lookup"  # copies hold and cost no model pass
    assert auto.choose(DraftRequest([5, 6, 7, 8], 4, Sampler(GenerationConfig()))).source == "draft"  # no match


def test_the_choice_weighs_the_draft_cost_auto_k_measured_on_this_pair():
    class Model:
        name = "draft"
        one_pass_draft = False

    class Lookup:
        ngram_max = 4

    auto = AutoDrafter(Model(), Lookup())  # type: ignore[arg-type]
    copies = SourceRecord(7.0, 10.0)  # first tokens and the tokens after them alike
    auto.records.update({name: copies for name in auto.records if name.startswith("lookup")})
    auto.records["draft"] = SourceRecord(9.0, 10.0)
    seq = [1, 2, 3, 9, 1, 2, 3]  # lookup's match: 9, 1, 2, 3

    def request(share: float | None) -> DraftRequest:
        plan = RoundPlan(4, "start", None, passes=None if share is None else PassCosts.flat(4, share))
        return DraftRequest(seq, 4, Sampler(GenerationConfig()), plan)

    # copied 1 + .7 + .49 + .34 + .24 = 2.77 tokens for one verify pass; drafted 1 + .9 + .81 + .73 + .66 = 4.10
    assert auto.choose(request(0.05)).source == "draft"  # draft steps measured cheap (a Mac's GPU): 4.10 / 1.2 > 2.77
    assert auto.choose(request(0.4)).source == "lookup"  # measured dear: 4.10 / 2.6 < 2.77
    assert auto.choose(request(None)).source == "lookup"  # unmeasured: the policy's prior share (0.3): 4.10 / 2.2
    cheap_prior = AutoDrafter(Model(), Lookup(), replace(DEFAULT_POLICY, prior_draft_share=0.05))  # type: ignore[arg-type]
    cheap_prior.records = auto.records
    assert cheap_prior.choose(request(None)).source == "draft"


def test_expected_tokens_and_the_footer_words():
    assert expected_tokens(0.0, 4) == 1 and expected_tokens(1.0, 4) == 5
    stats = {
        "mode": "auto",
        "num_draft_tokens": 4,
        "drafted": 10,
        "accepted": 8,
        "drafter_rounds": {"draft": [21, 40], "lookup": [9, 38]},
    }
    text = speculation_text(stats)
    assert "draft model 21 rounds" in text and "prompt lookup 9 rounds (38 tokens)" in text


@pytest.mark.slow
def test_auto_keeps_the_target_distribution_when_sampling(dense_target, dense_draft_unrelated):
    """E[log p(X)] equals -H(p) when X ~ p, where the first round's drafts come from lookup's copy."""
    engine = Engine.load(dense_target, dense_draft_unrelated)
    ids = list(engine.tokenizer.encode(REPEATING.strip()))
    copy = engine.drafters["lookup"].propose(DraftRequest(ids, 1, Sampler(GenerationConfig()))).tokens.tolist()
    assert copy, "the prompt gives lookup no match: the test would not exercise it"
    p = np.array(mx.softmax(engine.target.model(mx.array(ids)[None])[0, -1].astype(mx.float32)))
    log_p = np.log(np.maximum(p, 1e-30))
    mean_p, var_p = (p * log_p).sum(), (p * log_p**2).sum() - (p * log_p).sum() ** 2
    runs = 300
    cfg = dict(mode="auto", num_draft_tokens=2, max_tokens=1, temperature=1.0)
    firsts = [engine.generate(ids, GenerationConfig(**cfg, seed=s)).tokens[0] for s in range(runs)]
    se = math.sqrt(var_p / runs)
    assert abs(np.mean([log_p[t] for t in firsts]) - mean_p) < 4 * se
    assert abs(log_p[copy[0]] - mean_p) > 8 * se, "copying lookup's token would pass: the test would be vacuous"


class EchoModel:
    """A model drafter stand-in that proposes given tokens."""

    name = "draft"
    one_pass_draft = False

    def __init__(self, tokens: list[int]):
        self.tokens = tokens

    def propose(self, request):
        return Draft(mx.array(self.tokens[: request.k], dtype=mx.uint32), None)

    def observe(self, seq):
        pass

    def begin(self, cfg):
        return NO_TAPS


COPYABLE = [1, 2, 3, 4, 5, 9, 8, 7, 1, 2, 3, 4]  # lookup's match: 5, 9, 8, 7 after a four-token tail


def model_favoured(model: EchoModel) -> AutoDrafter:
    auto = AutoDrafter(model, PromptLookupDrafter(64))  # type: ignore[arg-type]
    auto.records["lookup"], auto.records["draft"] = SourceRecord(1.0, 10.0), SourceRecord(9.5, 10.0)
    return auto


def test_lookup_learns_from_rounds_the_model_drafted_where_the_target_would_have_refused_its_copy():
    auto = model_favoured(EchoModel([5, 9, 6, 6]))
    draft = auto.propose(DraftRequest(list(COPYABLE), 4, Sampler(GenerationConfig())))
    assert draft.source == "draft"
    auto.observe([*COPYABLE, 5, 9, 6])  # the target kept 5, 9 and put 6 where lookup had 8
    four = auto.records["lookup@4"]
    assert (four.accepted, four.checked) == (1.0, 1.0)  # its first token taken
    assert auto.records["lookup@1"].checked == 0.0  # other tail lengths learn nothing from it
    assert auto.records["lookup"].checked == pytest.approx(10.0 * 0.95 + 1.0)  # the pooled record counts it
    second, third = auto.records["lookup+2"], auto.records["lookup+3"]  # the second token taken, the third refused
    assert (second.accepted, second.checked) == (pytest.approx(0.8 * 0.95 + 1.0), pytest.approx(0.95 + 1.0))
    assert (third.accepted, third.checked) == (pytest.approx(0.8 * 0.95), pytest.approx(0.95 + 1.0))
    fourth = auto.records["lookup+4"]
    assert (fourth.accepted, fourth.checked) == (pytest.approx(0.8 * 0.95), pytest.approx(0.95))  # no token: aged
    odds = auto.lookup_odds(4)
    assert odds.first == pytest.approx((1.0 + auto.records["lookup"].rate * 2.0) / 3.0)
    third_odds = (third.accepted + second.rate * 2.0) / (third.checked + 2.0)  # each leans on the one before
    fourth_odds = (fourth.accepted + third_odds * 2.0) / (fourth.checked + 2.0)
    assert odds.then[:3] == pytest.approx((second.rate, third_odds, fourth_odds))


def test_a_match_weighed_between_plain_tokens_is_learned_once_the_target_shows_where_it_ends():
    auto = model_favoured(EchoModel([]))
    seq = list(COPYABLE)
    depth, _ = auto.costless(seq, 8)
    assert depth >= 2
    seq.append(5)  # the first copied token held
    auto.costless(seq, 8)
    assert auto.records["lookup@4"].checked == 0.0  # undecided: the copy may hold on
    seq.append(6)  # the target wrote 6 where lookup had 9
    auto.costless(seq, 8)
    four, on = auto.records["lookup@4"], auto.records["lookup+2"]
    assert (four.accepted, four.checked) == (1.0, 1.0)  # its first token held
    assert on.checked == pytest.approx(0.95 + 1.0) and on.accepted == pytest.approx(0.8 * 0.95)  # its second did not


def test_lookup_is_taken_after_the_tails_whose_copies_held():
    auto = model_favoured(EchoModel([5, 9, 8, 7]))
    auto.records["lookup@4"] = SourceRecord(19.0, 20.0)  # four-token tails copied on
    request = DraftRequest(list(COPYABLE), 4, Sampler(GenerationConfig()))
    assert auto.choose(request).source == "lookup"
    assert (
        auto.choose(DraftRequest([1, 2, 3, 4, 5, 9, 8, 7, 6, 5, 2], 4, Sampler(GenerationConfig()))).source == "draft"
    )


def test_a_copy_is_as_deep_as_pays_at_the_measured_verify_costs_and_only_where_it_beats_a_plain_token():
    class Model:
        name = "draft"
        one_pass_draft = False

    auto = AutoDrafter(Model(), PromptLookupDrafter(vocab_size=16))  # type: ignore[arg-type]
    seq = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2, 3]  # lookup's match: 4 .. 10, 1
    steep = PassCosts(tuple(0.5 + 0.1 * k for k in range(9)), 0.2)  # a CPU: each token verified costs more

    def request(costs: PassCosts) -> DraftRequest:
        return DraftRequest(seq, 8, Sampler(GenerationConfig()), RoundPlan(8, "start", None, passes=costs))

    copies = SourceRecord(8.0, 10.0)
    auto.records.update({name: copies for name in auto.records if name.startswith("lookup")})
    auto.records["draft"] = SourceRecord(2.0, 10.0)
    # copies accepted at 0.8: 3.36 tokens for 0.9 s at depth 4 (3.73/s), 3.69 for 1.0 s at 5, 3.49 for 0.7 s at 2
    assert auto.choose(request(steep)) == Pick("lookup", 4)
    draft = auto.propose(request(steep))
    assert np.array(draft.tokens).tolist() == [4, 5, 6, 7] and draft.source == "lookup" and draft.costless
    assert auto.choose(request(PassCosts.flat(8, 0.2))) == Pick("lookup", 8)  # flat verify passes: the whole match
    short = replace(request(PassCosts.flat(8, 0.2)), k=2, reach=8)  # Auto K holds the model drafter to two tokens
    assert auto.choose(short) == Pick("lookup", 8)  # a copy is not held to the model drafter's K
    # copies accepted at 0.1: 1.1 tokens for 0.6 s, a plain token costs 0.5 s; Auto K's round goes to the model
    auto.records.update({name: SourceRecord(1.0, 10.0) for name in auto.records if name.startswith("lookup")})
    auto.records["draft"] = SourceRecord(0.0, 10.0)
    assert auto.choose(request(steep)).source == "draft"


def test_a_copy_refused_at_once_or_copied_on_is_priced_deeper_than_the_same_rate_spread_evenly():
    costs = PassCosts(tuple(0.5 + 0.02 * k for k in range(17)), 0.2)
    for alpha in (0.0, 0.5, 0.9, 1.0):
        assert [Acceptance.iid(alpha).tokens(k) for k in range(5)] == pytest.approx(
            [expected_tokens(alpha, k) for k in range(5)]
        )
    # prose: three copies in ten taken at their first token, and then copied on at 0.95
    assert costs.best(Acceptance(0.3, (0.95,)), 16, drafted=False)[0] == 16  # 4.4 tokens for 0.82 s
    # a phrase: copied on at 0.95 to its fourth token, then at 0.1
    assert costs.best(Acceptance(0.3, (0.95, 0.95, 0.95, 0.1)), 16, drafted=False)[0] == 4
    assert costs.best(Acceptance.iid(0.5), 16, drafted=False)[0] == 3  # 1.88 tokens for 0.56 s


def test_a_new_reply_keeps_what_each_source_was_worth_but_lets_its_own_rounds_move_it():
    auto = model_favoured(EchoModel([]))
    auto.records["lookup@4"] = SourceRecord(90.0, 100.0)  # code: four-token tails copied on
    auto.begin(GenerationConfig(mode="auto"))
    four = auto.records["lookup@4"]
    assert four.rate == pytest.approx(0.9) and four.checked == DEFAULT_POLICY.reply_evidence
    assert auto.records["lookup@1"].checked == 0.0  # nothing learned: nothing to weigh
    for _ in range(3):
        four.add(0, 1)  # prose: this reply's copies refused
    assert four.rate < 0.6


def test_positions_prose_never_reaches_lean_on_the_ones_it_does_so_its_copies_stay_shallow():
    auto = model_favoured(EchoModel([]))
    code = {name: SourceRecord(0.95 * 6, 6.0) for name in auto.records if name.startswith("lookup+")}
    auto.records.update(code)  # the last reply, code: copies ran on
    costs = PassCosts(tuple(0.5 + 0.025 * k for k in range(17)), 0.2)  # this CPU: a 16-draft verify 0.9 s
    for _ in range(10):  # prose: two copies refused at once, six phrases that end by their seventh token
        auto._learn_lookup(4, 0, 1)
        auto._learn_lookup(4, 0, 1)
        for accepted in range(1, 7):
            auto._learn_lookup(4, accepted, accepted + 1)
    odds = auto.lookup_odds(4)
    assert odds.then[-1] < 0.6  # +9, never reached, aged and leaning on +5
    assert costs.best(odds, 16, drafted=False)[0] == 5
    unaged = Acceptance(odds.first, (*odds.then[:4], 0.95))  # positions 6 on kept at code's rate
    assert costs.best(unaged, 16, drafted=False)[0] == 12


def test_a_tail_new_to_the_pair_starts_from_the_pooled_rate_scaled_by_its_length():
    auto = model_favoured(EchoModel([5, 9, 8, 7]))
    auto.records["lookup"] = SourceRecord(9.0, 10.0)  # the warm-up was code: its copies, long tails, ran on
    auto.records["draft"] = SourceRecord(8.0, 10.0)
    assert auto.lookup_odds(4).first == pytest.approx(0.9)
    assert auto.lookup_odds(1).first == pytest.approx(0.9 / 4)  # a one-token tail, never seen: a guess
    steep = PassCosts(tuple(0.5 + 0.1 * k for k in range(9)), 0.2)  # a CPU: each token verified costs more
    prose = [1, 2, 3, 4, 5, 9, 8, 7, 6, 9, 2, 4]  # lookup's match, 5 9 8 7, after a one-token tail (4)
    request = DraftRequest(prose, 4, Sampler(GenerationConfig()), RoundPlan(4, "start", None, passes=steep))
    assert auto.choose(request).source == "draft"  # 0.225: 2.0 tokens a second, the model's 2.2
    auto.records["lookup@1"] = SourceRecord(9.0, 10.0)  # where one-token tails held, they are copied
    assert auto.lookup_odds(1).first == pytest.approx((9.0 + 0.225 * 2) / 12)
    assert auto.choose(request) == Pick("lookup", 4)


def test_short_tails_copies_learn_how_far_they_run_apart_so_prose_leaves_codes_copies_deep():
    auto = model_favoured(EchoModel([]))
    costs = PassCosts(tuple(0.5 + 0.025 * k for k in range(17)), 0.2)  # this CPU: a 16-draft verify 0.9 s
    for _ in range(10):  # code: four-token tails copied on for fifteen tokens
        auto._learn_lookup(4, 15, 15)
    deep = costs.best(auto.lookup_odds(4), 16, drafted=False)[0]
    assert deep == 16
    for _ in range(20):  # prose: one-token tails' copies that stop at their second token
        auto._learn_lookup(1, 1, 2)
    assert costs.best(auto.lookup_odds(1), 16, drafted=False)[0] <= 2
    assert costs.best(auto.lookup_odds(4), 16, drafted=False)[0] == deep  # the next code reply's copies
    assert auto.records["lookup+2:short"].rate < 0.2 < 0.9 < auto.records["lookup+2"].rate
