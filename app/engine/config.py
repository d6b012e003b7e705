"""GenerationConfig: the knobs of one generation, validated on creation."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ConfigError

MODES = ("baseline", "draft", "mtp", "lookup")
AUTO = "auto"
MTP_MAX_DEPTH = 4


@dataclass(frozen=True)
class GenerationConfig:
    """Mode, draft length and sampling settings for one generation."""

    mode: str = "baseline"
    num_draft_tokens: int | str = 4  # or "auto": chosen each round (see autok.py)
    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    seed: int | None = None
    # MTP only: each head step sees only its own position, as mlx-optiq drafts (the default: measured
    # level with or ahead of mlx-optiq), or the head attends over the whole sequence through its own KV
    # cache, as it was trained (one head pass per new token: costs more where compute scales with tokens).
    mtp_history: bool = False

    def __post_init__(self):
        if self.mode not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.num_draft_tokens != AUTO and not (
                isinstance(self.num_draft_tokens, int) and 1 <= self.num_draft_tokens <= 64):
            raise ConfigError(f"num_draft_tokens must be 1..64 or 'auto', got {self.num_draft_tokens!r}")
        if self.mode == "mtp" and self.num_draft_tokens != AUTO and self.num_draft_tokens > MTP_MAX_DEPTH:
            raise ConfigError(f"MTP depth must be 1..{MTP_MAX_DEPTH}, got {self.num_draft_tokens}")
        if self.max_tokens < 1:
            raise ConfigError(f"max_tokens must be at least 1, got {self.max_tokens}")
        if self.temperature < 0:
            raise ConfigError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ConfigError(f"top_k must be >= 0, got {self.top_k}")
        if not 0 <= self.min_p < 1:
            raise ConfigError(f"min_p must be in [0, 1), got {self.min_p}")

    @property
    def auto_k(self) -> bool:
        """True when the draft length is chosen each round."""
        return self.num_draft_tokens == AUTO

    @property
    def max_draft_tokens(self) -> int:
        """The largest K a round may use."""
        if self.auto_k:
            return MTP_MAX_DEPTH if self.mode == "mtp" else 8
        return self.num_draft_tokens

    @property
    def greedy(self) -> bool:
        """True when decoding is deterministic argmax (temperature 0)."""
        return self.temperature == 0
