"""Pinned chats: pinned from the sidebar's menu or Chat ▸ Pin or unpin (Ctrl+Shift+P), shown in a Pinned group
at the top of the sidebar, kept across restarts."""

import sqlite3
import time

from PySide6.QtGui import QKeySequence

from specchat.store import ConversationStore
from specchat.store.pins import pinned_ids
from specchat.ui.chat.conversation_list import ConversationList
from specchat.ui.chat.dates import when_label


def _store_with_old_chat(path):
    """'Old chat' last used 40 days ago, then 'Middle' and 'Newest' today (in that order)."""
    store = ConversationStore(path)
    old = store.create("Old chat")
    long_ago = time.time() - 40 * 86400
    with sqlite3.connect(path) as db:
        db.execute("UPDATE conversations SET updated_at = ?, created_at = ? WHERE id = ?", (long_ago, long_ago, old.id))
    middle, newest = store.create("Middle"), store.create("Newest")
    return store, old, middle, newest


def _sidebar(qtbot, store):
    sidebar = ConversationList(store)
    qtbot.addWidget(sidebar)
    sidebar.refresh()
    return sidebar


def _menu_action(sidebar, conversation_id, text):
    menu = sidebar.context_menu(conversation_id)
    (action,) = [a for a in menu.actions() if a.text() == text]
    return menu, action


def test_a_chat_pinned_from_the_menu_shows_at_the_top_and_stays_after_a_restart(qtbot, tmp_path):
    store, old, middle, newest = _store_with_old_chat(tmp_path / "c.db")
    sidebar = _sidebar(qtbot, store)
    assert sidebar.rows()[0] == "Today" and sidebar.ids() == [newest.id, middle.id, old.id]
    menu, pin = _menu_action(sidebar, old.id, "Pin to top")
    assert [a.text() for a in menu.actions() if a.text()] == ["Pin to top", "Rename…", "Delete…"]
    pin.trigger()
    old_label = when_label(store.get(old.id).updated_at)
    assert sidebar.rows() == [
        "Pinned",
        f"Old chat · {old_label}",
        "Today",
        f"Newest · {when_label(store.get(newest.id).updated_at)}",
        f"Middle · {when_label(store.get(middle.id).updated_at)}",
    ]
    assert "Pinned to the top" in sidebar.list.item(1).toolTip()
    header = sidebar.list.item(0)
    assert not header.flags() & header.flags().ItemIsSelectable
    store.close()
    store = ConversationStore(tmp_path / "c.db")  # as after a restart
    again = _sidebar(qtbot, store)
    assert again.rows()[:3] == ["Pinned", f"Old chat · {old_label}", "Today"]
    assert again.ids() == [old.id, newest.id, middle.id]
    _menu, unpin = _menu_action(again, old.id, "Unpin")
    unpin.trigger()
    assert again.ids() == [newest.id, middle.id, old.id] and "Pinned" not in again.rows()
    assert pinned_ids(store) == set()
    store.close()


def test_pinned_chats_keep_their_activity_order_and_a_search_filters_them_too(qtbot, tmp_path):
    store, old, middle, newest = _store_with_old_chat(tmp_path / "c.db")
    sidebar = _sidebar(qtbot, store)
    for conversation_id in (old.id, middle.id):
        sidebar.set_pinned(conversation_id, True)
    assert sidebar.ids() == [middle.id, old.id, newest.id]
    assert [r for r in sidebar.rows() if "·" not in r] == ["Pinned", "Today"]
    sidebar.search.setText("old")
    assert sidebar.rows() == ["Pinned", f"Old chat · {when_label(store.get(old.id).updated_at)}"]
    sidebar.search.setText("Newest")
    assert sidebar.ids() == [newest.id] and sidebar.rows()[0] == "Today"
    store.close()


def test_a_refused_pin_is_said_and_the_list_stays(qtbot, tmp_path):
    store, old, _middle, _newest = _store_with_old_chat(tmp_path / "c.db")
    sidebar = _sidebar(qtbot, store)
    before = sidebar.rows()
    holder = sqlite3.connect(tmp_path / "c.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with qtbot.waitSignal(sidebar.notice, timeout=60_000) as said:
            sidebar.set_pinned(old.id, True)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    message, level = said.args
    assert level == "warning" and message.startswith("Could not pin this conversation:") and "locked" in message
    assert sidebar.rows() == before and pinned_ids(store) == set()
    store.close()


def test_the_chat_menu_pins_the_open_chat_and_the_window_shows_it_after_a_restart(qtbot, open_window, paths):
    window = open_window()
    first, second = window.store.create("First"), window.store.create("Second")
    window.sidebar.refresh()
    window.chat.open(first.id)
    assert window.pin_action.shortcut() == QKeySequence("Ctrl+Shift+P")
    assert window.pin_action in window.menuBar().actions()[0].menu().actions()
    window.pin_action.trigger()
    assert window.sidebar.ids() == [first.id, second.id] and window.sidebar.rows()[0] == "Pinned"
    assert window.sidebar.current_id() == first.id  # the open chat stays chosen
    window.close()
    again = open_window()
    assert again.sidebar.rows()[0] == "Pinned" and again.sidebar.ids() == [first.id, second.id]
    again.chat.open(first.id)
    again.pin_action.trigger()  # pinned: the same action unpins
    assert again.sidebar.ids() == [second.id, first.id] and "Pinned" not in again.sidebar.rows()
