"""What the `models` commands share: the hub config, the local models, the error line and the --context check."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used, so `specchat models` starts fast
    from .config import HubConfig
    from .store import LocalModel

DEFAULT_CONTEXT = 8192


def hub_config() -> HubConfig:
    """The hub endpoint and cache, as the environment sets them."""
    from .config import HubConfig

    return HubConfig.from_env()


def local_models(vocab: bool = True) -> list[LocalModel]:
    """Cached and user-folder models, vocab hashes cached under the app's cache folder."""
    from specchat.paths import AppPaths
    from specchat.settings import load_settings

    from .store import scan_local_models
    from .tokenizer_info import VocabHashCache

    paths = AppPaths.default()
    folders = load_settings(paths).settings.extra_model_dirs
    cache = VocabHashCache(paths.cache_dir / "vocab_hashes.json") if vocab else None
    return scan_local_models(hub_config(), folders, cache)


def fail(message: str, code: int = 1) -> int:
    """Print `error: message` to stderr and return the exit code."""
    print(f"error: {message}", file=sys.stderr)
    return code


def context_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with --context (None when it is a usable number of tokens)."""
    return f"--context must be at least 1 token, got {args.context}" if args.context < 1 else None
