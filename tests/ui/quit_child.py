"""Run by test_quit_while_streaming in a child process: the app (run_app) on a target; once a long reply
streams, a stop signal quits it. Prints "streaming" when it sends the signal and "run_app returned N".

With a fourth argument "busy", no reply: a job that ignores its cancel keeps the engine thread in the
tokenizer (encode, decode) when the window closes, as a stuck engine would at exit.

Usage: python -m tests.ui.quit_child HOME TARGET SIGNAL [busy]
"""

import os
import signal
import sys
import threading

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

import specchat.ui.app as app_module  # noqa: E402
from specchat.paths import AppPaths  # noqa: E402
from specchat.ui.app import run_app  # noqa: E402
from specchat.ui.engine_client import EngineClient  # noqa: E402
from specchat.ui.main_window import MainWindow  # noqa: E402

POLL_MS = 50
TOKENIZING = threading.Event()  # set by the busy job once it runs the tokenizer
PROMPT = "Count from one to a thousand."


class Driver:
    """Sends the prompt once the pair is loaded, and the stop signal once the reply has streamed text."""

    def __init__(self, app: QApplication, stop: int, busy: bool = False):
        self.app, self.stop, self.busy = app, stop, busy
        self.window: MainWindow | None = None
        self.sent = self.signalled = False
        self.timer = QTimer(app)
        self.timer.timeout.connect(self.step)
        self.timer.start(POLL_MS)

    def step(self) -> None:
        if self.window is None:
            self.window = next((w for w in self.app.topLevelWidgets() if isinstance(w, MainWindow)), None)
            return
        window = self.window
        if self.busy and not self.sent and window.pair is not None:
            window.client.host.submit("busy", tokenize_forever(window.pair.target))
            self.sent = True
        elif self.busy and self.sent and not self.signalled and TOKENIZING.is_set():
            self.signalled = True
            self.timer.stop()
            print("streaming", flush=True)
            os.kill(os.getpid(), self.stop)
        elif self.busy:
            return
        elif not self.sent and window.pair is not None:
            window.panel.max_tokens.setValue(100_000)
            window.composer.text.setPlainText(PROMPT)
            window.composer.send_button.click()
            self.sent = True
        elif self.sent and not self.signalled and window.chat.busy and streamed(window):
            self.signalled = True
            self.timer.stop()
            print("streaming", flush=True)
            os.kill(os.getpid(), self.stop)


def tokenize_forever(target: str):
    """A job that encodes and decodes until the process ends, deaf to its cancel."""

    def work(_ctx) -> None:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(target)
        text = PROMPT * 50
        TOKENIZING.set()
        while True:
            tokenizer.decode(tokenizer.encode(text))

    return work


def streamed(window: MainWindow) -> bool:
    """True once the reply being written shows some text."""
    views = window.transcript.views
    return bool(views) and views[-1].role == "assistant" and bool(views[-1].full_text().strip())


def main(home: str, target: str, stop: str, mode: str = "") -> int:
    app = QApplication(sys.argv[:1])
    driver = Driver(app, getattr(signal, stop), busy=mode == "busy")
    if driver.busy:  # the window's close and run_app wait 1 s each on the engine, not 30 s and 10 s
        EngineClient.shutdown.__defaults__ = (1000,)
        EngineClient.keep_knowledge.__defaults__ = (1000,)
        app_module.ENGINE_WAIT_S = 1.0
    status = run_app(target=target, paths=AppPaths.under(home))
    print(f"run_app returned {status} after {'a' if driver.signalled else 'no'} stop signal", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
