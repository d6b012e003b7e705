"""A reply as it is written: start it (new, regenerated or continued), follow its events and its place in the
queue on its card, save its text every few seconds and save it whole when it ends, stops or fails."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from specchat.engine import Failed, Finished, GenerationConfig, PrefillProgress, RoundResult, TextChunk
from specchat.engine.owner import QueueState
from specchat.store import StoredMessage
from specchat.store.errors import is_disk_full

from ..job_client import waiting_text
from .continuation import ContinuedTrace, continued_message, continued_stats, continued_text, reply_trace_data
from .footer import error_stats, footer_text
from .message_actions import stopped_notice
from .trace import ReplyTrace

if TYPE_CHECKING:
    from .controller import ChatController

SAVE_INTERVAL_S = 2.0  # a streaming reply's text is saved at least this often (a crash loses at most this much)
IN_QUEUE = "Waiting in the queue…"  # the card of a reply whose job has not started
READING = "Reading the prompt…"  # ... whose job started, before its first progress event


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


class ReplyStream:
    """Starts the chat's replies and follows the one being written (ChatController.active) to its end."""

    def __init__(self, chat: ChatController):
        self.chat = chat

    def start(
        self,
        settings: tuple[GenerationConfig, bool],
        again: StoredMessage | None = None,
        continuing: StoredMessage | None = None,
    ) -> None:
        """Start a reply after the saved messages, regenerate `again` (the last reply) from those before it, or
        continue `continuing` (the last reply, with its token ids) from where it stopped."""
        chat = self.chat
        cfg, thinking = settings
        conversation_id = chat.conversation_id
        assert conversation_id is not None  # send() saved it first; regenerate() needs one
        history = chat.store.messages(conversation_id)
        mine = again or continuing  # the reply row this one rewrites or grows
        messages = chat.tool_round.chat_messages([m for m in history if mine is None or m.position < mine.position])
        tools = chat.tool_round.begin_reply(mine.id if mine else None)  # the MCP servers' tools, as function specs
        trace = self._trace(continuing)
        if isinstance(trace, ContinuedTrace) and continuing is not None:
            messages.append(continued_message(continuing, trace.tokens))
        if mine is None:
            view = chat.transcript.start_reply(trace)
            message_id = view.message_id = chat.store.begin_reply(conversation_id).id
        else:
            if again is not None:
                chat.store.begin_regenerate(mine.id)
            else:
                chat.store.begin_continue(mine.id)
            chat.transcript.restart_reply(mine.position, trace)
            message_id = mine.id
        request_id = chat.client.generate(messages, cfg, chat.system_prompt(), thinking, tools=tools)
        chat.active = ActiveReply(
            request_id, conversation_id, trace, message_id, time.monotonic(), again is not None, continuing
        )
        chat.last_trace = trace
        chat.set_busy(True)
        chat.replyStarted.emit(request_id)

    def _trace(self, continuing: StoredMessage | None) -> ReplyTrace:
        """A new reply's trace, or one that starts from the reply it continues; waiting in the queue at first."""
        decode = self.chat.decode
        ids = continuing.token_ids if continuing is not None else None
        trace = ContinuedTrace(decode, continuing, ids) if continuing and ids is not None else ReplyTrace(decode)
        trace.waiting = IN_QUEUE  # until the queue says more (what it waits for), or the job starts
        return trace

    def on_event(self, request_id: int, event: object) -> None:
        """An engine event of the reply being written: its card follows, and its end is saved."""
        chat, active = self.chat, self.chat.active
        if active is None or request_id != active.request_id:
            return
        if isinstance(event, (TextChunk, RoundResult, PrefillProgress)):
            active.trace.add(event)
            if active.conversation_id == chat.conversation_id:
                chat.transcript.reply_updated()
            self._save_partial(active)
        elif isinstance(event, Finished):
            text = self._whole_text(active, event)
            self.finish(text, asdict(event.stats), event.cancelled)
            chat.replyFinished.emit(event)
            if not event.cancelled:  # its tool calls: a card each, run once the user approves
                called = chat.tool_round.reply_finished(active.conversation_id, active.message_id, text)
                pending = chat.tool_round.pending
                if called and pending is not None and active.conversation_id == chat.conversation_id:
                    chat.transcript.show_reply_text(pending.content)  # no raw <tool_call> markup on screen
        elif isinstance(event, Failed):
            self.fail(event.message)

    def _whole_text(self, active: ActiveReply, event: Finished) -> str:
        """The reply's text: the Finished event's, or for a continued reply the text of all its tokens."""
        before = active.continued
        if before is None or not isinstance(active.trace, ContinuedTrace):
            return event.text
        text = continued_text(self.chat.decode, before.content, active.trace.tokens, event.text)
        active.trace.settle(text)
        return text

    def queue_changed(self, state: QueueState) -> None:
        """A queued reply's card says what it waits for (a load, the plain-decode measurement, a sweep)."""
        chat, active = self.chat, self.chat.active
        if active is None or active.trace.started_at is not None:
            return
        client = chat.client
        detail = client.running_detail if state.running is not None and state.running.kind == "baseline" else None
        running = {info.id for info in state.running_batch} | ({state.running.id} if state.running else set())
        if state.ahead_of(active.request_id) is not None:
            active.trace.waiting = waiting_text(state, active.request_id, detail) or IN_QUEUE
        elif active.request_id in running:  # it left the queue: the engine reads the prompt first
            active.trace.waiting = READING
        else:
            return
        if active.conversation_id == chat.conversation_id:
            chat.transcript.reply_updated()

    def finish(self, text: str, stats: dict | None, cancelled: bool) -> None:
        """The reply ended (finished, stopped, failed or interrupted): save it and show its footer."""
        chat = self.chat
        active, chat.active = chat.active, None
        assert active is not None  # only the active reply finishes
        if stats is not None and "generated_tokens" in stats:  # time to first token as the user saw it
            stats = ttft_split({**stats, **active.trace.timing()})
        chat.client.finished(active.request_id)
        shown = active.conversation_id == chat.conversation_id
        try:
            self._save_finished(active, text, stats, cancelled, shown)
        except sqlite3.DatabaseError as error:  # the disk filled up during the reply
            if is_disk_full(error) and chat.faults.go_on_in_memory(error):
                self._save_finished(active, text, stats, cancelled, shown)  # into the in-memory copy
            else:
                chat.faults.reply_not_saved(error)
                if shown:
                    chat.transcript.finish_reply(text, footer_text(stats, cancelled))
        chat.set_busy(False)

    def _save_finished(self, active: ActiveReply, text: str, stats: dict | None, cancelled: bool, shown: bool) -> None:
        chat, store = self.chat, self.chat.store
        chat.faults.reset_reply_notice()
        if active.continued is not None:
            self._save_continued(active, active.continued, text, stats, cancelled, shown)
        elif text or not cancelled:
            row = store.finish_reply(active.message_id, text, stats, cancelled, reply_trace_data(active.trace))
            if shown and row is not None:
                count = len(store.versions(row.id)) or 1
                chat.transcript.finish_reply(text, footer_text(stats, cancelled), row.version, count)
        elif active.regenerating:  # stopped before any text: the reply shown before stays
            store.restore_shown_version(active.message_id)
            if shown:
                chat.transcript.finish_reply("", "")
                chat.open(active.conversation_id)
        else:
            store.delete_message(active.message_id)  # stopped before it said anything
            if shown:
                chat.transcript.keep_as_notice(stopped_notice(active.trace, stats))

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
        row = self.chat.store.finish_continued(active.message_id, text, stats, cancelled, trace)
        if shown and row is not None:
            count = len(self.chat.store.versions(row.id)) or 1
            self.chat.transcript.finish_reply(text, footer_text(stats, cancelled), row.version, count)

    def _save_partial(self, active: ActiveReply) -> None:
        """Save the text so far when save_interval_s has passed since the last save."""
        now = time.monotonic()
        if now - active.saved_at >= self.chat.save_interval_s:
            active.saved_at = now
            try:
                self.chat.store.update_reply(active.message_id, active.trace.text)
            except sqlite3.DatabaseError as error:
                self.chat.faults.reply_not_saved(error)

    def fail(self, message: str) -> None:
        """The reply failed: what it wrote is saved with the error in its footer (and replyFailed says it)."""
        active = self.chat.active
        assert active is not None  # only the active reply fails
        self.finish(active.trace.text, error_stats(message), True)
        self.chat.replyFailed.emit(message)


def ttft_split(stats: dict) -> dict:
    """A finished reply's stats with its queue wait: the time from Send to the engine's start of the reply
    (the engine's own ttft_s covers reading the prompt and the first token). The trace's first-event time
    counts prompt reading as queue time, so it is not kept."""
    stats = {key: value for key, value in stats.items() if key != "queued_s"}
    if "ttft_from_send_s" in stats and "ttft_s" in stats:
        stats["queue_s"] = max(stats["ttft_from_send_s"] - stats["ttft_s"], 0.0)
    return stats
