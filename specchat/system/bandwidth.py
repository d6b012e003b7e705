"""The physical limit of plain decoding: each token reads every weight once, so plain decoding cannot beat
memory bandwidth. This measures the machine's copy bandwidth once (kept per machine), and turns a plain
decoding speed into the bandwidth it reached, as a share of that limit; speculation's speed is then a
multiple of the one-token-per-pass limit.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

COPY_BYTES = 256 * 1024 * 1024  # far past every cache level: what a pass over the weights sees
COPY_REPS = 5


@dataclass(frozen=True)
class Bandwidth:
    """A machine's measured copy bandwidth: bytes read plus bytes written per second, best of its runs."""

    machine: str
    bytes_per_s: float
    measured_at: float  # seconds since the epoch

    @property
    def gb_per_s(self) -> float:
        """The bandwidth in GB/s (10^9 bytes)."""
        return self.bytes_per_s / 1e9


def measure_copy_bandwidth(machine: str, size: int = COPY_BYTES, reps: int = COPY_REPS) -> Bandwidth:
    """Copy a buffer larger than every cache `reps` times; the best run's (read + write) bytes per second."""
    source = np.ones(size // 8, dtype=np.float64)
    target = np.empty_like(source)
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        np.copyto(target, source)
        best = min(best, time.perf_counter() - start)
    return Bandwidth(machine, 2 * source.nbytes / best, time.time())


def plain_decode_bandwidth(weight_bytes: int, tokens_per_s: float) -> float:
    """Bytes per second plain decoding reads: every weight once per token."""
    return weight_bytes * tokens_per_s


@dataclass(frozen=True)
class Limit:
    """What a plain decoding speed says against the machine's bandwidth."""

    reached_bytes_per_s: float  # what plain decoding read
    share: float  # of the measured copy bandwidth (a copy's bytes read and written per second)
    one_token_limit_tps: float  # plain decoding at the copy bandwidth: bandwidth / weight bytes


def decode_limit(weight_bytes: int, plain_tps: float, bandwidth: Bandwidth) -> Limit:
    """Plain decoding's reached bandwidth, its share of the machine's, and the one-token-per-pass limit."""
    reached = plain_decode_bandwidth(weight_bytes, plain_tps)
    return Limit(reached, reached / bandwidth.bytes_per_s, bandwidth.bytes_per_s / weight_bytes)


def load_bandwidth(file: Path, machine: str) -> Bandwidth | None:
    """The bandwidth measured on this machine before, None when there is none (or another machine's)."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
        found = Bandwidth(str(data["machine"]), float(data["bytes_per_s"]), float(data["measured_at"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return found if found.machine == machine else None


def save_bandwidth(file: Path, bandwidth: Bandwidth) -> None:
    """Keep the measurement (re-measured on request)."""
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps(asdict(bandwidth)) + "\n", encoding="utf-8")
