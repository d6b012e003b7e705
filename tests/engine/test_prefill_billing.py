"""Every model's prompt work is prefill: the draft model's and the MTP head's too, never the first round's."""

import time

import pytest

from specchat.engine import Engine, GenerationConfig, PrefillProgress, TextChunk

LONG = 1500  # tokens: the draft reading them costs many times a short reply's decoding on the tiny models
TEXT = "the quick brown fox jumps over the lazy dog, then naps in the warm sun by the river. " * 60


def long_prompt(engine: Engine) -> list[int]:
    ids = list(engine.tokenizer.encode(TEXT))
    assert len(ids) >= LONG
    return ids[:LONG]


def test_the_draft_reads_the_prompt_before_the_first_token(dense_target, dense_draft_partial):
    engine = Engine.load(dense_target, dense_draft_partial)
    prompt = long_prompt(engine)
    draft_runner = engine.drafters["draft"].runner
    seen = []
    for event in engine.stream(prompt, GenerationConfig(mode="draft", num_draft_tokens=2, max_tokens=6)):
        if isinstance(event, PrefillProgress):
            seen.append((event.model, event.done, event.total, len(draft_runner.tokens)))
        elif isinstance(event, TextChunk) and not seen[-1][0] == "first token":
            seen.append(("first token", 0, 0, len(draft_runner.tokens)))
    models = [model for model, *_ in seen]
    assert models.index("draft") > models.index("target") and models[-1] == "first token"
    last_draft = [s for s in seen if s[0] == "draft"][-1]
    assert last_draft[1] == last_draft[2] == LONG - 1  # all but the last token, before any text
    assert seen[-1][3] >= LONG - 1  # the draft held the prompt when the first token came


def test_the_mtp_head_reads_the_prompt_in_prefill_too(mtp_agree):
    engine = Engine.load(mtp_agree)
    prompt = list(engine.tokenizer.encode(TEXT))[:300]
    events = list(
        engine.stream(prompt, GenerationConfig(mode="mtp", num_draft_tokens=2, max_tokens=4, mtp_history=True))
    )
    draft = [e for e in events if isinstance(e, PrefillProgress) and e.model == "draft"]
    assert draft and draft[-1].done == draft[-1].total == len(prompt) - 2
    first_text = next(i for i, e in enumerate(events) if isinstance(e, TextChunk))
    assert events.index(draft[-1]) < first_text


@pytest.mark.slow
def test_decode_time_does_not_grow_with_the_prompt_in_draft_mode(dense_target, dense_draft_partial):
    """A long prompt's decode_s stays near a short one's (before, the draft's prefill was billed to it: ~14x)."""
    engine = Engine.load(dense_target, dense_draft_partial)
    prompt = long_prompt(engine)
    cfg = GenerationConfig(mode="draft", num_draft_tokens=2, max_tokens=8)
    decode = {"short": [], "long": []}
    for _ in range(3):
        for name, ids in (("short", prompt[:12]), ("long", prompt)):
            engine.reset()
            start = time.perf_counter()
            stats = engine.generate(ids, cfg).stats
            wall = time.perf_counter() - start
            decode[name].append(stats.decode_s)
            if name == "long":  # prefill and decode split the generation's time: nothing counted twice, and
                # most of it counted (a busy machine may pause the thread between the engine's clock and ours)
                assert 0.5 * wall <= stats.prefill_s + stats.decode_s <= wall + 0.005
    assert min(decode["long"]) < 5 * min(decode["short"]), decode
