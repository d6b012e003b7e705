"""`python -m specchat suite`: a Spec-Bench-style suite (MT-Bench, HumanEval and tasks built from Python's own
docs) under plain decoding and every drafter the loaded pair offers, at a fixed K and at Auto K."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Generator
from types import FrameType
from typing import TYPE_CHECKING

from specchat.cli_args import model_folder, whole_number
from specchat.engine.config import LIMITS

if TYPE_CHECKING:
    from .suite_data import SuiteItem

INTERRUPTED = 130
DEFAULT_PER_CATEGORY = 10


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `suite` subcommand."""
    p = subparsers.add_parser(
        "suite", help="run MT-Bench, HumanEval and stdlib-document prompts: plain vs every drafter, exactness checked"
    )
    p.add_argument("--target", type=model_folder, help="local mlx-lm target model folder (not needed with --list)")
    p.add_argument(
        "--draft",
        type=model_folder,
        help="local draft model folder (lookup, and MTP when the target has a head, run anyway)",
    )
    p.add_argument(
        "--categories", help="comma-separated categories (default: every built-in and fetched one; see --list)"
    )
    p.add_argument(
        "--per-category",
        type=whole_number(1),
        default=DEFAULT_PER_CATEGORY,
        help=f"prompts per category, chosen by a fixed seed (default {DEFAULT_PER_CATEGORY})",
    )
    p.add_argument(
        "--tokens", type=LIMITS["max_tokens"].arg_type(), default=256, help="max new tokens per turn (default 256)"
    )
    p.add_argument(
        "--k", type=LIMITS["num_draft_tokens"].arg_type(), help="the fixed K (default: the pair's saved best K, else 4)"
    )
    p.add_argument(
        "--cells",
        help="comma-separated cells to run beside plain, as mode:fixed or mode:auto (draft:fixed,auto:auto; "
        "default: every available drafter at a fixed K and at Auto K)",
    )
    p.add_argument(
        "--session",
        action="store_true",
        help="the controllers keep what each generation learned, as in the app's session "
        "(default: every generation starts from what they knew when the suite began)",
    )
    p.add_argument(
        "--no-fetch", action="store_true", help="never download: use the built-in categories and the cache only"
    )
    p.add_argument("--refresh", action="store_true", help="download MT-Bench and HumanEval again (pinned versions)")
    p.add_argument(
        "--list", action="store_true", help="list the categories, their prompts, sources and licences, and exit"
    )
    p.add_argument("--json", metavar="FILE", help="write the report as JSON")
    p.add_argument("--markdown", metavar="FILE", help="write the report as Markdown")
    p.set_defaults(func=run_suite_command)


def suite_items(args: argparse.Namespace, cache_dir: object) -> list[SuiteItem]:
    """The built-in items, plus MT-Bench and HumanEval from the cache (fetched first unless --no-fetch)."""
    from pathlib import Path

    from .suite_data import SuiteDataError, builtin_categories, cached_suite, fetch_suite

    wanted = [c.strip() for c in (args.categories or "").split(",") if c.strip()]
    builtin = builtin_categories()
    names = {i.category for i in builtin}
    if wanted and all(c in names for c in wanted):
        return builtin  # nothing to fetch
    try:
        fetched = (
            cached_suite(Path(str(cache_dir)))
            if args.no_fetch
            else fetch_suite(Path(str(cache_dir)), refresh=args.refresh)
        )
    except SuiteDataError as exc:
        if wanted:
            raise
        print(f"warning: {exc}; running the built-in categories only", file=sys.stderr)
        fetched = []
    return fetched + builtin


def _list(items: list[SuiteItem]) -> int:
    from .suite_data import sources

    known = sources()
    for cat in dict.fromkeys(i.category for i in items):
        src = known.get(cat)
        count = sum(i.category == cat for i in items)
        where = f"{src.origin}; {src.licence}" + (f"; {src.package}" if src and src.package else "") if src else "?"
        print(f"{cat:14} {count:4} prompts  {where}")
    return 0


def run_suite_command(args: argparse.Namespace) -> int:
    """Load the pair through the engine host, run the suite as one job, print and write the report."""
    from specchat.engine.owner import EngineHost, JobContext, JobHandle, JobProgress, load_pair_job
    from specchat.paths import AppPaths

    from .best_k import best_k
    from .suite import SuiteConfig, SuiteProgress, SuiteRun, run_suite, select
    from .suite_report import to_markdown, write_reports
    from .sweep_output import check_writable

    paths = AppPaths.default()
    items = suite_items(args, paths.cache_dir)
    if args.list:
        return _list(items)
    if not args.target:
        print("error: suite needs --target (or --list)", file=sys.stderr)
        return 2
    chosen = select(
        items,
        [c.strip() for c in args.categories.split(",") if c.strip()] if args.categories else None,
        args.per_category,
    )
    best = {
        "draft": (best_k(paths, args.target, args.draft) or {}) if args.draft else {},
        "mtp": best_k(paths, args.target, "mtp") or {},
    }
    cells = tuple(c.strip() for c in (args.cells or "").split(",") if c.strip())
    config = SuiteConfig(max_tokens=args.tokens, k=args.k, best=best, cells=cells, session=args.session)
    for path, what in ((args.json, "the JSON report"), (args.markdown, "the Markdown report")):
        if path:
            check_writable(path, what)  # before any model loads: an unwritable path must not cost a run
    host = EngineHost()
    handles: list[JobHandle[object]] = []

    def on_sigint(_signum: int, _frame: FrameType | None) -> None:
        for handle in handles:
            host.cancel(handle)
        signal.signal(signal.SIGINT, signal.default_int_handler)

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        load = host.submit("load", load_pair_job(args.target, args.draft, keep_target_on_bad_draft=False))
        handles.append(load)
        while not load.wait(0.1):  # short waits: the Ctrl-C handler runs between them
            pass
        loaded = load.result()

        def work(ctx: JobContext) -> Generator[SuiteProgress, None, SuiteRun]:
            return (
                yield from run_suite(
                    ctx.engine, chosen, config, target=loaded.target, drafter=loaded.draft, cancel=ctx.cancel
                )
            )

        job = host.submit("suite", work)
        handles[:] = [job]
        for event in job.events():
            if isinstance(event, JobProgress) and isinstance(event.event, SuiteProgress):
                p = event.event
                print(f"\r[{p.done}/{p.total}] {p.what}"[:110].ljust(110), end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        run = job.result()
    finally:
        signal.signal(signal.SIGINT, previous)
        host.shutdown()
    for path in write_reports(run, args.json, args.markdown):
        print(f"wrote {path}", file=sys.stderr)
    print(to_markdown(run))
    if run.cancelled:
        return INTERRUPTED
    return 1 if run.errors else 0
