"""What the user does to saved messages: edit one (a user message to send again, a reply by hand), branch the
chat from one, delete one, flip a reply's versions, export the conversation."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from specchat.store.export import to_json, to_markdown

from .footer import footer_text
from .message_view import token_count
from .trace import ReplyTrace, saved_trace
from .transcript import reply_footer

EXPORT_FORMATS = {"markdown": ("Markdown", ".md", to_markdown), "json": ("JSON", ".json", to_json)}
EDIT_REPLY_NOTE = "Editing a reply: Send saves your text in its place."


def stopped_notice(trace: ReplyTrace, stats: dict | None) -> str:
    """What the card of a reply that ended before any text says."""
    if stats and stats.get("stop_reason") == "error":
        return footer_text(stats, True)
    if trace.prefill is not None:
        progress = token_count(trace.prefill.done, trace.prefill.total)
        if trace.prefill.model == "draft":
            return f"Stopped by you while the draft read the prompt ({progress}): nothing was generated"
        return f"Stopped by you while reading the prompt ({progress}): nothing was generated"
    return "Stopped by you before any text"


def export_notice(path: str) -> str:
    """What the banner says after an export."""
    return f"Exported to {path}"


def ask_yes(parent: QWidget, question: str) -> bool:
    """A Yes/No question; True for Yes."""
    answer = QMessageBox.question(parent, "SpecChat", question)
    return answer == QMessageBox.StandardButton.Yes


def ask_save_path(parent: QWidget, kind: str, suggested: str) -> str:
    """The file to export to ('' when the user cancels)."""
    name, suffix, _ = EXPORT_FORMATS[kind]
    path, _filter = QFileDialog.getSaveFileName(
        parent, f"Export conversation as {name}", suggested, f"{name} (*{suffix})"
    )
    return path


class MessageActions(QObject):
    """Edit, branch, delete, version flipping and export for a ChatController's open conversation."""

    exported = Signal(str)  # the file written
    exportFailed = Signal(str)  # a one-line reason

    def __init__(self, chat):
        super().__init__(chat)
        self.chat = chat
        self.confirm: Callable[[QWidget, str], bool] = ask_yes
        self.ask_path: Callable[[QWidget, str, str], str] = ask_save_path
        chat.transcript.deleteRequested.connect(self.delete)
        chat.transcript.branchRequested.connect(self.branch)
        chat.transcript.versionRequested.connect(self.show_version)
        self._export_notice = ""  # the banner's "Exported to …": it belongs to the chat it was said in
        self.exported.connect(lambda path: setattr(self, "_export_notice", export_notice(path)))
        chat.conversationSwitched.connect(self._chat_switched)

    def delete(self, position: int) -> None:
        """Delete the message at `position` (a user message with the reply after it), after asking."""
        chat = self.chat
        if chat.busy or chat.conversation_id is None or position >= len(chat.transcript.views):
            return
        view = chat.transcript.views[position]
        question = "Delete this message and the reply after it?" if view.role == "user" else "Delete this reply?"
        if view.message_id is None or not self.confirm(chat.transcript, question):
            return
        chat.transcript.remove(chat.store.delete_with_reply(view.message_id))
        chat.update_continue()  # another reply may now be the last
        chat.sidebar.refresh()  # a search may no longer match, a derived title may have changed

    def begin_edit(self, position: int) -> None:
        """Put a message in the composer: a user message to send again (replacing it and what followed), or a
        reply whose text Send then saves in its place."""
        chat = self.chat
        if chat.busy or chat.conversation_id is None:
            return
        message = chat.store.messages(chat.conversation_id)[position]
        note = EDIT_REPLY_NOTE if message.role == "assistant" else ""
        chat.composer.begin_edit(position, message.content, note)

    def editing_reply(self) -> bool:
        """True while the composer holds a reply being edited (Send saves it instead of sending a message)."""
        chat, position = self.chat, self.chat.composer.editing
        if position is None or chat.conversation_id is None:
            return False
        messages = chat.store.messages(chat.conversation_id)
        return position < len(messages) and messages[position].role == "assistant"

    def save_reply_edit(self, text: str) -> None:
        """Save the composer's text as the edited reply's (same row, version shown), marked edited by hand; its
        token ids and tints go, so Continue says why it no longer can. A refused write keeps the text in the box."""
        chat, position = self.chat, self.chat.composer.editing
        assert chat.conversation_id is not None and position is not None  # editing_reply() said so
        reply = chat.store.messages(chat.conversation_id)[position]
        if text != reply.content:
            try:
                reply = chat.store.edit_reply(reply.id, text)
            except sqlite3.DatabaseError as error:
                chat.storeFailed.emit(
                    f"Could not save your edit to {chat.store.path} ({error}): it is kept in the box; "
                    "press Send to try again"
                )
                return
            chat.tool_round.rounds.pop(reply.id, None)  # its tool calls were read from the text it had
            chat.transcript.show_edited(position, reply)
        chat.composer.leave_edit()
        chat.update_continue()
        chat.sidebar.refresh()  # a search may now match it, or no longer

    def branch(self, position: int) -> int | None:
        """A new chat holding copies of the messages up to and including the one at `position` (the same system
        prompt and Max tokens), titled '<title> (branch)', selected in the sidebar and opened; returns its id."""
        chat = self.chat
        views = chat.transcript.views
        if chat.busy or chat.conversation_id is None or position >= len(views) or views[position].message_id is None:
            return None
        try:
            branch = chat.store.branch(chat.conversation_id, views[position].message_id)
        except sqlite3.DatabaseError as error:
            chat.storeFailed.emit(f"Could not branch this chat: {chat.store.path} refused the new one ({error})")
            return None
        chat.sidebar.refresh(select=branch.id)
        chat.sidebar.selected.emit(branch.id)  # as a click in the list: the chat, its system prompt and settings
        return branch.id

    def _chat_switched(self, _conversation_id: int | None) -> None:
        """Another chat is shown: an export's banner (said about the chat left) goes."""
        notice, self._export_notice = self._export_notice, ""
        banner = getattr(self.chat.parent(), "banner", None)
        if notice and banner is not None and banner.message == notice:
            banner.dismiss()

    def show_version(self, position: int, number: int) -> None:
        """Show version `number` of the reply at `position`; the conversation continues from it."""
        chat = self.chat
        if chat.busy or position >= len(chat.transcript.views):
            return
        view = chat.transcript.views[position]
        versions = chat.store.versions(view.message_id) if view.message_id is not None else []
        if not 0 <= number < len(versions):
            return
        chat.store.select_version(view.message_id, number)
        version = versions[number]
        chat.transcript.show_version(
            position,
            version.content,
            reply_footer(version.stats, version.cancelled),
            saved_trace(version.content, version.trace),
            number,
            len(versions),
        )
        chat.update_continue()  # this version may have ended otherwise

    def export(self, kind: str) -> Path | None:
        """Write the open conversation as Markdown or JSON to a file the user picks; returns it."""
        chat = self.chat
        if chat.conversation_id is None:
            self.exportFailed.emit("Nothing to export: open or start a conversation first")
            return None
        _name, suffix, render = EXPORT_FORMATS[kind]
        conversation = chat.store.get(chat.conversation_id)
        chosen = self.ask_path(chat.transcript, kind, _file_name(conversation.title) + suffix)
        if not chosen:
            return None
        path = Path(chosen)
        try:
            path.write_text(render(conversation, chat.store.messages(conversation.id)), encoding="utf-8")
        except OSError as exc:
            self.exportFailed.emit(f"Could not export to {path}: {exc.strerror or exc}")
            return None
        self.exported.emit(str(path))
        return path


def _file_name(title: str, limit: int = 60) -> str:
    """A title made safe as a file name, cut at a word boundary within limit characters."""
    safe = " ".join(re.sub(r"[^\w\- ]+", " ", title).split())
    if len(safe) > limit:
        cut = safe[: limit + 1].rsplit(" ", 1)[0]
        safe = cut if len(cut) >= limit // 2 else safe[:limit]
    return safe.strip() or "conversation"
