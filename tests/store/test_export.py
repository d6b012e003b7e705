"""Export a conversation to Markdown and JSON, and read the files back."""

import json

from specchat.store import ConversationStore
from specchat.store.export import EXPORT_FORMAT, to_json, to_markdown

STATS = {"generated_tokens": 12, "decode_tokens_per_s": 31.25, "mode": "draft", "acceptance_rate": 0.5}


def _conversation(tmp_path):
    store = ConversationStore(tmp_path / "c.db")
    conv = store.create("Merging lists", "Answer briefly.")
    store.add_message(conv.id, "user", "How do I merge two sorted lists?")
    store.add_message(conv.id, "assistant", "Use `heapq.merge`:\n\n```python\nmerge(a, b)\n```", stats=STATS)
    store.add_message(conv.id, "user", "And in place?")
    store.add_message(conv.id, "assistant", "Not in", cancelled=True)
    return store, store.get(conv.id), store.messages(conv.id)


def test_json_export_reads_back_with_every_message_and_its_stats(tmp_path):
    store, conv, messages = _conversation(tmp_path)
    path = tmp_path / "out.json"
    path.write_text(to_json(conv, messages), encoding="utf-8")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == EXPORT_FORMAT and data["title"] == "Merging lists"
    assert data["system_prompt"] == "Answer briefly."
    assert [(m["role"], m["content"]) for m in data["messages"]] == [(m.role, m.content) for m in messages]
    assert data["messages"][1]["stats"] == STATS and data["messages"][3]["stopped"] is True
    store.close()


def test_markdown_export_has_each_message_under_its_role(tmp_path):
    store, conv, messages = _conversation(tmp_path)
    text = to_markdown(conv, messages)
    assert text.startswith("# Merging lists\n")
    sections = text.split("\n## ")[1:]
    assert [s.split("\n", 1)[0] for s in sections] == ["System prompt", "You", "Assistant", "You", "Assistant"]
    assert "```python\nmerge(a, b)\n```" in sections[2]
    assert "_12 tokens · 31.2 tok/s · speculation: draft_" in sections[2]
    assert sections[4].rstrip().endswith("_stopped_")
    store.close()


def test_markdown_export_closes_a_code_block_a_reply_was_cut_off_in(tmp_path):
    store = ConversationStore(tmp_path / "c.db")
    conv = store.create("Cut off", "")
    store.add_message(conv.id, "user", "Write a loop")
    store.add_message(conv.id, "assistant", "Here:\n\n```python\nfor i in range(3):\n    print(", cancelled=True)
    store.add_message(conv.id, "user", "Thanks")
    store.add_message(conv.id, "assistant", "~~~~\ncode\n~~~\nstill code")
    text = to_markdown(store.get(conv.id), store.messages(conv.id))
    sections = text.split("\n## ")[1:]
    assert "```python\nfor i in range(3):\n    print(\n```\n" in sections[1]
    assert sections[1].count("```") == 2
    assert sections[2].startswith("You\n\nThanks")
    assert sections[3].rstrip().endswith("still code\n~~~~")
    store.close()


def test_markdown_export_leaves_closed_code_blocks_alone(tmp_path):
    from specchat.store.export import close_open_fence

    closed = "a\n```\nx\n```\nb"
    assert close_open_fence(closed) == closed
    assert close_open_fence("````\n```\n") == "````\n```\n````"
    assert close_open_fence("``` not `a fence`") == "``` not `a fence`"
