"""How many prompt tokens a model reads per prefill step: sized from the measured pace of its last chunks, or
fixed in a process that runs a sharded (cluster) model."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import mlx.nn.layers.distributed as distributed

from .model_types import LanguageModel

PREFILL_CHUNK = 512  # the MTP head's catch-up step (mtp.py); a model's prefill chunks are sized by its pace
# Prefill chunks: cancel, a queued request's wait and the progress bar move between chunks, so a chunk
# should take about PREFILL_CHUNK_S on the machine at hand. Sized from the measured (tokens, seconds) of the
# last chunks (prefill_chunk_size), never so small that per-chunk overhead makes the whole prefill more than
# PREFILL_OVERHEAD slower than one big chunk would be, and within [PREFILL_MIN_CHUNK, PREFILL_MAX_CHUNK].
# The ceiling is mlx-lm's own prefill step (2048): on a fast Mac a second holds more, but a chunk's attention
# scores grow with chunk x context, and past ~2048 tokens a bigger chunk gains almost nothing.
PREFILL_CHUNK_S = 1.0
PREFILL_OVERHEAD = 0.05
PREFILL_FIRST_CHUNK = 128  # before anything is measured: short, so the first chunk measures the pace soon
PREFILL_MIN_CHUNK = 32  # chunk sizes are multiples of this
PREFILL_MAX_CHUNK = 2048
PREFILL_SAMPLES = 8  # chunks remembered: recent ones, as the cost per token grows with the context


def prefill_chunk_size(
    measured: Sequence[tuple[int, float]],
    target_s: float = PREFILL_CHUNK_S,
    overhead: float = PREFILL_OVERHEAD,
    lo: int = PREFILL_MIN_CHUNK,
    hi: int = PREFILL_MAX_CHUNK,
) -> int:
    """The prefill chunk (tokens) from measured (tokens, seconds) chunks: a chunk costs a + b * tokens (a line
    fitted through them; with one size only, all of it per token), so about target_s takes (target_s - a) / b
    tokens; overhead keeps a chunk at least a / (overhead * b) tokens (N tokens in chunks of n cost
    N * b * (1 + a / (b * n)) against N * b in one). A multiple of lo, from lo to hi."""
    points = [(n, s) for n, s in measured if n > 0 and s >= 0]
    if not points:
        return max(lo, min(hi, PREFILL_FIRST_CHUNK))
    total_n, total_s = sum(n for n, _ in points), sum(s for _, s in points)
    mean_n, mean_s = total_n / len(points), total_s / len(points)
    var = sum((n - mean_n) ** 2 for n, _ in points)
    a, b = 0.0, total_s / total_n
    if var > 0:
        slope = sum((n - mean_n) * (s - mean_s) for n, s in points) / var
        if slope > 0 and mean_s - slope * mean_n >= 0:
            a, b = mean_s - slope * mean_n, slope
    if b <= 0:  # nothing measurable (a clock that did not move): as large as allowed
        return hi - hi % lo if hi >= lo else lo
    tokens = max((target_s - a) / b, a / (overhead * b))
    size = int(min(max(tokens, lo), hi))
    return max(lo, size - size % lo)


SHARDED_LAYERS = (
    distributed.AllToShardedLinear,
    distributed.ShardedToAllLinear,
    distributed.QuantizedAllToShardedLinear,
    distributed.QuantizedShardedToAllLinear,
)
_pinned = False  # a sharded model was seen: every prefill in this process runs in PREFILL_CHUNK steps


def is_sharded(model: LanguageModel) -> bool:
    """Whether a model holds tensor-parallel layers (a cluster rank's shard of the target)."""
    modules = getattr(model, "modules", None)
    return callable(modules) and any(isinstance(m, SHARDED_LAYERS) for m in modules())


def pin_prefill_chunks() -> None:
    """Prefill in fixed PREFILL_CHUNK steps from now on, in every runner of this process. A cluster's ranks
    prefill in lockstep: a sharded model's chunks pair their collectives with the other ranks' (their sizes
    must agree), and the replicated draft must read its prompt exactly as on every other rank; a pace
    measured per machine would differ between them."""
    global _pinned
    _pinned = True


class PrefillPace:
    """The measured (tokens, seconds) of a model's last prefill chunks, and the chunk they call for. The
    engine's runner and the batch's newcomers on the same model share one."""

    def __init__(self) -> None:
        self.samples: deque[tuple[int, float]] = deque(maxlen=PREFILL_SAMPLES)

    def add(self, tokens: int, seconds: float) -> None:
        if tokens > 0:
            self.samples.append((tokens, seconds))

    def chunk(self) -> int:
        return PREFILL_CHUNK if _pinned else prefill_chunk_size(list(self.samples))


def pin_if_sharded(model: LanguageModel) -> None:
    """Pin prefill chunks (pin_prefill_chunks) when this model is the first sharded one the process sees."""
    if not _pinned and is_sharded(model):
        pin_prefill_chunks()
