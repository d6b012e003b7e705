"""The chat answers what the user does: Copy and Copy code say Copied for a moment, and the transcript follows
a streaming reply to its footer unless the user scrolled away from it."""

import pytest
from PySide6.QtCore import QPoint, QPointF, QRect, Qt
from PySide6.QtGui import QGuiApplication, QTextCursor, QWheelEvent
from PySide6.QtWidgets import QApplication

from specchat.engine.events import TextChunk
from specchat.ui.chat.markdown_source import COPIED_LABEL, COPY_LABEL
from specchat.ui.chat.message_view import COPY_TEXT, MessageView
from specchat.ui.chat.trace import ReplyTrace
from specchat.ui.chat.transcript import TranscriptView

from .conftest import char_format

WAIT_MS = 30_000
REPLY = "First:\n\n```python\nprint(1)\n```\n\nSecond:\n\n```bash\nls -la\n```\n"
FOOTER = (
    "42 tokens · 31.5 tok/s · TTFT 0.12 s · Draft model K=4; 68% of drafted tokens accepted · plain decoding "
    "share 12% · end of turn"
)


@pytest.mark.slow
def test_copy_says_copied_then_copy_again(qtbot):
    view = MessageView("user", 0, "Copy me, please.")
    qtbot.addWidget(view)
    view.show()
    view.copy_button.click()
    assert QGuiApplication.clipboard().text() == "Copy me, please."
    assert view.copy_button.text() == COPIED_LABEL == "Copied ✓"
    qtbot.waitUntil(lambda: view.copy_button.text() == COPY_TEXT, timeout=WAIT_MS)


def _link_blocks(view: MessageView) -> dict[str, str]:
    """Each copy link's href -> its text."""
    doc = view.body.document()
    links, block = {}, doc.begin()
    while block.isValid():
        href = char_format(doc, block.position()).anchorHref() if block.text() else ""
        if href:
            links[href] = block.text()
        block = block.next()
    return links


def _link_point(view: MessageView, href: str) -> QPoint:
    doc = view.body.document()
    block = doc.begin()
    while not (block.text() and char_format(doc, block.position()).anchorHref() == href):
        block = block.next()
    cursor = QTextCursor(block)
    cursor.setPosition(block.position() + 2)
    return view.body.cursorRect(cursor).center()


def test_copy_code_says_copied_on_the_link_that_was_clicked(qtbot):
    view = MessageView("assistant", 1, REPLY)
    qtbot.addWidget(view)
    view.resize(500, 400)
    view.show()
    qtbot.waitExposed(view)
    before = char_format(view.body.document(), view.body.document().toPlainText().index(COPY_LABEL, 20))
    with qtbot.waitSignal(view.body.copied, timeout=WAIT_MS) as blocker:
        qtbot.mouseClick(view.body.viewport(), Qt.MouseButton.LeftButton, pos=_link_point(view, "copy:1"))
    assert blocker.args == ["ls -la"] and QGuiApplication.clipboard().text() == "ls -la"
    assert _link_blocks(view) == {"copy:0": COPY_LABEL, "copy:1": COPIED_LABEL}
    after = char_format(view.body.document(), view.body.document().toPlainText().index(COPIED_LABEL))
    assert (after.fontPointSize(), after.foreground().color()) == (before.fontPointSize(), before.foreground().color())
    view.render()  # a redraw (a reply still streaming) keeps saying it
    assert _link_blocks(view)["copy:1"] == COPIED_LABEL
    qtbot.waitUntil(lambda: _link_blocks(view) == {"copy:0": COPY_LABEL, "copy:1": COPY_LABEL}, timeout=WAIT_MS)
    with qtbot.waitSignal(view.body.copied, timeout=WAIT_MS):  # the link still works after its text changed
        qtbot.mouseClick(view.body.viewport(), Qt.MouseButton.LeftButton, pos=_link_point(view, "copy:0"))
    assert QGuiApplication.clipboard().text() == "print(1)"


def _transcript(qtbot) -> TranscriptView:
    transcript = TranscriptView()
    qtbot.addWidget(transcript)
    transcript.resize(500, 400)
    transcript.show()
    qtbot.waitExposed(transcript)
    transcript.add_user("Tell me about rivers.")
    return transcript


def _stream(qtbot, transcript: TranscriptView, trace: ReplyTrace, lines: range) -> None:
    """Lines of a reply arrive one by one; each waits for its redraw."""
    view = transcript.views[-1]
    for i in lines:
        trace.add(TextChunk(f"Line {i} of the answer, about rivers and bridges.\n\n", (), ()))
        transcript.reply_updated()
        qtbot.waitUntil(lambda i=i: f"Line {i} " in view.body.toPlainText(), timeout=WAIT_MS)


def _footer_rect(transcript: TranscriptView, view: MessageView) -> QRect:
    return QRect(view.footer.mapTo(transcript.viewport(), QPoint(0, 0)), view.footer.size())


def _laid_out(transcript: TranscriptView, view: MessageView) -> bool:
    """The card shows its footer and the scrolling area has grown to hold it (layout runs in the event loop)."""
    content = transcript.widget()
    need = max(transcript.viewport().height(), content.heightForWidth(content.width()))
    card_bottom = view.mapTo(content, QPoint(0, view.height())).y()
    return view.footer.isVisible() and content.height() == need and card_bottom <= content.height()


def test_the_transcript_follows_a_reply_to_its_footer(qtbot):
    transcript = _transcript(qtbot)
    trace = ReplyTrace(lambda ids: "")
    view = transcript.start_reply(trace)
    bar = transcript.verticalScrollBar()
    _stream(qtbot, transcript, trace, range(20))
    qtbot.waitUntil(lambda: bar.maximum() > 0 and bar.value() == bar.maximum(), timeout=WAIT_MS)
    transcript.finish_reply(trace.text, FOOTER)

    def footer_in_view():
        assert _laid_out(transcript, view)
        assert transcript.viewport().rect().contains(_footer_rect(transcript, view)), "the footer is out of view"
        assert bar.value() == bar.maximum()

    qtbot.waitUntil(footer_in_view, timeout=WAIT_MS)


def _wheel_up(transcript: TranscriptView) -> None:
    """One notch of the mouse wheel, up."""
    centre = QPointF(transcript.viewport().rect().center())
    event = QWheelEvent(
        centre,
        QPointF(transcript.viewport().mapToGlobal(centre.toPoint())),
        QPoint(0, 0),
        QPoint(0, 120),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(transcript.viewport(), event)


@pytest.mark.slow
def test_a_reader_who_scrolled_up_keeps_their_place_when_the_reply_finishes(qtbot):
    transcript = _transcript(qtbot)
    trace = ReplyTrace(lambda ids: "")
    view = transcript.start_reply(trace)
    bar = transcript.verticalScrollBar()
    _stream(qtbot, transcript, trace, range(30))
    qtbot.waitUntil(lambda: bar.maximum() > 200 and bar.value() == bar.maximum(), timeout=WAIT_MS)
    for _ in range(3):
        _wheel_up(transcript)
    qtbot.waitUntil(lambda: bar.value() < bar.maximum() - 100, timeout=WAIT_MS)
    kept = bar.value()
    _stream(qtbot, transcript, trace, range(30, 40))
    grown = bar.maximum()
    transcript.finish_reply(trace.text, FOOTER)
    qtbot.waitUntil(lambda: _laid_out(transcript, view) and bar.maximum() > grown, timeout=WAIT_MS)
    assert bar.value() == kept
    bar.triggerAction(bar.SliderAction.SliderToMaximum)  # back at the end (the End key): followed again
    transcript.add_user("And lakes?")
    qtbot.waitUntil(
        lambda: bar.value() == bar.maximum() and not transcript.views[-1].visibleRegion().isEmpty(), timeout=WAIT_MS
    )
