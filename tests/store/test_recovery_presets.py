"""Recovering a damaged conversations file keeps its presets, what each chat keeps beside its row (its preset,
sampling and pair) and its pins, not only chats and messages."""

import sqlite3

from specchat.store import ConversationStore, open_store
from specchat.store.pins import pinned_ids, set_pinned
from specchat.store.presets import (
    ChatSettings,
    PresetFields,
    chat_settings,
    default_preset,
    presets,
    save_preset,
    set_chat_pair,
    set_chat_preset,
    set_default_preset,
)

PAGE = 4096
CODING = PresetFields("You write code.", 0.2, 0.9, 40, 0.05, 2048)
STORY = PresetFields("Tell stories.", 1.1, 0.95, 0, 0.0, 512)
OWN_SAMPLING = {"temperature": 0.3, "top_p": 0.8, "top_k": 20, "min_p": 0.0}


def _file_with_presets(path):
    """Two presets (one the default), a chat with a preset, its own sampling and a pair, a pinned chat, and
    enough messages to fill many pages; one file, no -wal."""
    store = ConversationStore(path)
    coding = save_preset(store, "Coding", CODING)
    save_preset(store, "Story", STORY)
    set_default_preset(store, coding.id)
    for i in range(30):
        conv = store.create(f"chat {i}")
        for j in range(20):
            store.add_message(conv.id, ("user", "assistant")[j % 2], f"message {i}-{j} " + "x" * 300)
    set_chat_preset(store, 1, coding.id, OWN_SAMPLING)
    set_chat_pair(store, 1, "/models/target", "/models/draft")
    set_pinned(store, 2, True)
    store.close()
    sqlite3.connect(path).execute("PRAGMA journal_mode=DELETE").connection.close()


def _damage_message_pages(path, count=3):
    """Overwrite `count` leaf pages of the messages table (a page no other table has as its root)."""
    with sqlite3.connect(path) as db:
        roots = {row[0] for row in db.execute("SELECT rootpage FROM sqlite_master WHERE rootpage > 0")}
    db.close()
    data = bytearray(path.read_bytes())
    leaves = [n for n in range(3, len(data) // PAGE + 1) if data[(n - 1) * PAGE] == 0x0D and n not in roots]
    for n in leaves[len(leaves) // 4 :: len(leaves) // (count + 1)][:count]:
        start = (n - 1) * PAGE
        data[start + 8 : start + PAGE] = (bytes(range(256)) * 16)[: PAGE - 8]
    path.write_bytes(bytes(data))


def test_a_recovered_file_keeps_presets_chat_settings_and_pins(tmp_path):
    path = tmp_path / "conversations.sqlite3"
    _file_with_presets(path)
    _damage_message_pages(path)
    store, report = open_store(path, sqlite3_binary="")
    assert (report.outcome, report.recovered_with) == ("recovered", "row copy")
    assert [(p.name, p.fields, p.is_default) for p in presets(store)] == [
        ("Coding", CODING, True),
        ("Story", STORY, False),
    ]
    coding = default_preset(store)
    assert coding is not None
    assert chat_settings(store, 1) == ChatSettings(coding.id, OWN_SAMPLING, "/models/target", "/models/draft")
    assert chat_settings(store, 3) == ChatSettings()
    assert pinned_ids(store) == {2}
    assert len(store.conversations()) == 30
    store.close()


def test_settings_of_a_lost_chat_are_left_out_and_a_lost_preset_is_not_pointed_at(tmp_path):
    store = ConversationStore(tmp_path / "new.sqlite3")
    store.import_rows("conversations", ["id", "title", "created_at", "updated_at"], [(1, "kept", 0.0, 0.0)])
    store.import_rows("presets", ["id", "name", *PresetFields.__dataclass_fields__, "created_at"], [])
    columns = ["conversation_id", "preset_id", "sampling", "target_path", "draft_path"]
    copied = store.import_rows("chat_settings", columns, [(1, 7, None, "/t", None), (2, None, None, "/lost", None)])
    assert copied == 1
    assert chat_settings(store, 1) == ChatSettings(None, None, "/t", None)  # preset 7 was not recovered
    assert store.import_rows("pinned", ["conversation_id", "pinned_at"], [(1, 5.0), (2, 5.0)]) == 1
    assert pinned_ids(store) == {1}
    store.close()
