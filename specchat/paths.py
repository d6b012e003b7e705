"""Where SpecChat keeps its settings, data, caches and logs."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import platformdirs

APP_NAME = "SpecChat"
APP_AUTHOR = "SpecChat"
HOME_ENV_VAR = "SPECCHAT_HOME"


@dataclass(frozen=True)
class AppPaths:
    """The four folders the app writes to."""

    config_dir: Path
    data_dir: Path
    cache_dir: Path
    log_dir: Path

    @classmethod
    def default(cls) -> AppPaths:
        """Per-user folders from platformdirs, or under $SPECCHAT_HOME when it is set."""
        home = os.environ.get(HOME_ENV_VAR, "").strip()
        if home:
            return cls.under(Path(home).expanduser())
        dirs = platformdirs.PlatformDirs(APP_NAME, APP_AUTHOR)
        return cls(
            config_dir=Path(dirs.user_config_dir),
            data_dir=Path(dirs.user_data_dir),
            cache_dir=Path(dirs.user_cache_dir),
            log_dir=Path(dirs.user_log_dir),
        )

    @classmethod
    def under(cls, root: Path) -> AppPaths:
        """All folders as subfolders of one root (tests, demos, CI)."""
        root = Path(root)
        return cls(
            config_dir=root / "config",
            data_dir=root / "data",
            cache_dir=root / "cache",
            log_dir=root / "logs",
        )

    def ensure(self) -> AppPaths:
        """Create every folder that does not exist yet (skipping any that cannot be made); returns self."""
        for folder in (self.config_dir, self.data_dir, self.cache_dir, self.log_dir):
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError:
                pass  # unwritable() reports it; the app runs without saving there
        return self

    def unwritable(self) -> list[Path]:
        """The config and data folders the app cannot create or write a file in."""
        return [folder for folder in (self.config_dir, self.data_dir) if not is_writable(folder)]

    @property
    def settings_file(self) -> Path:
        """The JSON settings file."""
        return self.config_dir / "settings.json"

    @property
    def conversations_db(self) -> Path:
        """The SQLite database of saved conversations."""
        return self.data_dir / "conversations.sqlite3"

    @property
    def log_file(self) -> Path:
        """The rotating log of errors."""
        return self.log_dir / "specchat.log"

    @property
    def tuning_file(self) -> Path:
        """The JSON file of tuned draft lengths (k) per model pair."""
        return self.data_dir / "tuned_k.json"

    @property
    def knowledge_dir(self) -> Path:
        """What the speculation controllers learned, one JSON file per pair, machine and power source."""
        return self.data_dir / "knowledge"


def is_writable(folder: Path) -> bool:
    """True when a file can be created in folder (made if missing).

    A real probe write, not a permission-bit guess: it also catches read-only mounts, a file where the
    folder should be, and ACLs.
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".specchat-probe-"):
            pass
    except OSError:
        return False
    return True
