"""A chat remembers the target/draft pair it was last replied with; reopened while another pair is loaded, a note
above the composer offers it ("This chat used <target> + <draft> · Load it") and its button loads it; never by
itself."""

from pathlib import Path

import pytest

from specchat.store.presets import ChatSettings, chat_settings, set_chat_pair
from specchat.ui.engine_client import LoadedPair
from specchat.ui.pair_note import same_pair
from tests.ui.conftest import LOAD_TIMEOUT_MS, send


def loaded(target, draft=None) -> LoadedPair:
    return LoadedPair(str(target), str(draft) if draft else None, {}, lambda ids: "")


def test_same_pair_compares_folders_and_the_draft(tmp_path):
    target, draft = tmp_path / "t", tmp_path / "d"
    kept = ChatSettings(target=str(target), draft=str(draft))
    assert same_pair(kept, loaded(tmp_path / "x" / ".." / "t", draft))
    assert not same_pair(kept, loaded(target)) and not same_pair(kept, loaded(draft, target))
    assert same_pair(ChatSettings(target=str(target)), loaded(target))
    assert not same_pair(ChatSettings(target=str(target)), loaded(target, draft))
    assert not same_pair(ChatSettings(), loaded(target))


def test_no_note_while_no_pair_is_loaded(qtbot, open_window, dense_target, dense_draft_partial):
    window = open_window()
    chat = window.store.create("Chat").id
    set_chat_pair(window.store, chat, str(dense_target), str(dense_draft_partial))
    window.chat.open(chat)
    assert window.pair is None and window.pair_note.isHidden()


@pytest.mark.slow
def test_the_note_offers_the_chats_pair_only_when_another_is_loaded(
    qtbot, open_window, dense_target, dense_draft_partial, tmp_path
):
    target, draft = str(Path(dense_target).resolve()), str(Path(dense_draft_partial).resolve())
    window = open_window(target, draft)
    note = window.pair_note
    send(qtbot, window, "hello")
    chat = window.chat.conversation_id
    assert chat_settings(window.store, chat) == ChatSettings(target=target, draft=draft)
    assert note.isHidden()  # replied with the pair loaded now
    with qtbot.waitSignal(window.client.loaded, timeout=LOAD_TIMEOUT_MS):
        window.use_models(target, None)  # the target alone: another pair
    assert window.pair.draft is None and window.pair_note.isVisible()
    assert note.label.text() == f"This chat used {Path(target).name} + {Path(draft).name} ·"
    assert note.load_button.isVisible() and window.pair.target == target  # nothing loaded by itself
    window.new_chat()
    assert note.isHidden()
    gone = window.store.create("Gone").id
    set_chat_pair(window.store, gone, target, str(tmp_path / "deleted-draft"))
    window.chat.open(gone)
    assert note.label.text().endswith("· deleted-draft is no longer on disk") and note.load_button.isHidden()
    window.chat.open(chat)
    assert note.isVisible() and note.load_button.isVisible()
    with (
        qtbot.waitSignal(note.loadRequested, timeout=10_000) as asked,
        qtbot.waitSignal(window.client.loaded, timeout=LOAD_TIMEOUT_MS),
    ):
        note.load_button.click()
    assert asked.args == [target, draft]
    assert (window.pair.target, window.pair.draft) == (target, draft) and note.isHidden()
    assert window.model_bar.draft_path() == draft  # the toolbar shows the pair, as after its own Load
