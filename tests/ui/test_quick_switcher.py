"""The quick switcher (Ctrl+K): filter conversations and model pairs, move with Up/Down, Enter opens, Esc closes."""

from PySide6.QtCore import Qt
from PySide6.QtGui import QStandardItemModel
from PySide6.QtWidgets import QApplication, QComboBox

from specchat.ui.quick_switcher import CONVERSATION, MODELS, Entry, QuickSwitcher, combo_pairs, rank

CTRL = Qt.KeyboardModifier.ControlModifier
WAIT_MS = 10_000


def test_rank_is_a_case_insensitive_substring_match_best_first():
    entries = [Entry(CONVERSATION, title, n) for n, title in enumerate(["Bread recipes", "A fruit salad", "Fruit"])]
    assert [e.label for e in rank(entries, "FRUIT")] == ["Fruit", "A fruit salad"]  # the label's start first
    assert [e.label for e in rank(entries, "ui")] == ["Fruit", "A fruit salad"]  # inside words: by position
    assert [e.label for e in rank(entries, "SAL")] == ["A fruit salad"]  # a word start
    assert [e.label for e in rank(entries, "  ")] == ["Bread recipes", "A fruit salad", "Fruit"]
    assert rank(entries, "kiwi") == []


def test_the_pickers_pairs_are_the_target_with_each_usable_draft_then_each_target(qtbot):
    targets, drafts = QComboBox(), QComboBox()
    qtbot.addWidget(targets)
    qtbot.addWidget(drafts)
    targets.addItem("Qwen3-8B", "/m/q8")
    targets.addItem("Qwen3-4B", "/m/q4")
    drafts.addItem("No draft", None)
    drafts.addItem("Qwen3-0.6B", "/m/q06")
    drafts.addItem("Llama-1B", "/m/l1")
    model = drafts.model()
    assert isinstance(model, QStandardItemModel)  # a combo box's own model
    model.item(2).setEnabled(False)  # another vocabulary
    assert combo_pairs(targets, drafts) == [
        ("/m/q8", "/m/q06", "Qwen3-8B + Qwen3-0.6B"),
        ("/m/q8", None, "Qwen3-8B"),
        ("/m/q4", None, "Qwen3-4B"),
    ]


def _switcher(qtbot, conversations, pairs=()):
    opened: list[int] = []
    loaded: list[tuple[str, str | None]] = []
    switcher = QuickSwitcher(lambda: conversations, lambda: pairs, opened.append, lambda t, d: loaded.append((t, d)))
    qtbot.addWidget(switcher)
    switcher.popup()
    qtbot.waitUntil(switcher.filter.hasFocus, timeout=WAIT_MS)
    return switcher, opened, loaded


def test_typing_filters_up_down_move_and_enter_loads_a_pair(qtbot):
    pairs = [("/m/q8", "/m/q06", "Qwen3-8B + Qwen3-0.6B"), ("/m/q8", None, "Qwen3-8B")]
    switcher, opened, loaded = _switcher(qtbot, [(1, "Qwen questions"), (2, "Groceries")], pairs)
    assert switcher.shown() == ["Qwen questions", "Groceries", "Qwen3-8B + Qwen3-0.6B", "Qwen3-8B"]
    qtbot.keyClicks(switcher.filter, "qwen3")
    assert switcher.shown() == ["Qwen3-8B + Qwen3-0.6B", "Qwen3-8B"]
    qtbot.keyClick(switcher.filter, Qt.Key.Key_Down)
    assert switcher.current().label == "Qwen3-8B"
    qtbot.keyClick(switcher.filter, Qt.Key.Key_Down)  # stays on the last
    qtbot.keyClick(switcher.filter, Qt.Key.Key_Up)
    assert switcher.current().kind == MODELS and switcher.current().label == "Qwen3-8B + Qwen3-0.6B"
    qtbot.keyClick(switcher.filter, Qt.Key.Key_Return)
    assert loaded == [("/m/q8", "/m/q06")] and opened == []
    assert not switcher.isVisible()


def test_esc_closes_without_opening_anything(qtbot):
    switcher, opened, loaded = _switcher(qtbot, [(1, "Groceries")])
    qtbot.keyClick(switcher.filter, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not switcher.isVisible(), timeout=WAIT_MS)
    assert opened == [] and loaded == []


def test_ctrl_k_in_the_window_opens_the_chosen_conversation(qtbot, open_window):
    window = open_window()
    apples = window.store.create("Apples and pears")
    bananas = window.store.create("Bananas")
    window.sidebar.refresh()
    window.chat.open(apples.id)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=WAIT_MS)
    window.composer.text.setFocus()
    qtbot.waitUntil(window.composer.text.hasFocus, timeout=WAIT_MS)
    qtbot.keyClick(window.composer.text, Qt.Key.Key_K, CTRL)  # a text field's own Ctrl+K does not swallow it
    switcher = window.switcher
    qtbot.waitUntil(lambda: switcher.isVisible() and switcher.filter.hasFocus(), timeout=WAIT_MS)
    assert window.composer.text.toPlainText() == ""
    assert switcher.shown()[:2] == ["Bananas", "Apples and pears"]  # most recent first
    qtbot.keyClicks(switcher.filter, "APPLE")
    assert switcher.shown() == ["Apples and pears"]
    qtbot.keyClicks(switcher.filter, "\b\b\b\b\bban")
    assert switcher.shown() == ["Bananas"]
    qtbot.keyClick(switcher.filter, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.chat.conversation_id == bananas.id, timeout=WAIT_MS)
    assert window.sidebar.current_id() == bananas.id  # opened as a click in the list opens it
    assert not switcher.isVisible()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=WAIT_MS)
