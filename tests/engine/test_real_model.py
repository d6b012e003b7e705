"""A real trained chat model (SmolLM2-135M-Instruct, 4-bit): template, EOS, text, identity."""

import pytest

from specchat.engine import Engine, Finished, GenerationConfig, TextChunk
from specchat.engine.session import ChatSession

pytestmark = pytest.mark.slow  # a real 4-bit model: quantized matmuls are slow on the CPU backend


@pytest.fixture(scope="module")
def smollm(smollm_dir):
    return Engine.load(smollm_dir, draft=smollm_dir)


@pytest.mark.slow
def test_chat_reply_stops_at_end_of_turn_and_streams_exact_text(smollm):
    session = ChatSession(smollm)
    events = list(session.send("Reply with one word: hello", GenerationConfig(max_tokens=48)))
    final = events[-1]
    assert isinstance(final, Finished)
    prompt_text = smollm.tokenizer.decode(session.prompt_ids(session.messages[:1]))
    assert prompt_text.startswith("<|im_start|>") and prompt_text.rstrip().endswith("assistant")
    assert final.stats.stop_reason == "eos", final.text
    end_of_turn = smollm.tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert end_of_turn in smollm.tokenizer.eos_token_ids
    streamed = "".join(e.text for e in events if isinstance(e, TextChunk))
    assert streamed == final.text == smollm.tokenizer.decode(list(final.tokens))
    assert session.messages[-1] == {"role": "assistant", "content": final.text}


@pytest.mark.slow
def test_accented_reply_streams_the_same_text_as_decoding(smollm):
    ids = smollm.tokenizer.apply_chat_template(
        [{"role": "user", "content": "Write the word café three times."}], add_generation_prompt=True
    )
    events = list(smollm.stream(ids, GenerationConfig(max_tokens=24)))
    final = events[-1]
    assert "é" in final.text
    assert "".join(e.text for e in events if isinstance(e, TextChunk)) == final.text


@pytest.mark.slow
def test_self_draft_is_identical_to_baseline(smollm):
    ids = smollm.tokenizer.apply_chat_template(
        [{"role": "user", "content": "Name three colours."}], add_generation_prompt=True
    )
    base = smollm.generate(ids, GenerationConfig(max_tokens=16))
    spec = smollm.generate(ids, GenerationConfig(mode="draft", num_draft_tokens=3, max_tokens=16))
    assert spec.tokens == base.tokens and spec.stats.acceptance_rate == 1.0
