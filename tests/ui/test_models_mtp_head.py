"""The Models window's MTP head line: it offers the original's head for a local model without one, and adds it."""

import shutil

import pytest

from specchat.engine.mtp_detect import detect_mtp
from specchat.hub.config import HubConfig
from specchat.hub.units import format_bytes
from specchat.paths import AppPaths
from specchat.settings import Settings
from specchat.ui.models import ModelsWindow
from tests.hub import mtp_hub_fixtures as fx
from tests.hub.conftest import point_hub_at
from tests.hub.hub_server import HubServer

WAIT_MS = 60_000


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return fx.build_models(tmp_path_factory.mktemp("mtp_head_ui"))


@pytest.fixture
def mtp_hub(hub_env, monkeypatch, models):
    with HubServer(fx.hub_repos(models), lifetime_s=240) as server:
        point_hub_at(monkeypatch, server.url)
        yield server


@pytest.fixture
def window(qtbot, tmp_path, mtp_hub, models):
    local = shutil.copytree(models["float"], tmp_path / "Tiny-MTP-less")
    config = HubConfig.from_env(timeout_s=10.0, deadline_s=10.0)
    win = ModelsWindow(AppPaths.under(tmp_path / "home"), Settings(extra_model_dirs=[str(local)]), config=config)
    win.show()
    qtbot.waitUntil(lambda: not win.runner.busy and win.table_model.find(str(local)) is not None, timeout=WAIT_MS)
    yield win, local
    win.shutdown()
    win.close()
    assert win.mtp_bar.pool.closed and not win.mtp_bar.pool.busy


def test_the_head_line_offers_the_original_and_the_button_adds_it(qtbot, window, mtp_hub):
    win, local = window
    bar = win.mtp_bar
    with qtbot.waitSignal(bar.planned, timeout=WAIT_MS) as planned:
        win.select(str(local))
    plan = planned.args[0]
    assert plan is not None and bar.isVisible() and bar.get_button.isEnabled()
    assert bar.label.text() == (
        f"MTP head: not in this download. Get it: {format_bytes(plan.head_bytes)} from {fx.ORIGINAL_REPO}"
    )
    with qtbot.waitSignal(bar.finished, timeout=WAIT_MS) as done, qtbot.waitSignal(win.mtpHeadAdded, timeout=WAIT_MS):
        bar.get_button.click()
    assert done.args[0].sidecar == local.resolve() / "optiq/mtp.safetensors"
    assert detect_mtp(local).available and not bar.get_button.isEnabled()
    qtbot.waitUntil(lambda: win.table_model.find(str(local)).local.mtp_available is True, timeout=WAIT_MS)


def test_cancel_stops_the_fetch_and_keeps_its_bytes(qtbot, window, mtp_hub):
    win, local = window
    bar = win.mtp_bar
    with qtbot.waitSignal(bar.planned, timeout=WAIT_MS):
        win.select(str(local))
    # every body of a shard stops after its first bytes until resumed: the fetch is held mid-transfer, whatever
    # the machine's speed, until the cancel is in
    mtp_hub.faults.pause_at.update({f"model-{i:05d}-of-00003.safetensors": 256 for i in (1, 2, 3)})
    with qtbot.waitSignal(bar.worker.cancelled, timeout=WAIT_MS):
        bar.get_button.click()
        qtbot.waitUntil(mtp_hub.faults.paused.is_set, timeout=WAIT_MS)
        bar.cancel_button.click()
        mtp_hub.faults.resume.set()
    assert "cancelled" in bar.label.text() and bar.get_button.isEnabled()
    assert not detect_mtp(local).available and any((local / ".specchat-mtp").rglob("*.part"))


def test_the_loaded_target_is_loaded_again_when_it_gains_a_head(qtbot, tmp_path):
    from PySide6.QtWidgets import QWidget

    from specchat.ui.models_link import ModelsLink

    parent = QWidget()
    qtbot.addWidget(parent)
    target = tmp_path / "target"
    link = ModelsLink(parent, AppPaths.under(tmp_path / "home"), Settings(), lambda: (str(target), "draft", "drafter"))
    with qtbot.assertNotEmitted(link.chosen):
        link._head_added(str(tmp_path / "another"))
    with qtbot.waitSignal(link.chosen, timeout=WAIT_MS) as chosen:
        link._head_added(str(target))
    assert chosen.args == [str(target), "draft", "drafter"]  # the DFlash drafter is loaded again with them
