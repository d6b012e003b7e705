"""Text chunks never split a multi-byte character, whatever the token boundaries."""

from specchat.engine import Engine
from specchat.engine.config import GenerationConfig
from specchat.engine.engine import step_events
from specchat.engine.round import Step
from specchat.engine.stats import StatsRecorder

TEXT = "日本語 café naïve 🙂 done"


def test_byte_level_tokens_stream_to_whole_characters(dense_target):
    engine = Engine.load(dense_target)
    tokens = list(engine.tokenizer.encode(TEXT))
    assert len(tokens) > len(TEXT.split()), "the tiny tokenizer should split characters into bytes"
    detok = engine.tokenizer.detokenizer
    detok.reset()
    out, pieces = [], []
    stats = StatsRecorder(GenerationConfig(), 1, 0)
    for token in tokens:  # one token per step, as plain decoding emits them
        for chunk in step_events(Step([token], [False]), detok, out, stats):
            pieces.append(chunk.text)
    detok.finalize()
    pieces.append(detok.last_segment)
    assert "".join(pieces) == engine.tokenizer.decode(tokens) == TEXT
    assert all("\ufffd" not in p for p in pieces)
