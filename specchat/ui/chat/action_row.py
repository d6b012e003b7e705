"""A card's action links (Copy, Edit, Regenerate, …): right-aligned, and wrapped onto more lines when the
card is too narrow for one, so no link is ever cut off."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtWidgets import QSizePolicy, QWidget

from ..flow_layout import FlowLayout

SPACING = 6


class ActionRow(QWidget):
    """The links of one card, right-aligned, in as many lines as its width needs."""

    def __init__(self, widgets: Iterable[QWidget], parent: QWidget | None = None):
        super().__init__(parent)
        layout = FlowLayout(self, SPACING, right_aligned=True)
        for widget in widgets:
            layout.addWidget(widget)
        policy = QSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)
