"""One SpecChat per data folder: an exclusive lock file held while the window is open."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO

LOCK_NAME = "specchat.lock"


class InstanceLock:
    """An exclusive flock on DATA/specchat.lock; the system drops it when the process ends, even on a crash."""

    def __init__(self, folder: Path):
        self.path = Path(folder) / LOCK_NAME
        self._file: IO[str] | None = None

    def acquire(self) -> int | None:
        """Take the lock: None when it is ours, else the holder's process id (0 when it cannot be read)."""
        handle = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip()
            handle.close()
            return int(holder) if holder.isdigit() else 0
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._file = handle
        return None

    def release(self) -> None:
        """Let another SpecChat use the folder."""
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None
