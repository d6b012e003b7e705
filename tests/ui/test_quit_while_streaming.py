"""Quitting (a stop signal) while a reply streams ends the process cleanly: exit status 0, no Rust panic
or C++ terminate at the interpreter's exit, and the part of the reply written so far is saved. In a
child process, so that an abort fails the test instead of ending the test run."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from specchat.store import ConversationStore
from tests.ui.quit_child import PROMPT

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 300  # generous: a busy machine loads, streams and quits slowly; the wait ends with the process
ABORTS = ("panicked", "Traceback", "terminate called", "Fatal Python error", "Aborted")


def run_child(home: Path, target: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tests.ui.quit_child", str(home), str(target), *args],
        cwd=ROOT,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )


@pytest.mark.slow
@pytest.mark.parametrize("stop", ["SIGTERM", "SIGINT"])
def test_quitting_while_a_reply_streams_exits_cleanly(stop, tmp_path, dense_target):
    home = tmp_path / "home"
    done = run_child(home, dense_target, stop)
    assert done.returncode == 0, done.stderr[-3000:]
    # run_app returned: not through its os._exit for a thread still busy (the engine parked, the pools done)
    assert done.stdout.splitlines() == ["streaming", "run_app returned 0 after a stop signal"], done.stdout
    assert not [word for word in ABORTS if word in done.stderr], done.stderr[-3000:]
    store = ConversationStore(home / "data" / "conversations.sqlite3")
    [conversation] = store.conversations()
    user, reply = store.messages(conversation.id)
    assert (user.role, user.content) == ("user", PROMPT)
    assert reply.role == "assistant" and reply.content  # what streamed before the quit is kept
    store.close()


@pytest.mark.slow
def test_an_engine_still_in_the_tokenizer_at_exit_does_not_abort_the_process(tmp_path, dense_target):
    """The cause of the tokenizer abort at exit: Python 3.11 ends a daemon thread that takes the GIL back
    during finalization with pthread_exit, whose unwinding through the Rust tokenizer frames aborts
    ("FATAL: exception not rethrown", status 134). With the engine still busy past the bound, the app ends
    the process itself before finalization."""
    home = tmp_path / "home"
    done = run_child(home, dense_target, "SIGTERM", "busy")
    assert done.returncode == 0, done.stderr[-3000:]
    assert not [word for word in (*ABORTS, "exception not rethrown") if word in done.stderr], done.stderr[-3000:]
    assert done.stdout.splitlines() == ["streaming"]  # run_app did not return: the process ended in it
    log = next(home.rglob("specchat.log")).read_text()
    assert "the engine was still busy at exit; ending the process without waiting on it" in log
