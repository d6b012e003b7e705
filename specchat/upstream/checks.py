"""Self-checks: does each upstream hook fit the installed version, and if not, why not."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import metadata

# A hook check returns None when the hook fits, else what changed ("it no longer takes `mask`").
HookProbe = Callable[[], "str | None"]


class UpstreamMismatch(RuntimeError):
    """An upstream internal SpecChat relies on is missing or changed in the installed version."""


@dataclass(frozen=True)
class HookResult:
    """One hook: whether it fits the installed version, and the reason when it does not."""

    hook: str
    fits: bool
    reason: str = ""


@dataclass(frozen=True)
class SelfCheck:
    """Every hook checked against one installed upstream."""

    upstream: str
    version: str
    results: tuple[HookResult, ...]

    @property
    def ok(self) -> bool:
        """True when every checked hook fits."""
        return all(r.fits for r in self.results)

    @property
    def hooks(self) -> tuple[str, ...]:
        """The names of the hooks checked, in order."""
        return tuple(r.hook for r in self.results)

    @property
    def reason(self) -> str | None:
        """What does not fit, as one line; None when everything fits."""
        problems = [r.reason for r in self.results if not r.fits]
        return "; ".join(problems) or None


def installed_version(distribution: str) -> str:
    """The installed version of a distribution, or "(not installed)"."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "(not installed)"


def run_checks(upstream: str, distribution: str, probes: dict[str, HookProbe]) -> SelfCheck:
    """Run each probe; a probe that raises counts as a hook that does not fit."""
    version = installed_version(distribution)
    results = []
    for hook, probe in probes.items():
        try:
            problem = probe()
        except Exception as exc:  # a probe touching a changed internal may fail in any way
            problem = f"checking it failed ({type(exc).__name__}: {exc})"
        reason = mismatch_reason(upstream, version, hook, problem) if problem else ""
        results.append(HookResult(hook, problem is None, reason))
    return SelfCheck(upstream, version, tuple(results))


def mismatch_reason(upstream: str, version: str, hook: str, problem: str) -> str:
    """One line naming the upstream, its installed version, the hook and what changed."""
    return f"{upstream} {version} changed {hook}: {problem}"


def missing_parameters(fn: object, names: Iterable[str], positional: bool = False) -> str | None:
    """None when fn takes every name (in this order first, when positional), else what is wrong."""
    if not callable(fn):
        return "it is gone" if fn is None else f"it is no longer callable ({type(fn).__name__})"
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None  # a builtin without a signature: nothing to compare, trust it
    names = list(names)
    missing = [n for n in names if n not in params]
    if missing:
        return "it no longer takes " + ", ".join(f"`{n}`" for n in missing)
    if positional and list(params)[: len(names)] != names:
        return f"its arguments are now ({', '.join(params)}), not ({', '.join(names)}, ...)"
    return None


def missing_attributes(obj: object, names: Iterable[str]) -> str | None:
    """None when obj has every attribute, else which it lacks."""
    missing = [n for n in names if not hasattr(obj, n)]
    return ("it no longer has " + ", ".join(f"`{n}`" for n in missing)) if missing else None
