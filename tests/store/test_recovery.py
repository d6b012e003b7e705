"""Damaged and newer conversation files are kept aside (never deleted) and what can be saved is recovered."""

import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import textwrap
from datetime import datetime
from pathlib import Path

import pytest

from specchat.store import ConversationStore, open_store
from specchat.store.recovery import OpenReport, _move_aside

WHEN = datetime(2026, 11, 30, 17, 5, 9)
PAGE = 4096


def now():
    return WHEN


def filled_store(path, conversations=30, messages=20):
    store = ConversationStore(path)
    for i in range(conversations):
        conv = store.create(f"chat {i}")
        for j in range(messages):
            store.add_message(conv.id, ("user", "assistant")[j % 2], f"message {i}-{j} " + "x" * 300)
    store.close()
    sqlite3.connect(path).execute("PRAGMA journal_mode=DELETE").connection.close()  # one file, no -wal
    return path


def damage_pages(path, count=3):
    """Overwrite `count` table leaf pages of messages (spread over the file) with a byte pattern."""
    data = bytearray(path.read_bytes())
    # page 1 is the schema, page 2 the conversations table (it fits one leaf); 0x0D marks a table leaf page
    leaves = [n for n in range(3, len(data) // PAGE + 1) if data[(n - 1) * PAGE] == 0x0D]
    for n in leaves[len(leaves) // 4 :: len(leaves) // (count + 1)][:count]:
        start = (n - 1) * PAGE
        data[start + 8 : start + PAGE] = (bytes(range(256)) * 16)[: PAGE - 8]
    path.write_bytes(bytes(data))


def all_messages(store):
    return {
        (m.conversation_id, m.position, m.role, m.content) for c in store.conversations() for m in store.messages(c.id)
    }


def test_random_bytes_are_kept_aside_and_a_fresh_store_opens(tmp_path):
    path = tmp_path / "conversations.sqlite3"
    junk = os.urandom(20_000)
    path.write_bytes(junk)
    store, report = open_store(path, now=now)
    backup = tmp_path / "conversations.corrupt-20261130-170509.sqlite3"
    assert report == OpenReport("fresh", backup, 0, "file is not a database")
    assert backup.read_bytes() == junk  # never deleted, never changed
    assert store.conversations() == [] and store.create("works").title == "works"
    assert str(backup) in report.message() and "nothing could be recovered" in report.message()
    store.close()


def test_damaged_pages_are_recovered_row_by_row_without_the_sqlite3_shell(tmp_path):
    path = filled_store(tmp_path / "conversations.sqlite3")
    original = all_messages(ConversationStore(path))
    damage_pages(path)
    damaged = path.read_bytes()
    store, report = open_store(path, now=now, sqlite3_binary="")
    assert report.outcome == "recovered" and report.recovered_with == "row copy"
    assert report.backup.read_bytes() == damaged
    assert report.problem.startswith("SQLite's integrity check failed")
    recovered = all_messages(store)
    assert 300 <= len(recovered) < len(original) and recovered <= original  # most rows, none invented
    assert len(store.conversations()) == 30
    assert f"{report.rows_recovered} rows were recovered" in report.message() and str(report.backup) in report.message()
    store.close()
    again, second = open_store(path)  # the recovered file is healthy
    assert second.outcome == "opened" and all_messages(again) == recovered


FAKE_SHELL = """\
    import pathlib, sqlite3, sys
    pathlib.Path(sys.argv[0]).with_suffix(".calls").open("a").write(repr(sys.argv[1:]) + "\\n")
    if sys.argv[2:] == [".recover"]:  # what .recover prints: the schema and the rows it found
        print("CREATE TABLE conversations(id INTEGER PRIMARY KEY, title TEXT, system_prompt TEXT,"
              " created_at REAL, updated_at REAL);")
        print("INSERT INTO conversations VALUES(5, 'found by .recover', '', 1.0, 1.0);")
    else:
        sqlite3.connect(sys.argv[1]).executescript(sys.stdin.read())
"""


def test_the_sqlite3_shells_recover_is_tried_first(tmp_path):
    shell = tmp_path / "bin" / "sqlite3"
    shell.parent.mkdir()
    shell.write_text(f"#!{sys.executable}\n" + textwrap.dedent(FAKE_SHELL))
    shell.chmod(shell.stat().st_mode | stat.S_IXUSR)
    path = tmp_path / "conversations.sqlite3"
    path.write_bytes(os.urandom(8192))  # nothing a row copy could read
    store, report = open_store(path, now=now, sqlite3_binary=str(shell))
    assert (report.outcome, report.recovered_with, report.rows_recovered) == ("recovered", "sqlite3 .recover", 1)
    assert [(c.id, c.title) for c in store.conversations()] == [(5, "found by .recover")]
    calls = shell.with_suffix(".calls").read_text().splitlines()
    assert calls[0] == repr([str(report.backup), ".recover"])  # run on the kept file, never on a new one
    store.close()


def test_a_missing_or_failing_shell_falls_back_to_the_row_copy(tmp_path):
    path = filled_store(tmp_path / "conversations.sqlite3", conversations=4, messages=40)
    damage_pages(path, count=1)
    store, report = open_store(path, now=now, sqlite3_binary=str(tmp_path / "no-such-sqlite3"))
    assert (report.outcome, report.recovered_with) == ("recovered", "row copy") and report.rows_recovered > 100
    store.close()


@pytest.mark.skipif(not shutil.which("sqlite3"), reason="no sqlite3 shell")
def test_the_real_sqlite3_shell_recovers_when_it_supports_recover(tmp_path):
    path = filled_store(tmp_path / "conversations.sqlite3")
    probe = subprocess.run(["sqlite3", str(path), ".recover"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"this sqlite3 shell cannot .recover ({probe.stderr.strip()[:80]}); Debian's lacks sqlite_dbpage")
    original = all_messages(ConversationStore(path))
    damage_pages(path)
    store, report = open_store(path, now=now)
    assert (report.outcome, report.recovered_with) == ("recovered", "sqlite3 .recover")
    assert 300 <= len(all_messages(store)) and all_messages(store) <= original
    store.close()


def test_a_database_from_a_newer_specchat_is_kept_aside_and_a_fresh_one_starts(tmp_path):
    path = filled_store(tmp_path / "conversations.sqlite3", conversations=2, messages=2)
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 7")
    store, report = open_store(path, now=now)
    backup = tmp_path / "conversations.newer-v7-20261130-170509.sqlite3"
    assert (report.outcome, report.backup) == ("newer", backup)
    assert store.conversations() == []
    kept = sqlite3.connect(backup)
    assert kept.execute("PRAGMA user_version").fetchone()[0] == 7
    assert kept.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 4
    assert "written by a newer SpecChat" in report.message() and str(backup) in report.message()
    store.close()


def test_wal_and_shm_files_move_with_the_backup(tmp_path):
    path = tmp_path / "conversations.sqlite3"
    for suffix, data in (("", b"db"), ("-wal", b"old wal"), ("-shm", b"old shm")):
        Path(f"{path}{suffix}").write_bytes(data)
    backup = _move_aside(path, "corrupt", WHEN)
    assert backup == tmp_path / "conversations.corrupt-20261130-170509.sqlite3"
    assert [Path(f"{backup}{s}").read_bytes() for s in ("", "-wal", "-shm")] == [b"db", b"old wal", b"old shm"]
    assert list(tmp_path.glob("conversations.sqlite3*")) == []  # a new database will not replay the old WAL


def test_a_locked_database_is_not_mistaken_for_a_damaged_one(tmp_path):
    path = filled_store(tmp_path / "conversations.sqlite3", conversations=1, messages=2)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            open_store(path, now=now)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conversations.sqlite3"]


def test_a_second_backup_in_the_same_second_does_not_overwrite_the_first(tmp_path):
    path = tmp_path / "conversations.sqlite3"
    path.write_bytes(b"first junk" * 500)
    open_store(path, now=now)[0].close()
    path.unlink()
    path.write_bytes(b"second junk" * 500)
    _, report = open_store(path, now=now)
    assert report.backup.name == "conversations.corrupt-20261130-170509-1.sqlite3"
    assert (tmp_path / "conversations.corrupt-20261130-170509.sqlite3").read_bytes() == b"first junk" * 500
