"""The sidebar: search, New chat, and the saved conversations (rename / delete from the menu)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QFrame, QInputDialog, QLineEdit, QListWidget, QListWidgetItem, QMenu,
                               QMessageBox, QPushButton, QVBoxLayout)

from app.store import ConversationStore


class ConversationList(QFrame):
    """Lists conversations from the store; emits the chosen id."""

    selected = Signal(int)
    newRequested = Signal()
    deleted = Signal(int)

    def __init__(self, store: ConversationStore, parent=None):
        super().__init__(parent)
        self.store = store
        self.setObjectName("sidebar")
        self.setMinimumWidth(200)
        self.setMaximumWidth(360)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 12, 10, 10)
        layout.setSpacing(8)
        self.new_button = QPushButton("+  New chat", objectName="primary")
        self.new_button.setToolTip("Start a new conversation (Ctrl+N)")
        self.new_button.clicked.connect(self.newRequested)
        self.search = QLineEdit(placeholderText="Search conversations")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(lambda _text: self.refresh())
        self.list = QListWidget()
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.list.setUniformItemSizes(True)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._menu)
        self.list.currentItemChanged.connect(self._current_changed)
        self.list.itemDoubleClicked.connect(lambda item: self.rename_interactive(item.data(Qt.ItemDataRole.UserRole)))
        for widget in (self.new_button, self.search, self.list):
            layout.addWidget(widget)
        self._quiet = False

    def refresh(self, select: int | None = None) -> None:
        """Reload titles from the store (filtered by the search box), keeping or setting the selection."""
        keep = select if select is not None else self.current_id()
        self._quiet = True
        self.list.clear()
        for conv in self.store.conversations(self.search.text()):
            item = QListWidgetItem(conv.title)
            item.setData(Qt.ItemDataRole.UserRole, conv.id)
            item.setToolTip(conv.title)
            self.list.addItem(item)
            if conv.id == keep:
                self.list.setCurrentItem(item)
        self._quiet = False

    def current_id(self) -> int | None:
        """The selected conversation's id."""
        item = self.list.currentItem()
        return item.data(Qt.ItemDataRole.UserRole) if item else None

    def ids(self) -> list[int]:
        """Ids in list order (tests)."""
        return [self.list.item(i).data(Qt.ItemDataRole.UserRole) for i in range(self.list.count())]

    def rename(self, conversation_id: int, title: str) -> None:
        """Rename and refresh."""
        self.store.rename(conversation_id, title)
        self.refresh()

    def rename_interactive(self, conversation_id: int) -> None:
        """Ask for a new title."""
        current = self.store.get(conversation_id).title
        title, ok = QInputDialog.getText(self, "Rename conversation", "Title:", text=current)
        if ok and title.strip():
            self.rename(conversation_id, title)

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
        if item is None:
            return
        conv_id = item.data(Qt.ItemDataRole.UserRole)
        menu = QMenu(self)
        menu.addAction("Rename…", lambda: self.rename_interactive(conv_id))
        menu.addAction("Delete…", lambda: self.delete_interactive(conv_id))
        menu.exec(self.list.viewport().mapToGlobal(pos))

    def _current_changed(self, current, _previous) -> None:
        if current is not None and not self._quiet:
            self.selected.emit(current.data(Qt.ItemDataRole.UserRole))
