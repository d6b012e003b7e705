"""What an empty conversation shows: a title, a hint that depends on whether a model is ready, and Open Models…."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QPushButton, QVBoxLayout, QWidget

from .markdown_view import body_font

HINT_WIDTH = 560
HINT_MARGIN = 16


class EmptyState(QWidget):
    """What an empty conversation shows: what to do next."""

    modelsRequested = Signal()  # open the Models window

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 120, 0, 0)
        layout.setSpacing(10)
        title = QLabel("Start a conversation", objectName="emptyTitle")  # type: ignore[call-overload]
        title.setFont(body_font(7))
        self.hint = QLabel(objectName="emptyHint")  # type: ignore[call-overload]
        self.hint.setFont(body_font(0))
        self.hint.setWordWrap(True)
        self.hint.setFixedWidth(HINT_WIDTH)  # a fixed width lets the label compute its wrapped height
        for label in (title, self.hint):
            label.setAlignment(Qt.AlignmentFlag.AlignHCenter)
            layout.addWidget(label, 0, Qt.AlignmentFlag.AlignHCenter)
        self.models_button = QPushButton("Open Models…", objectName="primary")  # type: ignore[call-overload]
        self.models_button.setToolTip(
            "Models already on this machine (Hugging Face cache, LM Studio, your "
            "folders) and models to download (Ctrl+Shift+M)"
        )
        self.models_button.clicked.connect(self.modelsRequested)
        layout.addWidget(self.models_button, 0, Qt.AlignmentFlag.AlignHCenter)
        self.set_model_state(False)

    def set_model_state(self, loaded: bool, name: str = "") -> None:
        """The hint depends on whether a model is ready."""
        if loaded:
            self.hint.setText(
                f"{name} is ready. Type a message below and send it "
                "(Enter, or the key set in Preferences).\n\n"
                "Choose a drafter (Draft model, MTP, Prompt lookup, DFlash or Auto) and the draft length in the Speculation menu; "
                "View ▸ Colour drafted tokens shows which words the drafter got right."
            )
        else:
            self.hint.setText(
                "No model is loaded. Open Models… to pick one already on this machine (the "
                "Hugging Face cache, LM Studio, your folders) or to download one; or choose a "
                "target in the toolbar and press Load.\n\n"
                "Pair it with a small draft model of the same family to see "
                "speculative decoding at work."
            )
        self.models_button.setVisible(not loaded)
        self._fit_hint()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().resizeEvent(event)
        self._fit_hint()

    def _fit_hint(self) -> None:
        """The hint wraps at HINT_WIDTH, or narrower in a narrow chat column (beside a dock on a laptop)."""
        width = max(200, min(HINT_WIDTH, self.width() - 2 * HINT_MARGIN)) if self.width() > 0 else HINT_WIDTH
        self.hint.setFixedWidth(width)
        self.hint.setMinimumHeight(self.hint.heightForWidth(width))
        self.updateGeometry()
