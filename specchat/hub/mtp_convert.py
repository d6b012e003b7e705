"""Turn an original checkpoint's `mtp.*` tensors into the local model's format.

- names: `mtp.` followed by the rest (mlx-optiq's first prefix; `language_model.mtp.` is read as the same);
- RMSNorm weights: the Hugging Face checkpoint stores them as offsets from 1 (Qwen3.5's norm computes
  `x * (1 + w)`), mlx-lm's conversion adds 1 (qwen3_5 `sanitize`); so do we;
- dtype: the local model's float dtype (the most common among its float tensors);
- quantization: where the local model is quantized (affine, its bits and group size), the head's
  Linear weights are quantized the same way when every one of them fits the group size: the layer's
  projections, and `fc` too when it fits. mlx-optiq then reads the file as its prequantized layouts
  ("all" with fc, "cyankiwi" without). Norms and other small tensors stay float.
"""

from __future__ import annotations

import json
import struct
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mlx.core as mx

from specchat.upstream.mlx_optiq import mtp_key_prefixes

NORM_SUFFIXES = ("layernorm.weight", "q_norm.weight", "k_norm.weight", "norm.weight")
FLOAT_DTYPES = {"F16": mx.float16, "BF16": mx.bfloat16, "F32": mx.float32}
LINEAR_PARENTS = (".self_attn.", ".mlp.")


@dataclass(frozen=True)
class LocalFormat:
    """How the local model stores its weights."""

    dtype: str  # "F16", "BF16" or "F32"
    bits: int | None  # None when not quantized
    group_size: int
    mode: str

    @property
    def describe(self) -> str:
        """e.g. "BF16, 4-bit (group size 64)"."""
        quant = f", {self.bits}-bit (group size {self.group_size})" if self.bits else ""
        return self.dtype + quant


def _header(path: Path) -> dict[str, Any]:
    with path.open("rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header: dict[str, Any] = json.loads(f.read(size))
    header.pop("__metadata__", None)
    return header


def local_format(folder: Path, config: dict[str, Any]) -> LocalFormat:
    """The local model's float dtype (from its weight headers) and quantization (from its config)."""
    counts: Counter[str] = Counter()
    for shard in sorted(Path(folder).glob("model*.safetensors")):
        counts.update(m["dtype"] for m in _header(shard).values() if m["dtype"] in FLOAT_DTYPES)
    dtype = counts.most_common(1)[0][0] if counts else "F32"
    text = config.get("text_config")
    nested = text.get("quantization") if isinstance(text, dict) else None
    quant = config.get("quantization") or config.get("quantization_config") or nested or {}
    bits = quant.get("bits") if isinstance(quant, dict) else None
    mode = str(quant.get("mode", "affine")) if isinstance(quant, dict) else "affine"
    group = int(quant.get("group_size", 64)) if isinstance(quant, dict) else 64
    return LocalFormat(dtype, int(bits) if isinstance(bits, int) and mode == "affine" else None, group, mode)


def mtp_name(key: str) -> str:
    """The tensor's name in the sidecar: `mtp.` + what follows the original's prefix."""
    for prefix in mtp_key_prefixes():
        if key.startswith(prefix):
            return "mtp." + key[len(prefix) :]
    return key


def _is_norm(name: str, value: mx.array) -> bool:
    return value.ndim == 1 and name.endswith(NORM_SUFFIXES)


def _is_layer_linear(name: str, value: mx.array) -> bool:
    return (
        value.ndim == 2
        and name.startswith("mtp.layers.")
        and name.endswith("_proj.weight")
        and any(p in name for p in LINEAR_PARENTS)
    )


def to_local(raw: dict[str, mx.array], fmt: LocalFormat) -> dict[str, mx.array]:
    """The sidecar's tensors: renamed, norms shifted, cast to the local dtype, quantized like the local model."""
    dtype = FLOAT_DTYPES[fmt.dtype]
    out: dict[str, mx.array] = {}
    for key, value in raw.items():
        name = mtp_name(key)
        if mx.issubdtype(value.dtype, mx.floating):
            if _is_norm(name, value):
                value = value.astype(mx.float32) + 1.0
            value = value.astype(dtype)
        out[name] = value
    if fmt.bits:
        out = _quantized(out, fmt)
    return out


def quantizable(tensors: dict[str, mx.array], fmt: LocalFormat) -> list[str]:
    """The Linear weights to quantize: the layers' projections (all or none), plus fc if it fits too."""
    layers = [n for n, v in tensors.items() if _is_layer_linear(n, v)]
    if not layers or any(tensors[n].shape[-1] % fmt.group_size for n in layers):
        return []
    fc = tensors.get("mtp.fc.weight")
    return layers + (["mtp.fc.weight"] if fc is not None and fc.shape[-1] % fmt.group_size == 0 else [])


def _quantized(tensors: dict[str, mx.array], fmt: LocalFormat) -> dict[str, mx.array]:
    out = dict(tensors)
    assert fmt.bits is not None
    for name in quantizable(tensors, fmt):
        weight, scales, biases = mx.quantize(tensors[name], group_size=fmt.group_size, bits=fmt.bits)
        base = name.removesuffix(".weight")
        out[name], out[base + ".scales"], out[base + ".biases"] = weight, scales, biases
    return out


def save_sidecar(path: Path, tensors: dict[str, mx.array]) -> None:
    """Write the sidecar atomically (a temp file in the same folder, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.safetensors")
    mx.eval(list(tensors.values()))
    mx.save_safetensors(str(tmp), tensors, metadata={"format": "mlx"})
    tmp.replace(path)
