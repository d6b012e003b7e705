"""`python -m specchat models list|add|search|download|delete|pair`: the model manager on the command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .cli_common import DEFAULT_CONTEXT, context_problem, fail, hub_config, local_models
from .download_cli import run_download
from .errors import HubError
from .units import format_bytes

if TYPE_CHECKING:  # imported where used, so `specchat models` starts fast
    from .search import SearchResult


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `models` subcommand and its actions."""
    models = subparsers.add_parser("models", help="list, search, download, delete and pair models")
    actions = models.add_subparsers(dest="models_action", required=True)
    lst = actions.add_parser("list", help="models on this machine (HF cache and your folders)")
    lst.add_argument("--no-vocab", action="store_true", help="skip tokenizer loading (no vocab hash)")
    lst.set_defaults(func=run_list)
    add = actions.add_parser("add", help="remember a model folder (or a folder of model folders) for the app")
    add.add_argument("folder", help="an MLX model folder, or a folder with MLX model folders in it")
    add.set_defaults(func=run_add)
    search = actions.add_parser("search", help="the catalog plus MLX models on Hugging Face")
    search.add_argument("query", nargs="?", default="")
    search.add_argument("--limit", type=int, default=30)
    search.set_defaults(func=run_search)
    dl = actions.add_parser("download", help="download a model (and its draft, its DFlash drafter) into the HF cache")
    dl.add_argument("repo")
    dl.add_argument("--draft", help="a draft repo to download in the same job")
    dl.add_argument("--dflash", metavar="REPO", help="a DFlash drafter for the target (e.g. z-lab/Qwen3-8B-DFlash-b16)")
    dl.add_argument("--revision", default="main")
    dl.add_argument("--context", type=int, default=DEFAULT_CONTEXT, help="tokens of context to plan for")
    dl.set_defaults(func=run_download)
    rm = actions.add_parser("delete", help="delete a model from the HF cache")
    rm.add_argument("repo")
    rm.add_argument("--yes", action="store_true", help="do not ask")
    rm.set_defaults(func=run_delete)
    pair = actions.add_parser("pair", help="compatibility report and memory fit of a target + draft")
    pair.add_argument("target", help="folder or cached repo id")
    pair.add_argument("draft", help="folder or cached repo id")
    pair.add_argument("--context", type=int, default=DEFAULT_CONTEXT, help="tokens of context to plan for")
    pair.set_defaults(func=run_pair)
    from .mtp_cli import register_mtp

    register_mtp(actions)


def run_list(args: argparse.Namespace) -> int:
    """Print one line per local model."""
    models = local_models(vocab=not args.no_vocab)
    if not models:
        print("no models found (download one with `python -m specchat models download REPO`)")
    for m in models:
        f = m.facts
        arch = f"{f.architecture} {f.model_type}" if f else "?"
        bits = f"{f.quant_bits}-bit" if f and f.quant_bits else "-"
        ctx = str(f.context_length) if f and f.context_length else "?"
        mtp = "DFL" if m.dflash else {True: "MTP", False: "-", None: "?"}[m.mtp_available]
        state = "complete" if m.complete else "PARTIAL (" + ", ".join(m.missing[:3]) + ")"
        print(
            f"{m.name:48} {format_bytes(m.size_bytes):>9}  {arch:18} {bits:6} ctx {ctx:>7}  "
            f"{mtp:3}  vocab {m.vocab_hash or '-':16}  {state}"
        )
    return 0


def run_add(args: argparse.Namespace) -> int:
    """Add a folder to the settings' model folders after checking it holds MLX models."""
    from specchat.paths import AppPaths
    from specchat.settings import load_settings, save_settings

    from .store import user_folder_models

    folder = Path(args.folder).expanduser().resolve()
    if not folder.exists():
        return fail(f"{args.folder} does not exist")
    if not folder.is_dir():
        return fail(f"{args.folder} is a file, not a folder")
    models = user_folder_models(folder)
    if not models:
        return fail(
            f"{folder} is not an MLX model folder: no config.json with *.safetensors weights in it "
            "or in the folders below it"
        )
    paths = AppPaths.default().ensure()
    loaded = load_settings(paths)
    if loaded.warning:
        print(loaded.warning, file=sys.stderr)
    settings = loaded.settings
    names = ", ".join(m.name for m in models)
    if str(folder) in [str(Path(d).expanduser().resolve()) for d in settings.extra_model_dirs]:
        print(f"{folder} is already listed ({names})")
        return 0
    settings.extra_model_dirs.append(str(folder))
    try:
        save_settings(paths, settings)
    except OSError as exc:
        return fail(f"could not save {paths.settings_file}: {exc}")
    print(f"added {folder} ({len(models)} model{'s' if len(models) != 1 else ''}: {names})")
    return 0


def search_status(result: SearchResult) -> str:
    """The first line of a search: "online", or "offline: why" (the state said once)."""
    message = result.message.removeprefix(result.state + ":").strip()
    return result.state + (f": {message}" if message else "")


def run_search(args: argparse.Namespace) -> int:
    """Print the hub state, then catalog and hub hits (or that nothing matched)."""
    from .catalog import load_catalog
    from .search import search_models

    if args.limit < 1:
        return fail(f"--limit must be at least 1, got {args.limit}", 2)
    try:
        catalog = load_catalog()
    except HubError as exc:
        return fail(str(exc))
    result = search_models(args.query, catalog, hub_config(), limit=args.limit)
    print(search_status(result))
    if not result.hits:
        print(f"no models match {args.query!r}" if args.query.strip() else "no models found")
    for hit in result.hits:
        c = hit.catalog
        info = (
            (
                f"* {c.role:6} {c.architecture:6} {c.quantization:18} ~{c.approx_size_gb:g} GB"
                + ("  MTP" if c.mtp else "")
            )
            if c
            else "  (hub)"
        )
        downloads = f"  {hit.downloads} downloads" if hit.downloads is not None else ""
        print(f"{hit.repo_id:52} {info}{downloads}")
        for pair in catalog.pairs_for(hit.repo_id):
            drafter = f"DFlash drafter {pair.draft}" if pair.mode == "dflash" else pair.draft or "its MTP head"
            print(f"{'':52}   pairs with {drafter} (K={pair.k})")
        if c is not None and c.is_dflash and (target := catalog.dflash_target(c.repo_id)):
            print(f"{'':52}   DFlash drafter for {target}")
    return 0


def run_delete(args: argparse.Namespace) -> int:
    """Delete a cached model after asking y/N (or with --yes)."""
    from .store import delete_model, find_model

    model = find_model(local_models(vocab=False), args.repo)
    if model is None:
        return fail(f"{args.repo} is not in the HF cache or your folders")
    if not args.yes:
        answer = input(f"Delete {model.name} ({format_bytes(model.size_bytes)}) at {model.path}? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("kept")
            return 1
    try:
        freed = delete_model(model, hub_config(), confirm=True)
    except HubError as exc:
        return fail(str(exc))
    print(f"deleted {model.name}, freed {format_bytes(freed)}")
    return 0


def _resolve_folder(name: str) -> Path | None:
    path = Path(name).expanduser()
    if (path / "config.json").is_file():
        return path
    from .store import find_model

    model = find_model(local_models(vocab=False), name)
    return model.path if model else None


def run_pair(args: argparse.Namespace) -> int:
    """Print the compatibility report and the memory fit of a target and a draft."""
    from .dflash import is_dflash_folder
    from .memory_fit import memory_fit, model_memory
    from .pairing import pair_report

    if problem := context_problem(args):
        return fail(problem, 2)
    target, draft = _resolve_folder(args.target), _resolve_folder(args.draft)
    if target is None or draft is None:
        name = args.target if target is None else args.draft
        return fail(f"{name} is neither a model folder nor a downloaded model")
    if is_dflash_folder(draft):
        return _pair_dflash(target, draft, args.context)
    report = pair_report(target, draft)
    print(f"target {target}\ndraft  {draft}")
    for check in report.checks:
        print(f"  {check.status:12} {check.name:15} {check.detail}")
    print("compatible" if report.compatible else f"INCOMPATIBLE: {report.reason}")
    fit = memory_fit(model_memory(target), model_memory(draft), args.context)
    print(f"memory {fit.summary()}")
    return 0 if report.compatible else 3


def _pair_dflash(target: Path, drafter: Path, context: int) -> int:
    """The DFlash drafter's checks against the target's config, and the memory fit with the drafter."""
    from .dflash import check_dflash_pair
    from .memory_fit import memory_fit, model_memory

    print(f"target {target}\ndflash {drafter}")
    try:
        cfg = check_dflash_pair(target, drafter)
    except HubError as exc:
        print(f"INCOMPATIBLE: {exc}")
        code = 3
    else:
        print(
            f"compatible: a DFlash drafter of block size {cfg.block_size} reading target layers {cfg.target_layer_ids}"
        )
        code = 0
    fit = memory_fit(model_memory(target), None, context, dflash=model_memory(drafter))
    print(f"memory {fit.summary()}")
    return code
