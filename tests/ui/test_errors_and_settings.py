"""Failures become banners and the window keeps working; corrupt settings are set aside."""

import pytest

from specchat.engine import ErrorKind, Failed
from specchat.engine.owner import engine_jobs
from specchat.settings import load_settings

from .conftest import MAX_TOKENS, REPLY_TIMEOUT_MS, send


@pytest.mark.slow
def test_a_worker_exception_shows_a_banner_and_the_next_reply_works(qtbot, open_window, dense_target, monkeypatch):
    window = open_window(dense_target)
    original = engine_jobs.chat_prompt_ids  # what a reply job renders its prompt with
    calls = []

    def broken_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("template exploded")
        return original(*args, **kwargs)

    monkeypatch.setattr(engine_jobs, "chat_prompt_ids", broken_once)
    events = []
    window.client.event.connect(lambda request_id, event: events.append((request_id, event)))
    with qtbot.waitSignal(window.chat.replyFailed, timeout=120_000) as blocker:
        window.composer.text.setPlainText("hello")
        window.composer.send_button.click()
    assert blocker.args == ["RuntimeError: template exploded"]
    # the job failed before its stream began: it still reaches the views as the reply's Failed event
    assert [e for _, e in events] == [Failed("RuntimeError: template exploded", ErrorKind.INTERNAL)]
    assert window.banner.isVisible() and window.banner.level == "error"
    assert "template exploded" in window.banner.label.text()
    assert window.composer.send_button.isVisible() and window.transcript.views[-1].role == "user"
    finished = send(qtbot, window, "hello again")
    assert finished.tokens and not window.banner.isVisible()
    assert [m.role for m in window.store.messages(window.chat.conversation_id)] == ["user", "user", "assistant"]


@pytest.mark.slow
def test_an_engine_failure_event_becomes_a_banner(qtbot, open_window, dense_target):
    window = open_window(dense_target)
    window.speculation.mode_actions["draft"].setEnabled(True)  # force a mode the engine refuses
    window.speculation.mode_actions["draft"].trigger()
    with qtbot.waitSignal(window.chat.replyFailed, timeout=120_000) as blocker:
        window.composer.text.setPlainText("hello")
        window.composer.send_button.click()
    assert "no draft model loaded" in blocker.args[0] and "no draft model loaded" in window.banner.message


def test_a_folder_that_is_not_a_model_fails_to_load_with_its_name(qtbot, open_window, tmp_path):
    window = open_window(tmp_path / "nothing-here")
    assert window.banner.level == "error" and "model folder not found" in window.banner.message
    assert "nothing-here" in window.banner.message
    assert not window.composer.send_button.isEnabled()
    assert window.model_bar.state.text() == "Load failed"


@pytest.mark.slow
def test_an_incompatible_draft_is_refused_and_the_target_still_loads(
    qtbot, open_window, dense_target, dense_other_vocab
):
    window = open_window(dense_target, dense_other_vocab)
    assert window.pair is not None and window.pair.draft is None
    # plain words in the banner, the technical reason behind its Details toggle
    assert "does not share the target's vocabulary" in window.banner.message
    assert "cannot draft for" in window.banner.details and "token id" in window.banner.details
    assert window.banner.details_button.isVisibleTo(window.banner)
    assert not window.banner.details_label.isVisibleTo(window.banner)
    window.banner.details_button.click()
    assert window.banner.details_label.isVisibleTo(window.banner)
    action = window.speculation.mode_actions["draft"]
    assert not action.isEnabled()
    assert action.toolTip() == "Unavailable: no draft model loaded: choose one in the toolbar"
    assert window.speculation.checked_mode() == "baseline"
    assert send(qtbot, window, "still works").stats.mode == "baseline"


@pytest.mark.slow
def test_the_draft_picker_greys_drafts_of_another_vocabulary(
    qtbot, open_window, dense_target, dense_draft_partial, dense_other_vocab
):
    window = open_window(dense_target)
    combo = window.model_bar.draft

    def checked():
        item = combo.model().item(combo.findData(str(dense_other_vocab.resolve())))
        return item is not None and not item.isEnabled()

    qtbot.waitUntil(checked, timeout=120_000)
    bad = combo.model().item(combo.findData(str(dense_other_vocab.resolve())))
    assert bad.toolTip().startswith("Cannot draft for this target: ") and "vocabularies differ" in bad.toolTip()
    good = combo.model().item(combo.findData(str(dense_draft_partial.resolve())))
    assert good.isEnabled()


def test_corrupt_settings_are_backed_up_and_the_user_is_told(qtbot, open_window, paths):
    paths.ensure()
    paths.settings_file.write_text("{ not json", encoding="utf-8")
    window = open_window()
    assert window.banner.isVisible() and window.banner.level == "warning"
    assert "were unusable" in window.banner.message and "not valid JSON" in window.banner.message
    backups = list(paths.config_dir.glob("settings.json.corrupt-*"))
    assert len(backups) == 1 and backups[0].read_text() == "{ not json"
    assert window.settings.mode == "baseline"
    window.close()
    assert load_settings(paths).warning is None  # a good file was written back


@pytest.mark.slow
def test_a_reply_that_fails_midway_keeps_its_text_and_its_footer_says_error(
    qtbot, open_window, dense_target, monkeypatch
):
    from specchat.engine.stats import StatsRecorder

    window = open_window(dense_target)
    original = StatsRecorder.tokens_emitted
    seen = []

    def failing_after_three(self, n):
        if self.cfg.max_tokens == MAX_TOKENS:  # the reply, not the plain-decode measurement after loading
            seen.append(n)
        if len(seen) == 4:
            raise RuntimeError("the device went away")
        return original(self, n)

    monkeypatch.setattr(StatsRecorder, "tokens_emitted", failing_after_three)
    with qtbot.waitSignal(window.chat.replyFailed, timeout=120_000):
        window.composer.text.setPlainText("hello")
        window.composer.send_button.click()
    reply = window.transcript.views[-1]
    assert reply.role == "assistant" and reply.footer.text() == "error: RuntimeError: the device went away"
    saved = window.store.messages(window.chat.conversation_id)[-1]
    assert saved.role == "assistant" and saved.stats == {
        "stop_reason": "error",
        "error": "RuntimeError: the device went away",
    }


@pytest.mark.slow
def test_a_locked_conversations_file_keeps_the_message_says_so_and_sends_it_when_free(
    qtbot, open_window, dense_target, paths
):
    import sqlite3

    window = open_window(dense_target)
    window.chat.retry_ms = 100
    other = sqlite3.connect(str(paths.conversations_db), isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # another program holds the file
    window.composer.text.setPlainText("hello")
    window.composer.send_button.click()
    assert window.banner.level == "warning" and "database is locked" in window.banner.message
    assert "kept in the box" in window.banner.message and window.composer.text.toPlainText() == "hello"
    assert not window.chat.busy
    with qtbot.waitSignal(window.chat.replyFinished, timeout=300_000):
        other.execute("ROLLBACK")  # the lock goes: the next retry sends it
    other.close()
    assert [m.role for m in window.store.messages(window.chat.conversation_id)] == ["user", "assistant"]
    assert window.composer.text.toPlainText() == "" and not window.banner.isVisible()


@pytest.fixture
def tiny_disk(tmp_path):
    """A 2 MB tmpfs (root only: skipped where it cannot be mounted), unmounted afterwards."""
    import subprocess

    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk) -> None:
    """Write until the disk is full."""
    import os

    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)


@pytest.mark.slow
def test_a_full_disk_is_said_once_and_the_window_goes_on_and_closes(qtbot, open_window, dense_target, tiny_disk, capfd):
    from specchat.paths import AppPaths

    window = open_window(dense_target, at=AppPaths.under(tiny_disk / "home"))
    send(qtbot, window, "first, saved")
    window.settings.temperature = 0.5
    fill(tiny_disk)
    window.save()  # no exception: the settings live on for the session
    assert (
        "Could not save settings" in window.banner.message and "stay as set for this session" in window.banner.message
    )
    send(qtbot, window, "second, in memory")  # the chat goes on
    assert window.banner.level == "warning" and "database or disk is full" in window.banner.message
    assert "the chat goes on in memory" in window.banner.message and window.store.in_memory
    users = [m.content for m in window.store.messages(window.chat.conversation_id) if m.role == "user"]
    assert users == ["first, saved", "second, in memory"] and window.composer.text.toPlainText() == ""
    window.close()  # no exception: the close path survives the full disk too
    err = capfd.readouterr().err
    assert "Traceback" not in err and err.count("cannot be written") <= 1  # the log said its problem once


@pytest.mark.slow
def test_a_system_prompt_typed_just_before_closing_is_saved(qtbot, open_window, paths):
    window = open_window()
    window.panel.system_prompt.setPlainText("Answer in French.")
    assert window.panel._prompt_timer.isActive()  # the edit waits for a pause in typing
    window.close()
    again = open_window(at=paths)
    assert again.chat.conversation_id is not None
    assert again.panel.system_prompt.toPlainText() == "Answer in French."


@pytest.mark.slow
def test_a_conversations_file_that_may_not_grow_goes_on_in_memory(qtbot, open_window, dense_target):
    """SQLite's SQLITE_FULL (here from a page limit, on any machine) is told from other errors by its code."""
    window = open_window(dense_target)
    send(qtbot, window, "first, saved")
    pages = window.store._db.execute("PRAGMA page_count").fetchone()[0]
    window.store._db.execute(f"PRAGMA max_page_count = {pages}")
    window.composer.text.setPlainText("second, in memory " + "x" * 5000)  # more than a page: the file must grow
    with qtbot.waitSignal(window.chat.replyFinished, timeout=REPLY_TIMEOUT_MS):
        window.composer.send_button.click()
        window.chat.stop()  # the reply itself is not the point (a long prompt for the tiny model)
    assert window.banner.level == "warning" and "the chat goes on in memory" in window.banner.message
    assert window.store.in_memory and window.chat.store is window.store
    users = [m.content[:17] for m in window.store.messages(window.chat.conversation_id) if m.role == "user"]
    assert users == ["first, saved", "second, in memory"]


def test_the_panels_max_tokens_is_the_chats_and_leaves_the_default_alone(qtbot, open_window, paths):
    window = open_window(max_tokens=77)
    default = window.settings.max_tokens
    assert default != 77
    assert window.reply_settings()[0].max_tokens == 77  # the next reply uses the panel's value
    window.panel.temperature.setValue(0.5)  # the sampling settings are still saved as the defaults
    assert window.settings.temperature == 0.5 and window.settings.max_tokens == default
    window.close()
    assert load_settings(paths).settings.max_tokens == default
