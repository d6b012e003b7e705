"""The sidebar: search, New chat, and the saved conversations, pinned ones first (pin / rename / delete from the
menu), and the import of conversations from a JSON file."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import shiboken6
from PySide6.QtCore import QRect, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics
from PySide6.QtWidgets import (
    QFileDialog,
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

from specchat.store import Conversation, ConversationStore
from specchat.store.import_chats import ChatImportError, import_file
from specchat.store.pins import pinned_ids, set_pinned

from .. import theme
from .dates import day_group, full_label, when_label

RENAME_TITLE = "Rename conversation"
RENAME_MIN_WIDTH = 420  # the Rename dialog: its title bar and a title of a few words fit whole
DIALOG_MARGIN = 12  # a dialog's layout margin, about, on each side
WHEN_ROLE = Qt.ItemDataRole.UserRole + 1  # the short time label drawn at the right of a row
PINNED = "Pinned"  # the group above the days
PIN_SHORTCUT = "Ctrl+Shift+P"
IMPORT_TITLE = "Import conversations"


def ask_import_path(parent: QWidget) -> str:
    """The JSON file to import ('' when the user cancels)."""
    path, _filter = QFileDialog.getOpenFileName(parent, IMPORT_TITLE, "", "JSON (*.json);;All files (*)")
    return path


class ConversationList(QFrame):
    """Lists conversations from the store; emits the chosen id."""

    selected = Signal(int)
    newRequested = Signal()
    deleted = Signal(int)
    notice = Signal(str, str)  # a line for the banner and its level: what an import or a pin did, or why it failed

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
        self.ask_path: Callable[[QWidget], str] = ask_import_path

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
        pinned = pinned_ids(self.store)
        conversations = self.store.conversations(self.search.text())
        group = None
        for conv in [c for c in conversations if c.id in pinned] + [c for c in conversations if c.id not in pinned]:
            conv_group = PINNED if conv.id in pinned else day_group(conv.updated_at)
            if conv_group != group:
                group = conv_group
                self.list.addItem(_header(group))
            item = _row(conv, conv.id in pinned)
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

    def set_pinned(self, conversation_id: int, pinned: bool) -> None:
        """Pin a conversation to the top of the list, or unpin it; a refused write is said on the banner."""
        try:
            set_pinned(self.store, conversation_id, pinned)
        except (sqlite3.DatabaseError, KeyError) as error:
            verb = "pin" if pinned else "unpin"
            self.notice.emit(f"Could not {verb} this conversation: {self.store.path} refused it ({error})", "warning")
            return
        self.refresh()

    def toggle_pin(self, conversation_id: int | None) -> None:
        """Pin the conversation, or unpin it when it is pinned (Chat ▸ Pin or unpin, Ctrl+Shift+P)."""
        if conversation_id is not None:
            self.set_pinned(conversation_id, conversation_id not in pinned_ids(self.store))

    def import_interactive(self) -> None:
        """Chat ▸ Import conversations…: ask for a JSON file and import it."""
        path = self.ask_path(self)
        if path:
            self.import_path(path)

    def import_path(self, path: str | Path) -> list[int]:
        """Import every conversation in a JSON file (all or none) and open the first; the banner says what
        happened. Returns the new conversations' ids."""
        name = Path(path).name
        try:
            imported = import_file(self.store, path)
        except ChatImportError as error:
            self.notice.emit(f"Could not import {name}: {error}. Nothing was imported.", "error")
            return []
        except sqlite3.DatabaseError as error:
            reason = f"{self.store.path} refused the new conversations ({error})"
            self.notice.emit(f"Could not import {name}: {reason}. Nothing was imported.", "error")
            return []
        self.search.clear()  # a search could hide what was just imported
        self.refresh(select=imported[0].id)
        self.selected.emit(imported[0].id)  # as a click in the list: the chat opens
        count = "1 conversation" if len(imported) == 1 else f"{len(imported)} conversations"
        self.notice.emit(f"Imported {count} from {name}", "info")
        return [conv.id for conv in imported]

    def _menu(self, pos) -> None:
        item = self.list.itemAt(pos)
        if item is None or item.data(Qt.ItemDataRole.UserRole) is None:
            return
        menu = self.context_menu(item.data(Qt.ItemDataRole.UserRole))
        menu.exec(self.list.viewport().mapToGlobal(pos))
        menu.deleteLater()

    def context_menu(self, conversation_id: int) -> QMenu:
        """A conversation's menu in the list: Pin to top (or Unpin), Rename…, Delete…."""
        pinned = conversation_id in pinned_ids(self.store)
        menu = QMenu(self)
        menu.addAction("Unpin" if pinned else "Pin to top", lambda: self.set_pinned(conversation_id, not pinned))
        menu.addSeparator()
        menu.addAction("Rename…", lambda: self.rename_interactive(conversation_id))
        menu.addAction("Delete…", lambda: self.delete_interactive(conversation_id))
        return menu

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


def _row(conv: Conversation, pinned: bool) -> QListWidgetItem:
    """A conversation's row: its title, its time label and a tooltip with both times."""
    item = QListWidgetItem(conv.title)
    item.setData(Qt.ItemDataRole.UserRole, conv.id)
    item.setData(WHEN_ROLE, when_label(conv.updated_at))
    pin = "\nPinned to the top of the list" if pinned else ""
    item.setToolTip(
        f"{conv.title}\nLast message: {full_label(conv.updated_at)}\nStarted: {full_label(conv.created_at)}{pin}"
    )
    return item


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
