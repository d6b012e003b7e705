"""The sidebar: search, New chat, and the saved conversations (rename / delete from the menu)."""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QRect, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics
from PySide6.QtWidgets import (
    QFrame,
    QInputDialog,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QMessageBox,
    QPushButton,
    QStyle,
    QStyledItemDelegate,
    QVBoxLayout,
    QWidget,
)

from specchat.store import ConversationStore

from .. import theme
from .dates import day_group, full_label, when_label

RENAME_TITLE = "Rename conversation"
RENAME_MIN_WIDTH = 420  # the Rename dialog: its title bar and a title of a few words fit whole
DIALOG_MARGIN = 12  # a dialog's layout margin, about, on each side
WHEN_ROLE = Qt.ItemDataRole.UserRole + 1  # the short time label drawn at the right of a row


class ConversationList(QFrame):
    """Lists conversations from the store; emits the chosen id."""

    selected = Signal(int)
    newRequested = Signal()
    deleted = Signal(int)

    def __init__(self, store: ConversationStore, parent=None):
        super().__init__(parent)
        self._store = store
        store.title_listeners.append(self._title_changed)
        self.setObjectName("sidebar")
        self.setMinimumWidth(200)
        self.setMaximumWidth(360)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 12, 10, 10)
        layout.setSpacing(8)
        self.new_button = QPushButton("+  New chat", objectName="primary")  # type: ignore[call-overload]
        self.new_button.setToolTip("Start a new conversation (Ctrl+N)")
        self.new_button.clicked.connect(self.newRequested)
        self.search = QLineEdit(placeholderText="Search conversations")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(lambda _text: self.refresh())
        self.list = QListWidget()
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.list.setItemDelegate(_RowDelegate(self.list))
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._menu)
        self.list.currentItemChanged.connect(self._current_changed)
        self.list.itemDoubleClicked.connect(lambda item: self.rename_interactive(item.data(Qt.ItemDataRole.UserRole)))
        for widget in (self.new_button, self.search, self.list):
            layout.addWidget(widget)
        self._quiet = False

    @property
    def store(self) -> ConversationStore:
        """The conversations listed; the list follows their titles (a deleted first message retitles one)."""
        return self._store

    @store.setter
    def store(self, store: ConversationStore) -> None:
        if self._title_changed in self._store.title_listeners:
            self._store.title_listeners.remove(self._title_changed)
        self._store = store
        store.title_listeners.append(self._title_changed)

    def _title_changed(self, _conversation_id: int) -> None:
        if shiboken6.isValid(self):  # a store can outlive its sidebar
            self.refresh()

    def refresh(self, select: int | None = None) -> None:
        """Reload titles from the store (filtered by the search box), keeping or setting the selection."""
        keep = select if select is not None else self.current_id()
        self._quiet = True
        self.list.clear()
        group = None
        for conv in self.store.conversations(self.search.text()):
            if day_group(conv.updated_at) != group:
                group = day_group(conv.updated_at)
                self.list.addItem(_header(group))
            item = QListWidgetItem(conv.title)
            item.setData(Qt.ItemDataRole.UserRole, conv.id)
            item.setData(WHEN_ROLE, when_label(conv.updated_at))
            item.setToolTip(
                f"{conv.title}\nLast message: {full_label(conv.updated_at)}\nStarted: {full_label(conv.created_at)}"
            )
            self.list.addItem(item)
            if conv.id == keep:
                self.list.setCurrentItem(item)
        self._quiet = False

    def current_id(self) -> int | None:
        """The selected conversation's id."""
        item = self.list.currentItem()
        return item.data(Qt.ItemDataRole.UserRole) if item else None

    def ids(self) -> list[int]:
        """Conversation ids in list order (headers skipped)."""
        return [
            i
            for i in (self.list.item(n).data(Qt.ItemDataRole.UserRole) for n in range(self.list.count()))
            if i is not None
        ]

    def rows(self) -> list[str]:
        """What each row shows, headers included: 'Today', 'Fruit · 14:05' (tests)."""
        out = []
        for n in range(self.list.count()):
            item = self.list.item(n)
            when = item.data(WHEN_ROLE)
            out.append(f"{item.text()} · {when}" if when else item.text())
        return out

    def rename(self, conversation_id: int, title: str) -> None:
        """Rename and refresh."""
        self.store.rename(conversation_id, title)
        self.refresh()

    def rename_interactive(self, conversation_id: int) -> None:
        """Ask for a new title."""
        dialog = rename_dialog(self, self.store.get(conversation_id).title)
        if dialog.exec() == QInputDialog.DialogCode.Accepted and dialog.textValue().strip():
            self.rename(conversation_id, dialog.textValue())

    def delete(self, conversation_id: int) -> None:
        """Delete and refresh."""
        self.store.delete(conversation_id)
        self.refresh()
        self.deleted.emit(conversation_id)

    def delete_interactive(self, conversation_id: int) -> None:
        """Confirm, then delete."""
        title = self.store.get(conversation_id).title
        answer = QMessageBox.question(self, "Delete conversation", f"Delete “{title}” and all its messages?")
        if answer == QMessageBox.StandardButton.Yes:
            self.delete(conversation_id)

    def _menu(self, pos) -> None:
        item = self.list.itemAt(pos)
        if item is None or item.data(Qt.ItemDataRole.UserRole) is None:
            return
        conv_id = item.data(Qt.ItemDataRole.UserRole)
        menu = QMenu(self)
        menu.addAction("Rename…", lambda: self.rename_interactive(conv_id))
        menu.addAction("Delete…", lambda: self.delete_interactive(conv_id))
        menu.exec(self.list.viewport().mapToGlobal(pos))

    def _current_changed(self, current, _previous) -> None:
        if current is not None and not self._quiet and current.data(Qt.ItemDataRole.UserRole) is not None:
            self.selected.emit(current.data(Qt.ItemDataRole.UserRole))


def rename_dialog(parent: QWidget, current: str) -> QInputDialog:
    """The Rename dialog: wide enough for its title bar and a long title in its field."""
    dialog = QInputDialog(parent)
    dialog.setWindowTitle(RENAME_TITLE)
    dialog.setLabelText("Title:")
    dialog.setTextValue(current)
    bold = QFont(dialog.font())
    bold.setBold(True)  # the title bar's font is often bold
    title_bar = QFontMetrics(bold).horizontalAdvance(RENAME_TITLE) + 160  # and holds the window's buttons
    field = dialog.fontMetrics().horizontalAdvance("M" * 28) + 80  # a title of a few words, and the label
    # QInputDialog's layout sets the dialog's minimum from its widgets: widen the field, not the dialog
    line_edit = dialog.findChild(QLineEdit)
    assert line_edit is not None  # made by setTextValue
    line_edit.setMinimumWidth(max(RENAME_MIN_WIDTH, title_bar, field) - 2 * DIALOG_MARGIN)
    return dialog


def _header(text: str) -> QListWidgetItem:
    """A group heading ('Today'): shown, never selected."""
    item = QListWidgetItem(text)
    item.setFlags(Qt.ItemFlag.NoItemFlags)
    font = QFont()
    font.setPointSizeF(max(8.0, font.pointSizeF() - 1))
    font.setWeight(QFont.Weight.DemiBold)
    item.setFont(font)
    item.setForeground(QColor(theme.MUTED))
    return item


class _RowDelegate(QStyledItemDelegate):
    """Draws a conversation's title elided on the left and its time label, muted, on the right."""

    def paint(self, painter, option, index) -> None:
        when = index.data(WHEN_ROLE)
        if not when:
            super().paint(painter, option, index)
            return
        width = option.fontMetrics.horizontalAdvance(when) + 8
        title_option = type(option)(option)
        self.initStyleOption(title_option, index)
        title_option.rect = option.rect.adjusted(0, 0, -width, 0)
        style = option.widget.style() if option.widget else None
        if style is not None:  # the row's full selection background first, then the elided title
            style.drawPrimitive(QStyle.PrimitiveElement.PE_PanelItemViewItem, option, painter, option.widget)
        super().paint(painter, title_option, index)
        painter.save()
        painter.setPen(QColor(theme.MUTED))  # the selection background is light: muted stays legible
        painter.drawText(
            QRect(option.rect.right() - width, option.rect.top(), width - 4, option.rect.height()),
            Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
            when,
        )
        painter.restore()
