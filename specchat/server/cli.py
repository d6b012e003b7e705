"""`python -m specchat serve`: load a pair and serve it over an OpenAI-compatible HTTP API."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

    from specchat.engine.config import GenerationConfig

DEFAULT_PORT = 8080


def draft_tokens_arg(text: str) -> int | str:
    """--draft-tokens: 'auto' or a K that GenerationConfig accepts (its range, its message)."""
    import argparse

    from specchat.engine.config import AUTO, GenerationConfig
    from specchat.engine.errors import ConfigError

    if text == AUTO:
        return AUTO
    try:
        k = int(text)
        GenerationConfig(num_draft_tokens=k)
    except (ValueError, ConfigError) as exc:
        raise argparse.ArgumentTypeError(
            str(exc) if isinstance(exc, ConfigError) else f"expected a whole number or 'auto', got {text!r}"
        ) from None
    return k


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `serve` subcommand."""
    from specchat.cli_args import model_folder, port_number, whole_number
    from specchat.engine.config import LIMITS
    from specchat.engine.modes import MODES

    serve = subparsers.add_parser("serve", help="serve the model over an OpenAI-compatible API (with speculation)")
    serve.add_argument("--target", required=True, type=model_folder, help="local mlx-lm model folder")
    serve.add_argument("--draft", type=model_folder, help="local draft model folder (same vocabulary)")
    serve.add_argument(
        "--dflash", type=model_folder, metavar="DIR", help="a DFlash drafter folder trained for the target"
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=port_number, default=DEFAULT_PORT)
    serve.add_argument(
        "--api-key",
        default=os.environ.get("SPECCHAT_API_KEY"),
        help="clients must send 'Authorization: Bearer KEY' (required off loopback; default: $SPECCHAT_API_KEY)",
    )
    serve.add_argument("--mode", choices=MODES, help="default speculation: draft when --draft is given, else baseline")
    serve.add_argument("--draft-tokens", type=draft_tokens_arg, default="auto", help="K per round, or 'auto'")
    serve.add_argument(
        "--max-tokens", type=LIMITS["max_tokens"].arg_type(), default=1024, help="a request's default max_tokens"
    )
    serve.add_argument(
        "--context-length",
        type=LIMITS["context_length"].arg_type(),
        metavar="N",
        help="at most N tokens per request, prompt and reply together (default: the model's maximum)",
    )
    serve.add_argument(
        "--max-queue",
        type=whole_number(0),
        default=8,
        help="requests that may wait beyond the running batch; more get 503 (0: none wait)",
    )
    serve.add_argument(
        "--max-batch",
        type=whole_number(1),
        default=8,
        help="requests decoded together, each still speculating (default 8; 1: one at a time)",
    )
    serve.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="allow browser pages from ORIGIN (repeatable; default: CORS off)",
    )
    serve.set_defaults(func=run_serve)


def serve_defaults(args: argparse.Namespace) -> tuple[str, GenerationConfig]:
    """The mode and the requests' default GenerationConfig from serve's flags; ValueError / EngineError
    (the caller prints it and exits 2) when the address needs a key or a value is out of range."""
    from specchat.engine import GenerationConfig

    from .running import check_exposure

    check_exposure(args.host, args.api_key)
    from specchat.cli_args import default_mode

    mode = default_mode(args)
    return mode, GenerationConfig(mode=mode, num_draft_tokens=args.draft_tokens, max_tokens=args.max_tokens)


def run_serve(args: argparse.Namespace) -> int:
    """Load the pair on an engine host, then serve until Ctrl-C."""
    import uvicorn

    from specchat.engine import EngineError
    from specchat.engine.owner import EngineHost, context_length_job, load_pair_job
    from specchat.paths import AppPaths
    from specchat.tuning.knowledge_store import RememberedPair

    from .app import ServerOptions, create_app
    from .backend import EngineBackend
    from .request_log import REQUEST_LOG_NAME, RequestLog
    from .running import ServingServer, check_port, exit_after_engine, stop_on_sigterm

    try:
        mode, defaults = serve_defaults(args)
        check_port(args.host, args.port)
    except (ValueError, EngineError, OSError) as exc:
        print(f"specchat serve: {exc}", file=sys.stderr)
        return 2
    host = EngineHost()
    try:
        pair = host.submit(
            "load", load_pair_job(args.target, args.draft, keep_target_on_bad_draft=False, dflash=args.dflash)
        ).result()
        reason = pair.available_modes.get(mode)
        if reason:
            raise EngineError(f"--mode {mode} is not available: {reason}")
        host.submit("context", context_length_job(args.context_length)).result()
    except EngineError as exc:
        print(f"specchat serve: {exc}", file=sys.stderr)
        host.shutdown()
        return 1
    remembered = RememberedPair.here(host, AppPaths.default(), [args.target, args.draft, args.dflash])
    remembered.learn()  # the controllers start from what the last session on this pair and machine learned
    backend = EngineBackend(host, args.max_queue, args.max_batch)
    request_log = RequestLog(path=AppPaths.default().log_dir / REQUEST_LOG_NAME)  # one JSON line per request
    options = ServerOptions(defaults, args.api_key, tuple(args.cors_origin), request_log=request_log)
    k = defaults.num_draft_tokens
    print(
        f"Serving {backend.models()[0]} on http://{args.host}:{args.port}/v1 "
        f"(speculation: {mode}{'' if mode == 'baseline' else f', K {k}'}); requests are logged to "
        f"{request_log.path}; Ctrl-C stops",
        flush=True,
    )
    config = uvicorn.Config(create_app(backend, options), host=args.host, port=args.port, log_level="warning")
    stop_on_sigterm()
    try:
        ServingServer(config, backend).run()
    except KeyboardInterrupt:  # uvicorn raises the Ctrl-C or SIGTERM it stopped on again, once requests closed
        pass
    remembered.keep()
    return exit_after_engine(host, 0)
