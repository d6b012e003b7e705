"""The Models window names the computer it runs on as the rest of the app does: "this Mac" only on a Mac."""

import sys
from pathlib import Path

import pytest
from PySide6.QtWidgets import QLabel, QWidget

from specchat.paths import AppPaths
from specchat.settings import Settings
from specchat.system.memory import MachineMemory
from specchat.ui.models import ModelsWindow
from specchat.ui.plain_words import this_machine

MODELS_PACKAGE = Path(__file__).resolve().parents[2] / "specchat" / "ui" / "models"
ROOMY = MachineMemory(
    total_bytes=16_000_000_000, available_bytes=8_000_000_000, gpu_working_set_bytes=None, source="test"
)
off_a_mac = pytest.mark.skipif(sys.platform == "darwin", reason="on a Mac the window rightly says 'this Mac'")


@pytest.fixture
def window(qtbot, tmp_path, hub_env):
    """A Models window that has not asked the hub or scanned anything."""
    made = ModelsWindow(AppPaths.under(tmp_path / "home"), Settings(), read_memory=lambda: ROOMY, autostart=False)
    qtbot.addWidget(made)
    yield made
    made.shutdown()


def shown_words(window: ModelsWindow) -> list[str]:
    """Every label's text and every widget's tooltip in the window."""
    return [label.text() for label in window.findChildren(QLabel)] + [w.toolTip() for w in window.findChildren(QWidget)]


def test_the_hint_names_this_computer_as_the_app_does(window):
    assert any(f"and what is on {this_machine()}." in text for text in shown_words(window))


@off_a_mac
def test_no_words_in_the_window_say_this_mac(window):
    assert not [text for text in shown_words(window) if "this Mac" in text]


def test_the_models_package_spells_no_mac_of_its_own():
    said = [path.name for path in MODELS_PACKAGE.glob("*.py") if "this Mac" in path.read_text(encoding="utf-8")]
    assert not said, f"use plain_words.this_machine() in {said}"
