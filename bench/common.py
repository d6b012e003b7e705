"""Shared bench helpers: bigger fixture models built on the fly, timing, medians."""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mlx.utils import tree_flatten  # noqa: E402

from tests.fixtures import tiny_models as tm  # noqa: E402


def build_model(folder: Path, kind: str, seed: int = 0, hidden: int = 384, layers: int = 6,
                linear_heads: tuple[int, int, int] = (8, 4, 64)) -> Path:
    """A random qwen3 ("dense") or qwen3_5 ("hybrid") model folder, bigger than the test fixtures."""
    folder.mkdir(parents=True, exist_ok=True)
    tm.build_tokenizer(folder)
    n_tokens, eos, _ = tm._token_info(folder)
    if kind == "dense":
        config = tm.dense_config(hidden, layers, n_tokens, eos)
    else:
        config = tm.hybrid_config(hidden, layers, 2, n_tokens, eos)
        v_heads, k_heads, head_dim = linear_heads
        config["text_config"].update(linear_num_value_heads=v_heads, linear_num_key_heads=k_heads,
                                     linear_key_head_dim=head_dim, linear_value_head_dim=head_dim)
    tm._write_json(folder / "config.json", config)
    tm._save_weights(folder, dict(tree_flatten(tm.fresh_model(folder, seed).parameters())))
    return folder


def build_pair(kind: str, noise: float, **kw) -> tuple[Path, Path]:
    """A target and a noisy copy of it as draft (partial acceptance), in a temp folder."""
    root = Path(tempfile.mkdtemp(prefix=f"specchat-bench-{kind}-"))
    target = build_model(root / "target", kind, **kw)
    return target, tm.perturb_model(target, root / "draft", noise, seed=1)


def build_cheap_draft_pair(kind: str = "dense", hidden: int = 384, layers: int = 16,
                           draft_layers: int = 2, noise: float = 0.02) -> tuple[Path, Path]:
    """A pair with a realistic cost ratio: a deep target whose layers past `draft_layers` add nothing
    (zeroed output projections, still computed) and a shallow draft made of its first layers + noise."""
    import mlx.core as mx

    root = Path(tempfile.mkdtemp(prefix=f"specchat-bench-cheap-{kind}-"))
    target = build_model(root / "target", kind, hidden=hidden, layers=layers)
    weights = mx.load(str(target / "model.safetensors"))
    outputs = ("o_proj.weight", "down_proj.weight", "out_proj.weight")
    for name in weights:
        layer = _layer_index(name)
        if layer is not None and layer >= draft_layers and name.endswith(outputs):
            weights[name] = mx.zeros_like(weights[name])
    tm._save_weights(target, weights)
    exact = build_model(root / "draft_exact", kind, hidden=hidden, layers=draft_layers)
    tm._save_weights(exact, {name: weights[name] for name in mx.load(str(exact / "model.safetensors"))})
    return target, tm.perturb_model(exact, root / "draft", noise, seed=3)


def _layer_index(name: str) -> int | None:
    parts = name.split(".")
    return int(parts[parts.index("layers") + 1]) if "layers" in parts else None


def median(values) -> float:
    """The median of a list of numbers."""
    return statistics.median(values)
