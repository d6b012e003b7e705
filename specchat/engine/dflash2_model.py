"""The DFlash2 drafter's network (inco.ai/blog/dflash2, published as `<target>-DFlash2`, architecture
`DFlash2DraftModel`): DFlash's one-pass block drafter (dflash_model.py) plus two modules.

- A two-tap grouped dynamic causal convolution around each sublayer (`layers.N.attention_conv`,
  `layers.N.mlp_conv`): `out_t = sum_j (base[j] + d_t[j]) * x_{t-j}` over the block's rows, where `base`
  is a learned per-channel kernel and `d_t` a per-group correction projected from the sublayer's input
  (one coefficient per `conv_group_size` channels). `prepare` convolves the sublayer's input with the
  first kernel; `finish` convolves its output with the second, whose correction came from the same
  projection of the input. The taps stay inside the block: row 0 (the last kept token) reads zeros.
  The context rows go through the attention's k/v projections only, exactly as in DFlash.
- A candidate selector (`candidate_selector.*`): each draft position keeps its `selector_top_k` best
  tokens by the drafter's logits `U_t`, and a token `b` after the token `a` drafted before it scores
  `U_t(b) + <A(a) * P(h_t), B(b)>`, with `A`, `B` the predecessor and successor codebooks (vocab x rank)
  and `P` a projection of the position's row. Walking the block greedily from the last kept token gives
  the path the reference drafts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import mlx.core as mx
import mlx.nn as nn

from specchat.upstream.mlx_lm import KVCache

from .dflash_model import DFlashConfig, DFlashLayer, DFlashModel, Rope, layer_kinds
from .errors import ModelLoadError

ARCHITECTURE = "DFlash2DraftModel"
DFLASH2_KEYS = ("conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k")
# Tokens outside a position's candidates score this far below its worst candidate (still in the drafter's
# order), so a grammar that refuses every candidate still leaves the drafter's best allowed token, while
# sampling from the scores gives them next to nothing (e^-50 each); small enough to keep float32 precision.
OUTSIDE_MARGIN = 50.0


def _section(cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    nested = cfg.get("dflash_config")
    return nested if isinstance(nested, Mapping) else {}


def is_dflash2(cfg: Mapping[str, object]) -> bool:
    """Whether a drafter's config.json describes DFlash2 (its architecture or any of its own keys)."""
    section = _section(cfg)
    architectures = cfg.get("architectures")
    named = isinstance(architectures, list) and ARCHITECTURE in architectures
    return named or any(key in section or key in cfg for key in DFLASH2_KEYS)


def _sizes(cfg: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The convolution's and the selector's sizes and the vocabulary, each present and at least 1."""
    section, sizes = _section(cfg), {}
    for key in (*DFLASH2_KEYS, "vocab_size"):
        value = section.get(key, cfg.get(key))
        if value is None:
            raise ModelLoadError(
                f"{source} has no {key!r}: a DFlash2 config names {', '.join(DFLASH2_KEYS)} and vocab_size"
            )
        if int(value) < 1:
            raise ModelLoadError(f"{source}: {key} is {value}; it must be at least 1")
        sizes[key] = int(value)
    return sizes


@dataclass(frozen=True)
class DFlash2Config(DFlashConfig):
    """A DFlash config plus the convolution's and the selector's sizes (nested in dflash_config or on top)."""

    conv_kernel_size: int = 2
    conv_group_size: int = 16
    selector_rank: int = 256
    selector_top_k: int = 16
    vocab_size: int = 0

    @classmethod
    def from_dict(cls, cfg: Mapping[str, object], source: str = "config.json") -> DFlash2Config:
        """Parse a DFlash2 config; ModelLoadError naming the first missing, unusable or unsupported field."""
        # DFlashConfig refuses the DFlash2 architecture (DFlashModel cannot run it); the rest it reads as is.
        base = DFlashConfig.from_dict({k: v for k, v in cfg.items() if k != "architectures"}, source)
        extra = _sizes(cfg, source)
        if base.hidden_size % extra["conv_group_size"]:
            raise ModelLoadError(
                f"{source}: conv_group_size {extra['conv_group_size']} does not divide hidden_size {base.hidden_size}"
            )
        if extra["selector_top_k"] > extra["vocab_size"]:
            raise ModelLoadError(
                f"{source}: selector_top_k {extra['selector_top_k']} exceeds vocab_size {extra['vocab_size']}"
            )
        inherited = {f.name: getattr(base, f.name) for f in fields(DFlashConfig)}
        return cls(**inherited, **extra)


def causal_grouped_conv(x: mx.array, dynamic: mx.array, base: mx.array, group_size: int) -> mx.array:
    """sum_j (base[j] + dynamic[..., j, g]) * x_{t-j} over the rows of x (B, L, H); rows before 0 are zeros.
    dynamic (B, L, taps, H // group_size) holds one coefficient per group of channels; base is (taps, H)."""
    b, length, width = x.shape
    out = mx.zeros_like(x)
    for tap in range(base.shape[0]):
        shifted = x if tap == 0 else mx.concatenate([mx.zeros((b, tap, width), x.dtype), x], axis=1)[:, :length]
        # The reference's order (the static tap, then the correction), so the sums round as its do.
        out = out + base[tap].astype(x.dtype) * shifted
        out = out + mx.repeat(dynamic[:, :, tap], group_size, axis=-1) * shifted
    return out


class GroupedCausalConv(nn.Module):
    """The two convolutions around one sublayer: `prepare` its input, `finish` its output."""

    def __init__(self, width: int, kernel_size: int, group_size: int):
        super().__init__()
        self.kernel_size, self.group_size = kernel_size, group_size
        self.groups = width // group_size
        identity = mx.zeros((2, kernel_size, width))
        identity[:, 0] = 1.0  # before loading: each convolution passes its input through
        self.base_kernel = identity
        self.kernel_projection = nn.Linear(width, 2 * kernel_size * self.groups, bias=False)

    def prepare(self, x: mx.array) -> tuple[mx.array, mx.array]:
        """The sublayer's input convolved, and the correction `finish` applies to its output."""
        b, length, _ = x.shape
        dynamic = self.kernel_projection(x).reshape(b, length, 2, self.kernel_size, self.groups)
        inner = causal_grouped_conv(x, dynamic[:, :, 0], self.base_kernel[0], self.group_size)
        return inner, dynamic[:, :, 1]

    def finish(self, y: mx.array, dynamic: mx.array) -> mx.array:
        """The sublayer's output convolved with the second kernel."""
        return causal_grouped_conv(y, dynamic, self.base_kernel[1], self.group_size)


class DFlash2Layer(DFlashLayer):
    """A DFlash layer whose attention and MLP are each wrapped in a grouped causal convolution."""

    def __init__(self, cfg: DFlash2Config, layer_type: str):
        super().__init__(cfg, layer_type)
        self.attention_conv = GroupedCausalConv(cfg.hidden_size, cfg.conv_kernel_size, cfg.conv_group_size)
        self.mlp_conv = GroupedCausalConv(cfg.hidden_size, cfg.conv_kernel_size, cfg.conv_group_size)

    def __call__(self, x: mx.array, cache: KVCache, rope: Rope) -> mx.array:
        inner, post = self.attention_conv.prepare(self.input_layernorm(x))
        x = x + self.attention_conv.finish(self.self_attn(inner, cache, rope), post)
        inner, post = self.mlp_conv.prepare(self.post_attention_layernorm(x))
        return x + self.mlp_conv.finish(self.mlp(inner), post)


@dataclass
class PathScorer:
    """A block's candidates, ready to be scored one position at a time given the token drafted before."""

    selector: CandidateSelector
    logits: mx.array  # (K, V) the drafter's logits of the draft positions
    candidates: mx.array  # (K, top_k) token ids
    projected: mx.array  # (K, rank) P(h_t)
    successors: mx.array  # (K, top_k, rank) B(b) of each candidate

    def row(self, position: int, predecessor: int | mx.array) -> mx.array:
        """Scores over the vocabulary for draft position `position` after `predecessor`: the candidates'
        selector scores, every other token below them all in the drafter's own order."""
        logits = self.logits[position].astype(mx.float32)
        pred = self.selector.predecessor_codebook[predecessor].astype(mx.float32)
        edges = self.successors[position].astype(mx.float32) @ (pred * self.projected[position].astype(mx.float32))
        cands = self.candidates[position]
        scores = mx.take(logits, cands) + edges
        outside = logits - mx.max(logits) + mx.min(scores) - OUTSIDE_MARGIN
        return mx.put_along_axis(outside, cands, scores, axis=-1)


class CandidateSelector(nn.Module):
    """Scores adjacent draft tokens with a low-rank bilinear form over the drafter's top-k candidates."""

    def __init__(self, cfg: DFlash2Config):
        super().__init__()
        self.top_k = cfg.selector_top_k
        self.hidden_projection = nn.Linear(cfg.hidden_size, cfg.selector_rank, bias=False)
        scale = cfg.selector_rank**-0.5
        self.predecessor_codebook = mx.random.normal((cfg.vocab_size, cfg.selector_rank)) * scale
        self.successor_codebook = mx.random.normal((cfg.vocab_size, cfg.selector_rank)) * scale

    def scorer(self, hidden: mx.array, logits: mx.array) -> PathScorer:
        """The candidates of the draft rows (K, H) whose logits are (K, V)."""
        vocab = logits.shape[-1]
        candidates = mx.argpartition(logits, vocab - self.top_k, axis=-1)[:, vocab - self.top_k :]
        return PathScorer(
            self,
            logits,
            candidates,
            self.hidden_projection(hidden),
            self.successor_codebook[candidates],
        )


class DFlash2Model(DFlashModel):
    """DFlashModel with DFlash2 layers and a candidate selector; the same cache, context and block calls."""

    config: DFlash2Config

    def __init__(self, cfg: DFlash2Config):
        super().__init__(cfg)
        # The base built DFlash layers; their arrays are lazy and never evaluated, so replacing them is free.
        self.layers = [DFlash2Layer(cfg, kind) for kind in layer_kinds(cfg)]
        self.candidate_selector = CandidateSelector(cfg)

    def path_scorer(self, hidden: mx.array, logits: mx.array) -> PathScorer:
        """The selector over draft rows `hidden` (K, H) (the block's rows 1..K) and their logits (K, V)."""
        return self.candidate_selector.scorer(hidden, logits)
