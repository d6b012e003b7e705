"""Command line: `python -m specchat generate ...` (more subcommands join as parts land)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

from specchat.engine.modes import SpecMode

from . import __version__
from .cli_args import default_mode, model_folder, utf8_bytes, utf8_file, utf8_text
from .engine import MODES, EngineError, GenerationConfig
from .engine.config import AUTO, LIMITS
from .engine.summary import NO_ACCEPTANCE, auto_k_text, stop_text
from .logs import setup_logging
from .paths import AppPaths

if TYPE_CHECKING:
    from .engine import Finished
    from .engine.owner import JobHandle

# Each module defines register(subparsers), adding a subparser with set_defaults(func=...).
EXTRA_COMMAND_MODULES = (
    "specchat.hub.cli",
    "specchat.tuning.sweep_cli",
    "specchat.tuning.suite_cli",
    "specchat.server.cli",
    "specchat.cluster.cli",
)
Register = Callable[["argparse._SubParsersAction[OneLineParser]"], None]  # one module's register(subparsers)


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (no usage block), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


INTERRUPTED = 130  # the shell's code for a run stopped by Ctrl-C (128 + SIGINT)
# generate's sampling flags: the setting, its default, its help ({allowed}: the range LIMITS gives it)
SAMPLING_FLAGS = (
    ("max_tokens", 256, "at most this many new tokens ({allowed})"),
    ("temperature", 0.0, "sampling temperature ({allowed})"),
    ("top_p", 1.0, "nucleus sampling ({allowed}; 1 keeps every token)"),
    ("top_k", 0, "keep the k likeliest tokens ({allowed})"),
    ("min_p", 0.0, "drop tokens below min-p x the likeliest's probability ({allowed})"),
)


def stop_at_once(command: str, what: str = "Ctrl-C again") -> NoReturn:
    """A second Ctrl-C (or one where nothing handles it): one line, and the process ends now, without a
    traceback and without waiting on the engine thread (it may be inside an MLX call)."""
    sys.stdout.flush()
    print(f"\n{command}: {what}: stopped at once", file=sys.stderr, flush=True)
    os._exit(INTERRUPTED)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    parser = OneLineParser(prog="specchat", description="Local Qwen chat with speculative decoding on MLX.")
    parser.add_argument("--version", action="version", version=f"SpecChat {__version__}")
    parser.add_argument("--target", dest="app_target", metavar="DIR", help="open the app on this local model folder")
    parser.add_argument("--draft", dest="app_draft", metavar="DIR", help="and this draft model folder")
    parser.add_argument(
        "--dflash", dest="app_dflash", metavar="DIR", help="and this DFlash drafter folder (trained for the target)"
    )
    sub = parser.add_subparsers(dest="command")
    gen = sub.add_parser("generate", help="generate text from a prompt")
    gen.add_argument("--target", required=True, type=model_folder, help="local mlx-lm model folder")
    gen.add_argument("--draft", type=model_folder, help="local draft model folder (same vocabulary)")
    gen.add_argument(
        "--dflash", type=model_folder, metavar="DIR", help="a DFlash drafter folder trained for the target"
    )
    gen.add_argument("--mode", choices=MODES, help="default: dflash with --dflash, draft with --draft, else baseline")
    gen.add_argument(
        "--draft-tokens",
        type=draft_tokens_arg,
        default=4,
        help="tokens drafted per round (K), or 'auto' to choose K each round",
    )
    gen.add_argument(
        "--mtp-history",
        action="store_true",
        help="MTP: the head attends over the whole conversation through its own cache, as it "
        "was trained (default: each head step sees only itself, as mlx-optiq drafts)",
    )
    for name, default, what in SAMPLING_FLAGS:
        limit = LIMITS[name]
        gen.add_argument(
            f"--{name.replace('_', '-')}",
            type=limit.arg_type(),
            default=default,
            help=what.format(allowed=limit.allowed()),
        )
    gen.add_argument("--seed", type=LIMITS["seed"].arg_type(), help="sampling seed (the same seed, the same reply)")
    gen.add_argument(
        "--context-length",
        type=LIMITS["context_length"].arg_type(),
        metavar="N",
        help="at most N tokens, prompt and reply together (default: the model's maximum)",
    )
    gen.add_argument("--raw", action="store_true", help="no chat template: encode the prompt as is")
    gen.add_argument("--thinking", action="store_true", help="let Qwen3 think (enable_thinking=True)")
    prompt = gen.add_mutually_exclusive_group(required=True)
    prompt.add_argument("--prompt", type=prompt_text, help="the prompt (UTF-8 text; '-' reads it from stdin)")
    prompt.add_argument(
        "--prompt-file", dest="prompt", type=prompt_file, metavar="FILE", help="the prompt from a UTF-8 file"
    )
    gen.add_argument("--json", action="store_true", help='print {"tokens", "text", "stats"}')
    gen.set_defaults(func=run_generate)
    for register in _extra_commands():
        register(sub)
    return parser


def _extra_commands() -> list[Register]:
    """Subcommands that live beside their part (each module has register(subparsers))."""
    import importlib

    found: list[Register] = []
    for name in EXTRA_COMMAND_MODULES:
        try:
            found.append(importlib.import_module(name).register)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
    return found


STDIN = "-"


def prompt_text(text: str) -> str:
    """--prompt: UTF-8 text, not empty; '-' reads it from stdin (as UTF-8)."""
    if text == STDIN:
        return _not_empty(utf8_bytes(sys.stdin.buffer.read(), "stdin"), "stdin")
    return _not_empty(utf8_text(text), "")


def prompt_file(text: str) -> str:
    """--prompt-file: the text of a UTF-8 file, not empty."""
    return _not_empty(utf8_file(text), text)


def _not_empty(text: str, source: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{source + ': ' if source else ''}the prompt is empty")
    return text


def draft_tokens_arg(text: str) -> int | str:
    """K as an integer in range, or 'auto' (the MTP depth is checked once the mode is known)."""
    if text == AUTO:
        return AUTO
    return int(LIMITS["num_draft_tokens"].arg_type()(text))  # an integer limit: parses to an int


def generation_config(args: argparse.Namespace) -> GenerationConfig:
    """The GenerationConfig that `generate` flags ask for."""
    return GenerationConfig(
        mode=default_mode(args),
        num_draft_tokens=args.draft_tokens,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        top_p=args.top_p,
        top_k=args.top_k,
        min_p=args.min_p,
        seed=args.seed,
        mtp_history=args.mtp_history,
    )


def run_generate(args: argparse.Namespace) -> int:
    """Load the models, generate, print text (streamed) or JSON. Ctrl-C stops at the next round: the text
    so far and the stats line are printed and the exit code is 130."""
    cfg = generation_config(args)  # checked before the engine's imports (MLX, mlx-lm: seconds)
    from .engine import Failed, Finished, TextChunk
    from .engine.owner import EngineHost, JobFailed, JobProgress, context_length_job, load_pair_job, prompt_job
    from .engine.prompt import user_prompt_ids

    host = EngineHost()
    interrupted = threading.Event()
    current: list[JobHandle] = []

    def on_sigint(_signum: int, _frame: FrameType | None) -> None:
        if interrupted.is_set():  # a second Ctrl-C stops at once
            stop_at_once("specchat generate")
        interrupted.set()
        for handle in current:
            host.cancel(handle)

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        current.append(
            host.submit(
                "load", load_pair_job(args.target, args.draft, keep_target_on_bad_draft=False, dflash=args.dflash)
            )
        )
        while not current[-1].wait(0.1):  # short waits: the Ctrl-C handler runs between them
            pass
        current[-1].result()
        if interrupted.is_set():
            return INTERRUPTED
        host.submit("context", context_length_job(args.context_length)).result()  # ConfigError above the model's
        assert host.engine is not None  # the load above succeeded
        tok = host.engine.tokenizer  # tokenizing is no MLX work
        if args.raw:
            ids = tok.encode(args.prompt)
        else:
            ids = user_prompt_ids(tok, args.prompt, enable_thinking=args.thinking)
        current[:] = [host.submit("generate", prompt_job(list(ids), cfg))]
        if interrupted.is_set():
            host.cancel(current[0])
        for job_event in current[0].events():
            event = job_event.event if isinstance(job_event, JobProgress) else job_event
            if isinstance(event, TextChunk) and not args.json:
                print(event.text, end="", flush=True)
            elif isinstance(event, (Failed, JobFailed)):
                print(f"\nerror: {event.message}", file=sys.stderr)
                return 1
            elif isinstance(event, Finished):
                code = _print_finished(event, args.json)
                return INTERRUPTED if event.cancelled and interrupted.is_set() else code
        return INTERRUPTED if interrupted.is_set() else 1
    finally:
        host.shutdown()  # a Ctrl-C meanwhile is still this handler's
        signal.signal(signal.SIGINT, previous)


def _print_finished(event: Finished, as_json: bool) -> int:
    stats = asdict(event.stats)
    if as_json:
        print(
            json.dumps({"tokens": list(event.tokens), "text": event.text, "stats": stats, "cancelled": event.cancelled})
        )
        return 0
    s = event.stats
    stopped = ", stopped by Ctrl-C" if event.cancelled else ""
    line = (
        f"\n[{s.generated_tokens} tokens{stopped}, {s.decode_tokens_per_s:.1f} tok/s decode, "
        f"ttft {s.ttft_s:.2f}s, prefill {s.prefill_tokens_per_s:.1f} tok/s, mode {s.mode}"
    )
    if s.mode != SpecMode.BASELINE:
        k = f"auto (max {s.num_draft_tokens})" if s.auto_k else s.num_draft_tokens
        line += f" K={k}"
        if s.auto_k and (auto := auto_k_text(stats)):
            line += f", {auto}"
        line += f", acceptance {s.acceptance_rate:.0%}" if s.drafted else f", {NO_ACCEPTANCE}"
    if not event.cancelled:  # a cancelled run says "stopped by Ctrl-C" up front
        line += f", stopped: {stop_text(stats, event.cancelled)}"
    print(line + f", peak {s.peak_memory_bytes / 1e9:.2f} GB]", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point for `specchat` and `python -m specchat`."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "command", None) != "serve" and hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # held for a cluster rank's serve only
    setup_logging(AppPaths.default().log_file)  # errors go to the log file; no log file when unwritable
    command = f"specchat {getattr(args, 'command', None) or ''}".strip()
    try:
        if getattr(args, "func", None):
            code: int = args.func(args)
            if argv is None and threading.current_thread() is threading.main_thread():
                # the process ends now; a Ctrl-C while it does (threads, MLX teardown) is one line too
                signal.signal(signal.SIGINT, lambda _signum, _frame: stop_at_once(command, "Ctrl-C"))
            return code
    except KeyboardInterrupt:  # a Ctrl-C where the command has no handler of its own (a load, an exit)
        if argv is None:
            stop_at_once(command, "Ctrl-C")
        print(f"\n{command}: stopped by Ctrl-C", file=sys.stderr)
        return INTERRUPTED
    except EngineError as exc:
        logging.getLogger(__name__).error("%s", exc)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return open_app(args, parser)


def open_app(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """No subcommand: open the desktop app (or print help while it is not installed)."""
    try:
        from .ui.app import run_app
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("specchat.ui"):
            raise
        parser.print_help()
        return 0
    from .qt_platform import platform_problem

    problem = platform_problem()  # Qt would abort the process instead of raising
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    if args.app_dflash and not args.app_target:
        parser.error("--dflash needs --target: a DFlash drafter drafts for the target it was trained for")
    return run_app(target=args.app_target, draft=args.app_draft, dflash=args.app_dflash)
