"""Chat ▸ Import conversations…: a JSON file (our export, or OpenAI messages) becomes chats in the sidebar and the
first one opens; a bad file is refused on the banner with one line, and nothing is imported."""

import json

from specchat.store.export import to_json


def _import(window, path):
    window.sidebar.ask_path = lambda _parent: str(path)
    window.import_action.trigger()


def test_our_export_imports_and_opens_with_its_system_prompt(qtbot, open_window, tmp_path):
    window = open_window()
    store = window.store
    chat = store.create("Merging lists", "Answer briefly.")
    store.add_message(chat.id, "user", "How do I merge two sorted lists?")
    store.add_message(chat.id, "assistant", "Use `heapq.merge`.", stats={"generated_tokens": 5})
    path = tmp_path / "merging.json"
    path.write_text(to_json(store.get(chat.id), store.messages(chat.id)), encoding="utf-8")
    window.sidebar.refresh()
    assert window.import_action in window.menuBar().actions()[0].menu().actions()
    with qtbot.waitSignal(window.sidebar.selected, timeout=60_000) as opened:
        _import(window, path)
    (new_id,) = opened.args
    assert new_id != chat.id and window.chat.conversation_id == new_id == window.sidebar.current_id()
    assert [(v.role, m.content) for v, m in zip(window.transcript.views, store.messages(new_id), strict=True)] == [
        ("user", "How do I merge two sorted lists?"),
        ("assistant", "Use `heapq.merge`."),
    ]
    assert window.panel.system_prompt.toPlainText() == "Answer briefly."
    assert window.banner.shown()[0] == ("info", "Imported 1 conversation from merging.json")
    assert sorted(window.sidebar.ids()) == sorted([chat.id, new_id])


def test_openai_messages_import_as_a_new_chat_at_the_top(qtbot, open_window, tmp_path):
    window = open_window()
    path = tmp_path / "openai.json"
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Name a red fruit."},
        {"role": "assistant", "content": "A strawberry."},
    ]
    path.write_text(json.dumps({"messages": messages}), encoding="utf-8")
    window.sidebar.search.setText("nothing matches this")
    with qtbot.waitSignal(window.sidebar.selected, timeout=60_000) as opened:
        _import(window, path)
    assert window.sidebar.search.text() == "" and window.sidebar.ids() == opened.args
    assert window.sidebar.rows()[1].startswith("Name a red fruit. · ")
    assert [v.role for v in window.transcript.views] == ["user", "assistant"]
    assert window.panel.system_prompt.toPlainText() == "Be brief."


def test_a_bad_file_is_refused_with_one_line_and_nothing_changes(qtbot, open_window, tmp_path):
    window = open_window()
    kept = window.store.create("Kept")
    window.sidebar.refresh()
    path = tmp_path / "tools.json"
    path.write_text(
        json.dumps([{"role": "user", "content": "weather?"}, {"role": "tool", "content": "12 C"}]), encoding="utf-8"
    )
    with qtbot.assertNotEmitted(window.sidebar.selected):
        _import(window, path)
    level, message = window.banner.shown()[0]
    assert level == "error"
    assert message.startswith(
        "Could not import tools.json: item 2 has role 'tool'; SpecChat imports user, assistant and system "
        "messages only. Nothing was imported."
    )
    assert window.sidebar.ids() == [kept.id] and len(window.store.conversations()) == 1


def test_cancelling_the_file_dialog_imports_nothing(qtbot, open_window):
    window = open_window()
    with qtbot.assertNotEmitted(window.sidebar.notice):
        _import(window, "")
    assert window.store.conversations() == []
