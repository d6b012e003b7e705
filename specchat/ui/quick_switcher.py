"""The quick switcher (Ctrl+K): type to find a conversation or a local model pair, Enter opens or loads it.

It knows nothing of the window: it is given narrow providers (what to list) and actions (what Enter does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QKeyEvent, QKeySequence
from PySide6.QtWidgets import QComboBox, QDialog, QLabel, QLineEdit, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

SHORTCUT = "Ctrl+K"
CONVERSATION, MODELS = "conversation", "models"
KIND_HINTS = {CONVERSATION: "open conversation", MODELS: "load models"}
MOVE_KEYS = (Qt.Key.Key_Up, Qt.Key.Key_Down, Qt.Key.Key_PageUp, Qt.Key.Key_PageDown)
ACTIVATE_KEYS = (Qt.Key.Key_Return, Qt.Key.Key_Enter)
ENTRY_ROLE = Qt.ItemDataRole.UserRole


@dataclass(frozen=True)
class Entry:
    """One row: a conversation (key: its id) or a model pair (key: (target folder, draft folder or None))."""

    kind: str
    label: str
    key: object


def rank(entries: Sequence[Entry], query: str) -> list[Entry]:
    """The entries whose label holds the query (case-insensitive), best first: labels that start with it,
    then those with a word that starts with it, then the rest, each group by where the match is and then in
    the given order. An empty query keeps every entry in order."""
    needle = query.strip().casefold()
    if not needle:
        return list(entries)
    scored = []
    for order, entry in enumerate(entries):
        label = entry.label.casefold()
        at = label.find(needle)
        if at < 0:
            continue
        if at == 0:
            group = 0
        elif any(word.startswith(needle) for word in label.split()):
            group = 1
        else:
            group = 2
        scored.append((group, at, order, entry))
    return [entry for *_, entry in sorted(scored, key=lambda s: s[:3])]


def combo_pairs(targets: QComboBox, drafts: QComboBox) -> list[tuple[str, str | None, str]]:
    """(target, draft, label) for the model pairs the toolbar's pickers offer: the chosen target with each
    draft that may draft for it, then every target alone."""
    pairs: list[tuple[str, str | None, str]] = []
    target, target_name = targets.currentData(), targets.currentText()
    model = drafts.model()
    if target:
        for row in range(drafts.count()):
            draft = drafts.itemData(row)
            usable = model.flags(model.index(row, 0)) & Qt.ItemFlag.ItemIsEnabled
            if draft and usable:
                pairs.append((target, draft, f"{target_name} + {drafts.itemText(row)}"))
    for row in range(targets.count()):
        if targets.itemData(row):
            pairs.append((targets.itemData(row), None, targets.itemText(row)))
    return pairs


class QuickSwitcher(QDialog):
    """A small popup: a filter line above the matching conversations and model pairs.

    conversations() gives (id, title) most recent first; pairs() gives (target, draft, label). Enter calls
    open_conversation(id) or load_pair(target, draft) and closes; Esc closes."""

    def __init__(
        self,
        conversations: Callable[[], Iterable[tuple[int, str]]],
        pairs: Callable[[], Iterable[tuple[str, str | None, str]]],
        open_conversation: Callable[[int], None],
        load_pair: Callable[[str, str | None], None],
        parent: QWidget | None = None,
    ):
        super().__init__(parent)
        self.setObjectName("quickSwitcher")
        self.setWindowTitle("Go to")
        self.setWindowFlag(Qt.WindowType.FramelessWindowHint)
        self.setModal(True)
        self._conversations, self._pairs = conversations, pairs
        self._open_conversation, self._load_pair = open_conversation, load_pair
        self.entries: list[Entry] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 10, 10, 10)
        layout.setSpacing(6)
        self.filter = QLineEdit(placeholderText="Go to a conversation or load models…")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._refilter)
        self.filter.installEventFilter(self)
        self.list = QListWidget()
        self.list.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the keys stay in the filter line
        self.list.setUniformItemSizes(True)
        self.list.itemClicked.connect(self._activate)
        self.hint = QLabel("↑↓ to move · Enter to open · Esc to close", objectName="footer")  # type: ignore[call-overload]
        layout.addWidget(self.filter)
        layout.addWidget(self.list)
        layout.addWidget(self.hint)
        self.resize(520, 360)

    def popup(self) -> None:
        """Fill the list afresh, clear the filter and show the switcher over its parent, the filter focused."""
        conversations = [Entry(CONVERSATION, title, cid) for cid, title in self._conversations()]
        models = [Entry(MODELS, label, (target, draft)) for target, draft, label in self._pairs()]
        self.entries = conversations + models
        self.filter.blockSignals(True)
        self.filter.clear()
        self.filter.blockSignals(False)
        self._refilter("")
        parent = self.parentWidget()
        if parent is not None:
            frame = parent.geometry()
            self.move(frame.center().x() - self.width() // 2, frame.top() + frame.height() // 6)
        self.show()
        self.raise_()
        self.activateWindow()
        self.filter.setFocus(Qt.FocusReason.PopupFocusReason)

    def shown(self) -> list[str]:
        """The labels listed now, in order."""
        return [self.list.item(row).data(ENTRY_ROLE).label for row in range(self.list.count())]

    def current(self) -> Entry | None:
        """The highlighted entry."""
        item = self.list.currentItem()
        return item.data(ENTRY_ROLE) if item is not None else None

    def _refilter(self, text: str) -> None:
        self.list.clear()
        for entry in rank(self.entries, text):
            item = QListWidgetItem(f"{entry.label}  ·  {KIND_HINTS[entry.kind]}")
            item.setData(ENTRY_ROLE, entry)
            item.setToolTip(entry.label)
            self.list.addItem(item)
        if self.list.count():
            self.list.setCurrentRow(0)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Up / Down / Page keys in the filter line move the highlight; Enter opens the highlighted entry."""
        if watched is self.filter and event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            if event.key() in MOVE_KEYS:
                self._move(Qt.Key(event.key()))
                return True
            if event.key() in ACTIVATE_KEYS:
                item = self.list.currentItem()
                if item is not None:
                    self._activate(item)
                return True
        return super().eventFilter(watched, event)

    def _move(self, key: Qt.Key) -> None:
        count = self.list.count()
        if not count:
            return
        page = max(1, self.list.height() // max(1, self.list.sizeHintForRow(0)) - 1)
        step = {Qt.Key.Key_Up: -1, Qt.Key.Key_Down: 1, Qt.Key.Key_PageUp: -page, Qt.Key.Key_PageDown: page}[key]
        self.list.setCurrentRow(min(count - 1, max(0, self.list.currentRow() + step)))

    def done(self, result: int) -> None:
        """Close (Enter or Esc) and give the keys back to the window it was opened over."""
        super().done(result)
        parent = self.parentWidget()
        if parent is not None:
            parent.activateWindow()

    def _activate(self, item: QListWidgetItem) -> None:
        entry: Entry = item.data(ENTRY_ROLE)
        self.accept()
        if entry.kind == CONVERSATION:
            self._open_conversation(entry.key)  # type: ignore[arg-type]
        else:
            pair: tuple[str, str | None] = entry.key  # type: ignore[assignment]
            self._load_pair(*pair)


class ShortcutKeeper(QObject):
    """Keeps a window shortcut (Ctrl+K) working while a text field has the focus: text fields claim some
    Ctrl keys for editing (Ctrl+K deletes to the end of the line on Linux), which would swallow it."""

    def __init__(self, sequence: str, parent: QWidget):
        super().__init__(parent)
        self.sequence = QKeySequence(sequence)

    def watch(self, root: QWidget) -> None:
        """Watch every text field under root (those made later are not watched)."""
        for field in root.findChildren(QWidget):
            if field.inherits("QLineEdit") or field.inherits("QPlainTextEdit") or field.inherits("QTextEdit"):
                field.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ShortcutOverride and isinstance(event, QKeyEvent):
            if QKeySequence(event.keyCombination()) == self.sequence:
                event.ignore()
                return True  # not the field's: the shortcut runs
        return super().eventFilter(watched, event)


def tab_stops(root: QWidget) -> list[QWidget]:
    """The controls under root (root included) that Tab stops at, in the window's focus-chain order; a
    compound control (a spin box) once, not the inner field that hands its focus to it."""
    window = root.window()
    stops, widget = [], window.nextInFocusChain()
    while widget is not None and widget is not window:
        if (
            (widget is root or root.isAncestorOf(widget))
            and widget.focusPolicy() & Qt.FocusPolicy.TabFocus
            and widget.focusProxy() is None
        ):
            stops.append(widget)
        widget = widget.nextInFocusChain()
    return stops
