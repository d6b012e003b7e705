"""Fixtures for window tests: app folders under tmp_path, a window factory, a send helper."""

import gc
from pathlib import Path

import pytest

from specchat.paths import AppPaths

# The hub tests' fixtures (HF cache in tmp_path, a loopback hub serving the tiny target and draft), for the
# Models window tests.
from tests.hub.conftest import draft_repo, hub, hub_config, hub_env, target_repo  # noqa: F401

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
MAX_TOKENS = 24
LOAD_TIMEOUT_MS = 300_000  # upper bounds of waits on signals: several times the unloaded time
REPLY_TIMEOUT_MS = 300_000


@pytest.fixture(autouse=True)
def _collect_on_the_gui_thread():
    """As in the app (ui/gui_gc.py): no automatic collection during a window test, whose engine and worker
    threads would otherwise collect cycles holding Qt objects off the GUI thread; one collection after it."""
    gc.disable()
    try:
        yield
    finally:
        gc.collect()
        # What outlived the test (modules, session fixtures) is not scanned again: each collection then costs
        # what the test allocated, not the whole interpreter's heap (about 0.3 s a test).
        gc.freeze()
        gc.enable()


@pytest.fixture
def paths(tmp_path) -> AppPaths:
    """Every app folder under this test's tmp_path."""
    return AppPaths.under(tmp_path / "home")


@pytest.fixture
def open_window(qtbot, paths):
    """Make a MainWindow (closed at teardown); waits for the models when a target is given."""
    from specchat.ui.main_window import MainWindow

    def make(target=None, draft=None, at: AppPaths | None = None, max_tokens: int = MAX_TOKENS):
        window = MainWindow(at or paths, target=str(target) if target else None, draft=str(draft) if draft else None)
        qtbot.addWidget(window)
        window.show()
        window.panel.max_tokens.setValue(max_tokens)
        if window.requested[0]:  # the given pair, else the saved one
            qtbot.waitUntil(lambda: window.pair is not None or window.banner.level == "error", timeout=LOAD_TIMEOUT_MS)
        return window

    return make


def send(qtbot, window, text: str, timeout: int = REPLY_TIMEOUT_MS):
    """Type a message, press Send and return the Finished event."""
    with qtbot.waitSignal(window.chat.replyFinished, timeout=timeout) as blocker:
        window.composer.text.setPlainText(text)
        window.composer.send_button.click()
    return blocker.args[0]


def screenshot(widget, name: str) -> Path:
    """Save widget.grab() as test-artifacts/<name>.png."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    assert widget.grab().save(str(path)), f"could not save {path}"
    return path


def char_format(doc, position: int):
    """The character format of the character at `position` of a QTextDocument."""
    from PySide6.QtGui import QTextCursor

    cursor = QTextCursor(doc)
    cursor.setPosition(position + 1)  # a cursor reports the format of the character before it
    return cursor.charFormat()


def document_tooltips(text_view) -> dict[int, str]:
    """The hover text of each character of a rendered text view that has one, by position in the document."""
    doc = text_view.document()
    tips = {i: char_format(doc, i).toolTip() for i in range(doc.characterCount() - 1)}
    return {i: tip for i, tip in tips.items() if tip}
