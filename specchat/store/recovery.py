"""Open the conversation store whatever state its file is in: damaged or newer files are kept aside, never lost."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from .conversations import IN_MEMORY, ConversationStore
from .errors import NewerDatabaseError, is_corruption
from .row_import import RECOVERABLE_TABLES

RECOVER_TIMEOUT_S = 120
MAX_PROBES = 1_000_000  # rowids looked up one by one across a damaged stretch
TABLES = RECOVERABLE_TABLES  # parents first: presets, then chats, then what belongs to them
SIDECARS = ("-wal", "-shm")  # SQLite's files beside the database; they belong to the old file

Outcome = Literal["opened", "recovered", "fresh", "newer"]


@dataclass(frozen=True)
class OpenReport:
    """What opening the store found and did; message() is the banner text (None when all was well)."""

    outcome: Outcome = "opened"
    backup: Path | None = None
    rows_recovered: int = 0
    problem: str = ""
    recovered_with: str = ""  # "sqlite3 .recover" or "row copy"

    def message(self) -> str | None:
        """One or two sentences for the user, or None when nothing happened."""
        if self.outcome == "opened":
            return None
        kept = f"The old file is kept as {self.backup}." if self.backup else "The old file could not be kept."
        if self.outcome == "newer":
            return (
                f"Your conversations file was written by a newer SpecChat; this version starts a new one. "
                f"{kept} Open it with the newer SpecChat to see those conversations."
            )
        if self.outcome == "recovered":
            return (
                f"Your conversations file was damaged ({self.problem}); {self.rows_recovered} rows were "
                f"recovered into a new one. {kept}"
            )
        return (
            f"Your conversations file was damaged ({self.problem}) and nothing could be recovered; "
            f"starting with no conversations. {kept}"
        )


def open_store(
    path: str | Path, *, now: Callable[[], datetime] = datetime.now, sqlite3_binary: str | None = None
) -> tuple[ConversationStore, OpenReport]:
    """Open the store; a corrupt file is recovered into a new one, a newer one is set aside for a fresh one.

    Other errors (a locked or unreadable file) are raised: the file may be fine, so nothing is moved.
    sqlite3_binary: the `sqlite3` shell used for `.recover` (default: found on PATH; "" for none).
    """
    if str(path) == IN_MEMORY:
        return ConversationStore(IN_MEMORY), OpenReport()
    path = Path(path)
    try:
        return ConversationStore(path), OpenReport()
    except NewerDatabaseError as error:
        backup = _move_aside(path, f"newer-v{error.version}", now())
        return ConversationStore(path), OpenReport("newer", backup, problem=str(error))
    except sqlite3.DatabaseError as error:
        if not is_corruption(error):
            raise
        problem = str(error)
    backup = _move_aside(path, "corrupt", now())
    binary = shutil.which("sqlite3") if sqlite3_binary is None else sqlite3_binary
    store = ConversationStore(path)
    rows, how = _recover(backup, store, binary)
    return store, OpenReport("recovered" if rows else "fresh", backup, rows, problem, how if rows else "")


def _move_aside(path: Path, label: str, when: datetime) -> Path:
    """Rename the database (and its -wal/-shm) to a timestamped name next to it; returns the new path."""
    base = f"{path.stem}.{label}-{when:%Y%m%d-%H%M%S}"
    backup, counter = path.with_name(base + path.suffix), 1
    while backup.exists():
        backup = path.with_name(f"{base}-{counter}{path.suffix}")
        counter += 1
    path.rename(backup)
    for sidecar in SIDECARS:
        old = Path(str(path) + sidecar)
        if old.exists():
            old.rename(str(backup) + sidecar)
    return backup


def _recover(broken: Path, store: ConversationStore, binary: str | None) -> tuple[int, str]:
    """Copy what can be saved from the broken file into the new store: `.recover` first, then row by row."""
    if binary:
        with tempfile.TemporaryDirectory(prefix="specchat-recover-") as folder:
            recovered = Path(folder) / "recovered.db"
            if _sqlite_recover(binary, broken, recovered):
                rows = _copy_rows(recovered, store)
                if rows:
                    return rows, "sqlite3 .recover"
    return _copy_rows(broken, store), "row copy"


def _sqlite_recover(binary: str, broken: Path, target: Path) -> bool:
    """Run `sqlite3 broken .recover | sqlite3 target`; False when the shell fails or is missing."""
    try:
        dump = subprocess.run([binary, str(broken), ".recover"], capture_output=True, timeout=RECOVER_TIMEOUT_S)
        if dump.returncode != 0 or not dump.stdout:  # e.g. a shell built without sqlite_dbpage (Debian's)
            return False
        subprocess.run([binary, str(target)], input=dump.stdout, capture_output=True, timeout=RECOVER_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return False
    return target.exists()  # the shell exits 1 after any failed statement; the rows it did load count


def _copy_rows(source: Path, store: ConversationStore) -> int:
    """Copy every readable row of each known table into the store; returns how many rows were copied."""
    try:
        db = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    except sqlite3.Error:
        return 0
    try:
        copied = 0
        for table in TABLES:
            columns = _shared_columns(db, store, table)
            if columns:
                copied += store.import_rows(table, columns, _readable_rows(db, table, columns))
        return copied
    finally:
        db.close()


def _shared_columns(db: sqlite3.Connection, store: ConversationStore, table: str) -> list[str]:
    try:
        theirs = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
    except sqlite3.Error:
        return []
    ours = store.columns(table)
    return [column for column in ours if column in theirs]


def _readable_rows(db: sqlite3.Connection, table: str, columns: list[str]) -> list[tuple[object, ...]]:
    """Every row that can still be read: a scan from each end, then one lookup per rowid between the two stops."""
    select = f"SELECT rowid, {', '.join(columns)} FROM {table}"
    rows: dict[int, tuple[object, ...]] = {}
    for order in ("ASC", "DESC"):
        try:
            for row in db.execute(f"{select} ORDER BY rowid {order}"):
                if row[0] in rows:
                    return [rows[key] for key in sorted(rows)]  # the two scans met: nothing was damaged between
                rows[row[0]] = tuple(row[1:])
        except sqlite3.Error:
            continue
    if rows:
        for rowid in range(min(rows), min(max(rows), min(rows) + MAX_PROBES)):
            if rowid not in rows:
                try:
                    row = db.execute(f"{select} WHERE rowid = ?", (rowid,)).fetchone()
                except sqlite3.Error:
                    continue
                if row is not None:
                    rows[rowid] = tuple(row[1:])
    return [rows[key] for key in sorted(rows)]
