"""The context length setting in the app: Preferences sets it (saved; the loaded engine takes it at once, a pair
loaded later as it loads), the fill beside Send counts against it, turns amber near the end, refuses a message over
it before sending, and a reply cut by it says so."""

import json

import pytest

from specchat.engine.loading import load_model
from specchat.settings import load_settings, settings_from_dict
from specchat.settings_checks import SettingsError
from specchat.ui.chat.context_fill import FillCount, PromptParts, prompt_tokens, window_parts
from specchat.ui.chat.context_words import ContextLimit, fill_tip, fill_words, too_long
from specchat.ui.context_length_box import CUSTOM, MAXIMUM

from .conftest import send

WAIT_MS = 120_000
SETTING = "your context length setting"


def choose_context_length(window, value: int | None) -> None:
    """Pick a context length in Preferences the way a user does (a common size, Custom or the maximum), then OK."""
    dialog = window.preferences.open()
    box = dialog.context_length
    if value is None:
        box.choice.setCurrentIndex(box.choice.findData(MAXIMUM))
    elif box.choice.findData(value) >= 0:
        box.choice.setCurrentIndex(box.choice.findData(value))
    else:
        box.choice.setCurrentIndex(box.choice.findData(CUSTOM))
        assert box.custom.isVisibleTo(dialog)
        box.custom.setValue(value)
    assert box.value() == value
    dialog.accept()


def test_preferences_caps_the_context_now_and_for_pairs_loaded_later(qtbot, open_window, paths, dense_target):
    window = open_window(dense_target)
    label = window.composer.fill_label
    qtbot.waitUntil(lambda: label.text() == "0 / 32,768 tokens", timeout=WAIT_MS)
    dialog = window.preferences.open()
    box = dialog.context_length
    assert box.value() is None and box.choice.currentText() == "Model's maximum"
    assert not box.custom.isVisibleTo(dialog)
    dialog.reject()
    choose_context_length(window, 8192)
    assert load_settings(paths).settings.context_length == 8192
    qtbot.waitUntil(lambda: label.text() == "0 / 8,192 tokens", timeout=WAIT_MS)
    assert window.client.engine.context_length == 8192
    assert f"8,192 left for the reply ({SETTING}, in Preferences; the model holds 32,768)" in label.toolTip()
    assert window.preferences.open().context_length.value() == 8192  # shown again as chosen
    window.preferences.dialog.reject()
    window.close()
    again = open_window(dense_target)  # a pair loaded later takes the saved setting as it loads
    qtbot.waitUntil(lambda: again.composer.fill_label.text() == "0 / 8,192 tokens", timeout=WAIT_MS)
    assert again.client.engine.context_length == 8192
    choose_context_length(again, None)
    qtbot.waitUntil(lambda: again.composer.fill_label.text() == "0 / 32,768 tokens", timeout=WAIT_MS)
    assert again.client.engine.context_length is None and load_settings(paths).settings.context_length is None
    assert "(max_position_embeddings in config.json)" in again.composer.fill_label.toolTip()


def test_over_the_cap_is_refused_before_sending_and_near_it_warns(qtbot, open_window, dense_target):
    window = open_window(dense_target)
    choose_context_length(window, 256)
    label = window.composer.fill_label
    qtbot.waitUntil(lambda: label.text() == "0 / 256 tokens", timeout=WAIT_MS)
    with qtbot.waitSignal(window.composer.refused, timeout=WAIT_MS) as refused:
        window.composer.text.setPlainText("word " * 400)
        window.composer.send_button.click()
    assert refused.args[0].startswith("This message would need ") and refused.args[0].endswith(f"{SETTING} allows 256")
    assert window.chat.conversation_id is None and label.objectName() == "fillOver"  # nothing was sent
    tokenizer = load_model(dense_target).tokenizer
    message, tokens = near_the_end(tokenizer, window_parts(window), low=240, high=256)
    window.composer.text.setPlainText(message)
    qtbot.waitUntil(lambda: label.text() == f"{tokens} / 256 tokens", timeout=WAIT_MS)
    assert label.objectName() == "fillNear" and "Nearly full: a reply stops when the context is full" in label.toolTip()
    finished = send(qtbot, window, message)
    assert finished.stats.prompt_tokens == tokens and finished.stats.generated_tokens == 256 - tokens < 24
    footer = window.transcript.views[-1].footer.text()
    assert footer.endswith(" · the context is full"), footer


def near_the_end(tokenizer, parts: PromptParts, low: int, high: int) -> tuple[str, int]:
    """A message whose prompt takes from low to high tokens (exclusive), and that count."""
    for words in range(1, high):
        message = "word " * words
        tokens = prompt_tokens(tokenizer, parts, message.strip())
        if tokens >= low:
            assert tokens < high, tokens
            return message.strip(), tokens
    raise AssertionError("no message fits")


def test_the_words_name_the_setting_when_it_is_the_cause():
    capped = ContextLimit(256, SETTING, 32768, 256)
    full = FillCount(PromptParts(), "", 300)
    assert fill_words(full, capped) == (
        "300 / 256 tokens",
        f"This chat has 300 tokens; {SETTING} allows 256: start a new chat or raise the context length in Preferences",
    )
    assert too_long(300, capped) == f"This message would need 300 tokens; {SETTING} allows 256"
    assert too_long(40000, 32768) == "This message would need 40,000 tokens; the model holds 32,768"
    above = ContextLimit(32768, "max_position_embeddings in config.json", 32768, 131072)
    tip = fill_tip(FillCount(PromptParts(), "", 30000), above)
    assert tip == (
        "Tokens of the chat so far, as the model reads them; 2,768 left for the reply (max_position_embeddings in "
        f"config.json; {SETTING} (131,072) is not below it). Nearly full: a reply stops when the context is full; "
        "start a new chat"
    )


def test_the_setting_is_checked_like_the_others(paths):
    assert settings_from_dict({"context_length": 8192}).context_length == 8192
    assert settings_from_dict({"context_length": None}).context_length is None
    for bad in (100, "8192", True, 8192.0, 2_000_000):
        with pytest.raises(SettingsError, match="^context_length must be null or a whole number between 256 and"):
            settings_from_dict({"context_length": bad})
    paths.settings_file.parent.mkdir(parents=True, exist_ok=True)
    paths.settings_file.write_text(json.dumps({"context_length": "lots", "max_tokens": 100}))
    loaded = load_settings(paths)
    assert loaded.settings.context_length is None and loaded.settings.max_tokens == 100
    assert loaded.warning is not None and "context_length must be null or" in loaded.warning
