"""Qt-free pieces of the chat pane: thinking split, Markdown alignment, copy links, traces, footers."""

import json

from specchat.engine.events import PrefillProgress, Rejection, RoundResult, TextChunk
from specchat.ui.chat.footer import footer_text
from specchat.ui.chat.markdown_source import copy_index, prepare_markdown
from specchat.ui.chat.trace import ReplyTrace, align, saved_trace, split_thinking, trace_data


def test_split_thinking_open_closed_and_absent():
    parts = split_thinking("<think>\nplan it\n</think>\n\nThe answer.")
    assert (parts.thinking, parts.thinking_done, parts.answer) == ("\nplan it\n", True, "The answer.")
    text = "<think>\nplan it\n</think>\n\nThe answer."
    assert text[parts.answer_start :] == "The answer." and text[parts.thinking_start :].startswith("\nplan")
    streaming = split_thinking("<think>still going")
    assert (streaming.thinking, streaming.thinking_done, streaming.answer) == ("still going", False, "")
    plain = split_thinking("No thinking here.")
    assert plain.thinking is None and plain.answer == "No thinking here."


def test_align_maps_rendered_characters_back_to_markdown_source():
    source = "Some **bold** and `code`.\n\n- item"
    rendered = "Some bold and code.\u2029item"
    mapping = align(source, rendered)
    assert [source[i] for i in mapping if i is not None] == [c if c != "\u2029" else "\n" for c in rendered]
    assert source[mapping[rendered.index("b")] :].startswith("bold**")


def test_copy_links_are_inserted_above_each_code_block_and_map_to_nothing():
    text = "Try:\n```python\nx = 1\nprint(x)\n```\nand\n~~~\nraw\n~~~\n"
    prepared = prepare_markdown(text)
    assert prepared.code_blocks == ["x = 1\nprint(x)", "raw"]
    assert "[Copy code](copy:0)" in prepared.markdown and "[Copy code](copy:1)" in prepared.markdown
    kept = "".join(prepared.markdown[i] for i, o in enumerate(prepared.origin) if o is not None)
    assert kept == text
    assert all(prepared.markdown[i] == text[o] for i, o in enumerate(prepared.origin) if o is not None)
    assert copy_index("copy:1") == 1 and copy_index("https://x") is None


def test_an_unclosed_fence_while_streaming_still_offers_its_code():
    assert prepare_markdown("```\npartial line").code_blocks == ["partial line"]


def test_trace_marks_draft_characters_and_places_rejections():
    pieces = {1: "ab", 2: "c", 3: "de", 4: "X", 5: "Y"}
    trace = ReplyTrace(lambda ids: "".join(pieces[i] for i in ids))
    trace.add(TextChunk("abc", (1, 2), (True, False)))
    trace.add(RoundResult(0, 2, 2, 1, 2, 0.0, 0.0, Rejection(1, 4, 2)))
    trace.add(TextChunk("de", (3,), (False,)))
    assert trace.text == "abcde" and trace.tokens == [1, 2, 3]
    assert trace.char_from_draft == [True, True, False, False, False]
    assert trace.token_starts == [0, 2, 3]
    assert list(trace.rejection_chars()) == [2]  # the one-character token "c"
    spot = trace.rejection_chars()[2]
    assert (spot.proposed, spot.chosen) == ("X", "c")
    assert spot.tooltip == "Drafter proposed 'X'; target chose 'c'"


def test_a_rejection_marks_the_whole_word_of_its_token_not_its_leading_space():
    pieces = {1: "Hello", 2: " world", 3: "!", 9: " there"}
    trace = ReplyTrace(lambda ids: "".join(pieces[i] for i in ids))
    trace.add(TextChunk("Hello world!", (1, 2, 3), (True, False, False)))
    trace.add(RoundResult(0, 2, 2, 1, 2, 0.0, 0.0, Rejection(1, 9, 2)))
    spots = trace.rejection_chars()
    assert sorted(spots) == [6, 7, 8, 9, 10] and trace.text[6:11] == "world"
    assert {spot.chosen for spot in spots.values()} == {" world"}


def test_a_trace_saved_as_json_gives_back_the_same_tints_and_rejections():
    pieces = {1: "ab", 2: "c", 3: "de", 4: "X", 5: "Y"}
    trace = ReplyTrace(lambda ids: "".join(pieces[i] for i in ids))
    trace.add(PrefillProgress(8, 16))
    trace.add(TextChunk("abc", (1, 2), (True, False)))
    trace.add(RoundResult(0, 2, 2, 1, 2, 0.0, 0.0, Rejection(1, 4, 2)))
    trace.add(TextChunk("de", (3, 1), (True, True)))
    assert trace.prefill == PrefillProgress(8, 16)
    data = trace_data(trace)
    assert data == {"flags": [0, 2, 1, 2], "rejections": [[2, 1, "X", "c"]]}
    saved = saved_trace(trace.text, json.loads(json.dumps(data)))
    assert saved.char_from_draft == trace.char_from_draft and sum(saved.char_from_draft) == 4
    assert saved.rejection_chars() == trace.rejection_chars() and saved.prefill is None
    assert saved_trace("plain", None) is None


def test_footer_names_tokens_speed_ttft_acceptance_mode_and_k():
    stats = {
        "generated_tokens": 42,
        "decode_tokens_per_s": 31.46,
        "ttft_s": 0.123,
        "acceptance_rate": 0.675,
        "mode": "draft",
        "num_draft_tokens": 4,
    }
    assert footer_text(stats) == (
        "42 tokens · 31.5 tok/s · TTFT 0.12 s · Draft model K=4; 68% of drafted tokens accepted"
    )  # an old saved dict: no drafted count
    off = footer_text({**stats, "mode": "baseline"}, cancelled=True)
    assert off == "42 tokens · 31.5 tok/s · TTFT 0.12 s · speculation off · stopped by you"
    assert footer_text(None, cancelled=True) == "stopped by you"


def test_the_card_says_when_the_draft_is_reading_the_prompt():
    from specchat.engine import PrefillProgress
    from specchat.ui.chat.message_actions import stopped_notice
    from specchat.ui.chat.message_view import prefill_text
    from specchat.ui.chat.trace import ReplyTrace

    assert prefill_text(1024, 4096) == "Reading the prompt… 1,024 / 4,096 tokens"
    assert prefill_text(512, 4095, "draft") == "Draft reading the prompt… 512 / 4,095 tokens"
    trace = ReplyTrace(lambda ids: "")
    trace.add(PrefillProgress(4095, 4095))
    trace.add(PrefillProgress(512, 4095, "draft"))
    assert stopped_notice(trace, None) == (
        "Stopped by you while the draft read the prompt (512 / 4,095 tokens): nothing was generated"
    )
