"""Time to first window: the app started as a whole process, from the spawn until a window is painted.

    python bench/first_window.py --runs 5                      # this tree
    git archive HEAD | tar -x -C /tmp/fw-base                  # (or a worktree of an older commit)
    python bench/first_window.py --runs 5 --base /tmp/fw-base  # both trees, alternating, and new/old

Each run starts `specchat` (no subcommand, no model, a fresh temporary SPECCHAT_HOME) with Qt's offscreen
platform (--platform inherit keeps the environment's, e.g. under xvfb-run). The child is this script with
--child: it makes the QApplication, installs an event filter that notes the first paint of any
QMainWindow ("first window") and of the MainWindow ("main window"), then calls `specchat.cli.main()` from
the tree under test, so an old tree needs no marker of its own. Times are the child's time.monotonic()
at the paint minus the parent's just before the spawn. It also times the command line's refusal of a
missing model folder (`specchat generate --target /nonexistent --prompt hi`, exit 2) as a whole process.
Prints each tree's median [min-max] and, with --base, the ratio of the medians (new / old).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARK = "first-window-bench"
REFUSAL = ("generate", "--target", "/nonexistent", "--prompt", "hi")


def child() -> None:
    """Run the app of the tree in the working folder, printing a line at each window's first paint."""
    sys.path.insert(0, os.getcwd())
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QApplication, QMainWindow, QWidget

    class Paints(QObject):
        def __init__(self) -> None:
            super().__init__()
            self.first = False

        def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
            if event.type() != QEvent.Type.Paint or not isinstance(watched, QWidget):
                return False
            window = watched.window()
            if isinstance(window, QMainWindow) and not self.first:
                self.first = True
                print(f"{MARK} first {time.monotonic():.4f}", flush=True)
            if type(window).__name__ == "MainWindow":
                print(f"{MARK} main {time.monotonic():.4f}", flush=True)
                os._exit(0)  # measured: no need to wait for the window's close and the engine's shutdown
            return False

    app = QApplication(sys.argv[:1])
    paints = Paints()
    app.installEventFilter(paints)
    from specchat.cli import main

    sys.argv = ["specchat"]
    sys.exit(main())


def app_run(tree: Path, env: dict[str, str], timeout: float) -> tuple[float, float]:
    """One start of the app in tree: (seconds to the first window, seconds to the main window)."""
    with tempfile.TemporaryDirectory(prefix="first-window-home-") as home:
        start = time.monotonic()
        done = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--child"],
            cwd=tree,
            env={**env, "SPECCHAT_HOME": home},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    marks = dict(line.split()[1:3] for line in done.stdout.splitlines() if line.startswith(MARK))
    if "first" not in marks or "main" not in marks:
        raise SystemExit(f"{tree}: no window painted (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    return float(marks["first"]) - start, float(marks["main"]) - start


def refusal_run(tree: Path, env: dict[str, str], timeout: float) -> float:
    """Seconds for `specchat generate` to refuse a missing model folder, the whole process."""
    with tempfile.TemporaryDirectory(prefix="first-window-home-") as home:
        start = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "specchat", *REFUSAL],
            cwd=tree,
            env={**env, "SPECCHAT_HOME": home},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        took = time.monotonic() - start
    if done.returncode != 2 or "model folder not found" not in done.stderr:
        raise SystemExit(f"{tree}: the refusal was not the expected one (exit {done.returncode}): {done.stderr}")
    return took


def spread(values: list[float]) -> str:
    """'median [min-max]' in seconds."""
    return f"{statistics.median(values):6.2f} s [{min(values):.2f}-{max(values):.2f}]"


def main() -> int:
    """Time both trees, alternating which goes first, and print the medians and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="starts per tree (default 5)")
    parser.add_argument("--base", type=Path, help="an older tree to time side by side (the 'old')")
    parser.add_argument("--platform", default="offscreen", help="QT_QPA_PLATFORM, or 'inherit' (default offscreen)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one start may take")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child()
        return 0
    env = dict(os.environ)
    if args.platform != "inherit":
        env["QT_QPA_PLATFORM"] = args.platform
    trees = {"new": ROOT} | ({"old": args.base.resolve()} if args.base else {})
    results: dict[str, dict[str, list[float]]] = {name: {"first": [], "main": [], "refusal": []} for name in trees}
    for run in range(args.runs):
        order = list(trees) if run % 2 == 0 else list(reversed(trees))
        for name in order:
            first, whole = app_run(trees[name], env, args.timeout)
            refusal = refusal_run(trees[name], env, args.timeout)
            for key, value in (("first", first), ("main", whole), ("refusal", refusal)):
                results[name][key].append(value)
            print(
                f"run {run + 1} {name}: first window {first:.2f} s, main window {whole:.2f} s, refusal {refusal:.2f} s"
            )
    labels = {"first": "first window", "main": "main window", "refusal": "CLI refusal"}
    print(f"\n{args.runs} runs each, platform {env.get('QT_QPA_PLATFORM', 'default')}; median [min-max]")
    for key, label in labels.items():
        line = f"{label:13s}" + "".join(f"  {name}: {spread(results[name][key])}" for name in trees)
        if "old" in trees:
            ratio = statistics.median(results["new"][key]) / statistics.median(results["old"][key])
            line += f"  new/old {ratio:.2f}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
