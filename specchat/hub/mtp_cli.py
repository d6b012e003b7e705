"""`python -m specchat models mtp add DIR [--from REPO]`: add the original's MTP head to a local model."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import DownloadCancelled, HubError
from .progress import run_interruptible
from .repo_ids import BadRepoIdError


def register_mtp(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `models mtp add` to the `models` actions."""
    mtp = actions.add_parser("mtp", help="MTP heads: add the head a conversion left out")
    verbs = mtp.add_subparsers(dest="mtp_action", required=True)
    add = verbs.add_parser(
        "add", help="fetch only the original checkpoint's mtp.* tensors and add them as a sidecar to DIR"
    )
    add.add_argument("folder", metavar="DIR", help="a local Qwen3.5+ model folder without an MTP head")
    add.add_argument(
        "--from", dest="original", metavar="REPO", help="the original checkpoint, when the card does not say"
    )
    add.add_argument("--revision", default="main", help="revision of the original (default main)")
    add.set_defaults(func=run_mtp_add)


def _fail(message: str, code: int = 1) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def run_mtp_add(args: argparse.Namespace) -> int:
    """Plan (prints what will be fetched), then fetch and convert in a worker; Ctrl-C cancels, a rerun resumes."""
    from .catalog import load_catalog
    from .cli_common import hub_config
    from .download_cli import _print_progress
    from .mtp_head import AddedHead, add_head, plan_head

    folder = Path(args.folder).expanduser()
    if not folder.exists():
        return _fail(f"{args.folder} does not exist")
    config = hub_config()
    try:
        plan = plan_head(folder, config, args.original, load_catalog(), args.revision)
    except BadRepoIdError as exc:
        return _fail(str(exc), 2)
    except HubError as exc:
        return _fail(str(exc))
    print(
        f"MTP head: {plan.summary} ({len(plan.spans)} tensors, {plan.num_layers} layer(s); "
        f"found via {plan.original.found_in}), converted to {plan.fmt.describe}",
        file=sys.stderr,
    )
    added, error = run_interruptible("mtp-head", lambda cancel: add_head(plan, config, _print_progress, cancel))
    print(file=sys.stderr)
    if isinstance(error, DownloadCancelled):
        return _fail("cancelled; the bytes fetched so far are kept, run the same command to resume", 130)
    if isinstance(error, HubError):
        return _fail(str(error))
    if isinstance(error, BaseException):
        raise error
    assert isinstance(added, AddedHead)
    print(f"added {added.sidecar}: {added.reason}; mode mtp is now available")
    return 0
