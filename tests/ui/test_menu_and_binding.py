"""The Speculation menu's choices and shortcuts, the tuned K, and a Qt binding sanity check."""

import sys

from PySide6.QtCore import QObject, Signal

from specchat.ui.speculation_menu import K_CHOICES, SpeculationMenu, tuned_k


def test_emit_keeps_reference_counts():
    # PySide6 6.12.0 drops a reference to True on every emit(), which crashes Python 3.11.
    class Source(QObject):
        fired = Signal(int, object)

    source = Source()
    source.fired.connect(lambda *_: None)
    before = sys.getrefcount(True), sys.getrefcount(None)
    for i in range(200):
        source.fired.emit(i, None)
    assert (sys.getrefcount(True), sys.getrefcount(None)) == before


def test_menu_offers_the_k_choices_shortcuts_and_greys_unavailable_modes(qtbot):
    menu = SpeculationMenu()
    qtbot.addWidget(menu)
    assert list(menu.k_actions) == list(K_CHOICES)
    assert [menu.mode_actions[m].shortcut().toString() for m in ("baseline", "draft", "mtp")] == [
        "Ctrl+0",
        "Ctrl+1",
        "Ctrl+2",
    ]
    assert not menu.mode_actions["draft"].isEnabled()
    assert menu.mode_actions["draft"].toolTip() == (
        "Unavailable: no model is loaded yet: choose one in the toolbar or open Models…"
    )
    menu.set_available({"baseline": None, "draft": None, "mtp": "no MTP head: config.json declares no MTP layers"})
    assert menu.mode_actions["draft"].isEnabled() and menu.mode_actions["mtp"].toolTip() == (
        "Unavailable: this model has no multi-token-prediction head (config.json declares no MTP layers)"
    )
    chosen = []
    menu.draftTokensChosen.connect(chosen.append)
    menu.set_k(4)
    menu.more_action.trigger()
    menu.fewer_action.trigger()
    menu.fewer_action.trigger()
    assert chosen == [6, 4, 3] and menu.k_actions[3].isChecked()


def test_the_pairs_tuned_k_joins_the_list(qtbot, paths, tmp_path):
    from specchat.tuning.best_k import save_best_k

    target, draft = tmp_path / "t", tmp_path / "d"
    assert tuned_k(paths, str(target), str(draft)) is None
    save_best_k(paths, target, draft, {"code": 5, "prose": 5, "chat": 5})
    k = tuned_k(paths, str(target), str(draft))
    assert k == 5
    menu = SpeculationMenu()
    qtbot.addWidget(menu)
    menu.set_tuned_k(k)
    assert menu.k_actions[5].text() == "5 (tuned for this pair)" and 5 not in K_CHOICES


def test_a_sweep_that_found_auto_k_best_marks_auto_as_tuned(qtbot, paths, tmp_path):
    from specchat.tuning.best_k import AUTO, save_best_k

    target, draft = tmp_path / "t", tmp_path / "d"
    target.mkdir(), draft.mkdir()
    save_best_k(paths, target, draft, {"structured": AUTO, "open": 2})
    assert tuned_k(paths, str(target), str(draft)) == 2  # a tie: the fixed K
    save_best_k(paths, target, draft, {"chat": AUTO, "open": 2})
    k = tuned_k(paths, str(target), str(draft))
    assert k == AUTO
    menu = SpeculationMenu()
    qtbot.addWidget(menu)
    menu.set_tuned_k(k)
    assert menu.auto_action.text().endswith("(tuned for this pair)")
    menu.set_tuned_k(2)
    assert "tuned" not in menu.auto_action.text()


def test_a_pair_folder_that_cannot_be_resolved_has_no_tuned_k_and_says_why(paths, tmp_path, caplog):
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "back")
    (tmp_path / "back").symlink_to(loop)  # resolving either one never ends
    with caplog.at_level("WARNING", logger="specchat.ui.speculation_menu"):
        assert tuned_k(paths, str(loop), str(tmp_path / "d")) is None
    assert any("no tuned K" in record.getMessage() for record in caplog.records)


def test_dflash_and_auto_are_in_the_menu_with_their_reasons(qtbot):
    menu = SpeculationMenu()
    qtbot.addWidget(menu)
    assert menu.mode_actions["dflash"].shortcut().toString() == "Ctrl+4"
    assert menu.mode_actions["auto"].shortcut().toString() == "Ctrl+5"
    menu.set_available({"baseline": None, "draft": None, "dflash": "no DFlash drafter loaded", "auto": None})
    assert not menu.mode_actions["dflash"].isEnabled()
    assert (
        menu.mode_actions["dflash"]
        .toolTip()
        .startswith("Unavailable: no DFlash drafter loaded: pick one in the Models window")
    )
    assert menu.mode_actions["auto"].isEnabled() and "picks the drafter" in menu.mode_actions["auto"].text()
