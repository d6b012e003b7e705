"""The error log: one rotating file in the platformdirs log folder, set up once at start (app and CLI)."""

from __future__ import annotations

import logging
import logging.handlers
import sys
import threading
from pathlib import Path

LOGGER_NAME = "specchat"
MAX_BYTES = 1_000_000
BACKUPS = 3
FORMAT = "%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s"

_state: dict[str, Path | None] = {"path": None}
_lock = threading.Lock()


def setup_logging(log_file: Path) -> Path | None:
    """Send app.* log records (warnings and up) to a rotating file; returns its path, None when unwritable.

    Calling it again with another file moves the log there (tests); an unwritable folder means no file log.
    """
    stop_logging()
    logger = logging.getLogger(LOGGER_NAME)
    with _lock:
        try:
            Path(log_file).parent.mkdir(parents=True, exist_ok=True)
            handler = logging.handlers.RotatingFileHandler(log_file, maxBytes=MAX_BYTES, backupCount=BACKUPS,
                                                           encoding="utf-8")
        except OSError:  # no file log: the records go nowhere (not to Python's last-resort stderr printer)
            handler = logging.NullHandler()
            handler.specchat = True
            logger.addHandler(handler)
            return None
        handler.specchat = True
        handler.setLevel(logging.WARNING)
        handler.setFormatter(logging.Formatter(FORMAT))
        logger.addHandler(handler)
        if logger.level == logging.NOTSET or logger.level > logging.WARNING:
            logger.setLevel(logging.WARNING)
        _state["path"] = Path(log_file)
    _log_uncaught()
    return _state["path"]


def stop_logging() -> None:
    """Close the log file (tests; the app keeps it open until it exits)."""
    logger = logging.getLogger(LOGGER_NAME)
    with _lock:
        for handler in [h for h in logger.handlers if getattr(h, "specchat", False)]:
            logger.removeHandler(handler)
            handler.close()
        _state["path"] = None


def log_path() -> Path | None:
    """The file errors are written to, or None when there is none."""
    return _state["path"]


def details_note() -> str:
    """' Details in <log>.' for the end of an error message, or '' when there is no log file."""
    path = log_path()
    return f" Details in {path}." if path else ""


def _log_uncaught() -> None:
    """Uncaught exceptions (main thread and others) go to the log too, then on to the default hooks."""
    if getattr(sys.excepthook, "specchat", False):
        return
    previous_hook, previous_thread_hook = sys.excepthook, threading.excepthook
    logger = logging.getLogger(LOGGER_NAME)

    def hook(kind, value, tb):
        logger.error("uncaught exception", exc_info=(kind, value, tb))
        previous_hook(kind, value, tb)

    def thread_hook(args):
        if args.exc_type is not SystemExit:
            logger.error("uncaught exception in thread %s", getattr(args.thread, "name", "?"),
                         exc_info=(args.exc_type, args.exc_value, args.exc_traceback))
        previous_thread_hook(args)

    hook.specchat = True
    sys.excepthook, threading.excepthook = hook, thread_hook
