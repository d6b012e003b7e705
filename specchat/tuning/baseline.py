"""Plain-decode speed per target model: measured once, cached as JSON, the break-even line for speculation."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from specchat.engine.events import Event, TextChunk
from specchat.engine.modes import SpecMode
from specchat.engine.prompt import user_prompt_ids
from specchat.jsonfile import write_json_atomic
from specchat.paths import AppPaths

from .engine_like import TuningEngine

CACHE_NAME = "baseline_tps.json"
SCHEMA_VERSION = 1
MEASURE_PROMPT = "Explain in a few sentences how a bicycle gear system works."
MEASURE_MAX_TOKENS = 64


@dataclass(frozen=True)
class BaselineEntry:
    """A target's plain-decode tokens per second, when and how it was measured."""

    tokens_per_s: float
    measured_at: str
    source: str
    power_source: str | None = None  # "ac" / "battery" when known
    sampling: str | None = None  # e.g. "greedy" when known


class BaselineCache:
    """The JSON file of plain-decode speeds, keyed by model (a resolved folder path or any name)."""

    def __init__(self, path: Path):
        self.path = Path(path)

    @classmethod
    def for_paths(cls, paths: AppPaths) -> BaselineCache:
        """The cache in the app's data folder."""
        return cls(paths.data_dir / CACHE_NAME)

    def load(self) -> dict[str, BaselineEntry]:
        """Every cached entry; an absent or unreadable file (or bad entries) count as none."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return {}
        models = data.get("models") if isinstance(data, dict) else None
        if not isinstance(models, dict):
            return {}
        return {key: entry for key, raw in models.items() if (entry := _entry(raw)) is not None}

    def get(self, model_key: str) -> BaselineEntry | None:
        """The cached entry of one model, or None."""
        return self.load().get(model_key)

    def put(
        self,
        model_key: str,
        tokens_per_s: float,
        source: str = "measured",
        power_source: str | None = None,
        sampling: str | None = None,
    ) -> BaselineEntry:
        """Save (replace) one model's speed; other models are kept."""
        if not tokens_per_s > 0:
            raise ValueError(f"a plain-decode speed must be a positive number, got {tokens_per_s!r}")
        entry = BaselineEntry(
            float(tokens_per_s), datetime.now(UTC).isoformat(timespec="seconds"), source, power_source, sampling
        )
        models = {key: vars(e) for key, e in self.load().items()}
        models[model_key] = vars(entry)
        write_json_atomic(self.path, {"schema_version": SCHEMA_VERSION, "models": models})
        return entry


def _entry(raw: object) -> BaselineEntry | None:
    if not isinstance(raw, dict):
        return None
    tps = raw.get("tokens_per_s")
    if not isinstance(tps, (int, float)) or isinstance(tps, bool) or tps <= 0:
        return None
    optional = {name: raw[name] for name in ("power_source", "sampling") if isinstance(raw.get(name), str)}
    return BaselineEntry(float(tps), str(raw.get("measured_at", "")), str(raw.get("source", "")), **optional)


@dataclass(frozen=True)
class MeasureProgress:
    """How far a plain-decode measurement has got: tokens of its measured reply."""

    done: int
    total: int


def measure_baseline_tps(
    engine: TuningEngine,
    max_tokens: int = MEASURE_MAX_TOKENS,
    prompt: str = MEASURE_PROMPT,
    cancel: threading.Event | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> float:
    """Plain-decode tok/s of the engine's target on a fixed prompt (after a short warmup); call off the UI thread.
    progress(done, total) follows the measured reply's tokens."""
    from specchat.engine.config import GenerationConfig

    ids = user_prompt_ids(engine.tokenizer, prompt)
    engine.generate(ids, GenerationConfig(SpecMode.BASELINE, max_tokens=4), cancel)  # warm up kernels and caches
    engine.reset()
    from specchat.engine.engine import result_of

    events = engine.stream(ids, GenerationConfig(SpecMode.BASELINE, max_tokens=max_tokens), cancel)
    return result_of(_counted(events, max_tokens, progress)).stats.decode_tokens_per_s


def _counted(events: Iterable[Event], total: int, progress: Callable[[int, int], None] | None) -> Iterator[Event]:
    """The events, calling progress(tokens so far, total) after each piece of text."""
    done = 0
    for event in events:
        if progress is not None and isinstance(event, TextChunk) and event.token_ids:
            done += len(event.token_ids)
            progress(done, total)
        yield event
