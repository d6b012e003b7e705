"""The right-hand panel: the chat's preset, its system prompt and the sampling settings."""

from __future__ import annotations

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QLabel,
    QPlainTextEdit,
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
)

from specchat.engine.config import LIMITS, SAMPLING_FIELDS, Limit
from specchat.settings import Settings
from specchat.store.presets import PresetFields


class SettingsPanel(QFrame):
    """Edits sampling values (saved in Settings) and the system prompt (saved per conversation); the Preset combo
    at the top is filled and followed by ui/presets.py.

    Max tokens here is the open chat's own reply length, kept with the conversation (maxTokensChanged); it
    never writes Settings. A chat without its own shows the default, set in Preferences and loaded here
    through load()."""

    samplingChanged = Signal(dict)
    systemPromptChanged = Signal(str)
    maxTokensChanged = Signal(int)  # the user set this chat's own Max tokens

    def __init__(self, parent=None):
        super().__init__(parent)
        self.default_max_tokens = Settings().max_tokens  # Preferences' default, set by load()
        self.chat_max_tokens: int | None = None  # the open chat's own; None: it follows the default
        self.setObjectName("settingsPanel")
        self.setMinimumWidth(220)
        self.setMaximumWidth(320)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 14, 14, 14)
        layout.setSpacing(8)
        layout.addWidget(_heading("Preset"))
        self.preset = QComboBox(objectName="presetCombo")  # type: ignore[call-arg]
        self.preset.setToolTip("A saved system prompt and sampling settings for this chat")
        self.preset.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.preset.setMinimumContentsLength(8)  # a long name is elided, never widens the panel
        self.preset.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        layout.addWidget(self.preset)
        layout.addSpacing(6)
        layout.addWidget(_heading("System prompt"))
        self.system_prompt = QPlainTextEdit()
        self.system_prompt.setPlaceholderText("Instructions for this conversation (optional)")
        self.system_prompt.setFixedHeight(110)
        self._prompt_pending = False  # a preset's prompt shown in a new chat, emitted on flush() (the next send)
        self._prompt_timer = QTimer(self, singleShot=True, interval=400)
        self._prompt_timer.timeout.connect(lambda: self.systemPromptChanged.emit(self.system_prompt.toPlainText()))
        self.system_prompt.textChanged.connect(self._prompt_timer.start)
        layout.addWidget(self.system_prompt)
        layout.addSpacing(6)
        layout.addWidget(_heading("Sampling"))
        layout.addLayout(self._form())
        self.max_tokens_note = QLabel(wordWrap=True, objectName="footer")  # type: ignore[call-overload]
        layout.addWidget(self.max_tokens_note)
        self._explain_max_tokens()
        note = QLabel("Temperature 0 is greedy: speculation then gives exactly the target's own output.")
        note.setWordWrap(True)
        note.setObjectName("footer")
        layout.addWidget(note)
        layout.addStretch(1)

    def _form(self) -> QFormLayout:
        form = QFormLayout()
        form.setSpacing(6)
        self.temperature = limited_spin_box(LIMITS["temperature"])
        self.top_p = limited_spin_box(LIMITS["top_p"])
        self.top_k = limited_spin_box(LIMITS["top_k"])
        self.min_p = limited_spin_box(LIMITS["min_p"])
        self.max_tokens = limited_spin_box(LIMITS["max_tokens"])
        self.max_tokens_label = QLabel("Max tokens")
        for label, box in (
            (QLabel("Temperature"), self.temperature),
            (QLabel("Top-p"), self.top_p),
            (QLabel("Top-k"), self.top_k),
            (QLabel("Min-p"), self.min_p),
            (self.max_tokens_label, self.max_tokens),
        ):
            form.addRow(label, box)
            label.setBuddy(box)
            if box is not self.max_tokens:
                box.valueChanged.connect(lambda _v: self.samplingChanged.emit(self.values()))
        self.max_tokens.valueChanged.connect(self._max_tokens_set)
        return form

    def _max_tokens_set(self, value: int) -> None:
        self.chat_max_tokens = int(value)
        self._explain_max_tokens()
        self.maxTokensChanged.emit(int(value))

    def show_chat_max_tokens(self, value: int | None) -> None:
        """Show a chat's own Max tokens (None: the default) without emitting a change."""
        self.chat_max_tokens = value
        self._set_quietly(self.max_tokens, self.default_max_tokens if value is None else value)
        self._explain_max_tokens()

    def _explain_max_tokens(self) -> None:
        """The note and tooltip say whether the value is this chat's own or the default."""
        default = f"{self.default_max_tokens:,}"
        if self.chat_max_tokens is not None:
            note = f"Max tokens is this chat's own; new chats start at {default} (Preferences)."
        else:
            note = f"Max tokens is the default ({default}, Preferences); a change here is kept for this chat only."
        self.max_tokens_note.setText(note)
        tip = "The longest reply in this chat, kept with it. " + note
        for widget in (self.max_tokens, self.max_tokens_label):
            widget.setToolTip(tip)

    def values(self) -> dict:
        """The sampling settings as Settings field values (not max tokens: that one is the chat's own)."""
        return {
            "temperature": self.temperature.value(),
            "top_p": self.top_p.value(),
            "top_k": self.top_k.value(),
            "min_p": self.min_p.value(),
        }

    def reply_values(self) -> dict:
        """What the next reply samples with: the sampling settings and this chat's max tokens."""
        return self.values() | {"max_tokens": self.max_tokens.value()}

    def load(self, settings: Settings) -> None:
        """Show the saved sampling values and take the default Max tokens (shown unless the chat has its own),
        without emitting changes."""
        for name in SAMPLING_FIELDS:
            if name != "max_tokens":
                self._set_quietly(getattr(self, name), getattr(settings, name))
        self.default_max_tokens = settings.max_tokens
        self.show_chat_max_tokens(self.chat_max_tokens)

    @staticmethod
    def _set_quietly(box: QSpinBox | QDoubleSpinBox, value: float) -> None:
        box.blockSignals(True)
        box.setValue(value)  # type: ignore[arg-type]  # a QSpinBox's setting is an int field's value
        box.blockSignals(False)

    def flush(self, typed_only: bool = False) -> None:
        """Emit a pending system prompt edit now (before a reply starts); typed_only: only one the user typed, not a
        preset's prompt shown in a new chat (leaving that chat must not save it as an empty one)."""
        if self._prompt_timer.isActive() or (self._prompt_pending and not typed_only):
            self._prompt_timer.stop()
            self._prompt_pending = False
            self.systemPromptChanged.emit(self.system_prompt.toPlainText())

    def set_system_prompt(self, text: str) -> None:
        """Show a conversation's system prompt without emitting a change."""
        self.system_prompt.blockSignals(True)
        self.system_prompt.setPlainText(text)
        self.system_prompt.blockSignals(False)
        self._prompt_timer.stop()
        self._prompt_pending = False

    def fields(self) -> PresetFields:
        """What the panel shows now, as a preset's fields."""
        text, sampling = self.system_prompt.toPlainText(), self.values()
        return PresetFields(text, **sampling, max_tokens=int(self.max_tokens.value()))

    def fill(self, values: PresetFields, prompt_now: bool = True) -> None:
        """Show a preset's fields as if typed: samplingChanged once, maxTokensChanged (the chat's own from now on)
        and systemPromptChanged, now or (prompt_now False: a chat not saved yet) on the next flush()."""
        for name, value in values.sampling().items():
            self._set_quietly(getattr(self, name), value)
        self.samplingChanged.emit(self.values())
        self._set_quietly(self.max_tokens, values.max_tokens)
        self._max_tokens_set(int(self.max_tokens.value()))
        self.set_system_prompt(values.system_prompt)
        self._prompt_pending = True
        if prompt_now:
            self.flush()

    def show_sampling(self, sampling: dict[str, float]) -> None:
        """Show a chat's own sampling values and emit them once (what the next reply samples with)."""
        for name, value in sampling.items():
            self._set_quietly(getattr(self, name), value)
        self.samplingChanged.emit(self.values())


def _heading(text: str) -> QLabel:
    label = QLabel(text, objectName="roleLabel")  # type: ignore[call-overload]
    return label


def limited_spin_box(limit: Limit, **kwargs) -> QSpinBox | QDoubleSpinBox:
    """A spin box whose range and step are the setting's Limit (its off value shown as "off")."""
    box: QSpinBox | QDoubleSpinBox
    if limit.integer:
        whole = dict(minimum=int(limit.spin_min), maximum=int(limit.high), singleStep=int(limit.step))
        box = QSpinBox(**(whole | kwargs))
    else:
        options = dict(minimum=limit.spin_min, maximum=limit.high, singleStep=limit.step, decimals=limit.decimals)
        box = QDoubleSpinBox(**(options | kwargs))
    if limit.off is not None and limit.off_means == "off":
        box.setSpecialValueText("off")
    return box
