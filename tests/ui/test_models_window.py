"""The model manager window against the loopback hub: table, downloads, cancel, delete, pairs, offline."""

import shutil
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import QEvent, QPoint, QRect, QSize, Qt
from PySide6.QtGui import QHelpEvent
from PySide6.QtWidgets import QApplication, QMessageBox, QProxyStyle, QStyle, QStyleOptionComboBox, QToolTip

from specchat.hub.catalog import load_catalog
from specchat.hub.config import HubConfig
from specchat.hub.download import download_model
from specchat.hub.memory_fit import memory_fit, model_memory
from specchat.hub.transfer import storage_folder
from specchat.hub.units import format_bytes
from specchat.paths import AppPaths
from specchat.settings import Settings
from specchat.system.memory import MachineMemory
from specchat.ui.models import ModelsWindow, open_models_window, workers
from specchat.ui.models.name_combo import ELLIPSIS
from specchat.ui.models.pair_panel import NO_DRAFT
from specchat.ui.models.planned_fit import PLANNED_NOTE
from specchat.ui.models.rows import CANCELLED, COMPLETE, FAILED, NOT_DOWNLOADED, PARTIAL, row_key
from specchat.ui.models.table_model import NAME, PROGRESS, STATUS
from specchat.ui.models.window import DEFAULT_SIZE
from specchat.ui.screen_fit import fit_to_screen
from tests.fixtures.tiny_models import build_dense
from tests.hub.conftest import DRAFT_REPO, TARGET_REPO  # the hub fixtures come through tests/ui/conftest.py
from tests.hub.hub_server import FakeRepo

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
WEIGHTS = "model.safetensors"
SMALL_DRAFT_REPO = "mlx-community/Tiny-Small-Draft-4bit"
CATALOG_REPO = "mlx-community/Qwen3-0.6B-4bit"
LONG_TARGET = "mlx-community/Qwen3-Coder-30B-A3B-Instruct-4bit"
LONG_DRAFT = "mlx-community/Qwen3-Coder-Next-0.6B-Instruct-DWQ-4bit"
LAPTOP_SCREEN = QRect(0, 0, 1280, 800)  # a 13" MacBook Air, in points
TASK_TIMEOUT_MS = 30_000
ROOMY = MachineMemory(
    total_bytes=16_000_000_000, available_bytes=8_000_000_000, gpu_working_set_bytes=None, source="test"
)


@pytest.fixture
def make_window(qtbot, tmp_path):
    """A ModelsWindow on this test's folders, shown, after its first search and scan answered."""
    windows = []

    def make(folders=(), read_memory=lambda: ROOMY, deadline_s: float = 5.0, free=None) -> ModelsWindow:
        settings = Settings(extra_model_dirs=[str(f) for f in folders])
        config = HubConfig.from_env(timeout_s=5.0, deadline_s=deadline_s)
        window = ModelsWindow(
            AppPaths.under(tmp_path / "home"), settings, config=config, read_memory=read_memory, free=free
        )
        windows.append(window)
        window.show()
        qtbot.waitUntil(lambda: not window.runner.busy, timeout=TASK_TIMEOUT_MS)
        return window

    yield make
    for window in windows:
        window.shutdown()  # a failed test may leave a download running: no "stop downloads?" prompt
        window.close()
        assert window.closed and window.downloader.pool.closed and not window.downloader.pool.busy


def row_of(window: ModelsWindow, key: str):
    row = window.table_model.find(key)
    assert row is not None, f"no row {key}; rows: {[r.key for r in window.table_model.rows()]}"
    return row


def cell(window: ModelsWindow, key: str, column: int) -> str:
    model = window.table_model
    return model.data(model.index(model.position(key), column))


def wait_for_status(qtbot, window, key: str, status: str, transfer_state=None):
    """Wait until the row shows this disk status and transfer state (None: no transfer)."""

    def settled():
        row = window.table_model.find(key)
        state = row.transfer.state if row is not None and row.transfer is not None else None
        assert row is not None and (row.status, state) == (status, transfer_state), (
            f"{key}: {row and row.status}, transfer {row and row.transfer}; banner {window.banner.message!r}"
        )

    qtbot.waitUntil(settled, timeout=TASK_TIMEOUT_MS)


def test_table_lists_catalog_hub_and_local_models(hub, hub_config, make_window, dense_other_vocab):
    download_model(TARGET_REPO, hub_config)
    window = make_window([dense_other_vocab])
    assert window.hub_state == "online" and "Online" in window.state_label.text()
    names = [r.name for r in window.table_model.rows()]
    assert {m.repo_id for m in load_catalog().models} <= set(names)
    target, folder = row_of(window, row_key(TARGET_REPO)), row_of(window, str(dense_other_vocab))
    assert target.status == COMPLETE and target.local.source == "hf-cache"
    assert cell(window, target.key, STATUS) == "Downloaded"
    assert folder.status == COMPLETE and folder.repo_id is None
    assert cell(window, folder.key, NAME) == "dense_other_vocab"
    draft = row_of(window, row_key(DRAFT_REPO))  # on the hub only
    assert draft.status == NOT_DOWNLOADED and cell(window, draft.key, STATUS) == "Not downloaded"
    assert names.index(TARGET_REPO) < names.index(DRAFT_REPO)  # what is on disk comes first
    window.select(folder.key)
    assert not window.buttons["delete"].isEnabled()  # a folder the user added is never deleted here
    assert window.buttons["target"].isEnabled() and not window.buttons["download"].isEnabled()


def test_download_shows_progress_then_complete_and_can_be_used(qtbot, hub, hub_config, make_window, monkeypatch):
    hub.faults.slow_chunk, hub.faults.slow_delay_s = 16 * 1024, 0.01
    threads, original = [], workers.download_bundle

    def recording_download(*args, **kwargs):
        threads.append(threading.current_thread())
        return original(*args, **kwargs)

    monkeypatch.setattr(workers, "download_bundle", recording_download)
    window = make_window()
    key = row_key(TARGET_REPO)
    seen = []
    window.table_model.dataChanged.connect(
        lambda *_: seen.append(
            (
                window.table_model.find(key).transfer,
                cell(window, key, PROGRESS),
                window.table_model.data(
                    window.table_model.index(window.table_model.position(key), PROGRESS), Qt.ItemDataRole.ToolTipRole
                ),
            )
        )
    )
    window.select(key)
    window.buttons["download"].click()
    wait_for_status(qtbot, window, key, COMPLETE)
    fractions = [t.fraction for t, _, _ in seen if t is not None and t.fraction is not None]
    assert any(0 < f < 1 for f in fractions), fractions
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any("%" in text and "/s" in text and "left" in text for _, text, _ in seen)
    total = format_bytes(sum(map(len, hub.repos[TARGET_REPO].files.values())))
    assert any(f"of {total} · file" in tip for _, _, tip in seen)
    snapshot = storage_folder(hub_config, TARGET_REPO) / "snapshots" / hub.repos[TARGET_REPO].commit
    assert (snapshot / WEIGHTS).read_bytes() == hub.repos[TARGET_REPO].files[WEIGHTS]
    assert cell(window, key, STATUS) == "Downloaded"
    assert threads and threads[0] is not threading.main_thread()  # the download ran off the UI thread
    window.select(key)
    with qtbot.waitSignal(window.use_as_target, timeout=1000) as signal:
        window.buttons["target"].click()
    assert signal.args == [str(snapshot)]


@pytest.mark.slow
def test_cancel_keeps_the_partial_download_and_download_resumes(
    qtbot, hub, make_window, target_repo, dense_target, dense_draft_partial
):
    hub.faults.pause_at[WEIGHTS] = len(target_repo.files[WEIGHTS]) // 2  # held there until the cancel
    window = make_window([dense_target, dense_draft_partial])
    window.pair_panel.choose(target=str(dense_target), draft=str(dense_draft_partial))
    qtbot.waitUntil(lambda: window.pair_panel.result is not None, timeout=TASK_TIMEOUT_MS)
    key = row_key(TARGET_REPO)
    window.select(key)
    window.buttons["download"].click()
    qtbot.waitUntil(lambda: (row_of(window, key).transfer.fraction or 0) > 0.4, timeout=TASK_TIMEOUT_MS)
    assert window.buttons["cancel"].isEnabled() and not window.buttons["download"].isEnabled()
    ARTIFACTS.mkdir(exist_ok=True)
    assert window.grab().save(str(ARTIFACTS / "models_window.png"))
    window.buttons["cancel"].click()
    wait_for_status(qtbot, window, key, PARTIAL, CANCELLED)
    assert cell(window, key, STATUS) == "Partial"
    assert cell(window, key, PROGRESS) == "cancelled · partial files kept"
    partial = storage_folder(window.config, TARGET_REPO) / "blobs" / f"{target_repo.etag(WEIGHTS)}.incomplete"
    kept = partial.stat().st_size
    assert 0 < kept < len(target_repo.files[WEIGHTS])
    assert window.buttons["download"].isEnabled()  # resume
    hub.faults.pause_at.clear()
    hub.faults.resume.set()
    window.buttons["download"].click()
    wait_for_status(qtbot, window, key, COMPLETE)
    assert hub.ranges_for(WEIGHTS)[-1] == f"bytes={kept}-"


def test_a_download_that_does_not_fit_says_how_much_space_is_missing(qtbot, hub, make_window, target_repo):
    # config.json is in the cache already: the planned memory fit fetched it before the download
    total = sum(len(data) for name, data in target_repo.files.items() if name != "config.json")
    window = make_window(free=lambda path: 1000)
    key = row_key(TARGET_REPO)
    window.select(key)
    window.buttons["download"].click()
    wait_for_status(qtbot, window, key, PARTIAL, FAILED)
    missing = format_bytes(total - 1000)
    assert window.banner.level == "error" and f"free {missing} more" in window.banner.message
    assert f"free {missing} more" in cell(window, key, PROGRESS)
    assert not [p for _, p, _ in hub.requests if p.endswith(WEIGHTS)]  # no weights were fetched
    assert window.buttons["download"].isEnabled()  # try again after freeing space


def test_delete_asks_first_and_keeps_the_model_when_refused(qtbot, hub, hub_config, make_window, monkeypatch):
    download_model(TARGET_REPO, hub_config)
    window = make_window()
    key = row_key(TARGET_REPO)
    asked = []

    def answer(reply):
        def question(parent, title, text, *args):
            asked.append(text)
            return reply

        monkeypatch.setattr(QMessageBox, "question", staticmethod(question))

    answer(QMessageBox.StandardButton.No)
    window.select(key)
    window.buttons["delete"].click()
    assert len(asked) == 1 and TARGET_REPO in asked[0] and "KB" in asked[0]
    qtbot.wait(200)
    assert storage_folder(hub_config, TARGET_REPO).exists() and row_of(window, key).status == COMPLETE
    answer(QMessageBox.StandardButton.Yes)
    window.buttons["delete"].click()
    wait_for_status(qtbot, window, key, NOT_DOWNLOADED)
    assert not storage_folder(hub_config, TARGET_REPO).exists()
    assert window.banner.level == "info" and "Deleted" in window.banner.message


def test_pair_builder_reports_compatible_and_names_the_vocabulary_problem(
    qtbot, hub_env, make_window, dense_target, dense_draft_partial, dense_other_vocab
):
    window = make_window([dense_target, dense_draft_partial, dense_other_vocab])
    panel = window.pair_panel
    with qtbot.waitSignal(panel.checked, timeout=TASK_TIMEOUT_MS) as good:
        panel.choose(target=str(dense_target), draft=str(dense_draft_partial))
    assert good.args[0].report.compatible and "Compatible" in panel.verdict.text()
    assert "vocabulary" in panel.checks.text() and "identical" in panel.checks.text()
    assert panel.use_button.isEnabled()
    assert "Fits" in panel.fit_label.text() and "of 16.0 GB (total RAM)" in panel.fit_label.text()
    with qtbot.waitSignal(panel.checked, timeout=TASK_TIMEOUT_MS) as bad:
        panel.choose(draft=str(dense_other_vocab))
    report = bad.args[0].report
    assert not report.compatible and report.reason.startswith("vocabulary: vocabularies differ")
    assert "Incompatible" in panel.verdict.text() and "vocabulary" in panel.verdict.text()
    assert "vocabularies differ" in panel.checks.text() and "token id 0 is" in panel.checks.text()
    assert not panel.use_button.isEnabled()
    with qtbot.waitSignal(panel.checked, timeout=TASK_TIMEOUT_MS):
        panel.choose(draft=str(dense_draft_partial))
    signals = []
    window.use_as_target.connect(lambda p: signals.append(("target", p)))
    window.use_as_draft.connect(lambda p: signals.append(("draft", p)))
    panel.use_button.click()
    assert signals == [("target", str(dense_target)), ("draft", str(dense_draft_partial))]


def test_memory_fit_is_red_with_numbers_when_the_pair_does_not_fit(
    qtbot, hub_env, make_window, dense_target, dense_draft_partial
):
    small = MachineMemory(
        total_bytes=200_000_000, available_bytes=100_000_000, gpu_working_set_bytes=None, source="test"
    )
    window = make_window([dense_target, dense_draft_partial], read_memory=lambda: small)
    with qtbot.waitSignal(window.pair_panel.checked, timeout=TASK_TIMEOUT_MS) as checked:
        window.pair_panel.choose(target=str(dense_target), draft=str(dense_draft_partial))
    fit = checked.args[0].fit
    assert fit.level == "red" and fit.needed_bytes > small.total_bytes
    text = window.pair_panel.fit_label.text()
    assert "Does not fit" in text and "of 200.0 MB (total RAM)" in text and "100.0 MB free now" in text


def weights_requested(hub) -> list[str]:
    return [p for _, p, _ in hub.requests if p.endswith(WEIGHTS)]


def test_selecting_models_not_downloaded_shows_their_planned_fit(
    qtbot, tmp_path, hub, make_window, target_repo, dense_target
):
    small_draft = build_dense(tmp_path / "small_draft", seed=3, layers=1)  # smaller than the target
    hub.repos[SMALL_DRAFT_REPO] = FakeRepo.from_folder(SMALL_DRAFT_REPO, small_draft)
    window = make_window()
    panel = window.pair_panel
    context = panel.context.value()
    with qtbot.waitSignal(panel.plannedChecked, timeout=TASK_TIMEOUT_MS) as one:
        window.select(row_key(TARGET_REPO))
    planned = one.args[0]
    # hub sizes + config.json plan exactly what the same model needs once on disk
    assert planned.fit == memory_fit(model_memory(dense_target), None, context, ROOMY)
    assert dict(planned.fit.parts)["target weights"] == len(target_repo.files[WEIGHTS])
    assert dict(planned.fit.parts)["target cache"] > 0  # sized from config.json
    text = panel.fit_label.text()
    assert "Fits" in text and f"needs {format_bytes(planned.fit.needed_bytes)} of 16.0 GB" in text
    assert PLANNED_NOTE in text and panel.memory_bar.fit == planned.fit
    assert "Not downloaded" in panel.verdict.text() and not panel.use_button.isEnabled()
    with qtbot.waitSignal(panel.plannedChecked, timeout=TASK_TIMEOUT_MS) as two:
        window.select(row_key(SMALL_DRAFT_REPO), row_key(TARGET_REPO))
    pair = two.args[0]
    assert (pair.target, pair.draft) == (TARGET_REPO, SMALL_DRAFT_REPO)  # the larger repo is the target
    assert pair.fit == memory_fit(model_memory(dense_target), model_memory(small_draft), context, ROOMY)
    assert f"needs {format_bytes(pair.fit.needed_bytes)}" in panel.fit_label.text()
    assert not weights_requested(hub)


def test_planned_fit_offline_says_it_needs_the_hub(qtbot, hub_env, make_window):
    window = make_window()
    panel = window.pair_panel
    with qtbot.waitSignal(panel.plannedFailed, timeout=TASK_TIMEOUT_MS) as failed:
        window.select(row_key("mlx-community/Qwen3-0.6B-4bit"))
    assert failed.args[0].startswith("offline")
    assert "Offline" in panel.verdict.text() and "config.json from Hugging Face" in panel.verdict.text()
    assert panel.fit_label.text() == "" and panel.memory_bar.fit is None


def test_a_download_that_does_not_fit_in_memory_asks_first(qtbot, hub, make_window, monkeypatch):
    small = MachineMemory(
        total_bytes=200_000_000, available_bytes=100_000_000, gpu_working_set_bytes=None, source="test"
    )
    window = make_window(read_memory=lambda: small)
    key = row_key(TARGET_REPO)
    asked, replies = [], []

    def question(parent, title, text, *args):
        asked.append(text)
        return replies.pop(0)

    monkeypatch.setattr(QMessageBox, "question", staticmethod(question))
    replies.append(QMessageBox.StandardButton.No)
    with qtbot.waitSignal(window.pair_panel.plannedChecked, timeout=TASK_TIMEOUT_MS) as checked:
        window.select(key)
        window.buttons["download"].click()  # before the panel's plan is in: the download plans its own
    qtbot.waitUntil(lambda: len(asked) == 1, timeout=TASK_TIMEOUT_MS)
    fit = checked.args[0].fit
    assert fit.level == "red" and "Does not fit" in window.pair_panel.fit_label.text()
    assert (
        f"does not fit: needs {format_bytes(fit.needed_bytes)}" in asked[0]
        and "this machine has 200.0 MB (total RAM)" in asked[0]
        and "Download anyway?" in asked[0]
    )
    qtbot.wait(300)
    assert row_of(window, key).transfer is None and not weights_requested(hub)  # refused: nothing fetched
    assert window.buttons["download"].isEnabled()
    replies.append(QMessageBox.StandardButton.Yes)
    window.buttons["download"].click()  # the plan on show answers at once
    assert len(asked) == 2 and asked[1] == asked[0]
    wait_for_status(qtbot, window, key, COMPLETE)
    assert weights_requested(hub)


def test_offline_search_shows_the_catalog_and_an_offline_state(qtbot, hub_env, make_window):
    window = make_window()  # hub_env points huggingface_hub at a port nobody listens on
    assert window.hub_state == "offline" and "Offline" in window.state_label.text()
    assert window.banner.isVisible() and "not reachable" in window.banner.message
    assert "cannot reach" in window.banner.details and "cannot reach" not in window.banner.message  # Details
    catalog = {m.repo_id for m in load_catalog().models}
    assert {r.name for r in window.table_model.rows()} == catalog
    window.search_box.setText("0.6B")
    with qtbot.waitSignal(window.searchFinished, timeout=TASK_TIMEOUT_MS) as searched:
        window.search_button.click()
    assert not searched.args[0].online
    assert [r.name for r in window.table_model.rows()] == ["mlx-community/Qwen3-0.6B-4bit"]


@pytest.mark.slow
def test_a_hub_that_never_answers_does_not_block_the_window(qtbot, hub, make_window):
    hub.faults.hang = True
    window = make_window(deadline_s=1.0)
    assert window.hub_state == "offline" and "did not answer" in window.search_result.message


def test_open_models_window_reuses_the_open_window(qtbot, tmp_path, hub_env):
    from PySide6.QtWidgets import QWidget

    parent = QWidget()
    qtbot.addWidget(parent)
    paths = AppPaths.under(tmp_path / "home")
    first = open_models_window(parent, paths, Settings())
    assert first.isVisible() and open_models_window(parent, paths, Settings()) is first
    qtbot.waitUntil(lambda: not first.runner.busy, timeout=TASK_TIMEOUT_MS)
    first.close()
    assert open_models_window(parent, paths, Settings()) is not first


def cached_model(cache: Path, repo_id: str, folder: Path) -> Path:
    """Put a model folder in the HF cache as this repo's snapshot; returns the snapshot folder."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / "abc123"
    shutil.copytree(folder, snapshot)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123")
    return snapshot.resolve()


class LabelSpy(QProxyStyle):
    """The app's style, noting the text each combo box draws as its label."""

    def __init__(self):
        super().__init__()
        self.drawn: list[tuple[object, str]] = []

    def drawControl(self, element, option, painter, widget=None):  # noqa: N802 (Qt's name)
        if element == QStyle.ControlElement.CE_ComboBoxLabel:
            self.drawn.append((widget, option.currentText))
        super().drawControl(element, option, painter, widget)


def label_width(combo) -> int:
    option = QStyleOptionComboBox()
    combo.initStyleOption(option)
    field = combo.style().subControlRect(
        QStyle.ComplexControl.CC_ComboBox, option, QStyle.SubControl.SC_ComboBoxEditField, combo
    )
    return field.width()


def hover_text(qtbot, widget) -> str:
    """The tooltip the widget shows when hovered."""
    pos = QPoint(5, 5)
    QApplication.sendEvent(widget, QHelpEvent(QEvent.Type.ToolTip, pos, widget.mapToGlobal(pos)))
    qtbot.waitUntil(QToolTip.isVisible, timeout=TASK_TIMEOUT_MS)
    text = QToolTip.text()
    QToolTip.hideText()
    return text


def test_the_pair_builder_shows_long_model_names_whole_on_a_laptop_screen(
    qtbot, hub_env, make_window, dense_target, dense_draft_partial
):
    target = cached_model(hub_env, LONG_TARGET, dense_target)
    draft = cached_model(hub_env, LONG_DRAFT, dense_draft_partial)
    window = make_window()
    fit_to_screen(window, QSize(*DEFAULT_SIZE), LAPTOP_SCREEN)
    assert LAPTOP_SCREEN.width() - 40 <= window.width() <= LAPTOP_SCREEN.width()  # less its frame
    panel = window.pair_panel
    with qtbot.waitSignal(panel.checked, timeout=TASK_TIMEOUT_MS):
        panel.choose(target=str(target), draft=str(draft))
    spy = LabelSpy()
    for combo, name in ((panel.target, LONG_TARGET), (panel.draft, LONG_DRAFT)):
        assert combo.currentText() == name
        combo.setStyle(spy)
        combo.repaint()
        combo.setStyle(None)  # back to the window's style before the spy goes
        drawn = [text for widget, text in spy.drawn if widget is combo][-1]
        assert drawn == name or ELLIPSIS in drawn, f"{name!r} drawn as {drawn!r}"
        assert combo.fontMetrics().horizontalAdvance(drawn) <= label_width(combo), f"{drawn!r} is clipped"
        assert name in hover_text(qtbot, combo).splitlines()  # the whole name when the box shortens it


def test_the_planned_fit_stays_when_a_draft_is_chosen(qtbot, tmp_path, hub, make_window, dense_target):
    small_draft = build_dense(tmp_path / "small_draft", seed=3, layers=1)  # on disk, smaller than the target
    window = make_window([small_draft])
    panel, context = window.pair_panel, window.pair_panel.context.value()
    alone = memory_fit(model_memory(dense_target), None, context, ROOMY)
    paired = memory_fit(model_memory(dense_target), model_memory(small_draft), context, ROOMY)
    with qtbot.waitSignal(panel.plannedChecked, timeout=TASK_TIMEOUT_MS) as one:
        window.select(row_key(TARGET_REPO))  # on the hub only
    assert one.args[0].fit == alone
    with qtbot.waitSignal(panel.plannedChecked, timeout=TASK_TIMEOUT_MS) as two:
        panel.draft.setCurrentIndex(panel.draft.findData(str(small_draft)))  # picked in the pair builder
    planned = two.args[0]
    assert (planned.target, planned.draft, planned.fit) == (TARGET_REPO, "small_draft", paired)
    assert (
        f"needs {format_bytes(paired.needed_bytes)}" in panel.fit_label.text()
        and PLANNED_NOTE in panel.fit_label.text()
    )
    assert panel.memory_bar.fit == paired and "draft&nbsp;weights" in panel.legend.text()
    assert "Not downloaded" in panel.verdict.text() and "small_draft" in panel.verdict.text()
    with qtbot.waitSignal(panel.plannedChecked, timeout=TASK_TIMEOUT_MS) as back:
        panel.draft.setCurrentIndex(panel.draft.findText(NO_DRAFT))
    assert back.args[0].fit == alone and panel.memory_bar.fit == alone
    with qtbot.waitSignal(panel.plannedChecked, timeout=TASK_TIMEOUT_MS) as both:
        window.select(row_key(TARGET_REPO), str(small_draft))  # or chosen in the table, beside the target
    assert both.args[0].fit == paired and panel.memory_bar.fit == paired
    assert not weights_requested(hub)


@pytest.mark.slow
def test_download_waits_for_the_hub_while_it_is_offline(qtbot, hub, make_window):
    hub.faults.hang = True
    window = make_window(deadline_s=1.0)
    assert window.hub_state == "offline"
    download = window.buttons["download"]
    window.select(row_key(CATALOG_REPO))  # not downloaded: Download would be offered online
    assert not download.isEnabled() and not window.actions_by_name["download"].isEnabled()
    assert "not reachable" in download.toolTip() and "Search" in download.toolTip()
    hub.faults.hang = False
    hub.release.set()  # the requests still hanging end
    with qtbot.waitSignal(window.searchFinished, timeout=TASK_TIMEOUT_MS) as searched:
        window.search_button.click()
        assert not download.isEnabled()  # still offline until the hub answers
    assert searched.args[0].online and window.hub_state == "online"
    qtbot.waitUntil(download.isEnabled, timeout=TASK_TIMEOUT_MS)
    assert download.toolTip().startswith("Download the selected models")
