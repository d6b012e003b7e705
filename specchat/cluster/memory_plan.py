"""What each rank of a cluster needs: the pairing report's memory fit, with the target split N ways.

Each rank holds 1/N of every sharded layer, the whole embedding (and an untied lm_head), 1/N of the
target's KV cache and linear-attention state (heads are split), and the whole draft with its caches.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specchat.hub.memory_fit import MemoryFit, ModelMemory, memory_fit, model_memory
from specchat.hub.model_facts import read_config, text_config
from specchat.system.memory import MachineMemory

DEFAULT_WEIGHT_BYTES = 2  # bf16 when config.json names no quantization
PLANNED_CONTEXT = 8192  # the context `serve` plans each rank's memory for (as `models pair` does by default)


@dataclass(frozen=True)
class RankShare(ModelMemory):
    """A target's memory on one of `ranks` ranks (weights_bytes already this rank's share)."""

    ranks: int = 1

    def cache_bytes(self, context: int) -> int:
        """This rank's part of the KV cache and linear state: the heads are split N ways."""
        return -(-super().cache_bytes(context) // self.ranks)


def replicated_bytes(config: dict) -> int:
    """Bytes every rank keeps whole: the embedding, and the lm_head when it is not tied."""
    text = text_config(config)
    vocab, hidden = int(text.get("vocab_size") or 0), int(text.get("hidden_size") or 0)
    tied = config.get("tie_word_embeddings", text.get("tie_word_embeddings", True))
    bits = (config.get("quantization") or {}).get("bits")
    per_weight = bits / 8 if bits else DEFAULT_WEIGHT_BYTES
    return int(vocab * hidden * per_weight * (1 if tied else 2))


def rank_share(folder: Path, ranks: int) -> RankShare:
    """The target folder's memory on each of `ranks` ranks."""
    whole = model_memory(folder)
    kept = min(replicated_bytes(read_config(folder)), whole.weights_bytes)
    share = kept + -(-(whole.weights_bytes - kept) // ranks)
    return RankShare(f"{whole.name} (1/{ranks})", share, whole.facts, ranks)


def rank_fit(
    target: Path, draft: Path | None, context: int, ranks: int, machine: MachineMemory | None = None
) -> MemoryFit:
    """The memory fit of one rank: its share of the target plus the whole draft, against its machine."""
    return memory_fit(rank_share(target, ranks), model_memory(draft) if draft else None, context, machine)
