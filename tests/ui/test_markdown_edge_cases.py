"""Tricky Markdown renders like a plain code block does: empty and unterminated fences, fences in lists, nested
and inline backticks, very long lines. Each case is held to the look of PLAIN: code blocks left-aligned on
their shaded background, nothing in italics, one small 'Copy code' link above each block that has code."""

from dataclasses import dataclass

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextFormat

from specchat.engine.events import TextChunk
from specchat.ui.chat.markdown_source import COPY_LABEL, copy_index
from specchat.ui.chat.message_view import MessageView
from specchat.ui.chat.trace import ReplyTrace
from specchat.ui.chat.transcript import TranscriptView

from .conftest import char_format

PLAIN = "Here:\n\n```python\nprint(1)\n```\n\nDone."
WIDTH = 420


@dataclass(frozen=True)
class Look:
    """What a rendered code block and its copy link look like."""

    code_alignment: int
    code_background: str
    code_family: str
    link_alignment: int
    link_size: float
    link_colour: str


def card(qtbot, text: str) -> MessageView:
    view = MessageView("assistant", 1, text)
    qtbot.addWidget(view)
    view.resize(WIDTH, 300)
    return view


def blocks(view: MessageView) -> list:
    doc = view.body.document()
    found, block = [], doc.begin()
    while block.isValid():
        found.append(block)
        block = block.next()
    return found


def is_code(block) -> bool:
    return block.blockFormat().hasProperty(QTextFormat.Property.BlockCodeFence)


def link_href(view: MessageView, block) -> str:
    return char_format(view.body.document(), block.position()).anchorHref() if block.text() else ""


def look_of(view: MessageView) -> Look:
    """The look of the first code block and the first copy link of a card."""
    code = next(b for b in blocks(view) if is_code(b))
    link = next(b for b in blocks(view) if link_href(view, b))
    fmt = char_format(view.body.document(), link.position())
    return Look(
        int(code.blockFormat().alignment()),
        code.blockFormat().background().color().name(),
        char_format(view.body.document(), code.position()).font().family(),
        int(link.blockFormat().alignment()),
        fmt.fontPointSize(),
        fmt.foreground().color().name(),
    )


@pytest.fixture
def plain_look(qtbot) -> Look:
    look = look_of(card(qtbot, PLAIN))
    assert look.code_alignment & int(Qt.AlignmentFlag.AlignLeft) and look.link_alignment == int(
        Qt.AlignmentFlag.AlignRight
    )
    return look


def assert_renders_like_plain(view: MessageView, look: Look, code: list[str]) -> None:
    """Code blocks and links look like PLAIN's, one link right above each block with code, no italics."""
    doc = view.body.document()
    assert not [i for i in range(doc.characterCount() - 1) if char_format(doc, i).fontItalic()], "italic text"
    assert_code_looks_plain(view, look)
    assert_links_look_plain(view, look, len(code))
    assert view.body.code_blocks == code


def assert_code_looks_plain(view: MessageView, look: Look) -> None:
    """Every code line is left-aligned on the shaded background in the code font, and may wrap."""
    all_blocks = blocks(view)
    for i, block in enumerate(all_blocks):
        if not is_code(block):
            continue
        where = f"code line {block.text()!r}"
        assert int(block.blockFormat().alignment()) == look.code_alignment, where
        assert block.blockFormat().background().color().name() == look.code_background, where
        assert not block.blockFormat().nonBreakableLines(), where  # long lines wrap inside the block
        font = char_format(view.body.document(), block.position()).font().family()
        assert font == look.code_family or not block.text(), where
        starts_run = i == 0 or not is_code(all_blocks[i - 1])
        if starts_run and _run_text(all_blocks, i).strip():
            assert i > 0 and link_href(view, all_blocks[i - 1]), f"{where} has no copy link above it"


def assert_links_look_plain(view: MessageView, look: Look, count: int) -> None:
    """copy:0 … copy:count-1, each a small right-aligned link right above a code block."""
    doc = view.body.document()
    links = [b for b in blocks(view) if link_href(view, b)]
    assert [link_href(view, b) for b in links] == [f"copy:{i}" for i in range(count)]
    for block in links:
        fmt = char_format(doc, block.position())
        assert block.text() == COPY_LABEL and copy_index(fmt.anchorHref()) is not None
        assert int(block.blockFormat().alignment()) == look.link_alignment
        assert (fmt.fontPointSize(), fmt.foreground().color().name()) == (look.link_size, look.link_colour)
        assert not fmt.fontUnderline()
        following = block.next()
        assert following.isValid() and is_code(following), f"{block.text()!r} is not above a code block"


def _run_text(all_blocks: list, start: int) -> str:
    lines = []
    for block in all_blocks[start:]:
        if not is_code(block):
            break
        lines.append(block.text())
    return "\n".join(lines)


def test_a_code_block_followed_by_empty_fences_renders_like_a_plain_one(qtbot, plain_look):
    view = card(qtbot, "```python\nprint(1)\n```\n```\n```\n```\n```")
    code = next(b for b in blocks(view) if b.text() == "print(1)")
    assert is_code(code) and int(code.blockFormat().alignment()) == plain_look.code_alignment
    assert code.blockFormat().background().color().name() == plain_look.code_background
    assert_renders_like_plain(view, plain_look, ["print(1)"])
    assert view.body.document().toPlainText() == f"{COPY_LABEL}\nprint(1)"


@pytest.mark.parametrize(
    "text",
    ["Text\n\n```\n```\n\nMore", "```\n```", "```\n   \n```\nafter", "~~~\n~~~\n```python\n```"],
    ids=["between-paragraphs", "alone", "blank-line", "tilde-and-tagged"],
)
def test_empty_fences_get_no_copy_link(qtbot, plain_look, text):
    view = card(qtbot, text)
    assert_renders_like_plain(view, plain_look, [])
    assert COPY_LABEL not in view.body.document().toPlainText()


def test_two_blocks_in_a_row_each_get_their_own_link(qtbot, plain_look):
    view = card(qtbot, "```python\nprint(1)\n```\n```python\nprint(2)\n```")
    assert_renders_like_plain(view, plain_look, ["print(1)", "print(2)"])


def test_an_unterminated_fence_looks_right_at_every_step_of_streaming(qtbot, plain_look):
    text = "Intro\n\n```python\nx = 1\ny = [x, 2]\n```\nAfter ```it```, more:\n~~~\nraw\n"
    final = ["x = 1\ny = [x, 2]", "raw"]
    view = MessageView("assistant", 1)
    qtbot.addWidget(view)
    view.resize(WIDTH, 300)
    trace = ReplyTrace(lambda ids: "")
    view.start_trace(trace)
    for ch in text:
        trace.add(TextChunk(ch, (), ()))
        view.render()
        code = view.body.code_blocks
        assert_renders_like_plain(view, plain_look, code)
        assert len(code) <= 2 and all(c.strip() for c in code)
        # what has arrived of each block (a closing fence being typed shows as code until it is complete)
        assert all(final[i].startswith(c.rstrip("`").rstrip("\n")) for i, c in enumerate(code)), code
    assert view.body.code_blocks == final  # the reply ends inside the ~~~ fence: still a block with its link


def test_fences_inside_list_items_keep_the_list_and_their_links(qtbot, plain_look):
    text = "1. Install:\n   ```bash\n   pip install x\n   ```\n2. Run:\n   ```bash\n   x --help\n   ```\n\n- a\n  ```\n  b\n  ```\n- c"
    view = card(qtbot, text)
    assert_renders_like_plain(view, plain_look, ["pip install x", "x --help", "b"])
    by_text = {b.text(): b for b in blocks(view)}
    first, second = by_text["Install:"].textList(), by_text["Run:"].textList()
    assert first is not None and first == second and second.itemNumber(by_text["Run:"]) == 1  # still item 2
    bullets = by_text["a"].textList()
    assert bullets is not None and bullets == by_text["c"].textList()


def test_a_fence_of_four_backticks_shows_the_three_inside_it(qtbot, plain_look):
    view = card(qtbot, "````markdown\n```python\nx = 1\n```\n````\n\nAfter.")
    assert_renders_like_plain(view, plain_look, ["```python\nx = 1\n```"])
    code = [b.text() for b in blocks(view) if is_code(b)]
    assert code == ["```python", "x = 1", "```"] and blocks(view)[-1].text() == "After."


def test_inline_code_with_backticks_is_no_code_block(qtbot, plain_look):
    text = "Use `` a`b `` here.\n\n```print(1)```\n\n```python\nx = 1\n```"
    view = card(qtbot, text)
    assert_renders_like_plain(view, plain_look, ["x = 1"])
    doc = view.body.document()
    plain = doc.toPlainText()
    assert plain.startswith("Use a`b here.\nprint(1)\n")
    for word in ("a`b", "print(1)"):
        fmt = char_format(doc, plain.index(word))
        assert fmt.fontFixedPitch() and fmt.background().color().name() == plain_look.code_background


def test_tabs_in_code_are_copied_as_written(qtbot, plain_look):
    view = card(qtbot, "```make\nall:\n\tcc -o x x.c\n```")
    assert_renders_like_plain(view, plain_look, ["all:\n\tcc -o x x.c"])


def test_very_long_lines_wrap_inside_the_card(qtbot, plain_look):
    transcript = TranscriptView()
    qtbot.addWidget(transcript)
    transcript.resize(WIDTH, 600)
    transcript.show()
    long_code = "values = [" + ", ".join(str(i) for i in range(120)) + "]"
    text = f"A {'w' * 300} word.\n\n```python\n{long_code}\n```\n\n`{'z' * 200}`"
    trace = ReplyTrace(lambda ids: "")
    transcript.start_reply(trace)
    trace.add(TextChunk(text, (), ()))
    transcript.finish_reply(text, "42 tokens")
    view = transcript.views[-1]
    assert_renders_like_plain(view, plain_look, [long_code])

    def fits():
        body = view.body
        assert view.width() > 0 and body.width() > 0
        assert transcript.widget().width() <= transcript.viewport().width()
        assert view.mapTo(transcript.viewport(), view.rect().topRight()).x() < transcript.viewport().width()
        assert body.document().idealWidth() <= body.viewport().width() + 1
        assert body.horizontalScrollBar().maximum() == 0
        assert body.height() >= body.document().size().height()  # every wrapped line is shown

    qtbot.waitUntil(fits, timeout=30_000)
