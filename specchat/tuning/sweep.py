"""K sweeps: per prompt a baseline cell, one cell per K, then auto K, with warmups, reps and an identity gate."""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from specchat.engine.config import LIMITS, GenerationConfig, check_draft_tokens
from specchat.engine.errors import ConfigError, EngineError
from specchat.engine.modes import SpecMode
from specchat.engine.prompt import user_prompt_ids
from specchat.engine.runner import common_prefix_len

from .engine_like import TuningEngine
from .sweep_prompts import SweepPrompt, builtin_prompts
from .sweep_results import (
    AUTO,
    CellDone,
    CellK,
    CellResult,
    PromptResult,
    RunDone,
    RunRecord,
    SweepEvent,
    SweepFinished,
    SweepResult,
    SweepStarted,
    summarize_cell,
)

if TYPE_CHECKING:
    from specchat.engine.engine import GenerationResult
    from specchat.system.power import PowerStatus

Generate = Callable[[list[int], GenerationConfig, threading.Event], "GenerationResult"]
MachineInfo = dict[str, str | int | None]

DEFAULT_KS = (1, 2, 4, 8, 16)
DEFAULT_MTP_KS = (1, 2, 3, 4)  # the head drafts at most MTP_MAX_DEPTH
DEFAULT_DFLASH_KS = (1, 2, 4, 8, 15)  # a block drafts at most block_size - 1 (DFLASH_MAX_DRAFT_TOKENS)
SWEEP_MODES = (SpecMode.DRAFT, SpecMode.MTP, SpecMode.DFLASH)


def default_ks(mode: str) -> tuple[int, ...]:
    """The draft lengths a sweep of this mode tries unless told: each drafter's own range."""
    return {SpecMode.MTP: DEFAULT_MTP_KS, SpecMode.DFLASH: DEFAULT_DFLASH_KS}.get(SpecMode(mode), DEFAULT_KS)


def parse_ks(text: str) -> tuple[int, ...]:
    """Draft lengths from "1,2,4": whole numbers in the K limit, duplicates dropped; ConfigError otherwise."""
    limit = LIMITS["num_draft_tokens"]
    try:
        ks = tuple(int(part) for part in text.replace(" ", "").split(",") if part)
    except ValueError:
        raise ConfigError(f"draft tokens must be whole numbers like 1,2,4,8, got {text!r}") from None
    if not ks:
        raise ConfigError(f"draft tokens must be whole numbers like 1,2,4,8, got {text!r}")
    for k in ks:
        limit.check(k)
    return tuple(dict.fromkeys(ks))


class OnBatteryError(EngineError):
    """The machine runs on battery and the sweep was not allowed to (allow_battery=False)."""


@dataclass(frozen=True)
class SweepConfig:
    """What to sweep: the mode ("draft", "mtp" or "dflash"), the draft lengths, auto K or not, reps and generation
    settings."""

    mode: str = "draft"
    ks: tuple[int, ...] = DEFAULT_KS
    reps: int = 5
    warmup: int = 1
    max_tokens: int = 256
    temperature: float = 0.0
    prompts: tuple[SweepPrompt, ...] = field(default_factory=lambda: tuple(builtin_prompts()))
    allow_battery: bool = False
    tag: str | None = None
    mtp_history: bool = False  # MTP only: the head attends over the whole sequence (GenerationConfig)
    dynamic: bool = True  # after the fixed Ks, a cell of auto K (drafts stop where the drafter is unsure)

    def __post_init__(self) -> None:
        if self.mode not in SWEEP_MODES:
            raise ConfigError(f"a sweep compares baseline with 'draft', 'mtp' or 'dflash', got mode {self.mode!r}")
        if not self.ks:
            raise ConfigError("no draft lengths to sweep: give at least one K")
        for k in self.ks:
            check_draft_tokens(self.mode, k)
        if self.reps < 1:
            raise ConfigError(f"reps must be at least 1, got {self.reps}")
        if self.warmup < 0:
            raise ConfigError(f"warmup must be 0 or more, got {self.warmup}")
        if not self.prompts:
            raise ConfigError("no prompts to sweep")
        GenerationConfig(max_tokens=self.max_tokens, temperature=self.temperature)

    @property
    def total_runs(self) -> int:
        """Generations the whole sweep runs, warmups included."""
        return len(self.prompts) * len(self.cell_ks()) * (self.warmup + self.reps)

    def cell_ks(self) -> tuple[CellK, ...]:
        """Each prompt's cells in order: the baseline (None), every K, then auto K when dynamic."""
        return (None, *self.ks, *((AUTO,) if self.dynamic else ()))

    @property
    def auto_max_k(self) -> int:
        """The most tokens an auto K round drafts: the engine's default max (GenerationConfig has no other cap)."""
        return self.generation_config(AUTO).max_draft_tokens

    def generation_config(self, k: CellK) -> GenerationConfig:
        """The GenerationConfig of the baseline cell (k None), of draft length k, or of auto K (k AUTO)."""
        if k is None:
            return GenerationConfig(SpecMode.BASELINE, max_tokens=self.max_tokens, temperature=self.temperature)
        return GenerationConfig(SpecMode(self.mode), k, self.max_tokens, self.temperature, mtp_history=self.mtp_history)


def _folder(loaded: object) -> str:
    """A LoadedModel's folder as text ("" when there is none)."""
    path = getattr(loaded, "path", None)
    return str(path) if path is not None else ""


def _drafter_folder(engine: TuningEngine, mode: str) -> str:
    """The folder of what drafts in a sweep of this mode: the DFlash drafter's or the draft model's ("" unknown)."""
    if mode == SpecMode.DFLASH:
        drafter = getattr(engine, "drafters", {}).get(SpecMode.DFLASH)
        return _folder(getattr(drafter, "weights", None))
    return _folder(getattr(engine, "draft", None))


def _default_power() -> PowerStatus:
    from specchat.system.power import read_power

    return read_power()


def _default_machine() -> MachineInfo:
    from specchat.system.machine import machine_info

    return machine_info()


class SweepRunner:
    """Runs a sweep on one engine; generate, power and machine readers can be injected (tests)."""

    def __init__(
        self,
        engine: TuningEngine,
        config: SweepConfig,
        *,
        target: str = "",
        drafter: str = "",
        generate: Generate | None = None,
        read_power: Callable[[], PowerStatus] | None = None,
        machine_info: Callable[[], MachineInfo] | None = None,
        cancel: threading.Event | None = None,
    ):
        self.engine = engine
        self.config = config
        self.target = target or _folder(getattr(engine, "target", None))
        self.drafter = "mtp" if config.mode == SpecMode.MTP else (drafter or _drafter_folder(engine, config.mode))
        self.generate: Generate = generate or engine.generate
        self.read_power = read_power or _default_power
        self.machine_info = machine_info or _default_machine
        self.cancel = cancel or threading.Event()
        self._done = 0
        self._header: dict[str, Any] | None = None  # what SweepResult needs besides the prompts, once started
        self._prompts: list[PromptResult] = []  # finished prompts
        self._open: PromptResult | None = None  # the prompt being measured, its finished cells

    def check(self) -> PowerStatus:
        """Raise when the mode is unavailable or the machine is on battery; returns the power status."""
        reason = self.engine.available_modes().get(self.config.mode, "unknown mode")
        if reason:
            raise ConfigError(f"cannot sweep mode {self.config.mode!r}: {reason}")
        power = self.read_power()
        if power.source == "battery" and not self.config.allow_battery:
            raise OnBatteryError(
                f"the machine is on battery ({power.detail}): battery speeds are not "
                "comparable; plug in, or pass --allow-battery"
            )
        return power

    def run(self, on_event: Callable[[SweepEvent], None] | None = None) -> SweepResult:
        """Run the whole sweep and return its result; on_event sees every progress event."""
        for event in self.events():
            if on_event is not None:
                on_event(event)
            if isinstance(event, SweepFinished):
                return event.result
        raise EngineError("the sweep ended without a result")  # unreachable: events() always finishes

    def events(self) -> Iterator[SweepEvent]:
        """Yield SweepStarted, RunDone and CellDone events, then SweepFinished with the result."""
        power = self.check()
        cfg = self.config
        settings = {k: v for k, v in asdict(cfg).items() if k not in ("prompts", "tag")}
        settings["ks"] = list(cfg.ks)
        settings["auto_max_k"] = cfg.auto_max_k if cfg.dynamic else None
        self._header = dict(
            target=self.target,
            drafter=self.drafter,
            mode=cfg.mode,
            settings=settings,
            machine=self.machine_info(),
            power_at_start=asdict(power),
            tag=cfg.tag,
            started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        self._prompts, self._open = [], None
        yield SweepStarted(cfg.total_runs, tuple(p.name for p in cfg.prompts), cfg.ks, power.source)
        for prompt in cfg.prompts:
            if self.cancel.is_set():
                break
            result = yield from self._prompt(prompt, power.source)
            self._prompts.append(result)
            self._open = None
        yield SweepFinished(SweepResult(**self._header, prompts=tuple(self._prompts), cancelled=self.cancel.is_set()))

    def snapshot(self) -> SweepResult | None:
        """The result so far, every finished cell included, marked partial (None before the start)."""
        if self._header is None:
            return None
        prompts = self._prompts + ([self._open] if self._open is not None else [])
        return SweepResult(**self._header, prompts=tuple(prompts), partial=True)

    def prompt_ids(self, prompt: SweepPrompt) -> list[int]:
        """The prompt through the target's chat template, thinking off."""
        return user_prompt_ids(self.engine.tokenizer, prompt.text)

    def _prompt(self, prompt: SweepPrompt, start_source: str) -> Generator[SweepEvent, None, PromptResult]:
        ids = self.prompt_ids(prompt)
        reference: list[int] | None = None
        cells: list[CellResult] = []
        baseline: CellResult | None = None
        for k in self.config.cell_ks():
            runs: list[RunRecord] = []
            for index in range(self.config.warmup + self.config.reps):
                if self.cancel.is_set():
                    break
                tokens, record = self._run_once(ids, k, index, reference)
                if record is None:
                    break  # cancelled mid-run: a partial output measures nothing
                if reference is None:
                    reference = tokens  # the baseline's first output is what every cell must match
                runs.append(record)
                yield RunDone(
                    self._count(),
                    self.config.total_runs,
                    prompt.name,
                    k,
                    record.warmup,
                    record.tokens_per_s,
                    record.identical,
                )
            reps = [r for r in runs if not r.warmup]
            if not reps:
                break  # cancelled before this cell measured anything
            max_k = self.config.auto_max_k if k == AUTO else None
            cell = summarize_cell(k, reps, [r for r in runs if r.warmup], baseline, start_source, max_k)
            baseline = cell if k is None else baseline
            cells.append(cell)
            self._open = self._prompt_result(prompt, ids, reference, cells)
            yield CellDone(prompt.name, cell)
        return self._prompt_result(prompt, ids, reference, cells)

    def _prompt_result(
        self, prompt: SweepPrompt, ids: list[int], reference: list[int] | None, cells: list[CellResult]
    ) -> PromptResult:
        text = self.engine.tokenizer.decode(reference) if reference else ""
        return PromptResult(prompt.name, prompt.text, len(ids), text, tuple(cells))

    def _run_once(
        self, ids: list[int], k: CellK, index: int, reference: list[int] | None
    ) -> tuple[list[int], RunRecord | None]:
        gen_cfg = self.config.generation_config(k)
        power = self.read_power()
        if hasattr(self.engine, "reset"):
            self.engine.reset()  # every run prefills from scratch: same work, same peak memory
        result = self.generate(ids, gen_cfg, self.cancel)
        if result.cancelled or self.cancel.is_set():
            return [], None
        tokens = list(result.tokens)
        identical, mismatch = _compare(tokens, reference, gen_cfg.greedy)
        record = RunRecord.from_stats(index, index < self.config.warmup, result.stats, power, identical, mismatch)
        return tokens, record

    def _count(self) -> int:
        self._done += 1
        return self._done


def _compare(tokens: list[int], reference: list[int] | None, greedy: bool) -> tuple[bool | None, int | None]:
    """(identical, first differing index) against the baseline output; (None, None) when not checked."""
    if not greedy:
        return None, None
    if reference is None:
        return True, None
    if tokens == reference:
        return True, None
    return False, common_prefix_len(tokens, reference)
