"""Download progress: bytes, speed and ETA, fed by huggingface_hub's tqdm_class hook."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Self

from .errors import DownloadCancelled

SPEED_WINDOW_S = 5.0
MIN_REPORT_INTERVAL_S = 0.1


@dataclass(frozen=True)
class DownloadProgress:
    """One snapshot of a (bundle) download, safe to hand to another thread."""

    repo_id: str
    filename: str
    bytes_done: int
    bytes_total: int
    files_done: int
    files_total: int
    speed_bps: float
    eta_s: float | None
    state: str  # "downloading", "verifying", "done", "cancelled"

    @property
    def fraction(self) -> float:
        """bytes_done / bytes_total, 1.0 for an empty download."""
        return 1.0 if self.bytes_total <= 0 else min(1.0, self.bytes_done / self.bytes_total)


ProgressCallback = Callable[[DownloadProgress], None]


class ProgressTracker:
    """Counts bytes of a whole bundle and reports speed over a sliding window and an ETA."""

    def __init__(
        self,
        bytes_total: int,
        bytes_done: int,
        files_total: int,
        callback: ProgressCallback | None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.bytes_total, self.bytes_done = bytes_total, bytes_done
        self.files_total, self.files_done = files_total, 0
        self.repo_id, self.filename = "", ""
        self._callback, self._clock = callback, clock
        self._samples: deque[tuple[float, int]] = deque([(clock(), 0)])
        self._transferred = 0
        self._last_report = float("-inf")

    def start_file(self, repo_id: str, filename: str) -> None:
        """Name the file now being fetched."""
        self.repo_id, self.filename = repo_id, filename
        self.report("downloading", force=True)

    def add(self, n: int) -> None:
        """n more bytes arrived (negative when a server ignored a Range and the file restarts)."""
        self.bytes_done += n
        self._transferred += max(n, 0)
        now = self._clock()
        self._samples.append((now, self._transferred))
        while len(self._samples) > 2 and now - self._samples[0][0] > SPEED_WINDOW_S:
            self._samples.popleft()
        self.report("downloading")

    def finish_file(self) -> None:
        """One more file is complete."""
        self.files_done += 1
        self.report("downloading", force=True)

    def speed(self) -> float:
        """Bytes per second over the last few seconds of this session."""
        (t0, b0), (t1, b1) = self._samples[0], self._samples[-1]
        return (b1 - b0) / (t1 - t0) if t1 > t0 else 0.0

    def snapshot(self, state: str) -> DownloadProgress:
        """The current numbers as a frozen DownloadProgress."""
        speed = self.speed()
        remaining = max(self.bytes_total - self.bytes_done, 0)
        eta = remaining / speed if speed > 0 else (0.0 if remaining == 0 else None)
        return DownloadProgress(
            self.repo_id,
            self.filename,
            self.bytes_done,
            self.bytes_total,
            self.files_done,
            self.files_total,
            speed,
            eta,
            state,
        )

    def report(self, state: str, force: bool = False) -> None:
        """Call the callback, at most every MIN_REPORT_INTERVAL_S unless forced."""
        now = self._clock()
        if self._callback is None or (not force and now - self._last_report < MIN_REPORT_INTERVAL_S):
            return
        self._last_report = now
        self._callback(self.snapshot(state))


def tqdm_hook(tracker: ProgressTracker, cancel: threading.Event | None) -> type:
    """A tqdm look-alike for huggingface_hub's http_get: counts bytes, raises when cancelled.

    http_get calls update() before writing each chunk, so raising there leaves the
    partial file holding whole chunks only, ready to resume.
    """

    class _Hook:
        def __init__(self, *args: object, **kwargs: Any):
            self.n: int = kwargs.get("initial", 0) or 0

        def __enter__(self) -> Self:
            return self

        def __exit__(self, *exc: object) -> Literal[False]:
            return False

        def update(self, n: int | float | None = 1) -> None:
            if cancel is not None and cancel.is_set():
                raise DownloadCancelled("download cancelled; run it again to resume")
            self.n += int(n or 0)
            tracker.add(int(n or 0))

        def close(self) -> None:
            pass

        def set_postfix_str(self, *args: object, **kwargs: object) -> None:
            pass

    return _Hook


def run_interruptible(name: str, work: Callable[[threading.Event], object]) -> tuple[object, BaseException | None]:
    """Run work(cancel) on its own thread until it ends; Ctrl-C sets cancel and waits for it to stop.
    Returns what it returned, and what it raised (None when nothing)."""
    cancel = threading.Event()
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["result"] = work(cancel)
        except BaseException as exc:  # handed to the calling thread
            box["error"] = exc

    worker = threading.Thread(target=run, name=name, daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.2)
    except KeyboardInterrupt:
        cancel.set()
        worker.join()
    error = box.get("error")
    return box.get("result"), error if isinstance(error, BaseException) else None
