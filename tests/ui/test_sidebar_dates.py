"""The sidebar tells chats apart by when they were used: day groups and a time label per row."""

import sqlite3
import time
from datetime import datetime

from specchat.store import ConversationStore
from specchat.ui.chat.conversation_list import ConversationList
from specchat.ui.chat.dates import day_group, full_label, when_label

NOW = datetime(2026, 11, 30, 15, 0)


def _ts(*args) -> float:
    return datetime(*args).timestamp()


def test_day_groups_and_labels_follow_the_calendar():
    assert day_group(_ts(2026, 11, 30, 0, 5), NOW) == "Today"
    assert when_label(_ts(2026, 11, 30, 9, 7), NOW) == "09:07"
    assert day_group(_ts(2026, 11, 29, 23, 59), NOW) == "Yesterday" == when_label(_ts(2026, 11, 29, 8), NOW)
    assert day_group(_ts(2026, 11, 24, 12), NOW) == "Previous 7 days"
    assert when_label(_ts(2026, 11, 24, 12), NOW) == "Tue"
    assert day_group(_ts(2026, 11, 23, 12), NOW) == "Earlier"
    assert when_label(_ts(2026, 11, 3, 12), NOW) == "3 Nov"
    assert when_label(_ts(2025, 11, 3, 12), NOW) == "3 Nov 2025"
    assert full_label(_ts(2026, 11, 30, 14, 5)) == "Mon 30 Nov 2026, 14:05"


def test_two_chats_with_one_title_are_told_apart(qtbot, tmp_path):
    store = ConversationStore(tmp_path / "c.db")
    old, new = store.create("Sorting lists"), store.create("Sorting lists")
    long_ago = time.time() - 40 * 86400
    with sqlite3.connect(tmp_path / "c.db") as db:
        db.execute("UPDATE conversations SET updated_at = ?, created_at = ? WHERE id = ?", (long_ago, long_ago, old.id))
    store.close()
    store = ConversationStore(tmp_path / "c.db")
    sidebar = ConversationList(store)
    qtbot.addWidget(sidebar)
    sidebar.refresh()
    rows = sidebar.rows()
    assert rows[0] == "Today" and rows[2] == "Earlier"
    assert rows[1] == f"Sorting lists · {when_label(store.get(new.id).updated_at)}"
    assert rows[3] == f"Sorting lists · {when_label(long_ago)}" and rows[1] != rows[3]
    assert sidebar.ids() == [new.id, old.id]
    headers = [sidebar.list.item(0), sidebar.list.item(2)]
    assert all(not h.flags() & h.flags().ItemIsSelectable for h in headers)
    with qtbot.assertNotEmitted(sidebar.selected):
        sidebar.list.setCurrentRow(0)  # a heading is never chosen as a conversation
    with qtbot.waitSignal(sidebar.selected) as chosen:
        sidebar.list.setCurrentRow(3)
    assert chosen.args == [old.id]
    assert "Started:" in sidebar.list.item(3).toolTip()
    sidebar.resize(260, 200)
    sidebar.show()
    sidebar.grab()  # paints every row through the delegate without error
    store.close()
