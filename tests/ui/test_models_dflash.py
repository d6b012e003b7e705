"""The Models window shows a target's DFlash drafter, plans its memory with it, and downloads the pair."""

from __future__ import annotations

from pathlib import Path

import pytest

from specchat.hub.catalog import Catalog, CatalogModel, RecommendedPair
from specchat.hub.config import HubConfig
from specchat.hub.memory_fit import memory_fit, model_memory
from specchat.paths import AppPaths
from specchat.settings import Settings
from specchat.system.memory import MachineMemory
from specchat.ui.models import ModelsWindow
from specchat.ui.models.rows import COMPLETE, row_key, tooltip_text
from specchat.ui.models.table_model import ROLE
from tests.hub.conftest import DFLASH_REPO, TARGET_REPO, dflash_drafter, dflash_repo, point_hub_at  # noqa: F401
from tests.hub.hub_server import HubServer

WAIT_MS = 60_000
ROOMY = MachineMemory(16_000_000_000, 8_000_000_000, None, "test")


def entry(repo_id: str, role: str) -> CatalogModel:
    return CatalogModel(repo_id, "qwen3", "tiny", role, "dense", False, None, "none", 0.001, 32768)


CATALOG = Catalog(
    (entry(TARGET_REPO, "target"), entry(DFLASH_REPO, "dflash")),
    (RecommendedPair(TARGET_REPO, DFLASH_REPO, "dflash", 15),),
)


@pytest.fixture
def dflash_hub(hub_env, monkeypatch, target_repo, dflash_repo):  # noqa: F811
    with HubServer([target_repo, dflash_repo]) as server:
        point_hub_at(monkeypatch, server.url)
        yield server


@pytest.fixture
def window(qtbot, tmp_path, dflash_hub):
    config = HubConfig.from_env(timeout_s=5.0, deadline_s=5.0)
    win = ModelsWindow(
        AppPaths.under(tmp_path / "home"), Settings(), config=config, catalog=CATALOG, read_memory=lambda: ROOMY
    )
    win.show()
    qtbot.waitUntil(lambda: not win.runner.busy, timeout=WAIT_MS)
    yield win
    win.shutdown()
    win.close()


def cell(window: ModelsWindow, key: str, column: int) -> str:
    model = window.table_model
    return model.data(model.index(model.position(key), column))


def test_a_target_shows_its_dflash_drafter_and_downloads_both(qtbot, window, dense_target, dflash_drafter):  # noqa: F811
    target_key, drafter_key = row_key(TARGET_REPO), row_key(DFLASH_REPO)
    bar = window.dflash_bar
    assert bar.isHidden()
    window.select(target_key)
    assert bar.isVisible() and DFLASH_REPO in bar.label.text() and "Not downloaded" in bar.label.text()
    assert bar.button.text() == "Download target + drafter" and bar.button.isEnabled()
    assert cell(window, drafter_key, ROLE) == "DFlash drafter" and cell(window, target_key, ROLE) == "target"
    assert f"DFlash drafter: {DFLASH_REPO}" in tooltip_text(window.table_model.find(target_key))
    assert f"DFlash drafter for {TARGET_REPO}" in tooltip_text(window.table_model.find(drafter_key))
    panel = window.pair_panel
    with qtbot.waitSignal(panel.plannedChecked, timeout=WAIT_MS) as planned:
        window.select(target_key, drafter_key)
    plan = planned.args[0]
    assert (plan.target, plan.draft, plan.dflash) == (TARGET_REPO, None, DFLASH_REPO)
    want = memory_fit(
        model_memory(dense_target), None, panel.context.value(), ROOMY, dflash=model_memory(dflash_drafter)
    )
    assert plan.fit == want and dict(plan.fit.parts)["dflash weights"] > 0
    assert f"DFlash drafter {DFLASH_REPO}" in panel.verdict.text()
    window.select(target_key)
    bar.button.click()

    def both_downloaded():
        rows = [window.table_model.find(k) for k in (target_key, drafter_key)]
        assert all(r is not None and r.status == COMPLETE and r.transfer is None for r in rows), rows

    qtbot.waitUntil(both_downloaded, timeout=WAIT_MS)
    window.select(target_key)
    assert "Downloaded" in bar.label.text() and not bar.button.isEnabled()
    drafter = window.table_model.find(drafter_key)
    assert drafter.local.dflash and drafter.usable
    targets = [panel.target.itemData(i) for i in range(panel.target.count())]
    assert str(window.table_model.find(target_key).local.path) in targets
    assert str(drafter.local.path) not in targets  # a drafter is never offered as a target or a draft
    window.select(drafter_key)
    assert not window.buttons["target"].isEnabled() and window.buttons["draft"].isEnabled()
    with qtbot.waitSignal(window.use_as_dflash, timeout=WAIT_MS) as used:
        window.buttons["draft"].click()
    assert Path(used.args[0]) == drafter.local.path
