"""The physical limit of plain decoding: each token reads every weight once, so plain decoding cannot beat
memory bandwidth. This measures the machine's copy bandwidth once (kept per machine), on the device that
decodes (a Mac's GPU reaches far more of its memory than its CPU cores do, so a CPU copy there would read
plain decoding at over 100%), and turns a plain decoding speed into the bandwidth it reached, as a share of
that limit; speculation's speed is then a multiple of the one-token-per-pass limit.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
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
    device: str = "cpu"  # where the copy ran: "gpu" (MLX's, as it decodes there) or "cpu"

    @property
    def gb_per_s(self) -> float:
        """The bandwidth in GB/s (10^9 bytes)."""
        return self.bytes_per_s / 1e9


def decoding_device() -> str:
    """ "gpu" when MLX decodes on a GPU (Metal on a Mac, CUDA), else "cpu"."""
    import mlx.core as mx

    return "gpu" if mx.default_device() == mx.gpu else "cpu"


def measure_copy_bandwidth(
    machine: str, size: int = COPY_BYTES, reps: int = COPY_REPS, device: str | None = None
) -> Bandwidth:
    """Copy a buffer larger than every cache `reps` times on the device that decodes (None: MLX's default);
    the best run's (read + write) bytes per second."""
    device = device or decoding_device()
    copy = _mlx_copy(size) if device == "gpu" else _cpu_copy(size)
    best = min(copy() for _ in range(reps))
    return Bandwidth(machine, 2 * (size // 8 * 8) / best, time.time(), device)


def _cpu_copy(size: int) -> Callable[[], float]:
    """One timed copy of `size` bytes by the CPU (numpy: MLX's CPU element-wise ops use one core)."""
    source = np.ones(size // 8, dtype=np.float64)
    target = np.empty_like(source)

    def run() -> float:
        start = time.perf_counter()
        np.copyto(target, source)
        return time.perf_counter() - start

    return run


def _mlx_copy(size: int) -> Callable[[], float]:
    """One timed copy of `size` bytes by MLX on its default device (the GPU where it decodes there)."""
    import mlx.core as mx

    source = mx.ones((size // 8 * 2,), dtype=mx.float32)
    mx.eval(source)

    def run() -> float:
        start = time.perf_counter()
        mx.eval(source * 1.0)
        return time.perf_counter() - start

    return run


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
        found = Bandwidth(
            str(data["machine"]), float(data["bytes_per_s"]), float(data["measured_at"]), str(data["device"])
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None  # none, or measured before the device was recorded (a CPU copy even on a Mac): measure again
    return found if found.machine == machine else None


def save_bandwidth(file: Path, bandwidth: Bandwidth) -> None:
    """Keep the measurement (re-measured on request)."""
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps(asdict(bandwidth)) + "\n", encoding="utf-8")
