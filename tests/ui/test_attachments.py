"""Text files attached to a message: dropped or chosen, shown as chips, sent in the message; images, non-UTF-8
files and files the context cannot hold are refused, naming why, and the typed text is kept."""

import json
import shutil

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from specchat.engine.loading import load_model
from specchat.engine.prompt import chat_prompt_ids
from specchat.ui.chat.attachments import file_block, read_attachment, with_attachments
from specchat.ui.chat.composer import Composer

from .conftest import REPLY_TIMEOUT_MS, send

WAIT_MS = 60_000
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def _drop(widget, *paths) -> None:
    """Drag local files over a widget and drop them there, as a file manager does."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    action, button, keys = Qt.DropAction.CopyAction, Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier
    enter = QDragEnterEvent(QPoint(10, 10), action, mime, button, keys)
    QApplication.sendEvent(widget, enter)
    assert enter.isAccepted()
    QApplication.sendEvent(widget, QDropEvent(QPointF(10, 10), action, mime, button, keys))


def _composer(qtbot) -> Composer:
    composer = Composer()
    qtbot.addWidget(composer)
    composer.set_ready(True)
    composer.show()
    return composer


def test_a_dropped_text_file_is_in_the_saved_message(qtbot, open_window, dense_target, tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("# Plan\nAdd two numbers.\n", encoding="utf-8")
    window = open_window(dense_target)
    _drop(window.composer.text.viewport(), notes)
    chips = window.composer.tray.chips
    assert [chip.label.text() for chip in chips] == ["notes.md · 24 B"]
    assert window.composer.tray.isVisible()
    send(qtbot, window, "Summarise the plan.")
    saved = window.store.messages(window.chat.conversation_id)[0]
    assert saved.role == "user"
    assert saved.content == "Summarise the plan.\n\nFile: notes.md\n```md\n# Plan\nAdd two numbers.\n```"
    assert window.composer.tray.attachments == [] and not window.composer.tray.isVisible()  # sent: chips gone


def test_an_image_and_a_non_utf8_file_are_refused_and_the_text_is_kept(qtbot, tmp_path):
    image, latin = tmp_path / "photo.png", tmp_path / "latin1.txt"
    image.write_bytes(PNG)
    latin.write_bytes("café au lait".encode("latin-1"))
    disguised = tmp_path / "scan.txt"  # an image whatever its name says
    disguised.write_bytes(PNG)
    composer = _composer(qtbot)
    composer.text.setPlainText("my draft")
    said = []
    composer.refused.connect(said.append)
    _drop(composer.text.viewport(), image, latin, disguised)
    assert said == [
        "photo.png is an image: the loaded model reads text only",
        "latin1.txt is not UTF-8 text (byte 0xe9 at offset 3): only text files can be attached",
        "scan.txt is an image: the loaded model reads text only",
    ]
    assert composer.notice.text() == "\n".join(said) and composer.notice.isVisibleTo(composer)
    assert composer.tray.attachments == [] and composer.text.toPlainText() == "my draft"


def test_the_paperclip_attaches_chosen_files_and_a_chip_removes_its_file(qtbot, tmp_path):
    first, second = tmp_path / "a.py", tmp_path / "b.txt"
    first.write_text("print('a')\n", encoding="utf-8")
    second.write_text("b" * 2000, encoding="utf-8")
    composer = _composer(qtbot)
    assert composer.attach_button.accessibleName() == "Attach files" and "drop" in composer.attach_button.toolTip()
    composer.choose_files = lambda: [str(first), str(second), str(first)]
    said = []
    composer.refused.connect(said.append)
    composer.attach_button.click()
    assert [chip.label.text() for chip in composer.tray.chips] == ["a.py · 11 B", "b.txt · 2.0 KB"]
    assert said == ["a.py is attached already"]
    chip = composer.tray.chips[0]
    assert chip.remove_button.accessibleName() == "Remove a.py"
    assert composer.tab_stops().index(chip.remove_button) < composer.tab_stops().index(composer.text)
    chip.remove_button.click()
    assert [a.name for a in composer.tray.attachments] == ["b.txt"]
    with qtbot.waitSignal(composer.sendRequested) as sent:
        composer.send_button.click()  # files alone are a message
    assert sent.args == [with_attachments("", composer.tray.attachments)]


def test_a_file_block_fence_outlasts_the_backticks_in_the_file(tmp_path):
    readme = tmp_path / "README"
    readme.write_text("Use:\n````\ncode\n````", encoding="utf-8")
    block = file_block(read_attachment(readme))
    assert block == "File: README\n`````\nUse:\n````\ncode\n````\n`````"


@pytest.fixture
def small_context(dense_target, tmp_path):
    """dense_target whose config.json gives a 256-token context."""
    folder = shutil.copytree(dense_target, tmp_path / "small_context")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "max_position_embeddings": 256}))
    return folder


def _tokens(folder, messages, window) -> int:
    """The prompt's tokens as the window's engine counts them (with its thinking switch)."""
    thinking = window.composer.thinking.isChecked() and window.composer.thinking.isEnabled()
    return len(chat_prompt_ids(load_model(folder).tokenizer, messages, enable_thinking=thinking))


def test_a_file_larger_than_the_context_has_room_for_is_refused_naming_sizes(
    qtbot, open_window, small_context, tmp_path
):
    small, big = tmp_path / "small.txt", tmp_path / "big.txt"
    small.write_text("two plus two\n", encoding="utf-8")
    big.write_text("the quick brown fox jumps over the lazy dog\n" * 40, encoding="utf-8")
    window = open_window(small_context)
    composer = window.composer
    composer.text.setPlainText("Read these.")
    with qtbot.waitSignal(composer.refused, timeout=WAIT_MS) as said:
        _drop(composer.text.viewport(), small, big)
    kept = [read_attachment(small)]
    with_small = _tokens(small_context, [{"role": "user", "content": with_attachments("Read these.", kept)}], window)
    with_big = _tokens(
        small_context,
        [{"role": "user", "content": with_attachments("Read these.", [*kept, read_attachment(big)])}],
        window,
    )
    assert said.args == [
        f"big.txt was not attached: it needs {with_big - with_small:,} tokens and the context has room for "
        f"{256 - with_small} more (of 256)"
    ]
    assert [a.name for a in composer.tray.attachments] == ["small.txt"]
    assert composer.text.toPlainText() == "Read these."
    qtbot.waitUntil(lambda: composer.fill_label.text() == f"{with_small} / 256 tokens", timeout=WAIT_MS)


def test_a_message_the_context_cannot_hold_is_refused_on_send(qtbot, open_window, small_context):
    window = open_window(small_context)
    composer = window.composer
    text = "the quick brown fox jumps over the lazy dog " * 40
    needed = _tokens(small_context, [{"role": "user", "content": text.strip()}], window)
    assert needed >= 256
    said = []
    composer.refused.connect(said.append)
    composer.text.setPlainText(text)
    composer.send_button.click()  # before the count: Send waits for it, then refuses
    refusal = f"This message would need {needed:,} tokens; the model holds 256"
    qtbot.waitUntil(lambda: said == [refusal], timeout=WAIT_MS)
    assert composer.fill_label.text() == f"{needed:,} / 256 tokens" and composer.notice.text() == refusal
    assert window.store.conversations() == [] and composer.text.toPlainText() == text
    composer.send_button.click()  # counted now: refused at once
    assert said == [refusal, refusal]
    composer.text.setPlainText("short")
    qtbot.waitUntil(lambda: not composer.notice.isVisibleTo(composer), timeout=WAIT_MS)  # the warning went with it
    said.clear()
    with qtbot.waitSignal(window.chat.replyFinished, timeout=REPLY_TIMEOUT_MS):
        composer.send_button.click()
    assert window.store.messages(window.chat.conversation_id)[0].content == "short"
