"""Keep windows on their screen: sizes clamped to the available area (menu bar and dock excluded), frame included."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QRect, QSize
from PySide6.QtWidgets import QWidget

FRAME_GUESS = QSize(0, 32)  # a title bar, until the window is shown and its frame is known


def available(widget: QWidget) -> QRect | None:
    """The available geometry of the widget's screen (the primary one before it is shown), or None."""
    screen = widget.screen()
    return screen.availableGeometry() if screen is not None else None


def frame_extra(window: QWidget) -> QSize:
    """What the window frame adds to the window's size (a guess before the window is shown)."""
    if not window.isVisible():
        return FRAME_GUESS
    frame, inner = window.frameGeometry().size(), window.geometry().size()
    return QSize(max(0, frame.width() - inner.width()), max(0, frame.height() - inner.height()))


def largest_size(window: QWidget, screen: QRect) -> QSize:
    """The biggest window size whose frame fits the screen's available area."""
    extra = frame_extra(window)
    return QSize(screen.width() - extra.width(), screen.height() - extra.height())


def fit_to_screen(window: QWidget, size: QSize | None = None, screen: QRect | None = None) -> None:
    """Resize to size (default: the current size), shrunk to the screen, and move the frame onto it."""
    screen = screen or available(window)
    size = size or window.size()
    if screen is None:
        window.resize(size)
        return
    room = largest_size(window, screen)
    minimum = window.minimumSize()
    window.resize(
        max(min(size.width(), room.width()), minimum.width()), max(min(size.height(), room.height()), minimum.height())
    )
    keep_on_screen(window, screen)


def keep_on_screen(window: QWidget, screen: QRect) -> None:
    """Move the window so its frame lies inside the screen's available area (top-left wins)."""
    extra = frame_extra(window)
    width, height = window.width() + extra.width(), window.height() + extra.height()
    frame = window.frameGeometry()
    x = min(max(frame.x(), screen.left()), max(screen.left(), screen.left() + screen.width() - width))
    y = min(max(frame.y(), screen.top()), max(screen.top(), screen.top() + screen.height() - height))
    if (x, y) != (frame.x(), frame.y()):
        window.move(x, y)


class RefitWhenFramed(QObject):
    """Fits a window to its screen again whenever its frame changes size: a window manager adds the frame
    after the window is shown, so a fit made before that leaves the frame's border off the screen."""

    def __init__(self, window: QWidget):
        super().__init__(window)
        self.window = window
        self.frame = frame_extra(window)
        window.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if event.type() in (QEvent.Type.Move, QEvent.Type.Resize, QEvent.Type.Show) and self.window.isVisible():
            frame = frame_extra(self.window)
            if frame != self.frame:
                self.frame = frame
                fit_to_screen(self.window)
        return False
