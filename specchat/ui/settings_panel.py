"""The right-hand panel: the conversation's system prompt and the sampling settings."""

from __future__ import annotations

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QDoubleSpinBox, QFormLayout, QFrame, QLabel, QPlainTextEdit, QSpinBox, QVBoxLayout

from specchat.engine.config import LIMITS, SAMPLING_FIELDS, Limit
from specchat.settings import Settings


class SettingsPanel(QFrame):
    """Edits sampling values (saved in Settings) and the system prompt (saved per conversation).

    Max tokens here is the reply length for this chat, not the default: changing it never writes
    Settings (the default is set in Preferences, which loads it here through load())."""

    samplingChanged = Signal(dict)
    systemPromptChanged = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("settingsPanel")
        self.setMinimumWidth(220)
        self.setMaximumWidth(320)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 14, 14, 14)
        layout.setSpacing(8)
        layout.addWidget(_heading("System prompt"))
        self.system_prompt = QPlainTextEdit()
        self.system_prompt.setPlaceholderText("Instructions for this conversation (optional)")
        self.system_prompt.setFixedHeight(110)
        self._prompt_timer = QTimer(self, singleShot=True, interval=400)
        self._prompt_timer.timeout.connect(lambda: self.systemPromptChanged.emit(self.system_prompt.toPlainText()))
        self.system_prompt.textChanged.connect(self._prompt_timer.start)
        layout.addWidget(self.system_prompt)
        layout.addSpacing(6)
        layout.addWidget(_heading("Sampling"))
        layout.addLayout(self._form())
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
        for label, box in (
            ("Temperature", self.temperature),
            ("Top-p", self.top_p),
            ("Top-k", self.top_k),
            ("Min-p", self.min_p),
            ("Max tokens", self.max_tokens),
        ):
            form.addRow(label, box)
            if box is not self.max_tokens:
                box.valueChanged.connect(lambda _v: self.samplingChanged.emit(self.values()))
        self.max_tokens.setToolTip("The longest reply in this chat; the default for new windows is in Preferences")
        return form

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
        """Show the saved values (max tokens: the default) without emitting changes."""
        for name in SAMPLING_FIELDS:
            box = getattr(self, name)
            box.blockSignals(True)
            box.setValue(getattr(settings, name))
            box.blockSignals(False)

    def flush(self) -> None:
        """Emit a pending system prompt edit now (before a reply starts)."""
        if self._prompt_timer.isActive():
            self._prompt_timer.stop()
            self.systemPromptChanged.emit(self.system_prompt.toPlainText())

    def set_system_prompt(self, text: str) -> None:
        """Show a conversation's system prompt without emitting a change."""
        self.system_prompt.blockSignals(True)
        self.system_prompt.setPlainText(text)
        self.system_prompt.blockSignals(False)
        self._prompt_timer.stop()


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
