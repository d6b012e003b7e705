"""Start-up never fails: unwritable folders, damaged or newer databases and broken code paths become banners."""

import sqlite3

import pytest

import specchat.ui.app as app_module
import specchat.ui.startup as startup
from specchat.logs import stop_logging
from specchat.store import ConversationStore
from specchat.ui.chat.transcript import INTERRUPTED


@pytest.fixture(autouse=True)
def close_log():
    yield
    stop_logging()


def test_an_unwritable_data_folder_runs_in_memory_and_saves_nothing(qtbot, open_window, paths):
    paths.data_dir.parent.mkdir(parents=True)
    paths.data_dir.write_text("a file where the data folder should be")  # root ignores chmod; this is real
    window = open_window()
    assert window.banner.level == "warning" and window.banner.message == (
        f"Can't save: {paths.data_dir} is not writable; conversations and settings will not be kept."
    )
    assert window.store.in_memory and window.read_only
    window.chat.set_system_prompt("Be brief.")  # conversations still work, in memory
    assert [c.system_prompt for c in window.store.conversations()] == ["Be brief."]
    scratch = window.paths.data_dir  # the tuning and baseline caches write here for this session
    assert scratch != paths.data_dir and scratch.is_dir() and window.paths.config_dir == paths.config_dir
    window.docks.dashboard.baselines.put("model", 12.5)  # a cache write: no exception
    window.close()
    assert not paths.settings_file.exists()  # settings are not written either
    assert paths.data_dir.read_text() == "a file where the data folder should be"


def test_an_unwritable_config_folder_starts_and_keeps_nothing(qtbot, open_window, paths):
    paths.config_dir.parent.mkdir(parents=True)
    paths.config_dir.write_text("not a folder")
    window = open_window()
    assert f"Can't save: {paths.config_dir} is not writable" in window.banner.message
    window._color_toggled(False)  # a settings change: no write, no exception
    window.close()
    assert paths.config_dir.read_text() == "not a folder" and not paths.conversations_db.exists()


def test_a_damaged_database_is_kept_aside_and_the_banner_says_where(qtbot, open_window, paths):
    paths.ensure()
    paths.conversations_db.write_bytes(b"\x00garbage" * 4000)
    window = open_window()
    backups = list(paths.data_dir.glob("conversations.corrupt-*.sqlite3"))
    assert len(backups) == 1 and backups[0].read_bytes() == b"\x00garbage" * 4000
    assert window.banner.level == "warning" and str(backups[0]) in window.banner.message
    assert "damaged" in window.banner.message
    window.chat.set_system_prompt("a new start")
    assert len(ConversationStore(paths.conversations_db).conversations()) == 1


def test_a_database_from_a_newer_specchat_is_kept_and_named(qtbot, open_window, paths):
    paths.ensure()
    ConversationStore(paths.conversations_db).close()
    with sqlite3.connect(paths.conversations_db) as db:
        db.execute("PRAGMA user_version = 42")
    window = open_window()
    backups = list(paths.data_dir.glob("conversations.newer-v42-*.sqlite3"))
    assert len(backups) == 1 and str(backups[0]) in window.banner.message
    assert "written by a newer SpecChat" in window.banner.message and not window.store.in_memory


def test_any_failure_opening_the_store_becomes_an_error_banner_with_the_log(qtbot, open_window, paths, monkeypatch):
    def broken(_path):
        raise RuntimeError("an unexpected bug")

    monkeypatch.setattr(startup, "open_store", broken)
    window = open_window()
    assert window.banner.level == "error" and "an unexpected bug" in window.banner.message
    assert window.banner.message.endswith(f"Details in {paths.log_file}.") and window.store.in_memory
    log = paths.log_file.read_text()
    assert "Traceback (most recent call last)" in log and "RuntimeError: an unexpected bug" in log


def test_a_failure_loading_settings_becomes_a_banner_and_defaults(qtbot, open_window, paths, monkeypatch):
    def broken(_paths):
        raise MemoryError("settings too big")

    monkeypatch.setattr(startup, "load_settings", broken)
    window = open_window()
    assert window.banner.level == "error" and "settings too big" in window.banner.message
    assert window.settings.mode == "baseline"


def test_every_error_banner_is_logged_and_names_the_log(qtbot, open_window, paths):
    window = open_window()
    window.banner.show_message("The reply failed: out of memory", "error")
    assert window.banner.message == f"The reply failed: out of memory Details in {paths.log_file}."
    assert "ERROR specchat.ui.banner [MainThread] The reply failed: out of memory" in paths.log_file.read_text()


def test_a_reply_cut_by_a_crash_shows_as_interrupted(qtbot, open_window, paths):
    store = ConversationStore(paths.conversations_db)
    conv = store.create("Crashed")
    store.add_message(conv.id, "user", "hi")
    store.update_reply(store.begin_reply(conv.id).id, "Half a rep")
    store.close()
    window = open_window()
    reply = window.transcript.views[-1]
    assert reply.text == "Half a rep" and reply.footer.text() == INTERRUPTED


def test_a_window_that_cannot_be_built_shows_a_dialog_not_a_traceback(qtbot, paths, monkeypatch):
    shown = []

    def broken(*_args, **_kwargs):
        raise KeyError("a bug in the window")

    monkeypatch.setattr(app_module, "MainWindow", broken)
    monkeypatch.setattr(app_module.QMessageBox, "critical", lambda *args: shown.append(args[2]))
    assert app_module.run_app(paths=paths) == 1
    assert shown and "a bug in the window" in shown[0]


def test_a_read_only_data_folder_still_shows_the_saved_conversations(qtbot, open_window, paths, monkeypatch):
    store = ConversationStore(paths.conversations_db)
    conv = store.create("Kept safe")
    store.add_message(conv.id, "user", "an old question")
    store.close()
    before = paths.conversations_db.read_bytes()
    # root ignores chmod 0o500, so say the folder failed the probe write
    monkeypatch.setattr(type(paths), "unwritable", lambda self: [self.data_dir])
    window = open_window()
    assert window.store.in_memory and window.sidebar.ids() == [conv.id]
    assert [v.text for v in window.transcript.views] == ["an old question"]
    window.chat.set_system_prompt("changed only in memory")
    window.close()
    assert paths.conversations_db.read_bytes() == before
    assert ConversationStore(paths.conversations_db).get(conv.id).system_prompt == ""


@pytest.mark.slow
def test_a_second_window_on_the_same_data_folder_says_so_and_writes_nothing(qtbot, open_window, paths):
    import os

    first = open_window()
    first.chat.set_system_prompt("Kept.")
    second = open_window()
    assert not first.read_only and second.read_only and second.store.in_memory
    assert second.banner.level == "warning" and second.banner.message.startswith(
        f"Another SpecChat (process {os.getpid()}) is using {paths.data_dir}: this window shows its conversations"
    )
    assert [c.system_prompt for c in second.store.conversations()] == ["Kept."]  # the first one's, shown
    second.chat.new_conversation()
    second.chat.set_system_prompt("Not kept.")
    second.close()
    first.close()
    third = open_window()  # the lock went with the first window
    assert not third.read_only and not third.banner.isVisible()
    assert [c.system_prompt for c in third.store.conversations()] == ["Kept."]
