"""Shared bench helpers: bigger fixture models built on the fly, timing, medians."""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REAL_MODEL = ROOT.parent / "shared/models/smollm2-135m-instruct-4bit"
sys.path.insert(0, str(ROOT))

from mlx.utils import tree_flatten  # noqa: E402

from tests.fixtures import tiny_models as tm  # noqa: E402


def chat_ids(engine, prompt: str) -> list[int]:
    """A one-message chat, ready for the assistant's reply, as the engine's token ids."""
    return engine.tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True)


def build_model(
    folder: Path,
    kind: str,
    seed: int = 0,
    hidden: int = 384,
    layers: int = 6,
    linear_heads: tuple[int, int, int] = (8, 4, 64),
) -> Path:
    """A random qwen3 ("dense") or qwen3_5 ("hybrid") model folder, bigger than the test fixtures."""
    folder.mkdir(parents=True, exist_ok=True)
    tm.build_tokenizer(folder)
    n_tokens, eos, _ = tm._token_info(folder)
    if kind == "dense":
        config = tm.dense_config(hidden, layers, n_tokens, eos)
    else:
        config = tm.hybrid_config(hidden, layers, 2, n_tokens, eos)
        v_heads, k_heads, head_dim = linear_heads
        config["text_config"].update(
            linear_num_value_heads=v_heads,
            linear_num_key_heads=k_heads,
            linear_key_head_dim=head_dim,
            linear_value_head_dim=head_dim,
        )
    tm._write_json(folder / "config.json", config)
    tm._save_weights(folder, dict(tree_flatten(tm.fresh_model(folder, seed).parameters())))
    return folder


def build_pair(kind: str, noise: float, **kw) -> tuple[Path, Path]:
    """A target and a noisy copy of it as draft (partial acceptance), in a temp folder."""
    root = Path(tempfile.mkdtemp(prefix=f"specchat-bench-{kind}-"))
    target = build_model(root / "target", kind, **kw)
    return target, tm.perturb_model(target, root / "draft", noise, seed=1)


def build_cheap_draft_pair(
    kind: str = "dense", hidden: int = 384, layers: int = 16, draft_layers: int = 2, noise: float = 0.02, **kw
) -> tuple[Path, Path]:
    """A pair with a realistic cost ratio: a deep target whose layers past `draft_layers` add nothing
    (zeroed output projections, still computed) and a shallow draft made of its first layers + noise."""
    import mlx.core as mx

    root = Path(tempfile.mkdtemp(prefix=f"specchat-bench-cheap-{kind}-"))
    target = build_model(root / "target", kind, hidden=hidden, layers=layers, **kw)
    weights = mx.load(str(target / "model.safetensors"))
    outputs = ("o_proj.weight", "down_proj.weight", "out_proj.weight")
    for name in weights:
        layer = _layer_index(name)
        if layer is not None and layer >= draft_layers and name.endswith(outputs):
            weights[name] = mx.zeros_like(weights[name])
    tm._save_weights(target, weights)
    exact = build_model(root / "draft_exact", kind, hidden=hidden, layers=draft_layers, **kw)
    tm._save_weights(exact, {name: weights[name] for name in mx.load(str(exact / "model.safetensors"))})
    return target, tm.perturb_model(exact, root / "draft", noise, seed=3)


def first_layers_copy(folder: Path, layers: int, dest: Path) -> Path:
    """An early-exit draft of a real model: its first `layers` layers, its own final norm and head."""
    import json
    import shutil

    import mlx.core as mx

    dest.mkdir(parents=True, exist_ok=True)
    for f in folder.iterdir():
        if f.is_file() and f.suffix != ".safetensors" and f.name != "config.json":
            shutil.copy(f, dest / f.name)
    config = json.loads((folder / "config.json").read_text())
    config["num_hidden_layers"] = layers
    (dest / "config.json").write_text(json.dumps(config))
    weights = {}
    for f in folder.glob("*.safetensors"):
        weights.update(mx.load(str(f)))
    kept = {k: v for k, v in weights.items() if (_layer_index(k) or 0) < layers}
    mx.save_safetensors(str(dest / "model.safetensors"), kept, metadata={"format": "mlx"})
    return dest


def _layer_index(name: str) -> int | None:
    parts = name.split(".")
    return int(parts[parts.index("layers") + 1]) if "layers" in parts else None


def median(values) -> float:
    """The median of a list of numbers."""
    return statistics.median(values)


@dataclass(frozen=True)
class Paired:
    """Side-by-side speeds of two runners: medians, and the median of per-pair ratios with a 95% CI."""

    a: list[float]
    b: list[float]

    @property
    def ratios(self) -> list[float]:
        """a / b for each pair of runs made back to back."""
        return [x / y for x, y in zip(self.a, self.b)]

    @property
    def ratio(self) -> float:
        """Median of the per-pair ratios: drift of the machine between pairs cancels out."""
        return median(self.ratios)

    def ci(self, level: float = 0.95, resamples: int = 4000) -> tuple[float, float]:
        """Bootstrap confidence interval of the median ratio (seeded, so reruns print the same)."""
        rng, ratios = random.Random(0), self.ratios
        meds = sorted(median(rng.choices(ratios, k=len(ratios))) for _ in range(resamples))
        tail = int(resamples * (1 - level) / 2)
        return meds[tail], meds[resamples - 1 - tail]

    def row(self) -> str:
        """'a tok/s | b tok/s | ratio | CI' as markdown cells."""
        low, high = self.ci()
        return f"{median(self.a):.1f} | {median(self.b):.1f} | {self.ratio:.4f} | {low:.3f}-{high:.3f}"


@dataclass
class Side:
    """One generator's tokens and seconds in a lockstep run, and those of its first step (prefill included)."""

    tokens: int = 0
    seconds: float = 0.0
    first_tokens: int = 0
    first_seconds: float = 0.0

    @property
    def speed(self) -> float:
        """Tokens per second over the whole generation."""
        return self.tokens / self.seconds

    def speed_after(self, first_round: int) -> float:
        """Tokens per second past the first step, the first round's `first_round` tokens left out: the rounds alone,
        without the prompt's prefill. A loop that yields a round's tokens one at a time (mlx-lm) makes its first
        step the prefill and one token, the rest of that round costing nothing, so both sides leave out the
        same first round's tokens (a loop that yields whole rounds tells how many)."""
        return (self.tokens - first_round) / (self.seconds - self.first_seconds)


def lockstep_sides(steps_a, steps_b) -> tuple[Side, Side]:
    """Advance two token generators in turn, always the one behind, timing each step; each side's tokens and
    seconds, its first step (prefill included) kept apart as well.

    Each generator yields the number of tokens it just produced. Both sides sit at the same point of
    their generations throughout and share every slowdown of the machine, so their ratio is far steadier
    than that of separate runs. Only for loops that leave nothing running when they yield (a speculative
    round ends with a wait; plain decoding pipelines and must be timed in separate runs)."""
    sides = [(iter(steps_a), Side()), (iter(steps_b), Side())]
    live = list(sides)
    while live:
        steps, side = min(live, key=lambda s: s[1].tokens)
        start = time.perf_counter()
        produced = next(steps, None)
        elapsed = time.perf_counter() - start
        side.seconds += elapsed
        if produced is None:
            live = [s for s in live if s[1] is not side]
            continue
        if side.tokens == 0:
            side.first_tokens, side.first_seconds = produced, elapsed
        side.tokens += produced
    return sides[0][1], sides[1][1]


def engine_steps(engine, ids: list[int], cfg, reference: list[int]):
    """Our loop from empty caches, yielding the tokens of each round; checks the output at the end."""
    from specchat.engine import TextChunk

    engine.reset()
    tokens = []
    for event in engine.stream(ids, cfg):
        if isinstance(event, TextChunk) and event.token_ids:
            tokens.extend(event.token_ids)
            yield len(event.token_ids)
    assert tokens == reference, f"{cfg.mode} K={cfg.num_draft_tokens}: outputs differ"


def lockstep_pairs(make_a, make_b, pairs: int) -> Paired:
    """`pairs` lockstep runs of fresh generators from make_a() and make_b(), which goes first alternating."""
    runs = lockstep_runs(make_a, make_b, pairs)
    return Paired([a.speed for a, _ in runs], [b.speed for _, b in runs])


def lockstep_runs(make_a, make_b, pairs: int) -> list[tuple[Side, Side]]:
    """`pairs` lockstep runs as (a, b) sides, which goes first alternating."""
    runs = []
    for i in range(pairs):
        if i % 2 == 0:
            runs.append(lockstep_sides(make_a(), make_b()))
        else:
            b, a = lockstep_sides(make_b(), make_a())
            runs.append((a, b))
    return runs


def paired_runs(run_a: Callable[[], float], run_b: Callable[[], float], pairs: int) -> Paired:
    """Time a and b back to back `pairs` times, alternating which goes first; each returns tokens/s."""
    a, b = [], []
    for i in range(pairs):
        if i % 2 == 0:
            a.append(run_a())
            b.append(run_b())
        else:
            b.append(run_b())
            a.append(run_a())
    return Paired(a, b)
