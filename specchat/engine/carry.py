"""What outlives one batch on its engine (engine/batch): finished rows' caches and the batch's K controller."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # engine/batch imports the engine: only the types come from there
    from .batch.batch_k import BatchK
    from .batch.prefix_store import PrefixStore


@dataclass
class BatchCarry:
    """Kept on the engine between batches: the caches are dropped with the engine's (Engine.reset), the
    controller's measured costs are not (they are the pair's, like Auto K's, and kept on disk with them)."""

    prefixes: dict[str, PrefixStore] = field(default_factory=dict)  # per model: "target", "draft"
    controller: BatchK | None = None  # costs per batch size and pooled acceptance (batch_k.py)

    def clear(self) -> None:
        """Forget the kept caches."""
        self.prefixes.clear()
