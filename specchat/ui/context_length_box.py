"""The Preferences' context length control: the model's maximum, a common size, or a custom number of tokens."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QWidget

from specchat.engine.config import LIMITS

from .settings_panel import limited_spin_box

COMMON_SIZES = (4096, 8192, 16384, 32768, 131072)
MODEL_MAXIMUM = "Model's maximum"
MAXIMUM, CUSTOM = 0, -1  # the items' data besides the common sizes
CONTEXT_TIP = (
    "The most tokens a chat may hold, its prompt and the reply together. A message that would not fit is not "
    "sent, and a reply stops when the context is full. A model that holds fewer tokens uses its own maximum. "
    "MLX's cache grows as the chat does: this caps the memory it may grow to; it reserves nothing."
)


class ContextLengthBox(QWidget):
    """A choice of the model's maximum, a common size or Custom (a spin box shown beside it)."""

    def __init__(self, value: int | None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setToolTip(CONTEXT_TIP)
        self.choice = QComboBox()
        self.choice.setObjectName("contextLength")
        self.choice.addItem(MODEL_MAXIMUM, MAXIMUM)
        for size in COMMON_SIZES:
            self.choice.addItem(f"{size:,} tokens", size)
        self.choice.addItem("Custom…", CUSTOM)
        self.custom = limited_spin_box(LIMITS["context_length"], suffix=" tokens")
        self.custom.setObjectName("contextLengthCustom")
        self.custom.setGroupSeparatorShown(True)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.choice)
        row.addWidget(self.custom)
        row.addStretch(1)
        self.choice.currentIndexChanged.connect(self._show_custom)
        self.set_value(value)

    def set_value(self, value: int | None) -> None:
        """Show a setting: None is the model's maximum; a size not offered is Custom."""
        data = MAXIMUM if value is None else value if value in COMMON_SIZES else CUSTOM
        if data == CUSTOM:
            self.custom.setValue(int(value or LIMITS["context_length"].low))
        self.choice.setCurrentIndex(self.choice.findData(data))
        self._show_custom()

    def value(self) -> int | None:
        """The chosen context length; None for the model's maximum."""
        data = int(self.choice.currentData())
        if data == CUSTOM:
            return int(self.custom.value())
        return None if data == MAXIMUM else data

    def _show_custom(self) -> None:
        self.custom.setVisible(self.choice.currentData() == CUSTOM)
