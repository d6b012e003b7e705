"""`python -m specchat models download`: a model, its draft and its DFlash drafter into the HF cache, after
checking disk space and memory fit."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from .cli_common import context_problem, fail, hub_config
from .errors import DownloadCancelled, HubError
from .progress import DownloadProgress, run_interruptible
from .units import format_bytes, format_duration

BAR_WIDTH = 24


def progress_line(p: DownloadProgress) -> str:
    """A one-line text progress bar."""
    filled = int(BAR_WIDTH * p.fraction)
    return (
        f"[{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {p.fraction:4.0%} "
        f"{format_bytes(p.bytes_done)}/{format_bytes(p.bytes_total)} "
        f"{format_bytes(p.speed_bps)}/s ETA {format_duration(p.eta_s)} "
        f"({p.files_done}/{p.files_total}) {p.filename[-32:]}"
    )


def _print_progress(p: DownloadProgress) -> None:
    print("\r" + progress_line(p).ljust(110), end="", file=sys.stderr, flush=True)


def _preflight(repos: DownloadRepos, args: argparse.Namespace) -> None:
    """Disk space and memory fit before any weights are fetched (raises NotEnoughDiskError)."""
    from .download import check_disk_space, fetch_config, plan_bundle
    from .memory_fit import memory_fit, planned_memory

    config = hub_config()
    plans = {p.repo_id: p for p in plan_bundle(repos.all, config, args.revision)}
    space = check_disk_space(list(plans.values()), config)
    print(
        f"disk: {format_bytes(space.needed_bytes)} to download, {format_bytes(space.free_bytes)} free", file=sys.stderr
    )
    models = {
        repo: planned_memory(
            repo, sum(f.size for f in p.files if f.path.endswith(".safetensors")), fetch_config(p, config)
        )
        for repo, p in plans.items()
    }
    draft = models[repos.draft] if repos.draft else None
    dflash = models[repos.dflash] if repos.dflash else None
    fit = memory_fit(models[repos.target], draft, args.context, dflash=dflash)
    print(f"memory {fit.summary()}", file=sys.stderr)


@dataclass(frozen=True)
class DownloadRepos:
    """What `models download` fetches: the target, and a draft and a DFlash drafter when asked for."""

    target: str
    draft: str | None = None
    dflash: str | None = None

    @property
    def all(self) -> list[str]:
        """Every repo, target first, each once."""
        return list(dict.fromkeys(r for r in (self.target, self.draft, self.dflash) if r))


def _repo_ids(args: argparse.Namespace) -> DownloadRepos:
    """The target (draft, DFlash drafter) repo ids from ids or pasted hub URLs; BadRepoIdError naming a bad one."""
    from .repo_ids import parse_repo_id

    hosts = (hub_config().endpoint,)
    draft, dflash = (parse_repo_id(text, hosts) if text else None for text in (args.draft, args.dflash))
    return DownloadRepos(parse_repo_id(args.repo, hosts), draft, dflash)


def _check_dflash(repos: DownloadRepos, paths: list[Path]) -> str | None:
    """Why the downloaded DFlash drafter cannot draft for the downloaded target (None when it can, or none)."""
    from .dflash import check_dflash_pair

    if repos.dflash is None:
        return None
    folders = dict(zip(repos.all, paths))
    try:
        check_dflash_pair(folders[repos.target], folders[repos.dflash], repos.dflash)
    except HubError as exc:
        return f"{exc} (the files are kept at {folders[repos.dflash]})"
    return None


def run_download(args: argparse.Namespace) -> int:
    """Download in a worker thread; Ctrl-C cancels and keeps partial files for a resume."""
    from .download import download_bundle
    from .repo_ids import BadRepoIdError

    if problem := context_problem(args):
        return fail(problem, 2)
    try:
        repos = _repo_ids(args)
    except BadRepoIdError as exc:
        return fail(str(exc), 2)
    try:
        _preflight(repos, args)
    except HubError as exc:
        return fail(str(exc))
    fetched, error = run_interruptible(
        "download",
        lambda cancel: download_bundle(repos.all, hub_config(), _print_progress, cancel, revision=args.revision),
    )
    paths: list[Path] = list(fetched) if isinstance(fetched, list) else []
    print(file=sys.stderr)
    if isinstance(error, DownloadCancelled):
        return fail("cancelled; partial files are kept, run the same command to resume", 130)
    if isinstance(error, HubError):
        return fail(str(error))
    if error is not None:
        raise error
    if problem := _check_dflash(repos, paths):
        return fail(problem)
    for path in paths:
        print(path)
    return 0
