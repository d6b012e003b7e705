"""`python -m specchat sweep`: sweep K for a (target, draft | MTP | DFlash) pair, print tables, save the best K."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from specchat.cli_args import model_folder, utf8_file, whole_number
from specchat.engine.config import LIMITS
from specchat.engine.errors import ConfigError

from .sweep_results import CellDone, RunDone, SweepEvent, SweepStarted, cell_name

if TYPE_CHECKING:
    from .sweep_prompts import SweepPrompt

BAR_WIDTH = 24
INTERRUPTED = 130  # the shell's status for a run stopped by Ctrl-C


def _ks(text: str) -> tuple[int, ...]:
    from .sweep import parse_ks

    try:
        return parse_ks(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _prompt_file(text: str) -> str:
    """--prompt-file: a readable file of UTF-8 text (what it holds is checked when the prompts load)."""
    utf8_file(text)
    return text


def _output_file(text: str) -> str:
    """--json / --markdown: a file in a folder that exists (a mistyped folder is refused, never created)."""
    parent = Path(text).expanduser().parent
    if not parent.exists() and not any(p.exists() and not p.is_dir() for p in parent.parents):
        raise argparse.ArgumentTypeError(f"folder not found: {parent} (create it first)")
    return text  # a folder that is a file, or not writable: check_writable says so before any model loads


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `sweep` subcommand."""
    p = subparsers.add_parser("sweep", help="benchmark draft lengths K against plain decoding")
    p.add_argument("--target", required=True, type=model_folder, help="local mlx-lm target model folder")
    drafter = p.add_mutually_exclusive_group(required=True)
    drafter.add_argument("--draft", type=model_folder, help="local draft model folder")
    drafter.add_argument("--mtp", action="store_true", help="sweep the target's MTP head instead of a draft")
    drafter.add_argument(
        "--dflash", type=model_folder, metavar="DIR", help="sweep a DFlash drafter folder trained for the target"
    )
    p.add_argument(
        "--mtp-history",
        action="store_true",
        help="with --mtp: the head attends over the whole conversation (as in `generate --mtp-history`)",
    )
    p.add_argument(
        "--draft-tokens",
        type=_ks,
        metavar="K,K,...",
        help="draft lengths to try (default 1,2,4,8,16; with --mtp 1,2,3,4; with --dflash 1,2,4,8,15)",
    )
    p.add_argument(
        "--no-dynamic",
        action="store_true",
        help="leave out the dynamic (auto K) cell that follows the fixed Ks of each prompt",
    )
    p.add_argument("--reps", type=whole_number(1), default=5, help="measured runs per cell (default 5)")
    p.add_argument("--warmup", type=whole_number(0), default=1, help="discarded runs before each cell (default 1)")
    p.add_argument("--prompts", help="built-in prompts: structured,open (default both, unless --prompt-file)")
    p.add_argument(
        "--prompt-file",
        action="append",
        default=[],
        type=_prompt_file,
        metavar="F",
        help='more prompts: a text file (one prompt, named after the file) or JSON {"name": "text"}',
    )
    p.add_argument("--max-tokens", type=LIMITS["max_tokens"].arg_type(), default=256)
    p.add_argument("--temperature", type=LIMITS["temperature"].arg_type(), default=0.0)
    p.add_argument("--tag", help="a name for this sweep, kept in the outputs")
    p.add_argument(
        "--json", type=_output_file, metavar="FILE", help="write every cell and raw run as JSON (after every cell)"
    )
    p.add_argument(
        "--markdown", type=_output_file, metavar="FILE", help="write the tables as Markdown (after every cell)"
    )
    p.add_argument("--allow-battery", action="store_true", help="run even on battery power")
    p.add_argument("--no-save", action="store_true", help="do not save the best K for the chat")
    p.set_defaults(func=run_sweep)


def _prompts(args: argparse.Namespace) -> list[SweepPrompt]:
    from .sweep_prompts import DEFAULT_PROMPTS, builtin_prompts, load_prompt_file, merge_prompts

    names = args.prompts if args.prompts is not None else ("" if args.prompt_file else ",".join(DEFAULT_PROMPTS))
    files = [load_prompt_file(path) for path in args.prompt_file]
    return merge_prompts(builtin_prompts(names) if names else [], *files)


def run_sweep(args: argparse.Namespace) -> int:
    """Check the outputs, load the pair, run the sweep with a progress bar (writing the files after every
    cell), print the tables, save the best K."""
    from specchat.engine import Engine
    from specchat.paths import AppPaths

    from .best_k import save_sweep
    from .sweep import SweepConfig, SweepRunner, default_ks
    from .sweep_output import SweepOutputs, check_writable
    from .sweep_report import to_markdown

    mode = "mtp" if args.mtp else ("dflash" if args.dflash else "draft")
    ks = args.draft_tokens or default_ks(mode)
    config = SweepConfig(
        mode=mode,
        ks=ks,
        reps=args.reps,
        warmup=args.warmup,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        prompts=tuple(_prompts(args)),
        allow_battery=args.allow_battery,
        tag=args.tag,
        mtp_history=args.mtp_history,
        dynamic=not args.no_dynamic,
    )
    outputs = SweepOutputs(args.json, args.markdown)
    outputs.check()  # before any model loads: an unwritable path must not cost a sweep
    paths = AppPaths.default()
    if not args.no_save:
        check_writable(paths.tuning_file, "the best K", hint="pass --no-save to skip saving it")
    engine = Engine.load(args.target, args.draft, dflash=args.dflash)
    runner = SweepRunner(engine, config)  # the pair's folders come from the loaded engine
    bar = ProgressBar(sys.stderr)

    def on_event(event: SweepEvent) -> None:
        bar.update(event)
        snapshot = runner.snapshot() if isinstance(event, CellDone) else None
        if snapshot is not None:  # always, once a cell is done
            _warn(bar, outputs.write(snapshot))

    try:
        result = runner.run(on_event)
    except KeyboardInterrupt:
        bar.close()
        kept = [str(p) for p in (outputs.json_path, outputs.markdown_path) if p is not None]
        print(
            "interrupted: "
            + (
                f"the cells measured so far are in {' and '.join(kept)}"
                if kept
                else "pass --json or --markdown to keep the cells of an interrupted sweep"
            ),
            file=sys.stderr,
        )
        return INTERRUPTED
    bar.close()
    _warn(bar, outputs.write(result))
    print(to_markdown(result))
    if not args.no_save:
        try:
            saved = save_sweep(paths, result)
        except OSError as exc:
            print(f"error: could not save the best K to {paths.tuning_file}: {exc.strerror or exc}", file=sys.stderr)
            return 1
        print(f"best K saved to {saved}" if saved else "no usable K cell: nothing saved", file=sys.stderr)
    return 0


def _warn(bar: ProgressBar, problems: list[str]) -> None:
    """Print each problem on its own line, below the progress bar."""
    for problem in problems:
        bar.close()
        print(problem, file=sys.stderr)


class ProgressBar:
    """A one-line text progress bar, redrawn after every run."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.drawn = False

    def update(self, event: SweepEvent) -> None:
        """Redraw for a SweepStarted or RunDone event; others are ignored."""
        if isinstance(event, SweepStarted):
            self._draw(0, event.total_runs, f"power {event.power_source}")
        elif isinstance(event, RunDone):
            cell = cell_name(event.k)
            kind = "warmup" if event.warmup else "rep"
            flag = " DIFFERS" if event.identical is False else ""
            self._draw(event.done, event.total, f"{event.prompt} {cell} {kind}: {event.tokens_per_s:.1f} tok/s{flag}")

    def _draw(self, done: int, total: int, label: str) -> None:
        filled = BAR_WIDTH * done // max(total, 1)
        line = f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{total} {label}"
        self.stream.write("\r" + line[:110].ljust(110))
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        """End the bar's line."""
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False
