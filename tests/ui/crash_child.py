"""Run by test_crash_recovery in a child process: a real window streams a long reply until it is killed.

Usage: python -m tests.ui.crash_child HOME TARGET PROMPT MAX_TOKENS SAVE_INTERVAL_S
"""

import os
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtWidgets import QApplication  # noqa: E402

from specchat.paths import AppPaths  # noqa: E402
from specchat.ui.main_window import MainWindow  # noqa: E402


def main(home: str, target: str, prompt: str, max_tokens: str, save_interval_s: str) -> int:
    """Open the window on target, send prompt, and stream until killed (or the reply ends)."""
    app = QApplication(sys.argv[:1])
    window = MainWindow(AppPaths.under(home), target=target)
    window.show()
    window.chat.save_interval_s = float(save_interval_s)
    window.panel.max_tokens.setValue(int(max_tokens))
    deadline = time.monotonic() + 120
    while window.pair is None and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.01)
    if window.pair is None:
        print(f"no model: {window.banner.message}", file=sys.stderr)
        return 3
    window.chat.replyFinished.connect(lambda _event: app.quit())
    window.composer.text.setPlainText(prompt)
    window.composer.send_button.click()
    return app.exec()


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
