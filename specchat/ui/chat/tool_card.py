"""MCP tool calls in the chat: a card per call (tool, arguments, Approve / Deny / Always allow this tool, then
its result), and `ToolRound`, which reads a finished reply's <tool_call> blocks, asks the user, runs the
approved calls on the McpHost (off the UI thread), and asks the controller to continue the reply once every
call of the round is answered. Nothing runs without the user's say-so or a saved always-allow."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from specchat.mcp_host import McpHost, McpTool, ServerSpec, ToolRegistry, ToolResult, specs_from
from specchat.mcp_host.approvals import (
    ApprovalPolicy,
    Decision,
    assistant_message,
    declined_message,
    format_arguments,
    parse_arguments,
    tool_message,
)
from specchat.server.tools import ToolCall, split_tool_calls
from specchat.store import StoredMessage

from ..tasks import TaskRunner

log = logging.getLogger(__name__)
CONNECT_WAIT_S = 0.0  # a reply never waits on the UI thread: it goes with the tools of the servers already up
RESULT_CHARS = 2000  # a card shows this much of a result


class ToolCard(QFrame):
    """One tool call in the transcript: what the model asked for, the user's answer, and the result."""

    decided = Signal(str)  # a Decision value

    def __init__(self, name: str, server: str | None, arguments: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("toolCard")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.name = name
        column = QVBoxLayout(self)
        where = f" on {server}" if server else " (no MCP server offers it)"
        self.title = QLabel(f"Tool call: <b>{name}</b>{where}")
        self.arguments = QLabel(format_arguments(arguments))
        self.arguments.setObjectName("toolArguments")
        self.arguments.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.arguments.setStyleSheet("font-family: monospace;")
        self.buttons = QWidget()
        row = QHBoxLayout(self.buttons)
        row.setContentsMargins(0, 0, 0, 0)
        self.approve_button = QPushButton("Approve")
        self.deny_button = QPushButton("Deny")
        self.always_button = QPushButton("Always allow this tool")
        self.always_button.setToolTip(f"Run {name} without asking from now on (Preferences ▸ MCP servers)")
        for button, decision in (
            (self.approve_button, Decision.APPROVE),
            (self.deny_button, Decision.DENY),
            (self.always_button, Decision.ALWAYS),
        ):
            button.clicked.connect(lambda _checked=False, d=decision: self._decide(d))
            row.addWidget(button)
        row.addStretch(1)
        self.status = QLabel("Run it?")
        self.status.setWordWrap(True)
        self.result = QLabel()
        self.result.setObjectName("toolResult")
        self.result.setWordWrap(True)
        self.result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.result.setVisible(False)
        for widget in (self.title, self.arguments, self.buttons, self.status, self.result):
            column.addWidget(widget)

    def _decide(self, decision: Decision) -> None:
        self.buttons.setEnabled(False)
        self.decided.emit(decision.value)

    def show_running(self, allowed_always: bool = False) -> None:
        self.buttons.setVisible(False)
        self.status.setText("Running (always allowed)…" if allowed_always else "Running…")

    def show_result(self, result: ToolResult) -> None:
        self.buttons.setVisible(False)
        self.status.setText("The tool failed:" if result.is_error else "Result:")
        text = result.text if len(result.text) <= RESULT_CHARS else result.text[:RESULT_CHARS] + "…"
        self.result.setText(text)
        self.result.setVisible(True)

    def show_declined(self) -> None:
        self.buttons.setVisible(False)
        self.status.setText("Declined: the model is told you did not run it.")

    def show_abandoned(self) -> None:
        self.buttons.setVisible(False)
        self.status.setText("Not run: the conversation moved on.")


@dataclass
class PendingRound:
    """A reply's tool calls waiting for the user's answers and the results."""

    conversation_id: int
    message_id: int  # the assistant reply that made the calls
    content: str  # its text outside the calls
    calls: list[ToolCall]
    cards: list[ToolCard]
    answers: dict[int, dict[str, Any]] = field(default_factory=dict)  # call index -> its tool message

    @property
    def done(self) -> bool:
        return len(self.answers) == len(self.calls)

    def messages(self) -> list[dict[str, Any]]:
        """The assistant's turn with its calls, then a tool message per call (in call order)."""
        turn = assistant_message(self.content, [(c.id, c.name, c.arguments) for c in self.calls])
        return [turn, *(self.answers[i] for i in range(len(self.calls)) if i in self.answers)]


class ToolRound(QObject):
    """The chat's MCP side: which servers, their tools for the next reply, and each reply's tool calls."""

    continueRequested = Signal()  # every call of the round is answered: the model goes on
    serverFailed = Signal(str)  # an MCP server could not start or died (said once per server)
    toolFinished = Signal(str, object)  # tool name, ToolResult
    _relay = Signal(str)  # a server's failure, from the host's loop thread to this one

    def __init__(
        self,
        transcript: Any,
        tasks: TaskRunner,
        servers: Callable[[], Sequence[dict[str, Any]]] = list,
        save_servers: Callable[[list[dict[str, Any]]], None] | None = None,
        parent: QObject | None = None,
    ):
        super().__init__(parent)
        self.transcript, self.tasks = transcript, tasks
        self.servers, self.save_servers = servers, save_servers
        self.host: McpHost | None = None
        self.offered = ToolRegistry()  # the tools the reply in progress was offered
        self.pending: PendingRound | None = None
        self.rounds: dict[int, PendingRound] = {}  # answered rounds by the reply that made them (this session)
        self._specs: tuple[ServerSpec, ...] = ()
        self._relay.connect(self.serverFailed, Qt.ConnectionType.QueuedConnection)
        QTimer.singleShot(0, self, self.mcp)  # servers start connecting in the background

    # --- the host ---

    def mcp(self) -> McpHost | None:
        """The McpHost for the configured servers (a new one when they changed), started; None without servers."""
        specs = specs_from(self.servers())
        if [(s.name, s.command, s.url) for s in specs] != [(s.name, s.command, s.url) for s in self._specs]:
            self.close()
            self.host = McpHost(specs, self._say) if specs else None
        self._specs = specs
        if self.host is not None:
            self.host.start()
        return self.host

    def _say(self, message: str) -> None:
        try:
            self._relay.emit(message)
        except RuntimeError:  # the window closed meanwhile
            pass

    def close(self) -> None:
        """Stop the servers (the window closes, or the list changed)."""
        host, self.host = self.host, None
        if host is not None:
            host.close()

    # --- a reply ---

    def begin_reply(self, regenerating: int | None = None) -> list[dict[str, Any]]:
        """The function specs for the next reply (none without servers); a round still waiting is dropped, and
        so is the round of a reply generated again (`regenerating`: its message id)."""
        self.abandon()
        if regenerating is not None:
            self.rounds.pop(regenerating, None)
        host = self.mcp()
        self.offered = host.registry(CONNECT_WAIT_S) if host is not None else ToolRegistry()
        return self.offered.function_specs()

    def chat_messages(self, history: Sequence[StoredMessage]) -> list[dict[str, Any]]:
        """The saved messages as chat messages, each reply that made tool calls as its calls and their results."""
        out: list[dict[str, Any]] = []
        for message in history:
            answered = self.rounds.get(message.id)
            out += answered.messages() if answered is not None else [message.as_chat()]
        return out

    def reply_finished(self, conversation_id: int, message_id: int, text: str) -> bool:
        """Read a finished reply's tool calls: a card each; True when it made any."""
        if not len(self.offered):
            return False
        content, calls = split_tool_calls(text, self.offered.function_specs())
        if not calls:
            return False
        cards = [self._card(call) for call in calls]
        round_ = PendingRound(conversation_id, message_id, content, calls, cards)
        self.pending = round_
        policy = ApprovalPolicy(self._specs)
        for index, (call, card) in enumerate(zip(calls, cards)):
            card.decided.connect(lambda value, i=index: self.decide(round_, i, Decision(value)))
            tool = self.offered.get(call.name)
            if tool is not None and policy.allowed(tool.server, tool.name):
                card.show_running(allowed_always=True)
                self._run(round_, index)
        return True

    def _card(self, call: ToolCall) -> ToolCard:
        tool = self.offered.get(call.name)
        card = ToolCard(call.name, tool.server if tool else None, call.arguments)
        column = self.transcript.column
        column.insertWidget(column.count() - 1, card)
        return card

    def decide(self, round_: PendingRound, index: int, decision: Decision) -> None:
        """The user's answer to one call's card."""
        if round_ is not self.pending or index in round_.answers:
            return
        call, card = round_.calls[index], round_.cards[index]
        if decision == Decision.DENY:
            card.show_declined()
            self._answer(round_, index, declined_message(call.id, call.name))
            return
        if decision == Decision.ALWAYS:
            self._allow_always(self.offered.get(call.name))
        card.show_running()
        self._run(round_, index)

    def _allow_always(self, tool: McpTool | None) -> None:
        if tool is None:
            return
        policy = ApprovalPolicy(self._specs)
        policy.allow_always(tool.server, tool.name)
        self._specs = tuple(policy.saved_into(self._specs))
        if self.save_servers is not None:
            self.save_servers([spec.to_dict() for spec in self._specs])

    def _run(self, round_: PendingRound, index: int) -> None:
        call, host = round_.calls[index], self.host
        if host is None:
            self._done(round_, index, ToolResult("The MCP servers were stopped.", True))
            return
        arguments = parse_arguments(call.arguments)
        self.tasks.run(
            lambda: host.call(call.name, arguments),
            lambda result: self._done(round_, index, result),
            lambda message: self._done(round_, index, ToolResult(f"The tool {call.name} failed: {message}", True)),
        )

    def _done(self, round_: PendingRound, index: int, result: ToolResult) -> None:
        call = round_.calls[index]
        round_.cards[index].show_result(result)
        self.toolFinished.emit(call.name, result)
        if round_ is self.pending:
            text = f"Error: {result.text}" if result.is_error else result.text
            self._answer(round_, index, tool_message(call.id, call.name, text))

    def _answer(self, round_: PendingRound, index: int, message: dict[str, Any]) -> None:
        round_.answers[index] = message
        if round_.done:
            self.rounds[round_.message_id] = round_
            self.pending = None
            self.continueRequested.emit()

    def abandon(self) -> PendingRound | None:
        """The conversation moved on before every call was answered: its cards say so."""
        round_, self.pending = self.pending, None
        if round_ is not None:
            for index, card in enumerate(round_.cards):
                if index not in round_.answers:
                    card.show_abandoned()
        return round_

    def drop_cards(self, *_args: object) -> None:
        """Another conversation is shown: the cards go with the transcript's."""
        abandoned = self.abandon()
        for round_ in [*self.rounds.values(), *([abandoned] if abandoned else [])]:
            for card in round_.cards:
                card.deleteLater()
            round_.cards = []
