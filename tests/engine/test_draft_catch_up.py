"""A draft model catching up on a reply other sources drafted learns how its own top tokens would have fared there."""

import mlx.core as mx
import pytest

from specchat.engine import Engine, Finished, GenerationConfig
from specchat.engine.auto_drafter import AutoDrafter, SourceRecord
from specchat.engine.autok import AutoK
from specchat.engine.drafters import CatchUp, Draft, DraftModelDrafter, DraftRequest, caught_up
from specchat.engine.loading import load_model
from specchat.engine.lookup import PromptLookupDrafter
from specchat.engine.runner import ModelRunner
from specchat.engine.sampling import Sampler

from .helpers import greedy
from .test_auto_drafter import REPEATING, EchoModel
from .test_plain_probe import controller, drive


def test_each_fed_token_is_checked_against_the_top_token_before_it():
    logits = mx.zeros((4, 6)).at[0, 2].add(1.0).at[1, 5].add(1.0).at[2, 1].add(1.0)  # predicts 2, 5, 1
    read = caught_up(logits, mx.array([0, 2, 3, 1], dtype=mx.uint32))  # 2 held, 3 did not, 1 held
    assert read is not None and (read.agreed.item(), read.compared) == (2, 3)
    assert caught_up(logits[:1], mx.array([4], dtype=mx.uint32)) is None  # one fed token predicts nothing fed


@pytest.fixture(scope="module")
def engine(dense_target, dense_draft_partial):
    return Engine.load(dense_target, dense_draft_partial)


@pytest.fixture(scope="module")
def draft_model(dense_draft_partial):
    return load_model(dense_draft_partial).model


def own_greedy(model, seq: list[int], n: int) -> list[int]:
    """The model's own greedy continuation of seq, n tokens."""
    out = list(seq)
    for _ in range(n):
        out.append(int(mx.argmax(model(mx.array(out)[None])[0, -1]).item()))
    return out[len(seq) :]


def test_a_draft_model_behind_the_reply_counts_how_its_top_tokens_agreed_with_it(draft_model):
    prompt = [3, 17, 42, 8, 99, 5, 61]
    reply = [*own_greedy(draft_model, prompt, 5), 7, 7, 300]  # its own tokens, then three it would not write
    seq = prompt + reply
    logits = draft_model(mx.array(seq)[None])[0]
    expected = sum(int(mx.argmax(logits[i]).item()) == seq[i + 1] for i in range(len(prompt) - 1, len(seq) - 1))
    assert 5 <= expected < len(reply)  # the check can fail both ways

    drafter = DraftModelDrafter(ModelRunner(draft_model))
    drafter.runner.prefill(prompt[:-1])  # read as the engine reads a prompt; the reply came from other sources' rounds
    draft = drafter.propose(DraftRequest(seq, 2, Sampler(GenerationConfig())))
    assert draft.read is not None
    assert (draft.read.agreed.item(), draft.read.compared) == (expected, len(reply))

    sampled = DraftModelDrafter(ModelRunner(draft_model))
    sampled.runner.prefill(prompt[:-1])
    hot = sampled.propose(DraftRequest(seq, 2, Sampler(GenerationConfig(temperature=1.0, seed=1))))
    assert hot.read is None  # sampled drafts are accepted by their probabilities, not their top tokens


class CatchingUpModel(EchoModel):
    """A model drafter stand-in whose proposals caught up on the reply first."""

    def __init__(self, tokens: list[int], read: CatchUp):
        super().__init__(tokens)
        self.read = read

    def propose(self, request):
        return Draft(mx.array(self.tokens[: request.k], dtype=mx.uint32), None, read=self.read)


def test_auto_counts_the_catch_up_in_the_model_drafters_record():
    auto = AutoDrafter(CatchingUpModel([5, 6], CatchUp(mx.array(7), 8)), PromptLookupDrafter(64))  # type: ignore[arg-type]
    auto.records["draft"] = SourceRecord(5.0, 10.0)
    seq = [11, 12, 13, 14]
    draft = auto.propose(DraftRequest(list(seq), 2, Sampler(GenerationConfig())))
    assert draft.source == "draft"
    auto.observe([*seq, 5, 9])  # its first draft taken, its second refused; 7 of 8 caught up on agreed
    record = auto.records["draft"]
    assert (record.accepted, record.checked) == (pytest.approx(5.0 * 0.95 + 1 + 7), pytest.approx(10.0 * 0.95 + 2 + 8))


def test_a_catch_up_the_draft_would_have_drafted_brings_plain_decoding_back_to_speculation():
    """Auto K went plain on a story (plain_probe.py's synthetic rounds); the draft model's catch-up on the plain
    burst shows whether drafting would have paid there, and Auto K follows it."""
    alone, agreed, refused = controller(), controller(), controller()
    for auto in (alone, agreed, refused):
        drive(auto, 12)
        auto.choose()  # the probe from plain decoding
        assert auto.choose() == 0
    agreed.observe_read(31, 31)  # its top token was the target's 31 times out of 31
    refused.observe_read(10, 31)
    assert (alone.choose(), agreed.choose(), refused.choose()) == (0, 4, 0)
    assert agreed.alpha > 0.9 > 0.5 > refused.alpha


def test_a_round_after_others_drafted_tells_auto_k_what_the_draft_model_read(engine, monkeypatch):
    """Auto on a conversation that repeats, Auto K choosing: every catch-up the draft model read at its rounds
    (the runs it did not draft) reaches Auto K as read."""
    reads, told = [], []
    propose = DraftModelDrafter.propose

    def proposing(self, request):
        draft = propose(self, request)
        if draft.read is not None:
            reads.append((int(draft.read.agreed.item()), draft.read.compared))
        return draft

    monkeypatch.setattr(DraftModelDrafter, "propose", proposing)
    monkeypatch.setattr(AutoK, "observe_read", lambda self, agreed, compared: told.append((agreed, compared)))
    history = list(engine.tokenizer.encode(REPEATING))
    reply = engine.generate(history, greedy(n=30)).tokens
    events = list(
        engine.stream(
            history + reply + history[:6], GenerationConfig(mode="auto", num_draft_tokens="auto", max_tokens=40)
        )
    )
    assert isinstance(events[-1], Finished)
    assert reads and told == reads
