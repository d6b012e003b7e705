"""A reply cut inside a multi-byte character ends on whole characters: no U+FFFD in its text or its stream."""

import pytest

import specchat.engine.engine as engine_module
from specchat.engine import Engine, Finished, GenerationConfig, TextChunk
from specchat.engine.engine import whole_characters
from specchat.engine.round import Step

from .helpers import prompt_ids


def test_whole_characters_drops_only_a_trailing_cut_sequence():
    assert whole_characters("caf\ufffd") == "caf"
    assert whole_characters("a\ufffd\ufffd") == "a"
    assert whole_characters("caf\u00e9") == "caf\u00e9" and whole_characters("") == ""


@pytest.mark.parametrize("cut", [True, False])
def test_a_reply_ending_mid_character_ends_on_the_last_whole_one(dense_target, monkeypatch, cut):
    engine = Engine.load(dense_target)
    hf = engine.tokenizer._tokenizer
    word = hf.encode("Hello", add_special_tokens=False)
    first_byte, second_byte = hf.convert_tokens_to_ids(["\u00c3", "\u00a9"])  # "é" is C3 A9, byte-level
    assert engine.tokenizer.decode(word + [first_byte]).endswith("\ufffd")  # what the fix is for
    reply = word + [first_byte] + ([] if cut else [second_byte])

    def scripted_steps(_runner, _ctx):  # the model's choice is not the point: the end of the stream is
        yield Step(reply, [False] * len(reply), stop="length")

    monkeypatch.setattr(engine_module, "baseline_steps", scripted_steps)
    events = list(engine.stream(prompt_ids(engine), GenerationConfig(max_tokens=len(reply))))
    final = events[-1]
    assert isinstance(final, Finished) and list(final.tokens) == reply
    streamed = "".join(e.text for e in events if isinstance(e, TextChunk))
    expected = "Hello" if cut else "Hello\u00e9"
    assert final.text == expected and streamed == expected
