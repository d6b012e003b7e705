"""Will target + draft (+ DFlash drafter) + caches fit? Weights, KV / recurrent cache at a context, against machine
memory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specchat.system.memory import MachineMemory, read_machine_memory

from .model_facts import ModelFacts, facts_from_config, read_config, weights_bytes
from .units import format_bytes

GREEN, YELLOW, RED = "green", "yellow", "red"
YELLOW_FRACTION = 0.8  # above this share of the limit, other apps start to matter
RUNTIME_FRACTION = 0.1  # activations and MLX buffers, as a share of the weights
RUNTIME_FIXED_BYTES = 300_000_000
STATE_COPIES = 2  # linear-attention state plus the snapshot kept for rollback each round


@dataclass(frozen=True)
class ModelMemory:
    """A model's weights and the facts that size its caches (None when unknown)."""

    name: str
    weights_bytes: int
    facts: ModelFacts | None

    def cache_bytes(self, context: int) -> int:
        """KV cache at context tokens plus the linear layers' fixed state."""
        if self.facts is None:
            return 0
        return self.facts.kv_bytes(context) + STATE_COPIES * self.facts.recurrent_bytes()


def model_memory(folder: Path, name: str | None = None) -> ModelMemory:
    """ModelMemory of a local folder."""
    config = read_config(folder)
    return ModelMemory(name or Path(folder).name, weights_bytes(folder), facts_from_config(config) if config else None)


def planned_memory(repo_id: str, weights: int, config: dict) -> ModelMemory:
    """ModelMemory of a model not downloaded yet: hub file sizes plus its config.json."""
    return ModelMemory(repo_id, weights, facts_from_config(config) if config else None)


@dataclass(frozen=True)
class MemoryFit:
    """green / yellow / red with every number behind it."""

    level: str
    needed_bytes: int
    limit_bytes: int
    available_bytes: int
    limit_source: str
    context: int
    parts: tuple[tuple[str, int], ...]

    def summary(self) -> str:
        """One line: level, total against the limit, and the parts."""
        parts = ", ".join(f"{label} {format_bytes(n)}" for label, n in self.parts)
        return (
            f"{self.level}: needs {format_bytes(self.needed_bytes)} of "
            f"{format_bytes(self.limit_bytes)} ({self.limit_source}; "
            f"{format_bytes(self.available_bytes)} free now) at {self.context} tokens: {parts}"
        )


def _parts(
    target: ModelMemory, draft: ModelMemory | None, dflash: ModelMemory | None, context: int
) -> list[tuple[str, int]]:
    parts = [("target weights", target.weights_bytes), ("target cache", target.cache_bytes(context))]
    weights = target.weights_bytes
    for label, model in (("draft", draft), ("dflash", dflash)):
        if model is not None:  # a DFlash drafter's cache holds the context it has read, like a draft's KV cache
            parts += [(f"{label} weights", model.weights_bytes), (f"{label} cache", model.cache_bytes(context))]
            weights += model.weights_bytes
    parts.append(("runtime", int(RUNTIME_FRACTION * weights) + RUNTIME_FIXED_BYTES))
    return parts


def memory_fit(
    target: ModelMemory,
    draft: ModelMemory | None,
    context: int,
    machine: MachineMemory | None = None,
    dflash: ModelMemory | None = None,
) -> MemoryFit:
    """Red above the limit (Metal's working set, else RAM), yellow near it or above free memory.

    dflash is a DFlash drafter loaded beside the pair: its weights and context cache count too.
    """
    machine = machine or read_machine_memory()
    limit = machine.gpu_working_set_bytes or machine.total_bytes
    source = "Metal working set" if machine.gpu_working_set_bytes else "total RAM"
    parts = _parts(target, draft, dflash, context)
    needed = sum(n for _, n in parts)
    if needed > limit:
        level = RED
    elif needed > YELLOW_FRACTION * limit or needed > machine.available_bytes:
        level = YELLOW
    else:
        level = GREEN
    return MemoryFit(level, needed, limit, machine.available_bytes, source, context, tuple(parts))
