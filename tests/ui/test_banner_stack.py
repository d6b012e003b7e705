"""Banners stack by importance: a minor note never replaces a more important message, which stays until
dismissed; a full or read-only disk says each thing once and never points to a log that was not written."""

import logging

import pytest

from specchat.logs import details_note, setup_logging, stop_logging
from specchat.paths import AppPaths
from specchat.ui.banner import MAX_SHOWN, Banner

from .test_errors_and_settings import fill, tiny_disk  # noqa: F401  (tiny_disk is a fixture)


@pytest.fixture(autouse=True)
def close_log():
    yield
    stop_logging()


@pytest.fixture
def banner(qtbot):
    widget = Banner()
    qtbot.addWidget(widget)
    return widget


def test_messages_stack_most_important_first_newest_first_within_a_level(banner):
    banner.show_message("a note", "info")
    banner.show_message("a failure", "error")
    banner.show_message("a warning", "warning")
    banner.show_message("another note", "info")
    failure = "a failure" + details_note()  # an error points to the log where one is written (earlier tests may)
    assert [message for _, message in banner.shown()] == [failure, "a warning", "another note", "a note"]
    assert banner.isVisible() and banner.message == "another note" and banner.level == "info"


def test_a_minor_note_never_replaces_an_error_and_the_same_text_is_shown_once(banner):
    banner.show_message("The reply failed", "error")
    banner.show_message("On battery: speculation off", "info")
    banner.show_message("On battery: speculation off", "info")
    assert banner.shown() == [("error", "The reply failed"), ("info", "On battery: speculation off")]


def test_each_close_button_takes_its_own_message_away(banner, qtbot):
    banner.show_message("first", "warning")
    banner.show_message("second", "warning")
    first = next(entry for entry in banner.entries if entry.message == "first")
    close = [button for button in first.findChildren(type(first.details_button)) if button.text() == "×"][0]
    close.click()
    assert banner.shown() == [("warning", "second")] and banner.isVisible()
    banner.entries[0].findChildren(type(first.details_button))[-1].click()
    assert banner.shown() == [] and not banner.isVisible() and banner.message == ""


def test_dismiss_takes_the_newest_or_the_named_message_but_not_one_said_at_start_up(banner):
    banner.show_message("said before the window showed", "error")  # the banner's window is not shown yet
    banner.show_message("a reply failed", "error")
    banner.dismiss()
    assert banner.shown() == [("error", "said before the window showed")]
    banner.dismiss()  # a start-up message stays until the user closes it
    assert banner.shown() == [("error", "said before the window showed")]
    banner.dismiss("said before the window showed")
    assert banner.shown() == [] and not banner.isVisible()


def test_past_the_limit_the_least_important_oldest_message_goes(banner):
    banner.show_message("old note", "info")
    banner.show_message("new note", "info")
    for n in range(MAX_SHOWN - 1):
        banner.show_message(f"error {n}", "error")
    assert len(banner.shown()) == MAX_SHOWN
    assert ("info", "old note") not in banner.shown() and ("info", "new note") in banner.shown()


def test_a_log_that_cannot_be_written_is_not_named(tiny_disk):  # noqa: F811
    log_file = tiny_disk / "logs" / "specchat.log"
    setup_logging(log_file)
    assert details_note() == f" Details in {log_file}."
    fill(tiny_disk)
    logging.getLogger("specchat.test").error("a failure the disk cannot take")
    assert details_note() == ""


@pytest.mark.slow
def test_a_full_disk_at_start_keeps_the_error_above_later_notes(qtbot, open_window, tiny_disk, capfd):  # noqa: F811
    fill(tiny_disk)
    window = open_window(at=AppPaths.under(tiny_disk / "home"))
    [(level, message)] = window.banner.shown()
    assert level == "error" and message.endswith("conversations will not be kept this session.")
    assert "Details in" not in message  # the log could not be written: it holds no details
    window.save()  # a settings write: the minor note stacks below
    assert window.banner.shown()[0] == (level, message)
    assert window.banner.shown()[1][0] == "warning" and "Could not save settings" in window.banner.shown()[1][1]
    window.banner.dismiss()  # what a new reply does to the newest message
    qtbot.wait(2000)
    assert window.banner.shown() == [(level, message)] and window.banner.isVisible()
    window.banner.dismiss()
    assert window.banner.shown() == [(level, message)]  # said at start-up: only its × closes it
    assert capfd.readouterr().err.count("cannot be written") == 1


def test_read_only_folders_are_said_in_one_sentence(qtbot, open_window, paths, monkeypatch):
    # both folders on a read-only disk (root ignores chmod, so the probe's answer is given)
    monkeypatch.setattr(type(paths), "unwritable", lambda self: [self.config_dir, self.data_dir])
    window = open_window()
    [(level, message)] = window.banner.shown()
    folders = " and ".join(sorted([str(paths.config_dir), str(paths.data_dir)]))
    assert level == "warning"
    assert message == f"Can't save: {folders} are not writable; conversations and settings will not be kept."
    assert window.read_only
