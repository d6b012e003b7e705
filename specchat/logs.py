"""The error log: one rotating file in the platformdirs log folder, set up once at start (app and CLI)."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import logging
import logging.handlers
import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType, TracebackType

LOGGER_NAME = "specchat"
MAX_BYTES = 1_000_000
BACKUPS = 3
FORMAT = "%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s"
MARK = "specchat"  # an attribute set True on our handlers and hooks, so they are found again

# Third-party libraries that print their own warnings on the terminal (transformers: its tokenizer regex
# warning, "PyTorch was not found"): their records go to the log file instead, unless asked for on the
# terminal with the library's own switch (TRANSFORMERS_VERBOSITY) or SPECCHAT_LIBRARY_LOGS=1.
TRANSFORMERS_LOGGING = "transformers.utils.logging"
LIBRARY_LOGS_ENV = "SPECCHAT_LIBRARY_LOGS"

_state: dict[str, Path | None] = {"path": None}
_lock = threading.Lock()
_routed: list[tuple[logging.Logger, logging.Handler]] = []  # (library logger, our handler on it)


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

    def close(self) -> None:
        """Close the file; records it could not write (a full disk) are dropped, not raised."""
        try:
            super().close()
        except OSError:
            self.failed = True


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
    _route_library_logs()
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
    """The file errors are written to, or None when there is none or it could not be written (a full disk)."""
    handlers = logging.getLogger(LOGGER_NAME).handlers
    if any(isinstance(h, QuietFileHandler) and h.failed and getattr(h, MARK, False) for h in handlers):
        return None
    return _state["path"]


def details_note() -> str:
    """' Details in <log>.' for the end of an error message, or '' when there is no log file (or no record
    could be written to it: the message must not send the user to a file that lacks the details)."""
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


def library_logs_on_terminal() -> bool:
    """Whether the user asked for third-party libraries' warnings on the terminal."""
    return os.environ.get(LIBRARY_LOGS_ENV, "") not in ("", "0") or "TRANSFORMERS_VERBOSITY" in os.environ


def _route_library_logs() -> None:
    """transformers' records go to our log file, not the terminal: now if it is imported, else once it is
    (it is imported late, by the model load, and costs seconds: not imported here for nothing)."""
    if library_logs_on_terminal():
        return
    module = sys.modules.get(TRANSFORMERS_LOGGING)
    if module is not None:
        try:
            _quiet_transformers(module)
        except Exception:  # a library that changed: its warnings reach the terminal, nothing breaks
            logging.getLogger(LOGGER_NAME).warning("could not route transformers to the log", exc_info=True)
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(TRANSFORMERS_LOGGING, _quiet_transformers))


def _quiet_transformers(module: ModuleType) -> None:
    """transformers' stderr handler off; its records (warnings and up) to the handlers of our log."""
    module._configure_library_root_logger()  # idempotent: what its first logger would do
    module.disable_default_handler()
    _forward(logging.getLogger("transformers"))


class _Forward(logging.Handler):
    """Hands a library's records to the log file's handler, whichever it is now."""

    def emit(self, record: logging.LogRecord) -> None:
        for handler in logging.getLogger(LOGGER_NAME).handlers:
            if getattr(handler, MARK, False) and record.levelno >= handler.level:
                handler.handle(record)


def _forward(library: logging.Logger) -> None:
    if any(logger is library for logger, _ in _routed):
        return
    handler = _Forward(logging.WARNING)
    library.addHandler(handler)
    _routed.append((library, handler))


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs `then(module)` right after one module is first imported (and before its importer goes on)."""

    def __init__(self, name: str, then: Callable[[ModuleType], None]):
        self.name, self.then = name, then

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run, then = spec.loader.exec_module, self.then  # the loader is this spec's own: patch it alone

        def exec_module(module: ModuleType) -> None:
            run(module)
            try:
                then(module)
            except Exception:  # a library that changed: its warnings reach the terminal, nothing breaks
                logging.getLogger(LOGGER_NAME).warning("could not route %s to the log", fullname, exc_info=True)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec
