"""Start-up storage: folders, log, settings and conversations; whatever fails becomes a notice, never a traceback."""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from specchat.logs import details_note, setup_logging
from specchat.paths import AppPaths
from specchat.settings import Settings, load_settings
from specchat.store import ConversationStore, open_store
from specchat.store.conversations import IN_MEMORY
from specchat.system.instance_lock import InstanceLock

log = logging.getLogger(__name__)


@dataclass
class Storage:
    """What the window starts from; notices are (level, text) pairs for the banner.

    paths: the folders to use; an unwritable config or data folder is swapped for a scratch folder that is
    deleted at exit, so tuning and baseline caches still work for the session and nothing is kept.
    """

    settings: Settings
    store: ConversationStore
    paths: AppPaths
    read_only: bool = False  # True: settings and conversations are not written
    notices: list[tuple[str, str]] = field(default_factory=list)
    scratch: tempfile.TemporaryDirectory | None = None
    lock: InstanceLock | None = None  # held while this window owns the data folder

    def close(self) -> None:
        """Let another SpecChat use the data folder."""
        if self.lock is not None:
            self.lock.release()

    def banner(self) -> tuple[str, str] | None:
        """One (level, text) for the banner: every notice, the most serious level."""
        if not self.notices:
            return None
        level = "error" if any(lv == "error" for lv, _ in self.notices) else "warning"
        return level, " ".join(text for _, text in self.notices)


def open_storage(paths: AppPaths) -> Storage:
    """Make the folders, start the log, load settings and open conversations; never raises."""
    paths.ensure()
    _start_log(paths)
    notices: list[tuple[str, str]] = []
    settings = _settings(paths, notices)
    if settings.data_dir:  # the data folder chosen in Preferences (settings stay in the config folder)
        paths = replace(paths, data_dir=Path(settings.data_dir).expanduser()).ensure()
    unwritable = _unwritable(paths, notices)
    lock = None if unwritable else _lock(paths, notices)
    if not unwritable and lock is None:  # another SpecChat owns the folder: show its data, write none
        unwritable = [paths.data_dir, paths.config_dir]
    store = _store(paths, bool(unwritable), notices)
    scratch = tempfile.TemporaryDirectory(prefix="specchat-unsaved-") if unwritable else None
    if scratch:
        swap = {"config_dir": paths.config_dir, "data_dir": paths.data_dir}
        paths = replace(
            paths, **{name: Path(scratch.name) / name for name, folder in swap.items() if folder in unwritable}
        ).ensure()
    return Storage(settings, store, paths, bool(unwritable), notices, scratch, lock)


def unwritable_notice(folders: list[Path]) -> str:
    """One sentence for every folder that cannot be written (the config and data folders may both fail)."""
    names = sorted({str(folder) for folder in folders})
    verb = "is" if len(names) == 1 else "are"
    return f"Can't save: {' and '.join(names)} {verb} not writable; conversations and settings will not be kept."


def _lock(paths: AppPaths, notices: list) -> InstanceLock | None:
    """The data folder's lock, or None (and a notice) when another SpecChat holds it."""
    lock = InstanceLock(paths.data_dir)
    try:
        holder = lock.acquire()
    except OSError as error:  # a folder that takes no lock file is no reason not to start
        log.warning("could not lock %s: %s", paths.data_dir, error)
        return InstanceLock(paths.data_dir)
    if holder is None:
        return lock
    who = f"Another SpecChat (process {holder})" if holder else "Another SpecChat"
    notices.append(
        (
            "warning",
            f"{who} is using {paths.data_dir}: this window shows its conversations but "
            "saves nothing; close the other one to keep what you do here.",
        )
    )
    log.warning("%s is locked by process %s; running without saving", paths.data_dir, holder)
    return None


def _start_log(paths: AppPaths) -> None:
    try:
        setup_logging(paths.log_file)
    except Exception:  # no log file is no reason not to start
        pass


def _unwritable(paths: AppPaths, notices: list) -> list:
    """The folders that cannot be written, said once in the notices."""
    try:
        unwritable = paths.unwritable()
    except Exception as error:
        log.exception("checking the folders failed")
        notices.append(
            ("error", f"Could not check the data folders ({error}); nothing will be saved." + details_note())
        )
        return [paths.data_dir]
    if unwritable:
        notices.append(("warning", unwritable_notice(unwritable)))
        log.warning("%s not writable; running without saving", " and ".join(map(str, unwritable)))
    return unwritable


def _settings(paths: AppPaths, notices: list) -> Settings:
    try:
        loaded = load_settings(paths)
    except Exception as error:
        log.exception("loading settings failed")
        notices.append(
            ("error", f"Could not load settings from {paths.settings_file} ({error}); using defaults." + details_note())
        )
        return Settings()
    if loaded.warning:
        log.warning("%s", loaded.warning)
        notices.append(("warning", loaded.warning))
    return loaded.settings


def _store(paths: AppPaths, read_only: bool, notices: list) -> ConversationStore:
    if read_only:
        return _snapshot(paths)
    try:
        store, report = open_store(paths.conversations_db)
    except Exception as error:
        log.exception("opening %s failed", paths.conversations_db)
        notices.append(
            (
                "error",
                f"Could not open {paths.conversations_db} ({error}); conversations will not "
                f"be kept this session." + details_note(),
            )
        )
        return ConversationStore(IN_MEMORY)
    message = report.message()
    if message:
        log.warning("%s (%s)", message, report.problem)
        notices.append(("warning", message))
    return store


def _snapshot(paths: AppPaths) -> ConversationStore:
    """The saved conversations, copied into memory (shown, never written back); empty when none can be read."""
    if not paths.conversations_db.is_file():
        return ConversationStore(IN_MEMORY)
    try:
        return ConversationStore.snapshot(paths.conversations_db)
    except Exception:
        log.exception("reading %s into memory failed", paths.conversations_db)
        return ConversationStore(IN_MEMORY)
