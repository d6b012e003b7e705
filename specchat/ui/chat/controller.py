"""Chat logic: send, stream, stop, regenerate, continue, edit-and-resend; saves messages, and replies while they
stream; the open chat's own Max tokens."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QWidget

from specchat.engine import ConfigError, Failed, Finished, GenerationConfig, PrefillProgress, RoundResult, TextChunk
from specchat.engine.owner import QueueState
from specchat.store import ConversationStore, StoredMessage
from specchat.store.conversations import DEFAULT_TITLE, NewerDatabaseError, is_disk_full, is_locked, title_from

from ..engine_client import EngineClient, waiting_text
from .composer import Composer
from .continuation import (
    CONTINUE_SHORTCUT,
    CONTINUE_TIP,
    ContinuedTrace,
    continued_message,
    continued_stats,
    continued_text,
    reply_trace_data,
    show_continue,
    why_not_continued,
)
from .conversation_list import ConversationList
from .footer import error_stats, footer_text, interrupted_stats
from .message_actions import MessageActions, stopped_notice
from .tool_card import ToolRound
from .trace import ReplyTrace
from .transcript import TranscriptView

GREEDY_REGENERATE = "Temperature is 0: greedy decoding gives the same reply; raise the temperature to get another."
REGENERATE_TEMPERATURE = 0.7  # what the banner offers a greedy regeneration instead
RETRY_MS = 2000  # a message the conversations file refused is sent again this often
SAVE_INTERVAL_S = 2.0  # a streaming reply's text is saved at least this often (a crash loses at most this much)
IN_QUEUE = "Waiting in the queue…"  # the card of a reply whose job has not started
READING = "Reading the prompt…"  # ... whose job started, before its first progress event

log = logging.getLogger(__name__)


@dataclass
class ActiveReply:
    """The reply being generated and the conversation it belongs to."""

    request_id: int
    conversation_id: int
    trace: ReplyTrace
    message_id: int  # the reply's row, saved incomplete while it streams
    saved_at: float  # time.monotonic() of the last save
    regenerating: bool = False  # the row's earlier versions are kept; stopping before any text restores them
    continued: StoredMessage | None = None  # the reply this one continues, as it was saved


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
        self._unsaved: str | None = None  # a sent message waiting for the conversations file
        self._store_said = False  # the store's refusal was said for the reply in progress
        self.decode: Callable[[list[int]], str] = lambda ids: ""
        self.conversation_id: int | None = None
        self.active: ActiveReply | None = None
        self.last_trace: ReplyTrace | None = None
        client.event.connect(self._on_event)
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
        """Save the user's message (replacing an edited one and what followed) and start the reply; when the
        conversations file cannot be written (locked by another program), say so once, keep the message in
        the box and send it again every retry_ms until it can."""
        if self.busy:
            return
        settings = self._valid_reply_settings()  # before anything is saved: a bad setting loses nothing
        if settings is None:
            return
        try:
            self._save_sent(text)
        except sqlite3.OperationalError as error:
            if not (is_disk_full(error) and self._go_on_in_memory(error)):
                self._retry_send(text, error)
                return
            self._save_sent(text)  # the in-memory copy takes it
        if self._unsaved is not None:
            self._unsaved = None
            self.storeRecovered.emit()
        self._start_reply(settings)

    def _go_on_in_memory(self, error: sqlite3.Error) -> bool:
        """The disk is full: carry on with an in-memory copy of the conversations (said once); False when even
        that copy could not be made."""
        try:
            memory = ConversationStore.snapshot(self.store.path)
        except (sqlite3.Error, NewerDatabaseError):
            log.exception("could not copy %s into memory after a full disk", self.store.path)
            return False
        old, self.store = self.store, memory
        self.sidebar.store = memory
        old.close()
        self.storeReplaced.emit(memory)
        self.storeFailed.emit(
            f"Could not save to {old.path} ({error}): the chat goes on in memory and nothing "
            "more is saved this session. Free some space and restart SpecChat to save again."
        )
        return True

    def _retry_send(self, text: str, error: sqlite3.OperationalError) -> None:
        if self._unsaved is None:
            self.storeFailed.emit(
                f"Could not save your message to {self.store.path} ({error})"
                + (": another program is using it. " if is_locked(error) else ". ")
                + "The message is kept in the box and goes out as soon as the file can be written."
            )
        self._unsaved = text
        QTimer.singleShot(self.retry_ms, self, lambda: self._send_again(text))  # dies with the controller

    def _send_again(self, text: str) -> None:
        """The retry: only while the same message still waits in the box."""
        if self._unsaved == text and self.composer.message() == text and not self.busy:
            self.send(text)

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
        self._regenerate(None)

    def regenerate_at(self, temperature: float) -> None:
        """Regenerate once at this temperature (the settings stay as they are)."""
        self._regenerate(temperature)

    def _regenerate(self, temperature: float | None) -> None:
        if self.busy or self.conversation_id is None:
            return
        settings = self._valid_reply_settings()
        if settings is None:
            return
        if temperature is not None:
            settings = (replace(settings[0], temperature=temperature), settings[1])
        messages = self.store.messages(self.conversation_id)
        if messages and messages[-1].role == "assistant":
            if settings[0].temperature == 0:
                self._say_greedy()
            self._start_reply(settings, again=messages[-1])
        elif messages:
            self._start_reply(settings)

    def _say_greedy(self) -> None:
        """Regenerating at temperature 0 gives the reply again, word for word: say so, with an offer."""
        self.greedyRegenerate.emit(GREEDY_REGENERATE)
        banner = getattr(self.parent(), "banner", None)
        if banner is not None:
            offer = (f"Regenerate at {REGENERATE_TEMPERATURE:g}", lambda: self.regenerate_at(REGENERATE_TEMPERATURE))
            banner.show_message(GREEDY_REGENERATE, "info", action=offer)

    def continue_reply(self) -> None:
        """Write more of the last reply, cut off at Max tokens: the same message grows, exactly as if its budget had
        been larger. Otherwise the banner says why not."""
        messages = self.store.messages(self.conversation_id) if self.conversation_id is not None else []
        reply = messages[-1] if messages else None
        why = why_not_continued(reply, True, self.busy)
        if why is not None or reply is None:
            self._refuse_continue(why or "")
            return
        settings = self._valid_reply_settings()
        if settings is not None:
            self._start_reply(settings, continuing=reply)

    def _refuse_continue(self, why: str) -> None:
        self.continueRefused.emit(why)
        banner = getattr(self.parent(), "banner", None)
        if banner is not None:
            banner.show_message(why, "info")

    def update_continue(self) -> None:
        """Offer Continue on the reply cards as the open chat now allows."""
        messages = self.store.messages(self.conversation_id) if self.conversation_id is not None else []
        show_continue(self.transcript.views, messages, self.busy)

    def begin_edit(self, position: int) -> None:
        """Put a user message in the composer; sending replaces it and everything after it."""
        if self.busy or self.conversation_id is None:
            return
        message = self.store.messages(self.conversation_id)[position]
        self.composer.begin_edit(position, message.content)

    def stop(self) -> None:
        """Stop the reply; what arrived so far is saved (marked stopped)."""
        self.client.cancel()

    def interrupt(self) -> None:
        """The window is closing: stop the reply and save what it wrote now, marked interrupted; the reply's
        later events (they arrive after the store has closed) are then ignored."""
        self._unsaved = None  # a message still waiting for the file is not sent into a closed store
        self.tool_round.close()  # the MCP servers stop with the window
        if self.active is None:
            return
        self.client.cancel()
        self._finish(self.active.trace.text, interrupted_stats(), True)

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
        settings = self._valid_reply_settings()
        if settings is not None:
            self._start_reply(settings)

    def _valid_reply_settings(self) -> tuple[GenerationConfig, bool] | None:
        """The next reply's config and thinking switch; None (and settingsRejected) when a setting is out of range."""
        try:
            return self.reply_settings()
        except ConfigError as exc:
            self.settingsRejected.emit(f"Not sent: {exc}. Change it in the settings panel or the Speculation menu.")
            return None

    def _start_reply(
        self,
        settings: tuple[GenerationConfig, bool],
        again: StoredMessage | None = None,
        continuing: StoredMessage | None = None,
    ) -> None:
        """Start a reply after the saved messages, regenerate `again` (the last reply) from those before it, or
        continue `continuing` (the last reply, with its token ids) from where it stopped."""
        cfg, thinking = settings
        conversation_id = self.conversation_id
        assert conversation_id is not None  # send() saved it first; regenerate() needs one
        history = self.store.messages(conversation_id)
        mine = again or continuing  # the reply row this one rewrites or grows
        messages = self.tool_round.chat_messages([m for m in history if mine is None or m.position < mine.position])
        tools = self.tool_round.begin_reply(mine.id if mine else None)  # the MCP servers' tools, as function specs
        trace = self._reply_trace(continuing)
        if isinstance(trace, ContinuedTrace) and continuing is not None:
            messages.append(continued_message(continuing, trace.tokens))
        if mine is None:
            view = self.transcript.start_reply(trace)
            message_id = view.message_id = self.store.begin_reply(conversation_id).id
        else:
            if again is not None:
                self.store.begin_regenerate(mine.id)
            else:
                self.store.begin_continue(mine.id)
            self.transcript.restart_reply(mine.position, trace)
            message_id = mine.id
        request_id = self.client.generate(messages, cfg, self.system_prompt(), thinking, tools=tools)
        self.active = ActiveReply(
            request_id, conversation_id, trace, message_id, time.monotonic(), again is not None, continuing
        )
        self.last_trace = trace
        self._set_busy(True)
        self.replyStarted.emit(request_id)

    def _reply_trace(self, continuing: StoredMessage | None) -> ReplyTrace:
        """A new reply's trace, or one that starts from the reply it continues; waiting in the queue at first."""
        ids = continuing.token_ids if continuing is not None else None
        trace = (
            ContinuedTrace(self.decode, continuing, ids) if continuing and ids is not None else ReplyTrace(self.decode)
        )
        trace.waiting = IN_QUEUE  # until the queue says more (what it waits for), or the job starts
        return trace

    def _on_event(self, request_id: int, event) -> None:
        active = self.active
        if active is None or request_id != active.request_id:
            return
        if isinstance(event, (TextChunk, RoundResult, PrefillProgress)):
            active.trace.add(event)
            if active.conversation_id == self.conversation_id:
                self.transcript.reply_updated()
            self._save_partial(active)
        elif isinstance(event, Finished):
            text = self._whole_text(active, event)
            self._finish(text, asdict(event.stats), event.cancelled)
            self.replyFinished.emit(event)
            if not event.cancelled:  # its tool calls: a card each, run once the user approves
                called = self.tool_round.reply_finished(active.conversation_id, active.message_id, text)
                pending = self.tool_round.pending
                if called and pending is not None and active.conversation_id == self.conversation_id:
                    self.transcript.show_reply_text(pending.content)  # no raw <tool_call> markup on screen
        elif isinstance(event, Failed):
            self._fail(event.message)

    def _whole_text(self, active: ActiveReply, event: Finished) -> str:
        """The reply's text: the Finished event's, or for a continued reply the text of all its tokens."""
        before = active.continued
        if before is None or not isinstance(active.trace, ContinuedTrace):
            return event.text
        text = continued_text(self.decode, before.content, active.trace.tokens, event.text)
        active.trace.settle(text)
        return text

    def _queue_changed(self, state: QueueState) -> None:
        """A queued reply's card says what it waits for (a load, the plain-decode measurement, a sweep)."""
        active = self.active
        if active is None or active.trace.started_at is not None:
            return
        detail = self.client.running_detail if state.running is not None and state.running.kind == "baseline" else None
        running = {info.id for info in state.running_batch} | ({state.running.id} if state.running else set())
        if state.ahead_of(active.request_id) is not None:
            active.trace.waiting = waiting_text(state, active.request_id, detail) or IN_QUEUE
        elif active.request_id in running:  # it left the queue: the engine reads the prompt first
            active.trace.waiting = READING
        else:
            return
        if active.conversation_id == self.conversation_id:
            self.transcript.reply_updated()

    def _finish(self, text: str, stats: dict | None, cancelled: bool) -> None:
        active, self.active = self.active, None
        assert active is not None  # only the active reply finishes
        if stats is not None and "generated_tokens" in stats:  # time to first token as the user saw it
            stats = ttft_split({**stats, **active.trace.timing()})
        self.client.finished(active.request_id)
        shown = active.conversation_id == self.conversation_id
        try:
            self._save_finished(active, text, stats, cancelled, shown)
        except sqlite3.DatabaseError as error:  # the disk filled up during the reply
            if is_disk_full(error) and self._go_on_in_memory(error):
                self._save_finished(active, text, stats, cancelled, shown)  # into the in-memory copy
            else:
                self._store_error(error)
                if shown:
                    self.transcript.finish_reply(text, footer_text(stats, cancelled))
        self._set_busy(False)

    def _store_error(self, error: sqlite3.DatabaseError) -> None:
        """Say once per reply that the conversations file refused a write."""
        if not self._store_said:
            self._store_said = True
            self.storeFailed.emit(
                f"Could not save to {self.store.path} ({error}): the chat goes on, but this "
                "reply is not kept. Free some space and the next one will be."
            )

    def _save_finished(self, active: ActiveReply, text: str, stats: dict | None, cancelled: bool, shown: bool) -> None:
        self._store_said = False
        if active.continued is not None:
            self._save_continued(active, active.continued, text, stats, cancelled, shown)
        elif text or not cancelled:
            row = self.store.finish_reply(active.message_id, text, stats, cancelled, reply_trace_data(active.trace))
            if shown and row is not None:
                count = len(self.store.versions(row.id)) or 1
                self.transcript.finish_reply(text, footer_text(stats, cancelled), row.version, count)
        elif active.regenerating:  # stopped before any text: the reply shown before stays
            self.store.restore_shown_version(active.message_id)
            if shown:
                self.transcript.finish_reply("", "")
                self.open(active.conversation_id)
        else:
            self.store.delete_message(active.message_id)  # stopped before it said anything
            if shown:
                self.transcript.keep_as_notice(stopped_notice(active.trace, stats))

    def _save_continued(
        self, active: ActiveReply, before: StoredMessage, text: str, stats: dict | None, cancelled: bool, shown: bool
    ) -> None:
        """Save a continued reply in place; one stopped before any new text stays as it was."""
        grew = len(active.trace.tokens) > len(before.token_ids or [])
        trace: dict | None = reply_trace_data(active.trace)
        if grew or not cancelled:
            stats = continued_stats(before.stats, stats)
        else:
            text, stats, cancelled, trace = before.content, before.stats, before.cancelled, before.trace
        row = self.store.finish_continued(active.message_id, text, stats, cancelled, trace)
        if shown and row is not None:
            count = len(self.store.versions(row.id)) or 1
            self.transcript.finish_reply(text, footer_text(stats, cancelled), row.version, count)

    def _save_partial(self, active: ActiveReply) -> None:
        """Save the text so far when save_interval_s has passed since the last save."""
        now = time.monotonic()
        if now - active.saved_at >= self.save_interval_s:
            active.saved_at = now
            try:
                self.store.update_reply(active.message_id, active.trace.text)
            except sqlite3.DatabaseError as error:
                self._store_error(error)

    def _fail(self, message: str) -> None:
        assert self.active is not None  # only the active reply fails
        partial = self.active.trace.text
        self._finish(partial, error_stats(message), True)
        self.replyFailed.emit(message)

    def _deleted(self, conversation_id: int) -> None:
        if conversation_id == self.conversation_id:
            self.new_conversation()

    def _set_busy(self, busy: bool) -> None:
        self.composer.set_busy(busy)
        self.transcript.set_busy(busy)
        self.update_continue()
        self.busyChanged.emit(busy)


def continue_action(chat: ChatController, window: QObject | None) -> QAction:
    """Continue the last reply from the keyboard, anywhere in the window (also for a menu); it stays enabled so
    that pressing it when the reply cannot be continued says why."""
    action = QAction("Continue reply", chat)
    action.setShortcut(QKeySequence(CONTINUE_SHORTCUT))
    action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    action.setToolTip(CONTINUE_TIP)
    action.triggered.connect(chat.continue_reply)
    if isinstance(window, QWidget):
        window.addAction(action)
    return action


def ttft_split(stats: dict) -> dict:
    """A finished reply's stats with its queue wait: the time from Send to the engine's start of the reply
    (the engine's own ttft_s covers reading the prompt and the first token). The trace's first-event time
    counts prompt reading as queue time, so it is not kept."""
    stats = {key: value for key, value in stats.items() if key != "queued_s"}
    if "ttft_from_send_s" in stats and "ttft_s" in stats:
        stats["queue_s"] = max(stats["ttft_from_send_s"] - stats["ttft_s"], 0.0)
    return stats
