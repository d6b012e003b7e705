"""The suite: each prompt under plain decoding, then every available drafter at a fixed K and at Auto K, greedy.

Every output must equal plain decoding's (a mismatch is an error of the report, never a speed). Per
category and cell it tallies the tokens and decode time, the rounds, the tokens each drafting round
emitted, and acceptance per draft position: how often draft i was accepted given drafts 1..i-1 were.
MT-Bench's second turn follows plain decoding's answer to the first, so every cell sees one history.
"""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from specchat.engine.config import AUTO, MTP_MAX_DEPTH, GenerationConfig
from specchat.engine.errors import ConfigError, ErrorKind
from specchat.engine.events import Failed, Finished, RoundResult
from specchat.engine.modes import SPECULATIVE_MODES, SpecMode
from specchat.engine.prompt import chat_prompt_ids
from specchat.engine.runner import common_prefix_len

from .engine_like import TuningEngine
from .suite_data import SEED, SuiteDataError, SuiteItem, sources

DEFAULT_K = 4
PLAIN = "plain"
KS = ("fixed", "auto")  # a cell's K: the prompt's fixed K, or Auto K


@dataclass(frozen=True)
class Cell:
    """One way to decode: plain, or a drafter's mode at a fixed K or Auto K."""

    mode: str
    k: int | str | None = None  # None for plain; "auto" for Auto K

    @property
    def label(self) -> str:
        if self.mode == SpecMode.BASELINE:
            return PLAIN
        return f"{self.mode} {'auto K' if self.k == AUTO else 'fixed K'}"

    @property
    def key(self) -> str:
        """The cell as SuiteConfig.cells names it: "draft:fixed", "auto:auto"."""
        return f"{self.mode}:{'auto' if self.k == AUTO else 'fixed'}"


@dataclass(frozen=True)
class SuiteConfig:
    """What to run: max new tokens per turn, a fixed K (None: the pair's saved best K, else 4), and the
    saved best K per mode and prompt kind ({"draft": {"structured": 4, "open": 2}})."""

    max_tokens: int = 256
    k: int | None = None
    best: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    modes: tuple[str, ...] = tuple(SPECULATIVE_MODES)
    cells: tuple[str, ...] = ()  # "mode:fixed" / "mode:auto" to run beside plain; () runs every available one
    session: bool = False  # controllers keep what each generation learned (the app's session), not start afresh

    def __post_init__(self) -> None:
        GenerationConfig(max_tokens=self.max_tokens)  # the shared limit, as a ConfigError
        if self.k is not None and self.k < 1:
            raise ConfigError(f"the fixed K must be at least 1, got {self.k}")
        bad = [c for c in self.cells if c.partition(":")[0] not in SPECULATIVE_MODES or c.partition(":")[2] not in KS]
        if bad:
            raise ConfigError(
                f"unknown cells {', '.join(bad)}: write mode:fixed or mode:auto, mode one of "
                f"{', '.join(SPECULATIVE_MODES)}"
            )

    def fixed_k(self, mode: str, kind: str) -> int:
        """The fixed K of a mode on a kind of prompt: --k, else the saved best K (not Off), else 4."""
        saved = self.best.get(mode, {}).get(kind)
        k = self.k or (saved if isinstance(saved, int) and saved > 0 else DEFAULT_K)
        return min(k, MTP_MAX_DEPTH) if mode == SpecMode.MTP else k


@dataclass
class Tally:
    """One cell's counts over a category's generations."""

    label: str
    mode: str
    ks: list[int] = field(default_factory=list)  # the fixed Ks used (sorted, distinct); [] for plain and auto
    generations: int = 0
    tokens: int = 0
    decode_s: float = 0.0
    rounds: int = 0
    drafting_rounds: int = 0
    round_tokens: int = 0  # tokens emitted by the drafting rounds
    drafted: int = 0
    accepted: int = 0
    tried: list[int] = field(default_factory=list)  # per position: rounds that drafted it with all before kept
    kept: list[int] = field(default_factory=list)  # per position: of those, rounds that kept it
    mismatches: int = 0
    failures: int = 0
    by_drafter: dict[str, int] = field(default_factory=dict)  # Auto: rounds each drafter drafted

    def add_round(self, r: RoundResult) -> None:
        self.rounds += 1
        if r.drafter:
            self.by_drafter[r.drafter] = self.by_drafter.get(r.drafter, 0) + 1
        if r.num_draft_tokens <= 0:
            return  # Auto K's plain burst: no drafts
        self.drafting_rounds += 1
        self.round_tokens += r.emitted
        self.drafted += r.drafted
        self.accepted += r.accepted
        tried = min(r.drafted, r.accepted + 1)
        while len(self.tried) < tried:
            self.tried.append(0)
            self.kept.append(0)
        for i in range(tried):
            self.tried[i] += 1
            self.kept[i] += i < r.accepted


@dataclass(frozen=True)
class SuiteError:
    """A cell whose output differed from plain decoding's, or that failed."""

    category: str
    item: str
    turn: int
    cell: str
    message: str
    first_mismatch: int | None = None


@dataclass(frozen=True)
class SuiteProgress:
    """One generation done: done of total, and which."""

    done: int
    total: int
    what: str


@dataclass
class SuiteRun:
    """Everything the suite measured: per category, per cell label, a Tally; the errors; what was unavailable."""

    target: str
    drafter: str | None
    settings: dict[str, Any]
    unavailable: dict[str, str]
    tallies: dict[str, dict[str, Tally]] = field(default_factory=dict)
    items: dict[str, list[str]] = field(default_factory=dict)
    errors: list[SuiteError] = field(default_factory=list)
    cancelled: bool = False
    python: str = ".".join(map(str, sys.version_info[:3]))
    sources: dict[str, dict[str, str | None]] = field(default_factory=dict)


def cells_for(
    engine: TuningEngine, modes: tuple[str, ...], wanted: tuple[str, ...] = ()
) -> tuple[list[Cell], dict[str, str]]:
    """Plain, then each available mode at a fixed K and at Auto K (only the `wanted` ones when given); and the
    reason for each unavailable mode."""
    reasons = engine.available_modes()
    cells, missing = [Cell(SpecMode.BASELINE)], {}
    for mode in modes:
        if reasons.get(mode):
            missing[str(mode)] = str(reasons[mode])
        else:
            both = [Cell(mode, 0), Cell(mode, AUTO)]  # k 0 stands for "the fixed K of this prompt"
            cells += [c for c in both if not wanted or c.key in wanted]
    return cells, missing


def run_suite(
    engine: TuningEngine,
    items: list[SuiteItem],
    config: SuiteConfig,
    *,
    target: str = "",
    drafter: str | None = None,
    cancel: threading.Event | None = None,
) -> Generator[SuiteProgress, None, SuiteRun]:
    """Run every item's turns under every cell (a generator of progress; returns the SuiteRun)."""
    cancel = cancel or threading.Event()
    modes = tuple(dict.fromkeys([*config.modes, *(c.partition(":")[0] for c in config.cells)]))
    cells, missing = cells_for(engine, modes, config.cells)
    settings: dict[str, Any] = {"max_tokens": config.max_tokens, "k": config.k, "default_k": DEFAULT_K}
    settings["temperature"] = 0.0
    settings["learning"] = "session" if config.session else "fresh"
    run = SuiteRun(target, drafter, settings, missing)
    start = _knowledge(engine)
    known = sources()
    total = sum(len(i.turns) for i in items) * len(cells)
    done = 0
    for item in items:
        src = known.get(item.category)
        run.sources.setdefault(
            item.category, {"origin": src.origin, "licence": src.licence, "package": src.package} if src else {}
        )
        run.items.setdefault(item.category, []).append(item.id)
        tallies = run.tallies.setdefault(item.category, {})
        history: list[dict[str, str]] = []
        for turn, text in enumerate(item.turns, 1):
            history.append({"role": "user", "content": text})
            ids = chat_prompt_ids(engine.tokenizer, history, enable_thinking=False)
            reference: list[int] | None = None
            for cell in cells:
                if cancel.is_set():
                    run.cancelled = True
                    return run
                k = config.fixed_k(cell.mode, item.kind) if cell.k == 0 else cell.k
                tally = tallies.setdefault(cell.label, Tally(cell.label, cell.mode))
                if isinstance(k, int) and k not in tally.ks:
                    tally.ks = sorted([*tally.ks, k])
                if not config.session:
                    _relearn(engine, start)
                tokens, answer = _generate(engine, ids, cell, k, config.max_tokens, tally, cancel)
                if cancel.is_set():
                    run.cancelled = True
                    return run
                where = (item.category, item.id, turn, cell.label)
                if isinstance(answer, Failed):
                    tally.failures += 1
                    run.errors.append(SuiteError(*where, f"failed: {answer.message}"))
                elif reference is None:
                    reference = tokens  # plain decoding comes first
                    history.append({"role": "assistant", "content": answer})
                elif tokens != reference:
                    tally.mismatches += 1
                    at = common_prefix_len(tokens, reference)
                    run.errors.append(SuiteError(*where, f"output differs from plain decoding at token {at}", at))
                done += 1
                yield SuiteProgress(done, total, f"{item.category} {item.id} turn {turn} {cell.label}")
    return run


def _generate(
    engine: TuningEngine,
    ids: list[int],
    cell: Cell,
    k: int | str | None,
    max_tokens: int,
    tally: Tally,
    cancel: threading.Event,
) -> tuple[list[int], str | Failed]:
    """One generation from empty caches; its tokens and text (or its Failed event)."""
    engine.reset()
    draft_k = DEFAULT_K if k is None else k
    cfg = GenerationConfig(SpecMode(cell.mode), draft_k, max_tokens, 0.0)
    for event in engine.stream(ids, cfg, cancel):
        if isinstance(event, RoundResult):
            tally.add_round(event)
        elif isinstance(event, Failed):
            return list(event.partial_tokens), event
        elif isinstance(event, Finished):
            tally.generations += 1
            tally.tokens += event.stats.generated_tokens
            tally.decode_s += event.stats.decode_s
            return list(event.tokens), event.text
    return [], Failed("the generation ended without a result", ErrorKind.INTERNAL)


def _knowledge(engine: TuningEngine) -> dict[str, Any] | None:
    """What the engine's controllers know as the suite starts (None: an engine that does not say)."""
    knowledge = getattr(engine, "knowledge", None)
    return knowledge() if callable(knowledge) else None


def _relearn(engine: TuningEngine, start: dict[str, Any] | None) -> None:
    """Put the controllers back to what they knew as the suite started: a generation learns nothing from the
    cells before it (Auto K's costs and acceptance, Auto's sources)."""
    auto_k = getattr(engine, "auto_k", None)
    if isinstance(auto_k, dict):
        auto_k.clear()
    learn = getattr(engine, "learn", None)
    if start is not None and callable(learn):
        learn(start)


def select(items: list[SuiteItem], categories: Iterable[str] | None, per_category: int | None) -> list[SuiteItem]:
    """The items of the chosen categories (all when None), at most per_category each (seeded, sorted by id)."""
    wanted = list(dict.fromkeys(categories)) if categories else list(dict.fromkeys(i.category for i in items))
    known = {i.category for i in items}
    missing = [c for c in wanted if c not in known]
    if missing:
        raise SuiteDataError(f"unknown or unfetched categories {', '.join(missing)}; have {', '.join(sorted(known))}")
    out = []
    for cat in wanted:
        group = [i for i in items if i.category == cat]
        if per_category is not None and per_category < len(group):
            group = random.Random(f"{SEED}:{cat}").sample(group, per_category)
        out += sorted(group, key=lambda i: _natural(i.id))
    return out


def _natural(text: str) -> tuple:
    """A sort key that puts HumanEval/2 before HumanEval/10."""
    head, _, tail = text.rpartition("/")
    return (head, int(tail)) if tail.isdigit() else (text, -1)
