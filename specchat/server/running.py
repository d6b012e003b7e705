"""Run the server: in the foreground (`serve`) or on a background thread (the app, tests)."""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import sys
import threading
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

import uvicorn

from .app import ServerOptions, create_app
from .backend import EngineBackend

if TYPE_CHECKING:
    from specchat.engine.owner import EngineHost

LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and localhost: addresses only this machine can reach."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, api_key: str | None) -> None:
    """Refuse to serve beyond this machine without an API key (ValueError says how to fix it)."""
    if not is_loopback(host) and not api_key:
        raise ValueError(
            f"Serving on {host} lets other machines use the model: set an API key "
            "(--api-key KEY or SPECCHAT_API_KEY), or bind 127.0.0.1"
        )


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]  # socket's address is untyped (its shape depends on the family)
        return port


SHUTDOWN_GRACE_S = 2  # after a stop: open streams get their error chunk, then connections are closed
ENGINE_WAIT_S = 1.5  # then how long the engine thread may take to park before the process exits anyway


def check_port(host: str, port: int) -> None:
    """OSError naming the address when nothing could listen on it now (in use, or not this machine's)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is no obstacle
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def stop_on_sigterm() -> None:
    """Let SIGTERM stop the server as Ctrl-C does: the requests end with their error, the engine is released."""

    def interrupt(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


def exit_after_engine(host: EngineHost, status: int) -> int:
    """Release the engine and return the exit status; when its thread is stuck (a long prefill chunk, a
    collective whose peer died) past ENGINE_WAIT_S, say so and end the process at once: waiting on it
    would keep the server alive, and exiting normally with MLX mid-call aborts."""
    if host.shutdown(ENGINE_WAIT_S):
        return status
    print(
        f"specchat serve: the engine was still busy {ENGINE_WAIT_S:g} s after the stop; exiting without it",
        file=sys.stderr,
        flush=True,
    )
    sys.stdout.flush()
    os._exit(status)


INTERRUPTED = 130  # the shell's code for a run stopped by Ctrl-C (128 + SIGINT)


def stop_at_once(command: str, what: str = "Ctrl-C") -> NoReturn:
    """A second stop: one line, and the process ends now (no traceback, no waiting on the engine thread,
    which may be inside an MLX call: a normal exit would wait on it, or abort)."""
    sys.stdout.flush()
    print(f"{command}: {what} again: stopped at once", file=sys.stderr, flush=True)
    os._exit(INTERRUPTED)


class ServingServer(uvicorn.Server):
    """uvicorn that, asked to stop (Ctrl-C, SIGTERM, stop()), ends every request with a clear error first:
    a stream gets an error chunk and [DONE], a whole response a 503; new requests get 503 too. A second stop
    signal ends the process at once, in one line."""

    def __init__(self, config: uvicorn.Config, backend: EngineBackend):
        config.timeout_graceful_shutdown = SHUTDOWN_GRACE_S
        super().__init__(config)
        self.backend = backend
        self.stop_signals = 0  # stop signals received (stop() from another thread is none)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """A stop signal: the requests' jobs stop now, then uvicorn closes the connections; the second one
        ends the process at once (uvicorn would re-raise both once serving ends: two tracebacks)."""
        self.stop_signals += 1
        if self.stop_signals > 1:
            stop_at_once("specchat serve", "Ctrl-C" if sig == signal.SIGINT else signal.Signals(sig).name)
        self.backend.begin_shutdown()
        super().handle_exit(sig, frame)

    def stop(self) -> None:
        """Stop from another thread, as a signal would."""
        self.backend.begin_shutdown()
        self.should_exit = True


class BackgroundServer:
    """uvicorn on its own thread, started and stopped from any thread."""

    def __init__(self, backend: EngineBackend, options: ServerOptions, host: str = "127.0.0.1", port: int = 8080):
        check_exposure(host, options.api_key)
        self.backend, self.host, self.port = backend, host, port
        config = uvicorn.Config(create_app(backend, options), host=host, port=port, log_level="warning", lifespan="off")
        self.server = ServingServer(config, backend)
        self.thread = threading.Thread(target=self._run, name="api-server", daemon=True)

    @property
    def url(self) -> str:
        """The base URL clients use (…/v1 for OpenAI clients)."""
        return f"http://{self.host}:{self.port}"

    def _run(self) -> None:
        try:
            self.server.run()
        except SystemExit:  # uvicorn exits when it cannot bind; start() reports it
            pass

    def start(self, timeout_s: float = 10.0) -> None:
        """Start listening; RuntimeError when the port could not be bound in time."""
        self.thread.start()
        waited = threading.Event()
        while not self.server.started and self.thread.is_alive() and not waited.wait(0.02):
            timeout_s -= 0.02
            if timeout_s <= 0:
                break
        if not self.server.started:
            raise RuntimeError(f"the server could not listen on {self.host}:{self.port}")

    def stop(self, timeout_s: float = 5.0) -> None:
        """End every request with a clear error, stop listening and wait for the thread."""
        self.server.stop()
        self.thread.join(timeout_s)
