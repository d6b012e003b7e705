"""The app loads a DFlash drafter beside its target: from the Models window ("Use as DFlash drafter") or the
command line (--dflash); the settings keep it with the pair; a new target, or its toolbar button, drops it."""

from __future__ import annotations

from pathlib import Path

import pytest

from specchat import cli
from specchat.engine import Engine, GenerationConfig
from specchat.engine.session import ChatSession
from specchat.settings import Settings, load_settings, save_settings, settings_keeping_valid
from specchat.ui.engine_client import loaded_dflash
from specchat.ui.main_window import MainWindow
from tests.fixtures.dflash_models import build_dflash
from tests.hub.conftest import dflash_drafter  # noqa: F401

from .conftest import LOAD_TIMEOUT_MS, MAX_TOKENS, send

PROMPT = "Write a function that adds two numbers."


def plain_reply(target: Path, text: str):
    """The reply plain decoding gives (greedy), from a fresh engine: DFlash must give exactly this."""
    engine = Engine.load(target)
    ids = ChatSession(engine, None).prompt_ids([{"role": "user", "content": text}])
    return engine.generate(ids, GenerationConfig(mode="baseline", max_tokens=MAX_TOKENS))


def open_with_dflash(qtbot, paths, target: Path | None = None, draft: Path | None = None, dflash: Path | None = None):
    """A MainWindow as `specchat --target --draft --dflash` opens it (no options: the saved pair), loaded."""
    window = MainWindow(
        paths,
        target=str(target) if target else None,
        draft=str(draft) if draft else None,
        dflash=str(dflash) if dflash else None,
    )
    qtbot.addWidget(window)
    window.show()
    window.panel.max_tokens.setValue(MAX_TOKENS)
    qtbot.waitUntil(lambda: window.pair is not None or window.banner.level == "error", timeout=LOAD_TIMEOUT_MS)
    return window


def dflash_item(window):
    return window.speculation.mode_actions["dflash"]


@pytest.mark.slow
@pytest.mark.usefixtures("hub_env")
def test_use_as_dflash_loads_the_drafter_beside_the_target_and_replies_as_plain_decoding(
    qtbot,
    open_window,
    paths,
    dense_target,
    dflash_drafter,  # noqa: F811
):
    window = open_window(dense_target)
    item = dflash_item(window)
    assert not item.isEnabled()
    assert "pick one in the Models window (Use as DFlash drafter) or start with --dflash DIR" in item.toolTip()
    assert window.model_bar.dflash.isHidden()
    models = window.models.open()
    qtbot.waitUntil(lambda: not models.runner.busy, timeout=LOAD_TIMEOUT_MS)
    with qtbot.waitSignal(window.client.loaded, timeout=LOAD_TIMEOUT_MS):
        models.use_as_dflash.emit(str(dflash_drafter))
    assert window.pair is not None and window.pair.target == str(dense_target.resolve())
    assert loaded_dflash(window.pair) == str(dflash_drafter)
    assert item.isEnabled() and window.speculation.checked_mode() == "dflash"
    assert window.model_bar.dflash.isVisibleTo(window)
    assert window.model_bar.dflash.text().startswith(f"DFlash: {dflash_drafter.name}")
    saved = load_settings(paths).settings
    assert (saved.target_path, saved.dflash_path, saved.mode) == (window.pair.target, str(dflash_drafter), "dflash")

    finished = send(qtbot, window, PROMPT)
    assert finished.stats.mode == "dflash" and finished.stats.rounds > 0
    expected = plain_reply(dense_target, PROMPT)
    assert list(finished.tokens) == expected.tokens and finished.text == expected.text

    # a drafter for another target is refused: the load fails and the pair in use (with its drafter) stays
    wrong = build_dflash(paths.data_dir.parent / "wrong-drafter", dense_target, layer_ids=[7])
    with qtbot.waitSignal(window.client.loadFailed, timeout=LOAD_TIMEOUT_MS):
        models.use_as_dflash.emit(str(wrong))
    assert window.banner.level == "error" and "past the 2 layers" in window.banner.message
    assert loaded_dflash(window.pair) == str(dflash_drafter) and item.isEnabled()
    assert load_settings(paths).settings.dflash_path == str(dflash_drafter)


@pytest.mark.slow  # four loads; the Models window test keeps the drafter's load and reply in the fast subset
def test_the_app_started_with_dflash_loads_it_and_the_settings_keep_it_with_its_target(
    qtbot,
    paths,
    dense_target,
    dense_draft_partial,
    dflash_drafter,  # noqa: F811
):
    first = open_with_dflash(qtbot, paths, dense_target, dense_draft_partial, dflash_drafter)
    drafter = str(dflash_drafter.resolve())
    assert first.pair.draft == str(dense_draft_partial.resolve()) and loaded_dflash(first.pair) == drafter
    assert dflash_item(first).isEnabled() and first.speculation.checked_mode() == "dflash"
    assert first.model_bar.dflash.isVisibleTo(first)
    first.close()

    # a new window with no options loads the saved pair with its drafter, in the saved mode
    second = open_with_dflash(qtbot, paths)
    assert second.pair.target == str(dense_target.resolve()) and loaded_dflash(second.pair) == drafter
    assert second.speculation.checked_mode() == "dflash" and dflash_item(second).isEnabled()

    # Load with the same target keeps the drafter
    with qtbot.waitSignal(second.client.loaded, timeout=LOAD_TIMEOUT_MS):
        second.model_bar.load_button.click()
    assert loaded_dflash(second.pair) == drafter

    # another target drops it: a DFlash drafter drafts for the target it was trained for
    with qtbot.waitSignal(second.client.loaded, timeout=LOAD_TIMEOUT_MS):
        second.use_models(str(dense_draft_partial), None, second.dflash_for(str(dense_draft_partial)))
    assert second.pair.target == str(dense_draft_partial.resolve()) and loaded_dflash(second.pair) is None
    assert not dflash_item(second).isEnabled() and second.speculation.checked_mode() != "dflash"
    assert second.model_bar.dflash.isHidden()
    assert load_settings(paths).settings.dflash_path is None


@pytest.mark.slow  # four loads
@pytest.mark.usefixtures("hub_env")
def test_a_new_target_from_the_models_window_or_the_drop_button_drops_the_drafter(
    qtbot,
    paths,
    dense_target,
    dense_draft_partial,
    dflash_drafter,  # noqa: F811
):
    window = open_with_dflash(qtbot, paths, dense_target, None, dflash_drafter)
    assert loaded_dflash(window.pair) == str(dflash_drafter.resolve())
    # the toolbar's DFlash button loads the pair again without the drafter
    with qtbot.waitSignal(window.client.loaded, timeout=LOAD_TIMEOUT_MS):
        window.model_bar.dflash.click()
    assert loaded_dflash(window.pair) is None and window.model_bar.dflash.isHidden()
    assert not dflash_item(window).isEnabled() and window.speculation.checked_mode() == "baseline"
    assert load_settings(paths).settings.dflash_path is None

    models = window.models.open()
    qtbot.waitUntil(lambda: not models.runner.busy, timeout=LOAD_TIMEOUT_MS)
    with qtbot.waitSignal(window.client.loaded, timeout=LOAD_TIMEOUT_MS):
        models.use_as_dflash.emit(str(dflash_drafter))
    assert loaded_dflash(window.pair) == str(dflash_drafter)
    with qtbot.waitSignal(window.client.loaded, timeout=LOAD_TIMEOUT_MS):
        models.use_as_target.emit(str(dense_draft_partial))
    assert window.pair.target == str(dense_draft_partial.resolve()) and loaded_dflash(window.pair) is None
    assert window.model_bar.dflash.isHidden() and not dflash_item(window).isEnabled()


def test_a_saved_drafter_whose_folder_went_away_does_not_stop_the_target(qtbot, paths, dense_target, tmp_path):
    save_settings(paths, Settings(target_path=str(dense_target), dflash_path=str(tmp_path / "gone"), mode="dflash"))
    window = open_with_dflash(qtbot, paths)
    assert window.pair is not None and window.banner.level != "error"
    assert loaded_dflash(window.pair) is None and window.speculation.checked_mode() == "baseline"


def test_the_drafter_setting_is_checked_on_load():
    settings, problems = settings_keeping_valid({"dflash_path": 5, "target_path": "/m/t"})
    assert settings.dflash_path is None and settings.target_path == "/m/t" and problems
    assert settings_keeping_valid({"dflash_path": "/m/d"})[0].dflash_path == "/m/d"


def test_the_command_line_passes_dflash_to_the_app(monkeypatch, capsys):
    import specchat.qt_platform
    import specchat.ui.app

    calls: list[dict] = []

    def run_app(**kwargs) -> int:
        calls.append(kwargs)
        return 0

    monkeypatch.setattr(specchat.ui.app, "run_app", run_app)
    monkeypatch.setattr(specchat.qt_platform, "platform_problem", lambda: None)
    assert cli.main(["--target", "/m/t", "--draft", "/m/d", "--dflash", "/m/f"]) == 0
    assert calls == [{"target": "/m/t", "draft": "/m/d", "dflash": "/m/f"}]
    with pytest.raises(SystemExit) as stopped:
        cli.main(["--dflash", "/m/f"])
    assert stopped.value.code == 2 and "--dflash needs --target" in capsys.readouterr().err
