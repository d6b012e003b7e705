"""A SpecChat server used as the engine. RemoteEngine offers what the app's jobs call on a local
Engine (stream, generate, a tokenizer, the loaded pair, available modes), over HTTP, so chat, the
dashboard, A/B and sweeps run unchanged against a Mac in the next room or a cluster. No Qt."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field

import httpx

from specchat.engine.config import GenerationConfig
from specchat.engine.engine import GenerationResult, result_of
from specchat.engine.errors import ErrorKind, RemoteError
from specchat.engine.events import Event, Failed
from specchat.engine.json_types import JSONObject, JSONValue, as_int, as_list, as_object, as_str, int_list, objects

from .wire import EVENT_TYPES, event_from_json

CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 600.0  # a long prompt's prefill may send nothing for minutes


@dataclass(frozen=True)
class RemoteModel:
    """A model loaded on the server: its name, and a path that says where it is (for display and keys)."""

    name: str
    path: str
    config: JSONObject = field(default_factory=dict)


@dataclass(frozen=True)
class RemoteStatus:
    """What a server has loaded and what it is doing."""

    url: str
    target: str | None
    draft: str | None
    available_modes: dict[str, str | None]
    queued: int
    requests_served: int
    ranks: tuple[RankMemory, ...] = ()  # a cluster's ranks (empty for one process)
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


class RemoteTokenizer:
    """The server's tokenizer: chat template, encode and decode are asked of the server."""

    def __init__(self, engine: RemoteEngine):
        self.engine = engine

    def apply_chat_template(
        self, messages: Sequence[Mapping[str, JSONValue]], add_generation_prompt: bool = True, **kwargs: JSONValue
    ) -> list[int]:
        """Token ids of the conversation, as the server's chat template makes them."""
        body: JSONObject = {
            "messages": list(messages),
            "template_kwargs": kwargs,
            "add_generation_prompt": add_generation_prompt,
        }
        return int_list(self.engine.post("/specchat/v1/tokenize", body).get("ids"))

    def encode(self, text: str) -> list[int]:
        """Token ids of text, encoded as is."""
        return int_list(self.engine.post("/specchat/v1/tokenize", {"text": text}).get("ids"))

    def decode(self, ids: Iterable[int]) -> str:
        """Text of token ids."""
        return as_str(self.engine.post("/specchat/v1/decode", {"ids": [int(t) for t in ids]}).get("text"))


class RemoteEngine:
    """Streams from `url` (`python -m specchat serve` on this or another Mac); the pair is the server's."""

    def __init__(self, url: str, api_key: str | None = None):
        self.url = url.rstrip("/")
        self.api_key = api_key
        self.tokenizer = RemoteTokenizer(self)
        self._status = self.status()
        if not self._status.target:
            raise RemoteError(f"The server at {self.url} has no model loaded")
        self.target = RemoteModel(self._status.target, f"{self.url}/{self._status.target}")
        self.draft = RemoteModel(self._status.draft, f"{self.url}/{self._status.draft}") if self._status.draft else None

    def status(self) -> RemoteStatus:
        """The server's loaded pair and queue; RemoteError when it cannot be asked."""
        body = self.get("/specchat/v1/status")
        cluster = as_object(body.get("cluster"))
        ranks = tuple(
            RankMemory(
                _rank_number(r["rank"]),  # a rank without its number is a malformed status: KeyError
                as_str(r.get("host")),
                as_int(r.get("active_memory_bytes")),
                as_int(r.get("peak_memory_bytes")),
            )
            for r in objects(cluster.get("ranks"))
        )
        offered = as_object(body.get("available_modes"))  # each mode, and why it is off (null when it is on)
        modes = {mode: reason if isinstance(reason, str) else None for mode, reason in offered.items()}
        return RemoteStatus(
            self.url,
            as_str(body.get("target")) or None,
            as_str(body.get("draft")) or None,
            modes,
            len(as_list(body.get("queued"))),
            as_int(body.get("requests_served")),
            ranks,
            as_str(cluster.get("degraded_reason")) or None,
        )

    def available_modes(self) -> dict[str, str | None]:
        """Each mode and why the server cannot use it (None when it can)."""
        return dict(self._status.available_modes)

    def stream(
        self, prompt_ids: list[int], cfg: GenerationConfig, cancel: threading.Event | None = None
    ) -> Iterator[Event]:
        """The generation's engine events; when cancel is set the connection closes and the server stops."""
        yield from self._stream({"prompt_ids": list(prompt_ids), "config": asdict(cfg)}, cancel)

    def generate(
        self, prompt_ids: list[int], cfg: GenerationConfig, cancel: threading.Event | None = None
    ) -> GenerationResult:
        """Run stream() to its end, as Engine.generate does; raises the failure's own error class."""
        return result_of(self.stream(prompt_ids, cfg, cancel))

    def reset(self) -> None:
        """Nothing to drop here: the server keeps its own caches."""

    def adopt(self) -> None:
        """Any thread may use a remote engine."""

    def get(self, path: str) -> JSONObject:
        """GET a JSON endpoint; RemoteError naming the server when it fails."""
        return self._json(lambda client: client.get(self.url + path, headers=self._headers()))

    def post(self, path: str, body: JSONObject) -> JSONObject:
        """POST a JSON endpoint; RemoteError naming the server when it fails."""
        return self._json(lambda client: client.post(self.url + path, json=body, headers=self._headers()))

    def _json(self, call: Callable[[httpx.Client], httpx.Response]) -> JSONObject:
        try:
            with httpx.Client(timeout=httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)) as client:
                response = call(client)
        except httpx.HTTPError as exc:
            raise RemoteError(f"The server at {self.url} could not be reached: {exc}") from None
        if response.status_code != 200:
            raise RemoteError(_error_text(response))
        return self._object(response)

    def _object(self, response: httpx.Response) -> JSONObject:
        """The answer's JSON object; RemoteError when it is none (not a SpecChat server at that address)."""
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise RemoteError(f"The server at {self.url} did not answer with JSON: is it a SpecChat server?")
        return body

    def _stream(self, body: JSONObject, cancel: threading.Event | None) -> Iterator[Event]:
        try:
            with httpx.Client(timeout=httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)) as client:
                with client.stream(
                    "POST", self.url + "/specchat/v1/generate", json=body, headers=self._headers()
                ) as response:
                    if response.status_code != 200:
                        response.read()
                        raise RemoteError(_error_text(response))
                    yield from _events(response, cancel)
        except httpx.HTTPError as exc:
            yield Failed(f"The server at {self.url} could not be reached: {exc}", ErrorKind.REMOTE)
        except RemoteError as exc:
            yield Failed(str(exc), ErrorKind.REMOTE)

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}


def _events(response: httpx.Response, cancel: threading.Event | None) -> Iterator[Event]:
    for line in response.iter_lines():
        if cancel is not None and cancel.is_set():
            return  # leaving the block closes the connection: the server cancels the job
        if not line.startswith("data: "):
            continue
        body = json.loads(line[6:])
        if (
            not isinstance(body, dict) or body.get("type") not in EVENT_TYPES
        ):  # "Queued", or an event a newer server added: not ours to show
            continue
        yield event_from_json(body)


def _error_text(response: httpx.Response) -> str:
    try:
        message = response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = response.text[:200]
    return f"The server answered {response.status_code}: {message}"


def _rank_number(value: JSONValue) -> int:
    """A cluster rank's number, as int() reads it; TypeError for a value that is no number."""
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        return int(value)
    raise TypeError(f"a rank's number must be a number, got {value!r}")
