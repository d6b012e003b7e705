"""User-reported wording and state bugs: the Connect dialog's title, "this Mac" off macOS, plurals and the
x range of the round charts, plain power words, the MTP history switch without MTP, and sidebar titles that
follow a deleted or edited first message."""

import sys

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics

from specchat.engine.events import Finished, GenerationStats, RoundResult
from specchat.store import ConversationStore
from specchat.store.records import DEFAULT_TITLE, title_from
from specchat.system.power import PowerStatus
from specchat.ui.chat.conversation_list import ConversationList
from specchat.ui.plain_words import NO_MTP_HEAD, this_machine
from specchat.ui.server_menu import TITLE_BAR_ALLOWANCE, ConnectDialog, ServeDialog, ServerMenu
from specchat.ui.speculation_menu import HISTORY_TIP, SpeculationMenu

from .test_dashboard import make_dashboard

NOT_MAC = sys.platform != "darwin"


def one_round(index: int = 0, drafted: int = 3, accepted: int = 2) -> RoundResult:
    """A draft round that emitted its accepted tokens and one of the target's own."""
    return RoundResult(index, drafted, drafted, accepted, accepted + 1, 0.01, 0.02)


def test_the_connect_dialog_is_wide_enough_for_its_whole_title(qtbot):
    dialog = ConnectDialog()
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitUntil(dialog.isVisible, timeout=30_000)
    title = dialog.windowTitle()
    assert title == "Connect to a server"
    bold = dialog.font()
    bold.setBold(True)
    needed = QFontMetrics(bold).horizontalAdvance(title) + TITLE_BAR_ALLOWANCE
    assert dialog.width() >= needed and dialog.minimumWidth() >= needed
    assert "SpecChat server" in dialog.heading.text()  # what the short title leaves out is said inside
    url = dialog.url  # the example address shows whole too
    assert url.width() >= QFontMetrics(url.font()).horizontalAdvance(url.placeholderText())


def test_the_server_menu_names_this_computer_as_the_platform_does(qtbot):
    menu = ServerMenu()
    serve = ServeDialog(8080, None)
    connect = ConnectDialog()
    for widget in (menu, serve, connect):
        qtbot.addWidget(widget)
    assert serve.key.placeholderText() == f"none (only {this_machine()} can connect)"
    other = this_machine().replace("this", "another")
    assert other in menu.connect_action.toolTip() and other in connect.heading.text()
    if NOT_MAC:
        texts = [serve.key.placeholderText(), menu.connect_action.toolTip(), connect.heading.text()]
        texts += [connect.url.placeholderText(), connect.windowTitle(), serve.windowTitle()]
        assert not [text for text in texts if "Mac" in text or "mac-" in text], texts
        assert this_machine() == "this computer"


def test_one_round_is_singular_two_are_plural(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    dash.on_event(one_round())
    dash.redraw()
    assert dash.tiles["per_round"].sub.text() == "over 1 round"
    dash.on_event(one_round(1))
    dash.redraw()
    assert dash.tiles["per_round"].sub.text() == "over 2 rounds"


def round_labels(card) -> list[str]:
    """The x axis's tick labels over the chart's current range."""
    item = card.plot.getPlotItem()
    low, high = item.viewRange()[0]
    axis = item.getAxis("bottom")
    return axis.tickStrings([v for _, values in axis.tickValues(low, high, axis.width()) for v in values], 1, 1)


def test_the_round_charts_of_one_round_run_from_round_one(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    dash.show()
    dash.on_event(one_round())
    dash.redraw()
    for card in (dash.throughput, dash.acceptance):
        # half a round either side of the only one (the engine's index 0), labelled round 1
        qtbot.waitUntil(lambda: card.plot.getPlotItem().viewRange()[0] == [-0.5, 0.5], timeout=30_000)
        assert round_labels(card) == ["1"]  # never -3 … 3 around one point
    dash.on_event(one_round(1))
    dash.redraw()
    assert round_labels(dash.throughput) == round_labels(dash.acceptance) == ["1", "2"]


def test_auto_k_plain_rounds_and_the_rolling_window_are_counted_in_words(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    stats = GenerationStats(
        generated_tokens=9, decode_tokens_per_s=30.0, mode="draft", rounds=2, drafted=3, accepted=2, k_rounds={3: 1}
    )
    for event in (one_round(0), RoundResult(1, 0, 0, 0, 4, 0.0, 0.02), Finished((1,) * 9, "x", stats)):
        dash.on_event(event)
    dash.redraw()
    assert dash.tiles["per_round"].sub.text() == "over 1 drafting round (+1 plain)"
    assert dash.tiles["speed"].sub.text() == "last chat reply (Draft model)"  # not the raw "draft"
    dash.rounds.window = 1
    dash.redraw()
    assert dash.throughput.caption.text() == "rolling: last 1 round"


def test_power_is_said_in_plain_words_with_the_raw_reading_in_the_tooltip(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    dash.on_power(PowerStatus("ac", 80.0, None, "psutil: ac, battery 80%"), None)
    dash.redraw()
    tile = dash.tiles["power"]
    assert tile.sub.text() == "on mains power, battery 80%"
    assert "psutil: ac" in tile.toolTip()  # the OS's own words stay available
    dash.on_power(PowerStatus("battery", 80.0, False, "psutil: battery, battery 80%"), None)
    dash.redraw()
    assert (tile.value.text(), tile.sub.text()) == ("Battery 80%", "on battery 80%")
    dash.on_power(PowerStatus("unknown", None, None, "BAT0: status 'Unknown'"), None)
    dash.redraw()
    assert tile.sub.text() == "power source unknown"
    dash = make_dashboard(qtbot, paths)  # no battery level ever read: the power card is one line
    dash.on_power(PowerStatus("unknown", None, None, "BAT0: status 'Unknown'"), None)
    dash.redraw()
    note = dash.power_chart.note.text()
    assert note.startswith("Power source unknown") and this_machine() in note and "BAT0" not in note
    assert "BAT0" in dash.power_chart.note.toolTip()
    shown = [t.sub.text() for t in dash.tiles.values()] + [note, dash.status.text()]
    assert not [text for text in shown if "ac," in text or "psutil" in text], shown


def test_the_mtp_history_switch_is_greyed_without_mtp(qtbot):
    menu = SpeculationMenu()
    qtbot.addWidget(menu)
    history = menu.history_action
    assert not history.isEnabled() and "no model is loaded" in history.toolTip()
    menu.set_available({"baseline": None, "draft": None, "mtp": "no MTP head: config.json declares no MTP layers"})
    assert not history.isEnabled()
    assert history.toolTip() == f"Applies to MTP only, and MTP is unavailable: {NO_MTP_HEAD}"
    assert "config.json" not in history.toolTip()
    menu.set_available({"baseline": None, "draft": None, "mtp": None})
    assert history.isEnabled() and history.toolTip() == HISTORY_TIP


@pytest.mark.slow
def test_the_window_greys_the_history_switch_for_a_model_without_an_mtp_head(
    qtbot, open_window, dense_target, mtp_agree, paths
):
    window = open_window(dense_target)
    assert window.pair is not None and window.pair.available_modes.get("mtp") is not None
    assert not window.speculation.history_action.isEnabled()
    window.close()
    with_head = open_window(mtp_agree, at=paths)
    assert with_head.pair is not None and with_head.pair.available_modes.get("mtp") is None
    assert with_head.speculation.history_action.isEnabled()


def make_sidebar(qtbot, store: ConversationStore) -> ConversationList:
    sidebar = ConversationList(store)
    qtbot.addWidget(sidebar)
    sidebar.refresh()
    return sidebar


def titles(sidebar: ConversationList) -> list[str]:
    """The conversations' titles as the sidebar lists them (headers left out)."""
    return [
        sidebar.list.item(n).text()
        for n in range(sidebar.list.count())
        if sidebar.list.item(n).data(Qt.ItemDataRole.UserRole) is not None
    ]


def chat(store: ConversationStore, *turns: str, title: str | None = None) -> int:
    """A conversation of user turns, each with a reply, titled as the app titles it (or `title`)."""
    conv = store.create(title=title or title_from(turns[0]))
    for text in turns:
        store.add_message(conv.id, "user", text)
        store.add_message(conv.id, "assistant", f"reply to {text}")
    return conv.id


def test_deleting_the_first_message_retitles_the_sidebar(qtbot, tmp_path):
    store = ConversationStore(tmp_path / "c.db")
    conv = chat(store, "Sort a list in Python", "And in reverse?")
    sidebar = make_sidebar(qtbot, store)
    assert titles(sidebar) == ["Sort a list in Python"]
    first = store.messages(conv)[0]
    store.delete_with_reply(first.id)
    qtbot.waitUntil(lambda: titles(sidebar) == ["And in reverse?"], timeout=30_000)
    assert store.get(conv).title == "And in reverse?"
    store.delete_with_reply(store.messages(conv)[0].id)
    qtbot.waitUntil(lambda: titles(sidebar) == [DEFAULT_TITLE], timeout=30_000)
    store.close()


def test_editing_the_first_message_retitles_but_a_renamed_title_stays(qtbot, tmp_path):
    store = ConversationStore(tmp_path / "c.db")
    derived = chat(store, "Write a haiku", "Another one")
    renamed = chat(store, "Explain monads", "Shorter please", title="Monads for Ana")
    sidebar = make_sidebar(qtbot, store)
    store.replace_from(derived, 0, "user", "Write a limerick\nabout cats")
    qtbot.waitUntil(lambda: "Write a limerick" in titles(sidebar), timeout=30_000)
    store.replace_from(derived, 2, "user", "A third one")  # a later message leaves the title alone
    assert store.get(derived).title == "Write a limerick"
    store.delete_with_reply(store.messages(renamed)[0].id)
    store.replace_from(renamed, 0, "user", "Something else")
    assert store.get(renamed).title == "Monads for Ana"  # the user's own title is kept
    assert sorted(titles(sidebar)) == ["Monads for Ana", "Write a limerick"]
    store.close()


def test_the_window_sidebar_follows_a_deleted_first_message(qtbot, open_window, paths):
    store = ConversationStore(paths.conversations_db)
    conv = chat(store, "What is a monad?", "Give an example")
    store.close()
    window = open_window()
    window.chat.open(conv)
    qtbot.waitUntil(lambda: len(window.transcript.views) == 4, timeout=30_000)
    assert titles(window.sidebar) == ["What is a monad?"]
    window.chat.actions.confirm = lambda _parent, _question: True
    window.transcript.views[0].delete_button.click()
    qtbot.waitUntil(lambda: titles(window.sidebar) == ["Give an example"], timeout=30_000)
    assert window.sidebar.current_id() == conv  # still the open one
    window.transcript.views[0].delete_button.click()
    qtbot.waitUntil(lambda: titles(window.sidebar) == [DEFAULT_TITLE], timeout=30_000)


def test_search_results_follow_a_deleted_message(qtbot, open_window, paths):
    store = ConversationStore(paths.conversations_db)
    conv = chat(store, "Tell me about zebras", "And lions?", title="Animals")
    store.close()
    window = open_window()
    window.chat.open(conv)
    window.sidebar.search.setText("zebra")
    assert titles(window.sidebar) == ["Animals"]
    window.chat.actions.confirm = lambda _parent, _question: True
    window.transcript.views[0].delete_button.click()  # the only message that said "zebra"
    assert titles(window.sidebar) == []


def test_the_rename_dialog_is_wide_enough_for_its_title_and_a_long_title(qtbot):
    from PySide6.QtGui import QFontMetrics
    from PySide6.QtWidgets import QLineEdit

    from specchat.ui.chat.conversation_list import rename_dialog

    long_title = "How do I merge two sorted lists in place"
    dialog = rename_dialog(None, long_title)
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.minimumWidth() >= 400 and dialog.width() >= dialog.minimumWidth()  # was 188: clipped
    assert dialog.windowTitle() == "Rename conversation" and dialog.textValue() == long_title
    field = dialog.findChild(QLineEdit)
    assert field.width() >= QFontMetrics(field.font()).horizontalAdvance(long_title)
