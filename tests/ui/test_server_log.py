"""Server ▸ Server log…: a row per finished API request, live and newest first, failures in the error colour,
a filter over every column, Copy row as the log file's JSON line, Open log file."""

import json

import httpx
import pytest
from openai import OpenAI
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication

from specchat.server.request_log import RequestRecord
from specchat.server.running import free_port
from specchat.ui import theme
from specchat.ui.server_log_model import COLUMNS, RequestLogModel
from specchat.ui.server_log_window import ServerLogWindow
from specchat.ui.server_menu import ServeChoice

WAIT_MS = 120_000
KEY = "k3y"


def record(route="/v1/chat/completions", status=200, error="", **figures) -> RequestRecord:
    """A record as the server makes one."""
    return RequestRecord(1_800_000_000.0, "127.0.0.1:50000", "POST", route, status, 0.5, error=error, **figures)


def cell(window: ServerLogWindow, row: int, header: str) -> str:
    """A visible cell's text."""
    column = [c.header for c in COLUMNS].index(header)
    return window.rows.index(row, column).data()


def foreground(window: ServerLogWindow, row: int):
    return window.rows.index(row, 0).data(Qt.ItemDataRole.ForegroundRole)


@pytest.mark.slow
def test_a_request_through_the_served_api_shows_as_a_new_row(qtbot, open_window, dense_target, dense_draft_partial):
    window = open_window(dense_target, dense_draft_partial)
    port = free_port()
    assert window.server.serve(ServeChoice(port, KEY))
    window.server.menu.log_action.trigger()
    log_window = window.server.log_window
    assert log_window is not None and log_window.isVisible() and log_window.rows.rowCount() == 0
    client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, max_retries=0, timeout=60)
    with qtbot.waitSignal(log_window.model.rowsInserted, timeout=WAIT_MS):
        reply = client.chat.completions.create(
            model="dense_target", messages=[{"role": "user", "content": "hi"}], max_tokens=8
        )
    assert log_window.rows.rowCount() == 1
    assert cell(log_window, 0, "Route") == "POST /v1/chat/completions" and cell(log_window, 0, "Status") == "200"
    assert cell(log_window, 0, "Prompt") == str(reply.usage.prompt_tokens)
    assert cell(log_window, 0, "Reply") == str(reply.usage.completion_tokens)
    assert cell(log_window, 0, "Drafter") == reply.usage.model_extra["speculation"]["mode"]
    assert foreground(log_window, 0) is None  # a success keeps the table's own colour
    with qtbot.waitSignal(log_window.model.rowsInserted, timeout=WAIT_MS):
        refused = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", content=b"{", headers={"x-api-key": KEY})
    assert refused.status_code == 400 and log_window.rows.rowCount() == 2
    assert cell(log_window, 0, "Status") == "400"  # newest first
    assert cell(log_window, 0, "Error") == refused.json()["error"]["message"]
    assert foreground(log_window, 0) == QColor(theme.REJECT)
    log_file = window.server.controller.request_log.path
    assert log_file is not None and log_file.parent == window.paths.log_dir
    lines = [json.loads(line) for line in log_file.read_text(encoding="utf-8").splitlines()]
    assert [(line["route"], line["status"]) for line in lines] == [
        ("/v1/chat/completions", 200),
        ("/v1/chat/completions", 400),
    ]
    assert log_window.open_button.isEnabled()
    window.server.menu.serve_action.setChecked(False)


def test_the_filter_keeps_matching_rows_and_copy_row_gives_the_json_line(qtbot, tmp_path):
    model = RequestLogModel()
    opened = []
    log_file = tmp_path / "server-requests.jsonl"
    window = ServerLogWindow(model, log_file, open_url=lambda url: opened.append(url.toLocalFile()) or True)
    qtbot.addWidget(window)
    window.show()
    assert window.count.text() == "0 requests" and not window.copy_button.isEnabled()
    assert not window.open_button.isEnabled() and "No request has been written" in window.open_button.toolTip()
    model.add(record(prompt_tokens=12, completion_tokens=8, decode_tokens_per_s=41.5, drafter="draft", acceptance=0.5))
    model.add(record("/api/chat", 404, "model 'nope' not found"))
    model.add(record("/v1/messages", 499, "The client hung up before the response ended"))
    assert window.count.text() == "3 requests"
    routes = [cell(window, r, "Route") for r in range(3)]
    assert routes == ["POST /v1/messages", "POST /api/chat", "POST /v1/chat/completions"]
    assert cell(window, 2, "Tok/s") == "41.5" and cell(window, 2, "Accepted") == "50%"
    assert cell(window, 0, "Prompt") == "—"  # no generation ran
    window.filter_box.setText("NOT FOUND")
    assert window.rows.rowCount() == 1 and cell(window, 0, "Status") == "404"
    assert window.count.text() == "1 of 3 requests"
    # a click, not selectRow(): selectRow reads the application's current modifiers, which a key
    # test earlier in the same process can leave held (Ctrl toggles, Shift extends)
    where = window.table.visualRect(window.rows.index(0, 0)).center()
    qtbot.mouseClick(window.table.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, where)
    assert window.copy_button.isEnabled()
    window.copy_button.click()
    copied = json.loads(QApplication.clipboard().text())
    assert copied["route"] == "/api/chat" and copied["status"] == 404 and copied["error"] == "model 'nope' not found"
    window.filter_box.clear()
    assert window.rows.rowCount() == 3
    log_file.write_text("{}\n", encoding="utf-8")
    model.add(record("/v1/models", 200))  # the window looks for the file again as rows come
    assert window.open_button.isEnabled()
    window.open_button.click()
    assert opened == [str(log_file)]


def test_the_table_keeps_as_many_rows_as_the_server_log(qtbot):
    model = RequestLogModel(capacity=2)
    for route in ("/a", "/b", "/c"):
        model.add(record(route))
    assert [r.route for r in model.rows] == ["/c", "/b"]


def test_the_error_colour_follows_the_theme(qtbot, tmp_path):
    from specchat.ui.theme_switch import switch

    model = RequestLogModel([record(status=500, error="boom")])
    window = ServerLogWindow(model, None)
    qtbot.addWidget(window)
    assert "kept in memory only" in window.where.text() and not window.open_button.isEnabled()
    try:
        switch().set_choice("dark")
        assert foreground(window, 0) == QColor(theme.DARK.reject)
        switch().set_choice("light")
        assert foreground(window, 0) == QColor(theme.LIGHT.reject)
    finally:
        switch().set_choice("system")
