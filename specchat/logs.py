"""The error log: one rotating file in the platformdirs log folder, set up once at start (app and CLI)."""

from __future__ import annotations

import logging
import logging.handlers
import sys
import threading
from pathlib import Path
from types import TracebackType

LOGGER_NAME = "specchat"
MAX_BYTES = 1_000_000
BACKUPS = 3
FORMAT = "%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s"
MARK = "specchat"  # an attribute set True on our handlers and hooks, so they are found again

_state: dict[str, Path | None] = {"path": None}
_lock = threading.Lock()


class QuietFileHandler(logging.handlers.RotatingFileHandler):
    """The rotating log file; when it cannot be written (a full disk) it says so once on stderr and drops
    records, instead of logging's traceback for every record."""

    failed = False

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 (logging's name)
        if not self.failed:
            self.failed = True
            problem = sys.exc_info()[1]
            print(
                f"SpecChat: the log {self.baseFilename} cannot be written ({problem}); further errors are not logged",
                file=sys.stderr,
            )


def setup_logging(log_file: Path) -> Path | None:
    """Send app.* log records (warnings and up) to a rotating file; returns its path, None when unwritable.

    Calling it again with another file moves the log there (tests); an unwritable folder means no file log.
    """
    stop_logging()
    logger = logging.getLogger(LOGGER_NAME)
    with _lock:
        try:
            Path(log_file).parent.mkdir(parents=True, exist_ok=True)
            handler: logging.Handler = QuietFileHandler(
                log_file, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8"
            )
        except OSError:  # no file log: the records go nowhere (not to Python's last-resort stderr printer)
            handler = logging.NullHandler()
            _mark(handler)
            logger.addHandler(handler)
            return None
        _mark(handler)
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
        for handler in [h for h in logger.handlers if getattr(h, MARK, False)]:
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
    if getattr(sys.excepthook, MARK, False):
        return
    previous_hook, previous_thread_hook = sys.excepthook, threading.excepthook
    logger = logging.getLogger(LOGGER_NAME)

    def hook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        logger.error("uncaught exception", exc_info=(kind, value, tb))
        previous_hook(kind, value, tb)

    def thread_hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is not SystemExit:
            value = args.exc_value  # None only when threading.excepthook is called by hand without one
            logger.error(
                "uncaught exception in thread %s",
                getattr(args.thread, "name", "?"),
                exc_info=(args.exc_type, value, args.exc_traceback) if value is not None else None,
            )
        previous_thread_hook(args)

    _mark(hook)
    sys.excepthook, threading.excepthook = hook, thread_hook


def _mark(obj: object) -> None:
    """Tag a handler or hook as ours (stop_logging and a second setup find it by this)."""
    setattr(obj, MARK, True)
