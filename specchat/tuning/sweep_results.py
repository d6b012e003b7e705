"""What a sweep produces: raw runs, per-cell summaries, per-prompt results, progress events."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal, cast

from specchat.engine.events import GenerationStats

from .sweep_stats import beats, is_noisy, median, robust_cv, speedup_pct

if TYPE_CHECKING:
    from specchat.system.power import PowerStatus

OFF = 0  # the best choice when no K beats plain decoding beyond the noise: speculation off
AUTO: Final = "auto"  # the dynamic cell's K: auto K, each round drafting until the drafter is unsure
DYNAMIC_LABEL = "dynamic (auto K)"
CellK = int | Literal["auto"] | None  # None: plain decoding (the baseline cell)
Choice = int | Literal["auto"]  # a prompt's best choice: a K, OFF, or AUTO


def cell_name(k: CellK) -> str:
    """A cell in a progress line: 'baseline', 'K=3' or 'auto K'."""
    if k is None:
        return "baseline"
    return "auto K" if k == AUTO else f"K={k}"


@dataclass(frozen=True)
class RunRecord:
    """One generation of a cell (a warmup or a measured rep), with the power source around it."""

    index: int
    warmup: bool
    tokens_per_s: float
    generated_tokens: int
    decode_s: float
    rounds: int
    drafted: int
    accepted: int
    peak_memory_bytes: int
    stop_reason: str
    power_source: str
    power_detail: str
    identical: bool | None  # None: not checked (temperature > 0)
    first_mismatch: int | None = None  # first token index that differs from the baseline output

    @classmethod
    def from_stats(
        cls,
        index: int,
        warmup: bool,
        stats: GenerationStats,
        power: PowerStatus,
        identical: bool | None,
        first_mismatch: int | None,
    ) -> RunRecord:
        """A record from an engine generation's stats and a PowerStatus."""
        return cls(
            index,
            warmup,
            stats.decode_tokens_per_s,
            stats.generated_tokens,
            stats.decode_s,
            stats.rounds,
            stats.drafted,
            stats.accepted,
            stats.peak_memory_bytes,
            stats.stop_reason,
            power.source,
            power.detail,
            identical,
            first_mismatch,
        )


@dataclass(frozen=True)
class CellResult:
    """One row of a prompt's table: the baseline (k None), one draft length K, or auto K (k AUTO)."""

    k: CellK
    median_tokens_per_s: float | None  # None when the output differed: the speed is not used
    measured_median_tokens_per_s: float
    cv: float | None  # None: fewer than 3 reps ("n/a")
    noisy: bool
    speedup_pct: float | None
    acceptance_rate: float | None
    mean_accepted_per_round: float | None
    peak_memory_bytes: int
    peak_memory_delta_bytes: int
    identical: bool | None
    first_mismatch: int | None
    power_sources: tuple[str, ...]
    power_changed: bool
    reps: tuple[RunRecord, ...]
    warmups: tuple[RunRecord, ...] = ()
    max_k: int | None = None  # auto K only: the most tokens a round may draft

    @property
    def label(self) -> str:
        """ "baseline", the K as text, or DYNAMIC_LABEL."""
        if self.k is None:
            return "baseline"
        return DYNAMIC_LABEL if self.k == AUTO else str(self.k)

    @property
    def fixed(self) -> bool:
        """True for a fixed draft length K (not the baseline, not auto K)."""
        return isinstance(self.k, int)

    @property
    def usable(self) -> bool:
        """True when the cell's speed may be reported (its output matched, or was not checked)."""
        return self.identical is not False and self.median_tokens_per_s is not None


def summarize_cell(
    k: CellK,
    reps: list[RunRecord],
    warmups: list[RunRecord],
    baseline: CellResult | None,
    start_source: str,
    max_k: int | None = None,
) -> CellResult:
    """Median, robust CV, speedup, acceptance, memory and flags of one cell's runs."""
    speeds = [r.tokens_per_s for r in reps]
    measured = median(speeds)
    cv = robust_cv(speeds)
    checks = [r.identical for r in (*warmups, *reps)]
    identical = None if all(c is None for c in checks) else all(c is not False for c in checks)
    mismatches = [r.first_mismatch for r in (*warmups, *reps) if r.first_mismatch is not None]
    speed = None if identical is False else measured
    base_speed = baseline.median_tokens_per_s if baseline is not None and baseline.usable else None
    peak = max((r.peak_memory_bytes for r in reps), default=0)
    sources = tuple(r.power_source for r in (*warmups, *reps))
    drafted, accepted, rounds = (sum(getattr(r, f) for r in reps) for f in ("drafted", "accepted", "rounds"))
    return CellResult(
        k=k,
        median_tokens_per_s=speed,
        measured_median_tokens_per_s=measured,
        cv=cv,
        noisy=is_noisy(cv),
        speedup_pct=speedup_pct(speed, base_speed) if speed is not None and base_speed is not None else None,
        acceptance_rate=accepted / drafted if k is not None and drafted else None,
        mean_accepted_per_round=accepted / rounds if k is not None and rounds else None,
        peak_memory_bytes=peak,
        peak_memory_delta_bytes=peak - baseline.peak_memory_bytes if baseline is not None else 0,
        identical=identical,
        first_mismatch=min(mismatches) if mismatches else None,
        power_sources=sources,
        power_changed=any(s != start_source for s in sources),
        reps=tuple(reps),
        warmups=tuple(warmups),
        max_k=max_k,
    )


def _speed(cell: CellResult) -> float:
    """A cell's median speed; -inf when it has none (a cell whose output differed sorts last)."""
    return cell.median_tokens_per_s if cell.median_tokens_per_s is not None else float("-inf")


def is_best(cell: CellResult, choice: Choice | None) -> bool:
    """True for the cell of a prompt's best choice: its K (or AUTO), or the plain-decoding cell when it is OFF."""
    if choice is None:
        return False
    return cell.k is None if choice == OFF else cell.k == choice


def _beats(cell: CellResult, other: CellResult) -> bool:
    """BEST_RULE between two usable cells: cell faster than other beyond the noise of both."""
    return beats(_speed(cell), cell.cv, _speed(other), other.cv)


@dataclass(frozen=True)
class PromptResult:
    """Every cell of one prompt: the baseline first, then one per K, then auto K (when swept)."""

    name: str
    text: str
    prompt_tokens: int
    baseline_text: str
    cells: tuple[CellResult, ...]

    @property
    def baseline(self) -> CellResult | None:
        """The baseline cell, when it ran."""
        return next((c for c in self.cells if c.k is None), None)

    @property
    def dynamic(self) -> CellResult | None:
        """The auto K cell, when it ran."""
        return next((c for c in self.cells if c.k == AUTO), None)

    def best_cell(self) -> CellResult | None:
        """The fastest fixed K whose speed is usable; None when no K cell is (it may still be slower than plain)."""
        usable = [c for c in self.cells if c.fixed and c.usable]
        return max(usable, key=_speed, default=None)

    def best_fixed_choice(self) -> int | None:
        """The fixed K to use (sweep_stats.BEST_RULE), OFF when none beats plain decoding beyond the noise,
        None when nothing can be said (no usable K cell or no usable plain-decoding cell)."""
        fastest, base = self.best_cell(), self.baseline
        if fastest is None or base is None or not base.usable:
            return None
        return cast(int, fastest.k) if _beats(fastest, base) else OFF

    def dynamic_wins(self) -> bool:
        """True when auto K beats plain decoding and the fastest fixed K beyond the noise (DYNAMIC_RULE)."""
        auto, base, fastest = self.dynamic, self.baseline, self.best_cell()
        if auto is None or not auto.usable or base is None or not base.usable:
            return False
        return _beats(auto, base) and (fastest is None or _beats(auto, fastest))

    def best_choice(self) -> Choice | None:
        """AUTO when dynamic_wins(), else best_fixed_choice() (OFF when only a slower auto K cell is usable)."""
        if self.dynamic_wins():
            return AUTO
        fixed = self.best_fixed_choice()
        auto, base = self.dynamic, self.baseline
        if fixed is None and auto is not None and auto.usable and base is not None and base.usable:
            return OFF
        return fixed


@dataclass(frozen=True)
class SweepResult:
    """A whole sweep: settings, machine, power at the start, and each prompt's cells."""

    target: str
    drafter: str  # the draft model's or DFlash drafter's folder, or "mtp"
    mode: str
    settings: dict
    machine: dict
    power_at_start: dict
    started_at: str
    prompts: tuple[PromptResult, ...]
    tag: str | None = None
    cancelled: bool = False
    partial: bool = False  # a snapshot taken while the sweep still runs (written after every cell)

    def best_k(self) -> dict[str, Choice]:
        """The best choice per prompt name: a K, AUTO, or OFF (0) when no K beats plain decoding beyond the
        noise (prompts with no usable cells are left out)."""
        best = {p.name: p.best_choice() for p in self.prompts}
        return {name: k for name, k in best.items() if k is not None}


# --- progress events, yielded by SweepRunner.events() ---


@dataclass(frozen=True)
class SweepStarted:
    """The sweep passed its checks; total_runs generations lie ahead."""

    total_runs: int
    prompts: tuple[str, ...]
    ks: tuple[int, ...]
    power_source: str


@dataclass(frozen=True)
class RunDone:
    """One generation finished: done of total, which prompt and cell, and its speed."""

    done: int
    total: int
    prompt: str
    k: CellK
    warmup: bool
    tokens_per_s: float
    identical: bool | None


@dataclass(frozen=True)
class CellDone:
    """A cell's summary, as soon as its last rep ran."""

    prompt: str
    cell: CellResult


@dataclass(frozen=True)
class SweepFinished:
    """The last event: the full result (partial when cancelled)."""

    result: SweepResult = field(repr=False)


SweepEvent = SweepStarted | RunDone | CellDone | SweepFinished
