"""Models already on disk reach the window: the pickers, the empty state, --target, the Models window."""

import shutil

import pytest
from huggingface_hub import constants

from specchat.hub.config import HubConfig
from specchat.paths import AppPaths
from specchat.settings import Settings, load_settings
from specchat.ui.models import ModelsWindow
from specchat.ui.models.pair_panel import SELF_SUFFIX
from specchat.ui.models.rows import subtitle_text, tooltip_text
from specchat.ui.plain_words import NO_MTP_HEAD, SELF_DRAFT
from tests.hub.conftest import hub_env  # noqa: F401  (HF cache in tmp_path, no network)

TIMEOUT_MS = 60_000
STUDIO_NAME = "lmstudio-community/Tiny-Target-MLX"
CACHE_REPO = "mlx-community/Tiny-Draft-4bit"


@pytest.fixture
def on_disk(tmp_path, monkeypatch, dense_target, dense_draft_partial):
    """A home with an LM Studio model (the tiny target) and an HF cache with the tiny draft."""
    home, cache = tmp_path / "user", tmp_path / "hf-cache"
    studio = home / ".lmstudio/models" / STUDIO_NAME
    shutil.copytree(dense_target, studio)
    repo = cache / ("models--" + CACHE_REPO.replace("/", "--"))
    snapshot = repo / "snapshots" / "abc123"
    shutil.copytree(dense_draft_partial, snapshot)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    return studio.resolve(), snapshot.resolve()


@pytest.mark.slow
def test_first_run_offers_lm_studio_and_hf_cache_models_by_name(qtbot, open_window, on_disk):
    studio, snapshot = on_disk
    window = open_window()  # nothing saved, nothing given
    bar = window.model_bar
    offered = {bar.target.itemData(i): bar.target.itemText(i) for i in range(bar.target.count())}
    assert offered == {str(studio): STUDIO_NAME, str(snapshot): CACHE_REPO}
    bar.target.setCurrentIndex(bar.target.findData(str(studio)))
    qtbot.waitUntil(
        lambda: (
            bar.draft.findData(str(snapshot)) > 0
            and bar.draft.model().item(bar.draft.findData(str(snapshot))).isEnabled()
        ),
        timeout=TIMEOUT_MS,
    )
    assert bar.draft.itemText(bar.draft.findData(str(snapshot))) == CACHE_REPO
    assert bar.draft.findData(str(studio)) < 0  # the target is not offered as its own draft
    bar.select_draft(str(snapshot))
    bar.load_button.click()
    qtbot.waitUntil(lambda: window.pair is not None, timeout=TIMEOUT_MS)
    assert (window.pair.target, window.pair.draft) == (str(studio), str(snapshot))


def test_the_empty_state_points_to_the_models_window(qtbot, open_window, on_disk, hub_env):  # noqa: F811
    window = open_window()
    button = window.transcript.empty.models_button
    assert button.isVisibleTo(window) and "Models" in window.transcript.empty.hint.text()
    button.click()
    models = window.models.window
    assert models is not None and models.isVisible()
    qtbot.waitUntil(lambda: not models.runner.busy, timeout=TIMEOUT_MS)
    models.close()


@pytest.mark.slow
def test_a_target_given_on_the_command_line_is_remembered_once_it_loaded(
    qtbot, open_window, paths, dense_target, tmp_path
):
    missing = tmp_path / "no-such-model"
    window = open_window(missing)
    assert window.pair is None and str(missing) not in window.settings.extra_model_dirs
    window.close()
    window = open_window(dense_target)
    assert window.pair is not None
    assert load_settings(paths).settings.extra_model_dirs == [str(dense_target.resolve())]
    window.close()
    again = open_window(dense_target)
    assert load_settings(paths).settings.extra_model_dirs == [str(dense_target.resolve())]  # once
    assert again.model_bar.target.findData(str(dense_target.resolve())) >= 0


@pytest.fixture
def models_window(qtbot, tmp_path, hub_env, on_disk):  # noqa: F811
    window = ModelsWindow(
        AppPaths.under(tmp_path / "app"), Settings(), config=HubConfig.from_env(timeout_s=5.0, deadline_s=5.0)
    )
    window.show()
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=TIMEOUT_MS)
    yield window
    window.shutdown()
    window.close()


def test_the_models_window_lists_lm_studio_models_with_plain_reasons(models_window, on_disk):
    studio, _snapshot = on_disk
    row = next(r for r in models_window.table_model.rows() if r.local is not None and r.local.path == studio)
    assert row.local.source == "lm-studio"
    assert subtitle_text(row) == "LM Studio · lmstudio-community"
    tip = tooltip_text(row)
    assert f"MTP: {NO_MTP_HEAD}" in tip and "details: config.json declares no MTP layers" in tip


def test_the_pair_builder_explains_the_target_drafting_for_itself(qtbot, models_window, on_disk):
    studio, snapshot = on_disk
    panel = models_window.pair_panel
    panel.choose(target=str(studio))
    index = panel.draft.findData(str(studio))
    assert panel.draft.itemText(index).endswith(SELF_SUFFIX)
    assert panel.draft.itemData(index, 3) == SELF_DRAFT  # Qt.ToolTipRole
    assert not panel.draft.itemText(panel.draft.findData(str(snapshot))).endswith(SELF_SUFFIX)
    panel.choose(draft=str(studio))
    panel.check_now()
    assert "cannot be faster" in panel.verdict.text() and not panel.use_button.isEnabled()
