"""`python -m app sweep`: sweep K for a (target, draft | MTP) pair, print tables, save the best K."""

from __future__ import annotations

import argparse
import sys

from .sweep_results import RunDone, SweepStarted

BAR_WIDTH = 24


def _ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"draft tokens must be whole numbers like 1,2,4,8,16, got {text!r}")
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError(f"draft tokens must be whole numbers >= 1, got {text!r}")
    return tuple(dict.fromkeys(ks))


def register(subparsers) -> None:
    """Add the `sweep` subcommand."""
    p = subparsers.add_parser("sweep", help="benchmark draft lengths K against plain decoding")
    p.add_argument("--target", required=True, help="local mlx-lm target model folder")
    drafter = p.add_mutually_exclusive_group(required=True)
    drafter.add_argument("--draft", help="local draft model folder")
    drafter.add_argument("--mtp", action="store_true", help="sweep the target's MTP head instead of a draft")
    p.add_argument("--mtp-history", action="store_true",
                   help="with --mtp: the head attends over the whole conversation (as in `generate --mtp-history`)")
    p.add_argument("--draft-tokens", type=_ks, default=(1, 2, 4, 8, 16), metavar="K,K,...",
                   help="draft lengths to try (default 1,2,4,8,16)")
    p.add_argument("--reps", type=int, default=5, help="measured runs per cell (default 5)")
    p.add_argument("--warmup", type=int, default=1, help="discarded runs before each cell (default 1)")
    p.add_argument("--prompts", help="built-in prompts: structured,open (default both, unless --prompt-file)")
    p.add_argument("--prompt-file", action="append", default=[], metavar="F",
                   help='more prompts: a text file (one prompt, named after the file) or JSON {"name": "text"}')
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--tag", help="a name for this sweep, kept in the outputs")
    p.add_argument("--json", metavar="FILE", help="write every cell and raw run as JSON")
    p.add_argument("--markdown", metavar="FILE", help="write the tables as Markdown")
    p.add_argument("--allow-battery", action="store_true", help="run even on battery power")
    p.add_argument("--no-save", action="store_true", help="do not save the best K for the chat")
    p.set_defaults(func=run_sweep)


def _prompts(args):
    from .sweep_prompts import DEFAULT_PROMPTS, builtin_prompts, load_prompt_file, merge_prompts

    names = args.prompts if args.prompts is not None else ("" if args.prompt_file else ",".join(DEFAULT_PROMPTS))
    files = [load_prompt_file(path) for path in args.prompt_file]
    return merge_prompts(builtin_prompts(names) if names else [], *files)


def run_sweep(args) -> int:
    """Load the pair, run the sweep with a progress bar, print and write the tables, save the best K."""
    from app.paths import AppPaths

    from app.engine import Engine
    from .sweep import SweepConfig, SweepRunner
    from .sweep_report import to_markdown, write_json, write_markdown
    from .best_k import save_sweep

    config = SweepConfig(mode="mtp" if args.mtp else "draft", ks=args.draft_tokens, reps=args.reps,
                         warmup=args.warmup, max_tokens=args.max_tokens, temperature=args.temperature,
                         prompts=tuple(_prompts(args)), allow_battery=args.allow_battery, tag=args.tag,
                         mtp_history=args.mtp_history)
    engine = Engine.load(args.target, args.draft)
    runner = SweepRunner(engine, config)  # the pair's folders come from the loaded engine
    bar = ProgressBar(sys.stderr)
    result = runner.run(bar.update)
    bar.close()
    print(to_markdown(result))
    if args.json:
        write_json(result, args.json)
    if args.markdown:
        write_markdown(result, args.markdown)
    if not args.no_save:
        saved = save_sweep(AppPaths.default(), result)
        print(f"best K saved to {saved}" if saved else "no usable K cell: nothing saved", file=sys.stderr)
    return 0


class ProgressBar:
    """A one-line text progress bar, redrawn after every run."""

    def __init__(self, stream):
        self.stream = stream
        self.drawn = False

    def update(self, event) -> None:
        """Redraw for a SweepStarted or RunDone event; others are ignored."""
        if isinstance(event, SweepStarted):
            self._draw(0, event.total_runs, f"power {event.power_source}")
        elif isinstance(event, RunDone):
            cell = "baseline" if event.k is None else f"K={event.k}"
            kind = "warmup" if event.warmup else "rep"
            flag = " DIFFERS" if event.identical is False else ""
            self._draw(event.done, event.total,
                       f"{event.prompt} {cell} {kind}: {event.tokens_per_s:.1f} tok/s{flag}")

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
