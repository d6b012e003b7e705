"""Import conversations from JSON: SpecChat's own export (exactly as exported) and the OpenAI messages format;
a bad file is refused with one line naming the problem, and nothing is half-imported."""

import json
import sqlite3

import pytest

from specchat.store.export import to_json
from specchat.store.import_chats import ChatImportError, import_file, import_text, parse_chats

STATS = {"generated_tokens": 12, "decode_tokens_per_s": 31.25, "mode": "draft", "acceptance_rate": 0.5}


def _saved_chat(store, title="Merging lists"):
    conv = store.create(title, "Answer briefly.\nNo lists.")
    store.add_message(conv.id, "user", "How do I merge two sorted lists? ✓ 100%_done")
    store.add_message(conv.id, "assistant", "Use `heapq.merge`:\n\n```python\nmerge(a, b)\n```", stats=STATS)
    store.add_message(conv.id, "user", "And in place?")
    store.add_message(conv.id, "assistant", "Not in", cancelled=True)
    return store.get(conv.id)


def _shape(store, conversation_id):
    conv = store.get(conversation_id)
    messages = [(m.role, m.content, m.stats, m.cancelled) for m in store.messages(conversation_id)]
    return conv.title, conv.system_prompt, messages


def test_our_export_imports_exactly_and_exports_again_to_the_same_text(store, tmp_path):
    original = _saved_chat(store)
    exported = to_json(original, store.messages(original.id))
    path = tmp_path / "chat.json"
    path.write_text(exported, encoding="utf-8")
    (imported,) = import_file(store, path)
    assert imported.id != original.id
    assert _shape(store, imported.id) == _shape(store, original.id)
    assert to_json(imported, store.messages(imported.id)) == exported  # times, stats, stopped: all as they were
    assert int(imported.updated_at) == int(original.updated_at)  # it keeps its place among the dates


def test_a_list_of_our_exports_imports_each_in_order(store):
    first, second = _saved_chat(store, "First"), _saved_chat(store, "Second")
    documents = [json.loads(to_json(c, store.messages(c.id))) for c in (first, second)]
    imported = import_text(store, json.dumps(documents))
    assert [c.title for c in imported] == ["First", "Second"]
    assert _shape(store, imported[1].id) == _shape(store, second.id)


def test_openai_messages_become_a_chat_with_the_system_messages_as_its_prompt(store):
    text = json.dumps(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "developer", "content": "Use metric units."},
            {"role": "user", "content": [{"type": "text", "text": "How far"}, {"type": "text", "text": "is it?"}]},
            {"role": "assistant", "content": "About 5 km.", "name": "helper"},
            {"role": "user", "content": "Thanks"},
        ]
    )
    (chat,) = import_text(store, text)
    assert _shape(store, chat.id) == (
        "How far",  # titled after the first user message, as a new chat is
        "Be brief.\n\nUse metric units.",
        [
            ("user", "How far\nis it?", None, False),
            ("assistant", "About 5 km.", None, False),
            ("user", "Thanks", None, False),
        ],
    )
    assert store.conversations()[0].id == chat.id  # a chat with no dates of its own is the newest


def test_an_object_with_a_messages_list_keeps_its_title(store):
    text = json.dumps({"title": "Trip", "model": "gpt-x", "messages": [{"role": "user", "content": "Hi"}]})
    (chat,) = import_text(store, text)
    assert _shape(store, chat.id) == ("Trip", "", [("user", "Hi", None, False)])


EXPORT = {"format": "specchat-conversation", "version": 1, "title": "T", "system_prompt": "", "messages": []}


def _ours(**changes):
    return json.dumps({**EXPORT, **changes})


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "the file is empty"),
        ("{'role': 'user'}", "not JSON: Expecting property name enclosed in double quotes at line 1, column 2"),
        ("42", 'wrong shape: expected a SpecChat export, a list of {"role", "content"} messages, or an object'),
        ('{"chat": []}', "wrong shape: expected a SpecChat export"),
        ('{"messages": "hi"}', 'wrong shape: "messages" is not a list'),
        ("[]", "the file holds no messages"),
        ('[{"role": "user", "content": "a"}, "b"]', 'item 2 is not a message: it needs a "role" and a "content"'),
        ('[{"role": "user", "content": "a"}, {"role": "user"}]', "item 2 has no content"),
        ('[{"content": "a"}]', "item 1 has no role"),
        (
            '[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "tool", "content": "7"}]',
            "item 3 has role 'tool'; SpecChat imports user, assistant and system messages only",
        ),
        (
            '[{"role": "assistant", "content": null, "tool_calls": [{"id": "x"}]}]',
            "item 1 is a tool call; SpecChat imports text messages only",
        ),
        (
            '[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]',
            "item 1 holds a 'image_url' part; SpecChat imports text only",
        ),
        ('[{"role": "user", "content": 5}]', "item 1: its content is int, not text"),
        (_ours(version=2), "written by a newer SpecChat (export version 2)"),
        (_ours(version="1"), "\"version\" is '1', not a whole number"),
        (_ours(messages=None), '"messages" is missing or not a list'),
        (_ours(title=["x"]), '"title" is list, not text'),
        (_ours(updated_at="yesterday"), "\"updated_at\" is 'yesterday', not a date and time"),
        (_ours(messages=[{"role": "user", "content": "a"}, {"role": "system", "content": "b"}]), "item 2 has role"),
        (_ours(messages=[{"role": "assistant", "content": "a", "stopped": "no"}]), 'item 1: its "stopped" is'),
        (_ours(messages=[{"role": "assistant", "content": "a", "stats": [1]}]), 'item 1: its "stats" is not'),
        (json.dumps([EXPORT, {**EXPORT, "messages": [{"role": "user"}]}]), "conversation 2, item 1 has no content"),
    ],
)
def test_a_bad_file_is_refused_with_one_line_and_nothing_is_imported(store, text, problem):
    with pytest.raises(ChatImportError) as refused:
        import_text(store, text)
    assert str(refused.value).startswith(problem) and "\n" not in str(refused.value)
    assert store.conversations() == []


def test_a_write_that_fails_halfway_leaves_no_conversation_behind(store):
    store._db.execute(
        "CREATE TRIGGER refuse AFTER INSERT ON messages WHEN NEW.content = 'boom'"
        " BEGIN SELECT RAISE(ABORT, 'disk trouble'); END"
    )
    good = {**EXPORT, "messages": [{"role": "user", "content": "fine"}]}
    bad = {**EXPORT, "messages": [{"role": "user", "content": "boom"}]}
    assert len(parse_chats(json.dumps([good, bad]))) == 2  # the file itself is fine
    with pytest.raises(sqlite3.IntegrityError, match="disk trouble"):
        import_text(store, json.dumps([good, bad]))
    assert store.conversations() == []
    assert store._db.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 0


def test_files_that_cannot_be_read_as_text_are_named_as_such(store, tmp_path):
    with pytest.raises(ChatImportError, match="^could not read it: No such file or directory$"):
        import_file(store, tmp_path / "missing.json")
    latin = tmp_path / "latin.json"
    latin.write_bytes('[{"role": "user", "content": "café"}]'.encode("latin-1"))
    with pytest.raises(ChatImportError, match=r"^not UTF-8 text \(byte 34 cannot be read\)$"):
        import_file(store, latin)
    with_bom = tmp_path / "bom.json"
    with_bom.write_bytes('[{"role": "user", "content": "café"}]'.encode("utf-8-sig"))
    (chat,) = import_file(store, with_bom)
    assert [m.content for m in store.messages(chat.id)] == ["café"]
