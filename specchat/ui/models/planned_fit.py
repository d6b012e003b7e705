"""The memory fit of models not downloaded yet (hub file sizes + config.json), and the red-fit question.

The hub work is specchat.hub's (plan_bundle, fetch_config, planned_memory, memory_fit), as in the
CLI's download preflight; this module runs it for the window and asks before a download that
does not fit. fetch_config puts config.json in the HF cache (verified), so a planned model
shows as partial after the next scan, and its download resumes from there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QMessageBox, QWidget

from specchat.hub.config import HubConfig
from specchat.hub.dflash import is_dflash_config
from specchat.hub.download import fetch_config, plan_bundle
from specchat.hub.memory_fit import RED, MemoryFit, ModelMemory, memory_fit, model_memory, planned_memory
from specchat.hub.remote import RepoPlan
from specchat.hub.units import format_bytes
from specchat.system.memory import MachineMemory

from .rows import QUEUED, ModelRow, Transfer, repo_ids

PLANNED_NOTE = "planned (from config.json and repo size)"
WEIGHT_SUFFIX = ".safetensors"


@dataclass(frozen=True)
class PlannedFit:
    """The fit of repos not on disk yet: target first (the larger), then the draft if any.

    The draft may be a local folder (draft_folder), e.g. one picked in the pair builder.
    """

    repo_ids: tuple[str, ...]  # as asked, in the order asked
    target: str
    draft: str | None
    context: int
    fit: MemoryFit
    draft_folder: str | None = None
    dflash: str | None = None  # a DFlash drafter among the repos, counted beside the target (and draft)

    def covers(self, repo_ids: Sequence[str], context: int) -> bool:
        """True when this answer is about these repos (any order) and nothing else, at this context."""
        return set(self.repo_ids) == set(repo_ids) and self.draft_folder is None and self.context == context


def _plan_memory(plan: RepoPlan, config: HubConfig) -> tuple[ModelMemory, bool]:
    """The repo's planned memory, and whether its config.json is a DFlash drafter's."""
    weights = sum(f.size for f in plan.files if f.path.endswith(WEIGHT_SUFFIX))
    repo_config = fetch_config(plan, config)
    return planned_memory(plan.repo_id, weights, repo_config), is_dflash_config(repo_config)


def plan_fit(
    repo_ids: Sequence[str],
    config: HubConfig,
    context: int,
    machine: MachineMemory,
    draft_folder: str | None = None,
    draft_name: str | None = None,
) -> PlannedFit:
    """Ask the hub for sizes and config.json, then fit the larger model as target (runs off the UI thread).

    With draft_folder, that local model is the draft of the largest repo (the larger of the two is the target).
    A DFlash drafter among the repos (told by its config.json) is counted as the target's DFlash drafter.
    """
    if not 1 <= len(repo_ids) <= 2:
        raise ValueError(f"a planned fit takes a target and at most one draft, not {len(repo_ids)} models")
    planned = [_plan_memory(p, config) for p in plan_bundle(repo_ids, config)]
    drafters = [m for m, is_dflash in planned if is_dflash]
    models = _largest_first(m for m, is_dflash in planned if not is_dflash)
    dflash = drafters[0] if drafters and models else None
    models = models or drafters  # a drafter alone: its own weights are all there is to fit
    if draft_folder is not None:
        models = _largest_first([models[0], model_memory(Path(draft_folder), draft_name)])
    target, draft = models[0], (models[1] if len(models) > 1 else None)
    fit = memory_fit(target, draft, context, machine, dflash=dflash)
    names = (target.name, draft.name if draft else None)
    return PlannedFit(tuple(repo_ids), *names, context, fit, draft_folder, dflash.name if dflash else None)


def _largest_first(models) -> list[ModelMemory]:
    return sorted(models, key=lambda m: m.weights_bytes, reverse=True)


def not_fitting_text(planned: PlannedFit) -> str:
    """The question asked before downloading a pair that does not fit."""
    fit = planned.fit
    names = planned.target + (f" + {planned.draft}" if planned.draft else "")
    names += f" + DFlash drafter {planned.dflash}" if planned.dflash else ""
    return (
        f"{names} does not fit: needs {format_bytes(fit.needed_bytes)} at {fit.context:,} tokens of "
        f"context, this machine has {format_bytes(fit.limit_bytes)} ({fit.limit_source}).\n\n"
        f"This is {PLANNED_NOTE}. Download anyway?"
    )


class DownloadGate(QObject):
    """Checks the planned fit before a download starts, and asks when it is red."""

    def __init__(self, window: QWidget, start: Callable[[list[ModelRow]], object], panel, runner, table):
        super().__init__(window)
        self.window, self.start, self.panel, self.runner, self.table = window, start, panel, runner, table
        self._checking: set[str] = set()  # row keys whose pre-download check is running

    def request(self, rows: Sequence[ModelRow]) -> None:
        """Start the download of these rows, after asking if their planned fit is red."""
        rows = [r for r in rows if r.downloadable and r.key not in self._checking]
        if not rows:
            return
        if len(rows) > 2:  # more than a target and a draft has no single fit
            self.start(rows)
            return
        repos, context = repo_ids(rows), self.panel.context.value()
        planned = self.panel.known_plan(repos, context)
        if planned is not None:
            self._decide(rows, planned)
            return
        keys = {r.key for r in rows}
        self._checking |= keys
        self.table.set_transfer(list(keys), Transfer(QUEUED))  # the click shows at once
        config, read_memory = self.panel.config, self.panel.read_memory
        self.runner.run(
            lambda: plan_fit(repos, config, context, read_memory()),
            lambda p: self._checked(rows, keys, p),
            lambda _message: self._checked(rows, keys, None),
        )

    def cancel(self, rows: Sequence[ModelRow]) -> None:
        """Drop the downloads of these rows that are still being checked."""
        keys = {r.key for r in rows} & self._checking
        self._checking -= keys
        self.table.set_transfer(list(keys), None)

    def _checked(self, rows: list[ModelRow], keys: set[str], planned: PlannedFit | None) -> None:
        if not keys <= self._checking:
            return  # cancelled while the hub answered
        self._checking -= keys
        if planned is None:  # hub unreachable: the download itself reports why it cannot start
            self.start(rows)
        else:
            self._decide(rows, planned)

    def _decide(self, rows: list[ModelRow], planned: PlannedFit) -> None:
        if planned.fit.level == RED:
            answer = QMessageBox.question(
                self.window,
                "Model does not fit in memory",
                not_fitting_text(planned),
                QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                QMessageBox.StandardButton.No,
            )
            if answer != QMessageBox.StandardButton.Yes:
                self.table.set_transfer([r.key for r in rows], None)
                return
        self.start(rows)
