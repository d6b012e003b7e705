"""What a failed SQLite call means for the store: a newer or damaged file, a full disk, a lock. No Qt."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

from .migrations import LATEST_VERSION

CORRUPTION_CODES = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


class NewerDatabaseError(RuntimeError):
    """The file's schema is newer than this code knows; opening it would risk its data."""

    def __init__(self, path: Path, version: int):
        super().__init__(f"{path} was written by a newer SpecChat (schema {version}, this one knows {LATEST_VERSION})")
        self.version = version


class CorruptDatabaseError(sqlite3.DatabaseError):
    """The file is not a database, or SQLite's integrity check found damage."""


def is_corruption(error: BaseException) -> bool:
    """True for SQLite's "malformed" and "not a database" errors (not for locked or unreadable files)."""
    return isinstance(error, CorruptDatabaseError) or (
        isinstance(error, sqlite3.DatabaseError) and getattr(error, "sqlite_errorcode", None) in CORRUPTION_CODES
    )


def sqlite_code(error: BaseException) -> int | None:
    """SQLite's primary result code of an error (SQLITE_FULL, SQLITE_BUSY, ...); None for other errors."""
    code = getattr(error, "sqlite_errorcode", None) if isinstance(error, sqlite3.Error) else None
    return code & 0xFF if isinstance(code, int) else None  # an extended code keeps its primary one in the low byte


def is_disk_full(error: BaseException) -> bool:
    """True for SQLite's "database or disk is full" and for a write refused for want of space (or quota)."""
    if isinstance(error, OSError):
        return error.errno in (errno.ENOSPC, errno.EDQUOT)
    return sqlite_code(error) == sqlite3.SQLITE_FULL


def is_locked(error: BaseException) -> bool:
    """True when another connection holds the database (SQLite's busy and locked codes)."""
    return sqlite_code(error) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
