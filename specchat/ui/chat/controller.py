"""The chat: which conversation is open, its system prompt and its own Max tokens, sending a message, and the
wiring of the composer, the transcript and the sidebar to the parts that do the work (reply_stream.py: a reply as
it is written; reply_commands.py: Regenerate and Continue; message_actions.py: edit, branch, delete, versions,
export; store_faults.py: a conversations file that refuses a write)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from specchat.engine import ConfigError, GenerationConfig
from specchat.engine.owner import QueueState
from specchat.store import ConversationStore
from specchat.store.errors import is_disk_full
from specchat.store.records import DEFAULT_TITLE, title_from

from ..engine_client import EngineClient
from .composer import Composer
from .continuation import show_continue
from .conversation_list import ConversationList
from .footer import interrupted_stats
from .message_actions import MessageActions
from .reply_commands import GREEDY_REGENERATE, REGENERATE_TEMPERATURE, ReplyCommands, continue_action
from .reply_stream import IN_QUEUE, READING, SAVE_INTERVAL_S, ActiveReply, ReplyStream, ttft_split
from .store_faults import RETRY_MS, StoreFaults
from .tool_card import ToolRound
from .trace import ReplyTrace
from .transcript import TranscriptView

# What the chat offered from this module before it was split (tests and the window import them from here).
__all__ = [
    "ChatController",
    "ActiveReply",
    "GREEDY_REGENERATE",
    "IN_QUEUE",
    "READING",
    "REGENERATE_TEMPERATURE",
    "ttft_split",
]


class ChatController(QObject):
    """Connects the store, the views and the engine client."""

    replyStarted = Signal(int)  # request id
    replyFinished = Signal(object)  # the Finished event
    replyFailed = Signal(str)  # message (also shown in the banner)
    storeFailed = Signal(str)  # a message could not be saved: it is kept and sent again (said once)
    storeRecovered = Signal()  # ... and now it was
    storeReplaced = Signal(object)  # the in-memory ConversationStore the session goes on in (a full disk)
    settingsRejected = Signal(str)  # a setting out of range: nothing was saved or sent
    busyChanged = Signal(bool)
    conversationSwitched = Signal(object)  # the id of the conversation now shown (None: a new, empty one)
    greedyRegenerate = Signal(str)  # a regeneration at temperature 0: it will be the same reply (also in the banner)
    continueRefused = Signal(str)  # why the last reply cannot be continued (also in the banner)

    def __init__(
        self,
        store: ConversationStore,
        client: EngineClient,
        transcript: TranscriptView,
        composer: Composer,
        sidebar: ConversationList,
        reply_settings: Callable[[], tuple[GenerationConfig, bool]],
        parent=None,
    ):
        super().__init__(parent)
        self.store, self.client = store, client
        self.transcript, self.composer, self.sidebar = transcript, composer, sidebar
        self.reply_settings = reply_settings
        self.save_interval_s = SAVE_INTERVAL_S
        self.retry_ms = RETRY_MS
        self.decode: Callable[[list[int]], str] = lambda ids: ""
        self.conversation_id: int | None = None
        self.active: ActiveReply | None = None
        self.last_trace: ReplyTrace | None = None
        self.faults = StoreFaults(self)
        self.stream = ReplyStream(self)
        self.commands = ReplyCommands(self)
        client.event.connect(self.stream.on_event)
        client.queueChanged.connect(self._queue_changed)
        composer.sendRequested.connect(self.send)
        composer.stopRequested.connect(self.stop)
        transcript.regenerateRequested.connect(self.regenerate)
        transcript.continueRequested.connect(self.continue_reply)
        self.continue_action = continue_action(self, parent)
        transcript.editRequested.connect(self.begin_edit)
        self.actions = MessageActions(self)
        sidebar.selected.connect(self.open)
        sidebar.newRequested.connect(self.new_conversation)
        sidebar.deleted.connect(self._deleted)
        # MCP tools: the servers come from the window's settings (Preferences ▸ MCP servers)
        self.tool_round = ToolRound(transcript, client.tasks, self._mcp_servers, self._save_mcp_servers, self)
        self.tool_round.continueRequested.connect(self._continue_after_tools)
        sidebar.selected.connect(self.tool_round.drop_cards)
        sidebar.newRequested.connect(self.tool_round.drop_cards)
        banner = getattr(parent, "banner", None)
        if banner is not None:
            self.tool_round.serverFailed.connect(lambda message: banner.show_message(message, "warning"))
        self._new_chat_max_tokens: int | None = None  # set in the panel before a new chat's first message
        self.panel = getattr(parent, "panel", None)  # the Settings panel: its Max tokens is the open chat's own
        if self.panel is not None:
            self.panel.maxTokensChanged.connect(self.set_max_tokens)

    @property
    def busy(self) -> bool:
        """True while a reply streams."""
        return self.active is not None

    def open(self, conversation_id: int) -> None:
        """Show a saved conversation."""
        switched = conversation_id != self.conversation_id
        self.conversation_id = conversation_id
        if switched or self.composer.editing is not None:  # the same chat shown again keeps what is being written
            self.composer.leave_edit()
        streaming = self.active.message_id if self.active else None  # its row is saved, not yet finished
        messages = [m for m in self.store.messages(conversation_id) if m.id != streaming]
        counts = {m.id: len(self.store.versions(m.id)) for m in messages if m.role == "assistant"}
        self.transcript.show_messages(messages, counts)
        self.update_continue()
        self.sidebar.refresh(select=conversation_id)
        self._show_max_tokens()
        if switched:
            self.conversationSwitched.emit(conversation_id)

    def new_conversation(self) -> None:
        """An empty transcript; the conversation is saved with its first message."""
        switched = self.conversation_id is not None
        self.conversation_id = None
        self.composer.leave_edit()
        self.transcript.clear()
        self.sidebar.list.clearSelection()
        self.sidebar.list.setCurrentRow(-1)  # no current item (what setCurrentItem(None) does)
        self._show_max_tokens()
        if switched:
            self.conversationSwitched.emit(None)

    def system_prompt(self) -> str:
        """The open conversation's system prompt."""
        return self.store.get(self.conversation_id).system_prompt if self.conversation_id else ""

    def set_system_prompt(self, text: str) -> None:
        """Save the system prompt of the open conversation (creating it when needed)."""
        if self.conversation_id is None:
            if not text.strip():
                return
            self.conversation_id = self.store.create(system_prompt=text, max_tokens=self._new_chat_max_tokens).id
            self.sidebar.refresh(select=self.conversation_id)
        else:
            self.store.set_system_prompt(self.conversation_id, text)

    def set_max_tokens(self, value: int) -> None:
        """The Settings panel's Max tokens changed: the open chat's own (a new chat's, saved with its first message)."""
        if self.conversation_id is None:
            self._new_chat_max_tokens = value
            return
        try:
            self.store.set_max_tokens(self.conversation_id, value)
        except sqlite3.DatabaseError as error:
            self.storeFailed.emit(
                f"Could not save this chat's Max tokens to {self.store.path} ({error}): it applies now"
            )

    def _show_max_tokens(self) -> None:
        """The panel shows the open chat's own Max tokens (the default for a chat without one)."""
        self._new_chat_max_tokens = None
        if self.panel is not None:
            cid = self.conversation_id
            self.panel.show_chat_max_tokens(self.store.get(cid).max_tokens if cid is not None else None)

    def send(self, text: str) -> None:
        """Save the user's message (replacing an edited one and what followed) and start the reply, or save an
        edited reply's text; when the
        conversations file cannot be written (locked by another program), say so once, keep the message in
        the box and send it again every retry_ms until it can."""
        if self.busy:
            return
        if self.actions.editing_reply():
            self.actions.save_reply_edit(text)
            return
        settings = self.valid_reply_settings()  # before anything is saved: a bad setting loses nothing
        if settings is None:
            return
        try:
            self._save_sent(text)
        except sqlite3.OperationalError as error:
            if not (is_disk_full(error) and self.faults.go_on_in_memory(error)):
                self.faults.retry_send(text, error)
                return
            self._save_sent(text)  # the in-memory copy takes it
        self.faults.message_saved()
        self.stream.start(settings)

    def _save_sent(self, text: str) -> None:
        if self.conversation_id is None:
            self.conversation_id = self.store.create(title=title_from(text), max_tokens=self._new_chat_max_tokens).id
        elif self.store.get(self.conversation_id).title == DEFAULT_TITLE:
            self.store.rename(self.conversation_id, title_from(text))
        if self.composer.editing is not None:
            # one transaction: the edited message and what followed go only if the new one is saved
            row = self.store.replace_from(self.conversation_id, self.composer.editing, "user", text)
            self.transcript.truncate(self.composer.editing)
        else:
            row = self.store.add_message(self.conversation_id, "user", text)
        self.composer.leave_edit()
        self.transcript.add_user(text).message_id = row.id
        self.sidebar.refresh(select=self.conversation_id)

    def regenerate(self) -> None:
        """Generate the last reply again; the earlier ones stay as versions (‹ 1/2 ›). At temperature 0 the
        reply comes out the same: the banner says so and offers one regeneration at a higher temperature."""
        self.commands.regenerate()

    def regenerate_at(self, temperature: float) -> None:
        """Regenerate once at this temperature (the settings stay as they are)."""
        self.commands.regenerate(temperature)

    def continue_reply(self) -> None:
        """Write more of the last reply, cut off at Max tokens: the same message grows, exactly as if its budget had
        been larger. Otherwise the banner says why not."""
        self.commands.continue_reply()

    def update_continue(self) -> None:
        """Offer Continue on the reply cards as the open chat now allows."""
        messages = self.store.messages(self.conversation_id) if self.conversation_id is not None else []
        show_continue(self.transcript.views, messages, self.busy)

    def begin_edit(self, position: int) -> None:
        """Put a message in the composer: sending a user message replaces it and everything after it; sending an
        edited reply saves its text in place."""
        self.actions.begin_edit(position)

    def stop(self) -> None:
        """Stop the reply; what arrived so far is saved (marked stopped)."""
        self.client.cancel()

    def interrupt(self) -> None:
        """The window is closing: stop the reply and save what it wrote now, marked interrupted; the reply's
        later events (they arrive after the store has closed) are then ignored."""
        self.faults.unsaved = None  # a message still waiting for the file is not sent into a closed store
        self.tool_round.close()  # the MCP servers stop with the window
        if self.active is None:
            return
        self.client.cancel()
        self.stream.finish(self.active.trace.text, interrupted_stats(), True)

    def _mcp_servers(self) -> list[dict]:
        settings = getattr(self.parent(), "settings", None)
        return list(getattr(settings, "mcp_servers", None) or [])

    def _save_mcp_servers(self, servers: list[dict]) -> None:
        """An "Always allow this tool": saved with the server in the settings."""
        window = self.parent()
        settings = getattr(window, "settings", None)
        if settings is not None:
            settings.mcp_servers = servers
            save = getattr(window, "save", None)
            if callable(save):
                save()

    def _continue_after_tools(self) -> None:
        """Every tool call of the last reply is answered: the model goes on from the results."""
        if self.busy or self.conversation_id is None:
            return
        settings = self.valid_reply_settings()
        if settings is not None:
            self.stream.start(settings)

    def valid_reply_settings(self) -> tuple[GenerationConfig, bool] | None:
        """The next reply's config and thinking switch; None (and settingsRejected) when a setting is out of range."""
        try:
            return self.reply_settings()
        except ConfigError as exc:
            self.settingsRejected.emit(f"Not sent: {exc}. Change it in the settings panel or the Speculation menu.")
            return None

    def _queue_changed(self, state: QueueState) -> None:
        self.stream.queue_changed(state)

    def _deleted(self, conversation_id: int) -> None:
        if conversation_id == self.conversation_id:
            self.new_conversation()

    def set_busy(self, busy: bool) -> None:
        """A reply started or ended: the composer, the cards and Continue follow."""
        self.composer.set_busy(busy)
        self.transcript.set_busy(busy)
        self.update_continue()
        self.busyChanged.emit(busy)
