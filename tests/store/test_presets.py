"""Presets and what a chat keeps beside its row (schema 5): saved, renamed, deleted, one default; a chat's preset,
its own sampling and its pair; a version 4 file keeps every row."""

import sqlite3

import pytest

from specchat.store import ConversationStore
from specchat.store.migrations import MIGRATIONS, migrate, user_version
from specchat.store.presets import (
    ChatSettings,
    PresetError,
    PresetFields,
    chat_settings,
    default_preset,
    delete_preset,
    preset,
    presets,
    rename_preset,
    save_preset,
    set_chat_pair,
    set_chat_preset,
    set_chat_sampling,
    set_default_preset,
    update_preset,
)

CODING = PresetFields("You write code.", 0.2, 0.9, 40, 0.05, 2048)
STORY = PresetFields("Tell stories.", 1.1, 0.95, 0, 0.0, 512)


def test_a_version_4_file_migrates_to_5_with_every_row_kept(tmp_path):
    path = tmp_path / "c.sqlite3"
    db = sqlite3.connect(path, isolation_level=None)
    assert migrate(db, MIGRATIONS[:4]) == 4
    db.execute(
        "INSERT INTO conversations (title, system_prompt, created_at, updated_at, max_tokens)"
        " VALUES ('Old', 'Be brief.', 1, 2, 99)"
    )
    db.execute(
        "INSERT INTO messages (conversation_id, position, role, content, created_at, trace, version)"
        " VALUES (1, 0, 'user', 'héllo', 3, '{\"tokens\": [1, 2]}', 0)"
    )
    before = [db.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in ("conversations", "messages")]
    db.close()
    store = ConversationStore(path)
    assert store.get(1).max_tokens == 99 and [m.content for m in store.messages(1)] == ["héllo"]
    assert chat_settings(store, 1) == ChatSettings() and presets(store) == []
    store.close()
    after = sqlite3.connect(path)
    assert user_version(after) == 6  # and on to the latest
    assert [after.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in ("conversations", "messages")] == (
        before
    )


def test_presets_are_saved_listed_by_name_updated_renamed_and_deleted(store):
    story = save_preset(store, "story", STORY)
    coding = save_preset(store, "  Coding  ", CODING)  # spaces around a name are not part of it
    assert [(p.name, p.fields) for p in presets(store)] == [("Coding", CODING), ("story", STORY)]
    changed = PresetFields("You write Rust.", 0.3, 0.9, 40, 0.05, 4096)
    update_preset(store, coding.id, changed)
    rename_preset(store, coding.id, "Rust")
    assert preset(store, coding.id).fields == changed and preset(store, coding.id).name == "Rust"
    delete_preset(store, story.id)
    assert preset(store, story.id) is None and [p.name for p in presets(store)] == ["Rust"]


def test_a_blank_or_taken_name_is_refused_naming_the_problem(store):
    coding = save_preset(store, "Coding", CODING)
    with pytest.raises(PresetError, match="needs a name"):
        save_preset(store, "   ", CODING)
    with pytest.raises(PresetError, match="“Coding” already exists"):
        save_preset(store, "coding", STORY)  # names are told apart without case
    other = save_preset(store, "Story", STORY)
    with pytest.raises(PresetError, match="“Coding” already exists"):
        rename_preset(store, other.id, "CODING")
    rename_preset(store, coding.id, "CODING")  # its own name, in other letters
    assert [p.name for p in presets(store)] == ["CODING", "Story"]


def test_one_default_at_most(store):
    coding, story = save_preset(store, "Coding", CODING), save_preset(store, "Story", STORY)
    assert default_preset(store) is None
    set_default_preset(store, coding.id)
    set_default_preset(store, story.id)
    assert default_preset(store).id == story.id and [p.is_default for p in presets(store)] == [False, True]
    set_default_preset(store, None)
    assert default_preset(store) is None


def test_a_chat_keeps_its_preset_sampling_and_pair_and_deleting_the_preset_keeps_its_sampling(store):
    chat = store.create("Chat").id
    coding = save_preset(store, "Coding", CODING)
    set_chat_preset(store, chat, coding.id, CODING.sampling())
    set_chat_sampling(store, chat, {**CODING.sampling(), "temperature": 0.5})
    set_chat_pair(store, chat, "/models/target", None)
    kept = chat_settings(store, chat)
    assert kept == ChatSettings(coding.id, {**CODING.sampling(), "temperature": 0.5}, "/models/target", None)
    delete_preset(store, coding.id)
    assert chat_settings(store, chat).preset_id is None and chat_settings(store, chat).sampling["temperature"] == 0.5
    set_chat_preset(store, chat, None, None)
    assert chat_settings(store, chat) == ChatSettings(None, None, "/models/target", None)
    store.delete(chat)
    assert store._db.execute("SELECT COUNT(*) FROM chat_settings").fetchone()[0] == 0  # gone with its chat
    with pytest.raises(KeyError):
        set_chat_pair(store, chat, "/models/target", None)


def test_an_unreadable_saved_sampling_reads_as_none(store, caplog):
    chat = store.create("Chat").id
    set_chat_pair(store, chat, "/t", "/d")
    store._db.execute('UPDATE chat_settings SET sampling = \'{"temperature": "hot"}\'')
    assert chat_settings(store, chat).sampling is None
    assert "unreadable" in caplog.text
