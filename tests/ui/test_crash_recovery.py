"""kill -9 while a reply streams: what was on screen is in the database, marked interrupted, and shows so."""

import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from specchat.engine import Engine, GenerationConfig, TextChunk
from specchat.engine.session import ChatSession
from specchat.paths import AppPaths
from specchat.store import ConversationStore

pytestmark = pytest.mark.slow  # a child process streams a reply until it is killed
ROOT = Path(__file__).resolve().parents[2]
PROMPT = "Tell me a very long story."
MAX_TOKENS = 4000  # far more than the child streams before it is killed
SAVE_INTERVAL_S = 0.2


def partial_reply(db: Path) -> str | None:
    """The text of an incomplete assistant row, read as another process would (None until there is text)."""
    if not db.exists():
        return None
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            row = con.execute(
                "SELECT content FROM messages WHERE role = 'assistant' AND complete = 0 AND content != ''"
            ).fetchone()
        finally:
            con.close()
    except sqlite3.Error:  # not created yet, or the schema is still being made
        return None
    return row[0] if row else None


def greedy_reply_prefix(target: Path, length: int) -> str:
    """The greedy reply to PROMPT, streamed until it is at least `length` characters long."""
    engine = Engine.load(target)
    ids = ChatSession(engine).prompt_ids([{"role": "user", "content": PROMPT}])
    cancel, text = threading.Event(), ""
    for event in engine.stream(ids, GenerationConfig(max_tokens=MAX_TOKENS), cancel):
        if isinstance(event, TextChunk):
            text += event.text
            if len(text) >= length + 20:
                cancel.set()
    return text


@pytest.mark.slow
def test_kill_9_mid_reply_keeps_the_streamed_text(tmp_path, dense_target):
    home = tmp_path / "home"
    db = AppPaths.under(home).conversations_db
    log = tmp_path / "child.log"
    with log.open("wb") as output:  # a file, not a pipe: a full pipe would stall the child
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.ui.crash_child",
                str(home),
                str(dense_target),
                PROMPT,
                str(MAX_TOKENS),
                str(SAVE_INTERVAL_S),
            ],
            cwd=ROOT,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline, partial = time.monotonic() + 180, None
        while partial is None and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
            partial = partial_reply(db)
        assert partial, f"no partial reply saved (child rc={child.poll()}): {log.read_text()[-2000:]}"
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()

    store = ConversationStore(db)
    conv = store.conversations()[0]
    user, reply = store.messages(conv.id)
    store.close()
    assert (user.role, user.content, user.complete) == ("user", PROMPT, True)
    assert reply.role == "assistant" and not reply.complete and reply.stats is None
    assert reply.content and len(reply.content) >= len(partial)  # a later save may have landed before the kill
    expected = greedy_reply_prefix(dense_target, len(reply.content))
    assert expected.startswith(reply.content), (reply.content[:200], expected[:200])
    assert len(expected) > len(reply.content)  # the reply was cut: it is a strict prefix of the greedy reply
