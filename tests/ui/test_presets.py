"""The Settings panel's Preset combo: save the fields as a preset, pick one for a chat (it fills the panel and is kept
with the chat), see it modified ("Coding *") until saved again, rename, delete and mark the default in Manage; a new
chat starts from the default preset; a reopened chat shows its preset and fields (after a restart too)."""

from specchat.store.presets import PresetFields, chat_settings, preset, presets, save_preset
from specchat.ui.main_window import MainWindow
from specchat.ui.presets import MANAGE, NONE, PRESET, SAVE_CHANGES, SAVE_NEW

CODING = PresetFields("You write code.", 0.2, 0.9, 40, 0.05, 2048)
STORY = PresetFields("Tell stories.", 1.1, 0.95, 0, 0.0, 512)


def choose(window, kind, preset_id=None):
    """Pick an entry of the Preset combo as the user would."""
    combo = window.panel.preset
    index = next(i for i in range(combo.count()) if combo.itemData(i) == (kind, preset_id))
    combo.setCurrentIndex(index)
    combo.activated.emit(index)


def combo_text(window) -> str:
    return window.panel.preset.currentText()


def entries(window) -> list[str]:
    combo = window.panel.preset
    return [combo.itemText(i) for i in range(combo.count()) if combo.itemData(i) is not None]


def test_save_pick_modify_and_save_again(qtbot, open_window):
    window = open_window()
    store, panel = window.store, window.panel
    assert entries(window) == ["None", "Save current as preset…", "Manage presets…"] and combo_text(window) == "None"
    chat = store.create("Chat").id
    window.chat.open(chat)
    panel.fill(CODING)  # the user sets the fields ...
    window.presets.ask_name = lambda _parent, _question, _suggested: "Coding"
    choose(window, SAVE_NEW, None)  # ... and saves them as a preset
    (coding,) = presets(store)
    assert (coding.name, coding.fields) == ("Coding", CODING)
    assert combo_text(window) == "Coding" and chat_settings(store, chat).preset_id == coding.id
    panel.temperature.setValue(0.7)
    assert combo_text(window) == "Coding *"
    assert "Save changes to “Coding”" in entries(window)
    assert chat_settings(store, chat).sampling["temperature"] == 0.7  # the chat keeps its own change
    assert preset(store, coding.id).fields.temperature == 0.2  # the preset is as saved until saved again
    panel.temperature.setValue(0.2)
    assert combo_text(window) == "Coding"  # back to the preset's value: not modified
    panel.system_prompt.setPlainText("You write Rust.")
    assert combo_text(window) == "Coding *"
    choose(window, SAVE_CHANGES, coding.id)
    assert combo_text(window) == "Coding" and preset(store, coding.id).fields.system_prompt == "You write Rust."
    assert store.get(chat).system_prompt == "You write Rust."
    choose(window, NONE)
    assert combo_text(window) == "None" and chat_settings(store, chat).preset_id is None
    assert panel.system_prompt.toPlainText() == "You write Rust."  # None leaves the fields as they are


def test_picking_a_preset_fills_the_panel_and_a_taken_name_is_refused(qtbot, open_window):
    window = open_window()
    store, panel = window.store, window.panel
    story = save_preset(store, "Story", STORY)
    window.presets.refresh()
    chat = store.create("Chat").id
    window.chat.open(chat)
    choose(window, PRESET, story.id)
    assert panel.fields() == STORY and combo_text(window) == "Story"
    assert window.reply_settings()[0].temperature == 1.1 and window.reply_settings()[0].max_tokens == 512
    assert store.get(chat).system_prompt == "Tell stories." and store.get(chat).max_tokens == 512
    warned = []
    window.presets.warn = lambda _parent, message: warned.append(message)
    window.presets.ask_name = lambda _parent, _question, _suggested: "story"
    choose(window, SAVE_NEW)
    assert warned == ["A preset named “Story” already exists; choose another name"] and len(presets(store)) == 1
    window.presets.ask_name = lambda _parent, _question, _suggested: None  # cancelled
    choose(window, SAVE_NEW)
    assert len(presets(store)) == 1 and combo_text(window) == "Story"


def test_a_reopened_chat_shows_its_preset_and_fields_after_a_restart_too(qtbot, open_window, paths):
    window = open_window()
    store, panel = window.store, window.panel
    coding, story = save_preset(store, "Coding", CODING), save_preset(store, "Story", STORY)
    window.presets.refresh()
    first, second = store.create("First").id, store.create("Second").id
    window.chat.open(first)
    choose(window, PRESET, coding.id)
    panel.top_k.setValue(7)  # modified in this chat only
    window.chat.open(second)
    choose(window, PRESET, story.id)
    assert panel.fields() == STORY
    window.chat.open(first)
    assert combo_text(window) == "Coding *" and panel.top_k.value() == 7
    assert panel.fields() == PresetFields("You write code.", 0.2, 0.9, 7, 0.05, 2048)
    window.chat.open(second)
    assert combo_text(window) == "Story" and panel.fields() == STORY
    window.close()
    again = MainWindow(paths)
    qtbot.addWidget(again)
    again.chat.open(first)
    assert again.panel.preset.currentText() == "Coding *" and again.panel.top_k.value() == 7
    assert again.reply_settings()[0].top_k == 7 and again.panel.system_prompt.toPlainText() == "You write code."
    again.close()


def test_manage_renames_deletes_and_marks_the_default_new_chats_start_from(qtbot, open_window, paths):
    window = open_window()
    store, panel = window.store, window.panel
    coding, story = save_preset(store, "Coding", CODING), save_preset(store, "Story", STORY)
    chat = store.create("Chat").id
    window.chat.open(chat)
    window.presets.refresh()
    choose(window, PRESET, story.id)
    dialogs = []

    def manage(dialog):
        dialogs.append(dialog)
        dialog.confirm = lambda _parent, _name: True
        dialog.ask_name = lambda _parent, _question, _suggested: "Tales"
        dialog.reload(story.id)
        dialog.rename_selected()
        dialog.reload(coding.id)
        dialog.default.setChecked(True)
        assert [dialog.list.item(i).text() for i in range(dialog.list.count())] == ["Coding (default)", "Tales"]

    window.presets.run_dialog = manage
    choose(window, MANAGE)
    assert dialogs and combo_text(window) == "Tales" and [p.name for p in presets(store)] == ["Coding", "Tales"]
    window.new_chat()
    assert combo_text(window) == "Coding" and panel.fields() == CODING
    assert window.settings.temperature == 0.2 and [c.id for c in store.conversations()] == [chat]  # nothing saved yet
    window.new_chat()  # leaving the new chat saves no empty chat for the preset's prompt
    assert [c.id for c in store.conversations()] == [chat]
    assert window.reply_settings()[0].temperature == 0.2  # what Send asks first: the prompt goes with the new chat
    new = window.chat.conversation_id
    assert new is not None and store.get(new).system_prompt == "You write code." and store.get(new).max_tokens == 2048
    assert chat_settings(store, new).preset_id == coding.id

    def delete(dialog):
        dialog.confirm = lambda _parent, _name: True
        dialog.reload(coding.id)
        dialog.delete_selected()

    window.presets.run_dialog = delete
    choose(window, MANAGE)
    assert combo_text(window) == "None" and [p.name for p in presets(store)] == ["Tales"]
    assert chat_settings(store, new).preset_id is None and panel.fields() == CODING  # the chat keeps its settings
    window.new_chat()
    assert combo_text(window) == "None"  # no default any more: today's new chat
    window.close()
    again = MainWindow(paths)
    qtbot.addWidget(again)
    assert [c.id for c in again.store.conversations()] == [new, chat] and again.panel.preset.currentText() == "None"
    again.close()
