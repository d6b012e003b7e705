"""Where a sweep's results go: every path checked before the run, the files rewritten after every cell."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from specchat.engine.errors import ConfigError

from .sweep_report import write_json, write_markdown
from .sweep_results import SweepResult


class UnwritableOutputError(ConfigError):
    """A file or folder the sweep must write to cannot be written."""


def check_writable(path: str | Path, what: str, hint: str = "") -> Path:
    """Return path when a file can be written there (atomically); else UnwritableOutputError naming it.

    A real probe (make the folder, create and remove a file in it), not os.access: root passes every
    permission check, yet cannot write under a path whose parent is a file.
    """
    path = Path(path).expanduser()

    def refuse(reason: str) -> UnwritableOutputError:
        return UnwritableOutputError(f"cannot write {what} to {path}: {reason}" + (f"; {hint}" if hint else ""))

    if path.is_dir():
        raise refuse("it is a folder")
    blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise refuse(f"{blocker} is a file, not a folder")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe", dir=path.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise refuse(f"{exc.strerror or exc} in {path.parent}") from None
    return path


class SweepOutputs:
    """The --json and --markdown files of one sweep: checked up front, then rewritten whole after every cell."""

    def __init__(self, json_path: str | Path | None = None, markdown_path: str | Path | None = None):
        self.json_path = Path(json_path).expanduser() if json_path else None
        self.markdown_path = Path(markdown_path).expanduser() if markdown_path else None
        self._failed: set[Path] = set()

    def check(self) -> None:
        """Raise UnwritableOutputError naming the first path that cannot be written."""
        if self.json_path is not None:
            check_writable(self.json_path, "the JSON results")
        if self.markdown_path is not None:
            check_writable(self.markdown_path, "the Markdown results")

    def write(self, result: SweepResult) -> list[str]:
        """Write both files; a failure is returned as one line per path (first time only), not raised."""
        problems = []
        for path, write in ((self.json_path, write_json), (self.markdown_path, write_markdown)):
            if path is None:
                continue
            try:
                write(result, path)
                self._failed.discard(path)
            except OSError as exc:
                if path not in self._failed:
                    problems.append(f"could not write {path}: {exc.strerror or exc}; the sweep goes on")
                self._failed.add(path)
        return problems
