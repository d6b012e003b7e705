"""Run the server: in the foreground (`serve`) or on a background thread (the app, tests)."""

from __future__ import annotations

import ipaddress
import socket
import threading

import uvicorn

from .app import ServerOptions, create_app
from .backend import EngineBackend

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


class BackgroundServer:
    """uvicorn on its own thread, started and stopped from any thread."""

    def __init__(self, backend: EngineBackend, options: ServerOptions, host: str = "127.0.0.1", port: int = 8080):
        check_exposure(host, options.api_key)
        self.backend, self.host, self.port = backend, host, port
        config = uvicorn.Config(
            create_app(backend, options),
            host=host,
            port=port,
            log_level="warning",
            lifespan="off",
            timeout_graceful_shutdown=2,
        )
        self.server = uvicorn.Server(config)
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
        """Stop listening and wait for the thread."""
        self.server.should_exit = True
        self.thread.join(timeout_s)
