"""Tokenizers of local folders (never remote code) and their vocab hashes, cached per file version."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from specchat.engine.loading import missing_tokenizer  # noqa: F401 (re-exported for the hub)

from .errors import HubError

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")


def load_local_tokenizer(folder: Path) -> Any:  # mlx-lm's TokenizerWrapper; only specchat.upstream imports mlx-lm
    """mlx-lm's TokenizerWrapper for a local folder; trust_remote_code is always False."""
    folder = Path(folder)
    if not folder.is_dir():  # mlx-lm would treat a missing path as a repo id and download it
        raise HubError(f"model folder not found: {folder}")
    if missing := missing_tokenizer(folder):
        raise HubError(f"{folder} has no {missing}")
    from specchat.upstream.mlx_lm import load_tokenizer

    try:
        return load_tokenizer(folder, tokenizer_config_extra={"trust_remote_code": False})
    except Exception as exc:  # transformers raises many kinds for a bad tokenizer
        raise HubError(f"cannot load the tokenizer of {folder}: {type(exc).__name__}: {exc}") from exc


def tokenizer_key(folder: Path) -> str | None:
    """Identity of the tokenizer files' current version (resolved path, size, mtime), or None."""
    parts = []
    for name in TOKENIZER_FILES:
        path = Path(folder) / name
        if path.exists():
            real, stat = path.resolve(), path.stat()
            parts.append(f"{real}:{stat.st_size}:{stat.st_mtime_ns}")
    return "|".join(parts) or None


class VocabHashCache:
    """vocab hashes by tokenizer_key, optionally persisted to a JSON file."""

    def __init__(self, file: Path | None = None):
        self.file = Path(file) if file is not None else None
        self._lock = threading.Lock()
        self._hashes: dict[str, str] = self._read()

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self.file.read_text()) if self.file else {}
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def vocab_hash(self, folder: Path) -> str:
        """specchat.engine.compat.vocab_hash of the folder's tokenizer, loading it only when unseen."""
        from specchat.engine.compat import vocab_hash

        key = tokenizer_key(folder)
        with self._lock:
            if key is not None and key in self._hashes:
                return self._hashes[key]
        value = vocab_hash(load_local_tokenizer(folder))
        if key is not None:
            with self._lock:
                self._hashes[key] = value
                self._write()
        return value

    def _write(self) -> None:
        if self.file is None:
            return
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            self.file.write_text(json.dumps(self._hashes, indent=1, sort_keys=True))
        except OSError:
            pass  # a cache that cannot be saved is only slower next time
