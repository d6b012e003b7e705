"""The server's request log: one frozen record per finished request, the last ones kept in memory for the
app, each also written as one JSON line to the log file when there is one."""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from specchat.engine.events import GenerationStats

log = logging.getLogger(__name__)

REQUEST_LOG_NAME = "server-requests.jsonl"  # beside the app's error log (AppPaths.log_dir)
DEFAULT_CAPACITY = 1000
MAX_FILE_BYTES = 5_000_000  # then the file moves to its ".1" (the one before is dropped) and a new one starts
CLIENT_GONE_STATUS = 499  # nginx's "client closed request": the client hung up before the response ended
CLIENT_GONE = "The client hung up before the response ended"

RecordListener = Callable[["RequestRecord"], None]


@dataclass(frozen=True)
class RequestRecord:
    """One finished request: who asked what, how it ended, and what its generation did (None: none ran)."""

    time: float  # when the request arrived, seconds since the epoch
    client: str  # "host:port", "" when the server was not told
    method: str
    route: str  # the path asked for, e.g. "/v1/chat/completions"
    status: int  # the HTTP status sent (499: the client hung up first)
    duration_s: float  # from arrival to the end of the response (or of its generation, if later)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None  # tokens the engine generated for the request
    decode_tokens_per_s: float | None = None
    drafter: str = ""  # the speculation mode ("draft", "mtp", "baseline"...; auto names its sources)
    acceptance: float | None = None  # accepted / drafted tokens, when drafts were checked
    # the requests decoded together in its generation's rounds (GenerationStats'; 0: it ran alone, or none ran)
    batch_rows_max: int = 0  # the most in one round
    batch_rows_mean: float = 0.0  # the mean per round
    error: str = ""  # what went wrong: the error body's message, an engine failure, a hang-up
    # the engine host's ids of the request's generation jobs, to match the record to their engine events; only
    # in memory (ids start again with each app), not in the JSON line
    job_ids: tuple[int, ...] = ()

    @property
    def failed(self) -> bool:
        """True when the request was refused, failed or cut short."""
        return self.status >= 400 or bool(self.error)

    def to_json(self) -> dict[str, object]:
        """The record as a JSON object, its time in local ISO 8601."""
        fields = asdict(self)
        del fields["job_ids"]
        fields["time"] = datetime.fromtimestamp(self.time).astimezone().isoformat(timespec="milliseconds")
        return fields


@dataclass(frozen=True)
class GenerationFigures:
    """What a request's generations (usually one) add to its record."""

    prompt_tokens: int
    completion_tokens: int
    decode_tokens_per_s: float
    drafter: str
    acceptance: float | None
    batch_rows_max: int = 0
    batch_rows_mean: float = 0.0

    @classmethod
    def of(cls, stats: list[GenerationStats]) -> GenerationFigures:
        """The figures of one or more generations' stats, summed (speed and acceptance over them all)."""
        generated = sum(s.generated_tokens for s in stats)
        decode_s = sum(s.decode_s for s in stats)
        drafted, accepted = sum(s.drafted for s in stats), sum(s.accepted for s in stats)
        speed = generated / decode_s if len(stats) > 1 and decode_s > 0 else stats[-1].decode_tokens_per_s
        return cls(
            prompt_tokens=sum(s.prompt_tokens for s in stats),
            completion_tokens=generated,
            decode_tokens_per_s=speed,
            drafter=drafter_name(stats[-1]),
            acceptance=accepted / drafted if drafted else None,
            batch_rows_max=max(s.batch_rows_max for s in stats),
            batch_rows_mean=batch_rows_mean(stats),
        )


def batch_rows_mean(stats: list[GenerationStats]) -> float:
    """The mean rows per round over the generations that ran in a batch, weighted by their rounds (0: none did)."""
    batched = [s for s in stats if s.batch_rows_max > 0]
    rounds = sum(s.rounds for s in batched)
    if not rounds:
        return sum(s.batch_rows_mean for s in batched) / len(batched) if batched else 0.0
    return sum(s.batch_rows_mean * s.rounds for s in batched) / rounds


def drafter_name(stats: GenerationStats) -> str:
    """The mode a generation ran in; auto adds the sources it drafted from, most rounds first."""
    if not stats.drafter_rounds:
        return stats.mode
    sources = sorted(stats.drafter_rounds, key=lambda name: -stats.drafter_rounds[name][0])
    return f"{stats.mode} ({', '.join(sources)})"


def error_message(status: int, body: bytes) -> str:
    """The message of an error response's body (OpenAI's, Anthropic's or Ollama's shape), else its text."""
    try:
        parsed = json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError):
        parsed = None
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    if isinstance(error, str):
        return error
    text = body.decode("utf-8", "replace").strip()
    return text[:500] or f"HTTP {status} with no body"


class RequestLog:
    """The last `capacity` records in memory (thread-safe), each also appended to `path` as a JSON line;
    listeners hear each new record on the thread that added it."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, path: Path | None = None):
        if capacity < 1:
            raise ValueError(f"a request log keeps at least 1 record, not {capacity}")
        self.path = path
        self.file_problem = ""  # why the file is no longer written, once it could not be
        self._records: deque[RequestRecord] = deque(maxlen=capacity)
        self._listeners: list[RecordListener] = []
        self._lock = threading.Lock()

    def add(self, record: RequestRecord) -> None:
        """Keep a record, write its line and tell the listeners."""
        with self._lock:
            self._records.append(record)
            self._write(record)
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(record)
            except Exception:  # a view's bug must not lose the record for the others
                log.exception("a request-log listener raised")

    def records(self) -> list[RequestRecord]:
        """The records kept, newest first."""
        with self._lock:
            return list(reversed(self._records))

    def subscribe(self, listener: RecordListener) -> None:
        """Call listener with every record added from now on."""
        with self._lock:
            self._listeners.append(listener)

    def unsubscribe(self, listener: RecordListener) -> None:
        """Stop calling a listener."""
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def _write(self, record: RequestRecord) -> None:
        if self.path is None or self.file_problem:
            return
        line = json.dumps(record.to_json(), ensure_ascii=False) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.exists() and self.path.stat().st_size + len(line) > MAX_FILE_BYTES:
                self.path.replace(self.path.with_name(self.path.name + ".1"))
            with self.path.open("a", encoding="utf-8") as out:
                out.write(line)
        except OSError as exc:  # said once; the records stay in memory
            self.file_problem = f"The request log {self.path} cannot be written ({exc}); requests are kept in memory"
            log.warning(self.file_problem)
