"""A loopback server speaking the part of the Hugging Face Hub HTTP API huggingface_hub uses.

Model info (/api/models/{repo}/revision/{rev}), the file tree (/api/models/{repo}/tree/{rev}),
search (/api/models), and resolve (HEAD/GET /{repo}/resolve/{rev}/{file}) with the
X-Repo-Commit / ETag / X-Linked-* headers and Range requests (`bytes=a-` and `bytes=a-b`; huggingface_hub's
safetensors metadata asks `bytes=0-100000` of a file and gets what the file has of it), counting
the body bytes it sends per file. Faults on demand: drop a connection halfway through a file
(after N bytes of a response, or at a byte of the file), serve corrupted bytes, refuse a gated
repo, or never answer. It stops by itself after `lifetime_s`.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

LFS_SUFFIXES = (".safetensors",)
_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$")
_API = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/(?P<kind>revision|tree)/(?P<rev>[^/]+)$")


def git_blob_sha1(data: bytes) -> str:
    """git hash-object of the bytes."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class FakeRepo:
    """A repo at one commit: file name -> bytes; *.safetensors are LFS files.

    Names are listed exactly as given, unsafe ones too (e.g. "../../x"), as a hostile or broken
    repo's tree could list them.
    """

    repo_id: str
    files: dict[str, bytes]
    gated: bool = False
    downloads: int = 0
    tags: tuple[str, ...] = ("mlx", "text-generation")
    commit: str = ""

    def __post_init__(self):
        if not self.commit:
            self.commit = hashlib.sha1(self.repo_id.encode()).hexdigest()

    @classmethod
    def from_folder(cls, repo_id: str, folder: Path, **kwargs) -> FakeRepo:
        """Every file of a model folder."""
        files = {
            p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(Path(folder).rglob("*")) if p.is_file()
        }
        return cls(repo_id, files, **kwargs)

    def is_lfs(self, name: str) -> bool:
        """LFS files get a sha256 in the tree and X-Linked-* headers."""
        return name.endswith(LFS_SUFFIXES)

    def etag(self, name: str) -> str:
        """sha256 for LFS files, the git blob sha1 otherwise (as the hub does)."""
        data = self.files[name]
        return hashlib.sha256(data).hexdigest() if self.is_lfs(name) else git_blob_sha1(data)

    def tree(self) -> list[dict]:
        """The /tree listing."""
        entries = []
        for name, data in self.files.items():
            entry = {"type": "file", "path": name, "size": len(data), "oid": git_blob_sha1(data)}
            if self.is_lfs(name):
                entry["lfs"] = {"oid": self.etag(name), "size": len(data), "pointerSize": 134}
            entries.append(entry)
        return entries


@dataclass
class Faults:
    """What the server does wrong, per file name."""

    drop_after: dict[str, int] = field(default_factory=dict)  # close after N bytes, once
    drop_at: dict[str, int] = field(
        default_factory=dict
    )  # close at this byte of the file, once, in whichever GET reaches it
    corrupt: set[str] = field(default_factory=set)  # flip a byte in the served content
    slow_chunk: int = 0  # when set, send bodies in chunks of this size...
    slow_delay_s: float = 0.0  # ...with this pause between them
    hang: bool = False  # accept requests, never answer
    ignore_range: bool = False  # answer a Range request with the whole file (200), as some servers do
    pause_at: dict[str, int] = field(default_factory=dict)  # stop at this byte of the body until `resume` is set
    resume: threading.Event = field(default_factory=threading.Event)
    paused: threading.Event = field(default_factory=threading.Event)  # set once a body stopped at its pause_at


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up mid-body (a refused range, a cancel) is expected: no traceback for it."""

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class HubServer:
    """ThreadingHTTPServer on 127.0.0.1 with a random port; use as a context manager."""

    def __init__(self, repos: list[FakeRepo], lifetime_s: float = 60.0):
        self.repos = {r.repo_id: r for r in repos}
        self.faults = Faults()
        self.requests: list[tuple[str, str, str | None]] = []  # (method, path, Range)
        self.queries: list[dict[str, list[str]]] = []  # query strings of /api/models searches
        self.bytes_served: dict[str, int] = {}  # file name -> body bytes sent for resolve GETs
        self._count_lock = threading.Lock()
        self.release = threading.Event()
        self._server = _QuietServer(("127.0.0.1", 0), _make_handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._timer = threading.Timer(lifetime_s, self.stop)
        self._timer.daemon = True

    @property
    def url(self) -> str:
        """http://127.0.0.1:<port>"""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> HubServer:
        """Serve in a background thread."""
        self._thread.start()
        self._timer.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port (idempotent)."""
        self._timer.cancel()
        self.release.set()
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> HubServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def count(self, name: str, n: int) -> None:
        """Record n body bytes sent for a file."""
        with self._count_lock:
            self.bytes_served[name] = self.bytes_served.get(name, 0) + n

    @property
    def total_served(self) -> int:
        """Body bytes sent for every resolve GET so far."""
        return sum(self.bytes_served.values())

    def ranges_for(self, name: str) -> list[str | None]:
        """Range headers of the GET requests for a file, in order."""
        return [r for m, p, r in self.requests if m == "GET" and p.endswith("/" + name)]


def _make_handler(hub: HubServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 10

        def log_message(self, *args) -> None:
            pass

        def do_HEAD(self) -> None:
            self._dispatch(head=True)

        def do_GET(self) -> None:
            self._dispatch(head=False)

        def _dispatch(self, head: bool) -> None:
            path = urlsplit(self.path).path
            hub.requests.append((self.command, unquote(path), self.headers.get("Range")))
            if hub.faults.hang:
                hub.release.wait(30)
                self.close_connection = True
                return
            if (m := _RESOLVE.match(path)) is not None:
                return self._resolve(m["repo"], unquote(m["file"]), head)
            if (m := _API.match(path)) is not None:
                return self._api(m["repo"], m["kind"])
            if path == "/api/models":
                hub.queries.append(parse_qs(urlsplit(self.path).query))
                return self._search(hub.queries[-1])
            self._json({"error": "not found"}, 404)

        def _repo(self, repo_id: str) -> FakeRepo | None:
            repo = hub.repos.get(repo_id)
            if repo is None:
                self._json({"error": "Repository not found"}, 404, {"X-Error-Code": "RepoNotFound"})
            return repo

        def _api(self, repo_id: str, kind: str) -> None:
            repo = self._repo(repo_id)
            if repo is None:
                return
            if kind == "tree":
                return self._json(repo.tree())
            self._json(
                {
                    "id": repo.repo_id,
                    "sha": repo.commit,
                    "private": False,
                    "gated": "manual" if repo.gated else False,
                    "siblings": [{"rfilename": n} for n in repo.files],
                }
            )

        def _search(self, query: dict) -> None:
            words = " ".join(query.get("search", [])).lower()
            hits = [
                {
                    "id": r.repo_id,
                    "downloads": r.downloads,
                    "likes": 0,
                    "tags": list(r.tags),
                    "pipeline_tag": "text-generation",
                    "library_name": "mlx",
                }
                for r in hub.repos.values()
                if words in r.repo_id.lower()
            ]
            self._json(hits)

        def _resolve(self, repo_id: str, name: str, head: bool) -> None:
            repo = self._repo(repo_id)
            if repo is None:
                return
            if repo.gated:
                return self._json({"error": "gated"}, 401, {"X-Error-Code": "GatedRepo"}, head)
            if name not in repo.files:
                return self._json(
                    {"error": "entry"}, 404, {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": repo.commit}, head
                )
            data = repo.files[name]
            if name in hub.faults.corrupt:
                data = bytes([data[0] ^ 0xFF]) + data[1:]
            headers = {
                "X-Repo-Commit": repo.commit,
                "ETag": f'"{git_blob_sha1(repo.files[name])}"',
                "Accept-Ranges": "bytes",
            }
            if repo.is_lfs(name):
                headers.update({"X-Linked-Etag": f'"{repo.etag(name)}"', "X-Linked-Size": str(len(data))})
            start, end = self._range(len(data))
            if start >= len(data) and start > 0:
                return self._send(416, b"", headers, head)
            body = data[start : end + 1]
            ranged = bool(self.headers.get("Range")) and not hub.faults.ignore_range
            if ranged:
                headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            at = hub.faults.drop_at.get(name)
            if not head and at is not None and start < at <= end:
                hub.faults.drop_at.pop(name)
                hub.faults.drop_after[name] = at - start
            self._send(206 if ranged else 200, body, headers, head, name)

        def _range(self, size: int) -> tuple[int, int]:
            """(first, last) byte of a `bytes=a-` or `bytes=a-b` Range, the whole file without one."""
            m = re.match(r"bytes=(\d+)-(\d*)$", self.headers.get("Range") or "")
            if m is None or hub.faults.ignore_range:
                return 0, size - 1
            return int(m.group(1)), min(int(m.group(2)), size - 1) if m.group(2) else size - 1

        def _send(self, status: int, body: bytes, headers: dict, head: bool, name: str = "") -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if head:
                return
            drop = hub.faults.drop_after.pop(name, None)
            if drop is not None:
                self.wfile.write(body[:drop])
                self.wfile.flush()
                hub.count(name, len(body[:drop]))
                self.close_connection = True
                return
            self._write_body(body, name)

        def _write_body(self, body: bytes, name: str = "") -> None:
            pause = hub.faults.pause_at.get(name)
            if pause is not None:
                self.wfile.write(body[:pause])
                self.wfile.flush()
                hub.count(name, len(body[:pause]))
                hub.faults.paused.set()
                hub.faults.resume.wait(60)
                body = body[pause:]
            step = hub.faults.slow_chunk or len(body) or 1
            for i in range(0, len(body), step):
                self.wfile.write(body[i : i + step])
                self.wfile.flush()
                if name:
                    hub.count(name, len(body[i : i + step]))
                if hub.faults.slow_delay_s:
                    time.sleep(hub.faults.slow_delay_s)

        def _json(self, obj, status: int = 200, headers: dict | None = None, head: bool = False) -> None:
            body = json.dumps(obj).encode()
            self._send(status, body, {"Content-Type": "application/json", **(headers or {})}, head)

    return Handler
