"""A SpecChat server used as the engine: its status and its event stream, as the local engine's
own events (the views cannot tell local from remote). No Qt."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass

import httpx

from app.engine.config import GenerationConfig
from app.engine.errors import EngineError
from app.engine.events import Event, Failed

from .wire import event_from_json

CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 600.0  # a long prompt's prefill may send nothing for minutes


class RemoteError(EngineError):
    """The server could not be reached, refused the key, or answered with an error."""


@dataclass(frozen=True)
class RemoteStatus:
    """What a server has loaded and what it is doing."""

    url: str
    target: str | None
    draft: str | None
    available_modes: dict
    queued: int
    requests_served: int
    ranks: tuple["RankMemory", ...] = ()  # a cluster's ranks (empty for one process)
    degraded: str | None = None  # why the cluster cannot serve (None when it can)


@dataclass(frozen=True)
class RankMemory:
    """One rank of a cluster: where it runs and the MLX memory it holds now and at its peak."""

    rank: int
    host: str
    active_bytes: int
    peak_bytes: int

    def label(self) -> str:
        """'rank 1 (studio-2): 21.3 GB, peak 23.0 GB' for the dashboard."""
        return f"rank {self.rank} ({self.host}): {self.active_bytes / 1e9:.1f} GB, peak {self.peak_bytes / 1e9:.1f} GB"


class RemoteEngine:
    """Streams replies from `url` (`python -m app serve` on this or another Mac)."""

    def __init__(self, url: str, api_key: str | None = None):
        self.url = url.rstrip("/")
        self.api_key = api_key

    def status(self) -> RemoteStatus:
        """The server's loaded pair and queue; RemoteError when it cannot be asked."""
        body = self._get("/specchat/v1/status")
        cluster = body.get("cluster") or {}
        ranks = tuple(RankMemory(int(r["rank"]), str(r.get("host", "")), int(r.get("active_memory_bytes") or 0),
                                 int(r.get("peak_memory_bytes") or 0)) for r in cluster.get("ranks") or [])
        return RemoteStatus(self.url, body.get("target"), body.get("draft"), body.get("available_modes") or {},
                            len(body.get("queued") or []), int(body.get("requests_served") or 0), ranks,
                            cluster.get("degraded_reason"))

    def stream(self, messages: list[dict], cfg: GenerationConfig, system_prompt: str = "",
               enable_thinking: bool | None = None, cancel: threading.Event | None = None) -> Iterator[Event]:
        """The reply's engine events; closing the connection (cancel set) stops it on the server."""
        body = {"messages": messages, "config": asdict(cfg), "system_prompt": system_prompt}
        if enable_thinking is not None:
            body["enable_thinking"] = enable_thinking
        try:
            with httpx.Client(timeout=httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)) as client:
                with client.stream("POST", self.url + "/specchat/v1/generate", json=body,
                                   headers=self._headers()) as response:
                    if response.status_code != 200:
                        response.read()
                        raise RemoteError(_error_text(response))
                    yield from _events(response, cancel)
        except httpx.HTTPError as exc:
            yield Failed(f"The server at {self.url} could not be reached: {exc}", "RemoteError")
        except RemoteError as exc:
            yield Failed(str(exc), "RemoteError")

    def _get(self, path: str) -> dict:
        try:
            response = httpx.get(self.url + path, headers=self._headers(), timeout=CONNECT_TIMEOUT_S)
        except httpx.HTTPError as exc:
            raise RemoteError(f"The server at {self.url} could not be reached: {exc}") from None
        if response.status_code != 200:
            raise RemoteError(_error_text(response))
        return response.json()

    def _headers(self) -> dict:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}


def _events(response: httpx.Response, cancel: threading.Event | None) -> Iterator[Event]:
    for line in response.iter_lines():
        if cancel is not None and cancel.is_set():
            return  # leaving the block closes the connection: the server cancels the job
        if not line.startswith("data: "):
            continue
        body = json.loads(line[6:])
        if body.get("type") == "Queued":
            continue
        yield event_from_json(body)


def _error_text(response: httpx.Response) -> str:
    try:
        message = response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = response.text[:200]
    return f"The server answered {response.status_code}: {message}"
