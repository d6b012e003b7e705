"""The pair builder's check of two local folders (compatibility report and memory fit), and its checks as
rich text."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from specchat.hub.memory_fit import MemoryFit, memory_fit, model_memory
from specchat.hub.pairing import INCOMPATIBLE, OK, PairReport, pair_report
from specchat.system.memory import MachineMemory

from .style import tone_text

MARKS = {OK: ("✓", "good"), INCOMPATIBLE: ("✗", "bad")}  # a check's mark and its tone (style.TONES)
WARNING_MARK = ("!", "warn")


@dataclass(frozen=True)
class PairResult:
    """What one check of the builder found (report None without a draft)."""

    target: str
    draft: str | None
    context: int
    report: PairReport | None
    fit: MemoryFit


def check_pair(
    target: str, draft: str | None, context: int, tokenizers: dict, read_memory: Callable[[], MachineMemory]
) -> PairResult:
    """The compatibility report and memory fit of a pair of local folders (runs off the UI thread)."""
    report = pair_report(Path(target), Path(draft), tokenizers) if draft else None
    fit = memory_fit(model_memory(Path(target)), model_memory(Path(draft)) if draft else None, context, read_memory())
    return PairResult(target, draft, context, report, fit)


def checks_html(report: PairReport) -> str:
    """A table of the checks: a mark, the check's name, and what it found."""
    lines = []
    for check in report.checks:
        mark, tone = MARKS.get(check.status, WARNING_MARK)
        lines.append(
            f"<tr><td style='color:{tone_text(tone)}; font-weight:700; padding:3px 8px 3px 0'>{mark}</td>"
            f"<td style='font-weight:600; padding:3px 10px 3px 0; white-space:nowrap'>"
            f"{escape_html(check.name)}</td><td style='padding:3px 0'>{escape_html(check.detail)}</td></tr>"
        )
    return "<table cellspacing='0'>" + "".join(lines) + "</table>"


def escape_html(text: str) -> str:
    """Text made safe to show inside rich text."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
