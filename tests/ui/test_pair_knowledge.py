"""The app keeps what speculation learned about a pair (at a pair change and at close) and the next window
that loads the same pair starts its controllers from it, before its first reply."""

import json

import pytest

from specchat.engine.owner import knowledge_job
from specchat.settings import Settings, save_settings
from specchat.ui.speculation_menu import AUTO

from .conftest import LOAD_TIMEOUT_MS, send


def engine_knowledge(window) -> dict:
    """What the window's engine controllers know now (read in a job: the engine belongs to its thread)."""
    return window.client.host.submit("knowledge", knowledge_job()).result(60)


def knowledge_files(paths) -> list:
    return sorted(paths.knowledge_dir.glob("*.json")) if paths.knowledge_dir.is_dir() else []


@pytest.mark.slow
def test_learned_knowledge_is_kept_at_a_pair_change_and_close_and_starts_the_next_window(
    qtbot, open_window, paths, dense_target, dense_draft_partial
):
    save_settings(
        paths,
        Settings(
            target_path=str(dense_target), draft_path=str(dense_draft_partial), mode="draft", num_draft_tokens=AUTO
        ),
    )
    first = open_window()
    assert first.pair is not None and first.pair.draft == str(dense_draft_partial.resolve())
    assert engine_knowledge(first)["auto_k"] == {}  # nothing saved yet: a fresh controller
    finished = send(qtbot, first, "Tell me about the quick brown fox.")
    assert finished.stats.mode == "draft" and finished.stats.auto_k and finished.stats.rounds > 0
    learned = engine_knowledge(first)["auto_k"]["draft"]
    assert learned["accepted"] + learned["rejected"] > 0 and learned["verify_s"]
    assert knowledge_files(paths) == []  # kept when the pair goes, not after each reply

    # another pair replaces it: the draft pair's knowledge is written before the new one loads
    with qtbot.waitSignal(first.client.loaded, timeout=LOAD_TIMEOUT_MS):
        first.load_models(str(dense_target), None)
    (pair_file,) = knowledge_files(paths)
    assert json.loads(pair_file.read_text())["auto_k"]["draft"] == learned
    assert engine_knowledge(first)["auto_k"] == {}  # the target alone has its own (empty) file

    # back to the pair, another reply, then close: the file holds what the controller knows at close
    with qtbot.waitSignal(first.client.loaded, timeout=LOAD_TIMEOUT_MS):
        first.load_models(str(dense_target), str(dense_draft_partial))
    assert engine_knowledge(first)["auto_k"]["draft"] == learned  # started from the file
    send(qtbot, first, "Count the numbers: 3.14159, 2.71828 and 42.")
    at_close = engine_knowledge(first)["auto_k"]["draft"]
    assert at_close != learned  # the second reply taught it more
    first.close()
    files = knowledge_files(paths)
    assert pair_file in files
    assert json.loads(pair_file.read_text())["auto_k"]["draft"] == at_close

    # a new window on the same folders starts its controller from the file, before any reply
    second = open_window()
    assert second.pair is not None and second.pair.draft == str(dense_draft_partial.resolve())
    assert engine_knowledge(second)["auto_k"]["draft"] == at_close


def engine_idle(window) -> bool:
    """Whether the window's engine runs and queues no job."""
    state = window.client.host.state()
    return state.running is None and not state.queued


@pytest.mark.slow
def test_a_knowledge_file_that_does_not_read_never_fails_the_load(qtbot, open_window, paths, dense_target):
    first = open_window(dense_target)
    # the jobs that follow a load end first: a close behind one that runs past the keep's start limit on a busy
    # machine keeps nothing, which is the close's rule and not what this test is about
    qtbot.waitUntil(lambda: engine_idle(first), timeout=LOAD_TIMEOUT_MS)
    first.close()  # the target alone: its file holds an empty Auto K
    (file,) = knowledge_files(paths)
    file.write_text("{not json")
    second = open_window(dense_target)
    assert second.pair is not None and second.banner.level != "error"
    assert engine_knowledge(second)["auto_k"] == {}
