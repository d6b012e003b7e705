"""Text files attached to the message being written: reading and refusing them, the chips that show them above
the composer's text box, and the message text they become on send."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QByteArray, QMimeData, QRectF, Qt, Signal
from PySide6.QtGui import QIcon, QPainter, QPixmap
from PySide6.QtSvg import QSvgRenderer
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QWidget

from .. import theme
from ..flow_layout import FlowLayout
from ..theme_switch import follow

IMAGE_SUFFIXES = frozenset(
    {".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff", ".heic", ".heif", ".avif", ".ico"}
)
IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a")  # WebP is RIFF....WEBP (below)
MAX_FILE_BYTES = 8 * 1024 * 1024  # more text than any model's context holds: refused before it is read
# Feather's paperclip (MIT), stroked in the theme's text colour
PAPERCLIP_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="{colour}" stroke-width="2" '
    'stroke-linecap="round" stroke-linejoin="round"><path d="M21.44 11.05l-9.19 9.19a6 6 0 0 1-8.49-8.49l9.19-9.19'
    'a4 4 0 0 1 5.66 5.66l-9.2 9.19a2 2 0 0 1-2.83-2.83l8.49-8.48"/></svg>'
)


class AttachmentError(ValueError):
    """A file that cannot be attached; its message names the file and why."""


@dataclass(frozen=True)
class Attachment:
    """One attached file: its name, where it was, its text and its size on disk in bytes."""

    name: str
    path: str
    text: str
    size: int

    @property
    def label(self) -> str:
        """'notes.txt · 1.2 KB', as its chip shows it."""
        return f"{self.name} · {human_size(self.size)}"


def human_size(size: int) -> str:
    """A byte count in words: '812 B', '1.2 KB', '3.4 MB'."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def read_attachment(path: str | Path) -> Attachment:
    """The file's text as an Attachment; AttachmentError naming the file when it is a folder, an image, too
    large, unreadable or not UTF-8 text."""
    path = Path(path)
    name = path.name
    if path.is_dir():
        raise AttachmentError(f"{name} is a folder: attach the text files in it one by one")
    if path.suffix.lower() in IMAGE_SUFFIXES:
        raise AttachmentError(f"{name} is an image: the loaded model reads text only")
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise AttachmentError(
                f"{name} is {human_size(size)}: files over {human_size(MAX_FILE_BYTES)} are not attached "
                "(no model's context holds that much text)"
            )
        data = path.read_bytes()
    except OSError as error:
        raise AttachmentError(f"Cannot read {name}: {error.strerror or error}") from None
    return Attachment(name, str(path), _text_of(name, data), len(data))


def _text_of(name: str, data: bytes) -> str:
    """The bytes as text; AttachmentError when they are an image or not UTF-8 text."""
    if data.startswith(IMAGE_MAGIC) or (data[:4] == b"RIFF" and data[8:12] == b"WEBP"):
        raise AttachmentError(f"{name} is an image: the loaded model reads text only")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise AttachmentError(
            f"{name} is not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start}): only text files "
            "can be attached"
        ) from None
    if "\x00" in text:  # valid UTF-8, but binary data (or UTF-16 text)
        raise AttachmentError(f"{name} is not UTF-8 text (it holds NUL bytes): only text files can be attached")
    return text


def file_block(attachment: Attachment) -> str:
    """The file as the message carries it: a line naming it, then its text in a fenced block (the fence longer
    than any run of backticks in the text, so the text cannot close it)."""
    longest = max((len(run) for run in re.findall(r"`+", attachment.text)), default=0)
    fence = "`" * max(3, longest + 1)
    language = Path(attachment.name).suffix.lstrip(".").lower()
    body = attachment.text if attachment.text.endswith("\n") else attachment.text + "\n"
    return f"File: {attachment.name}\n{fence}{language}\n{body}{fence}"


def with_attachments(text: str, attachments: Sequence[Attachment]) -> str:
    """The message to send: the typed text, then each file's block."""
    parts = ([text] if text else []) + [file_block(a) for a in attachments]
    return "\n\n".join(parts)


class AttachmentChip(QFrame):
    """A file's name and size, with a button that removes it."""

    removeRequested = Signal(object)  # the Attachment

    def __init__(self, attachment: Attachment, parent: QWidget | None = None):
        super().__init__(parent)
        self.attachment = attachment
        self.setObjectName("attachmentChip")
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 2, 2, 2)
        row.setSpacing(2)
        self.label = QLabel(attachment.label)
        self.label.setToolTip(attachment.path)
        self.remove_button = QToolButton(objectName="link", text="×")  # type: ignore[call-arg]
        self.remove_button.setToolTip(f"Remove {attachment.name}")
        self.remove_button.setAccessibleName(f"Remove {attachment.name}")
        self.remove_button.clicked.connect(lambda: self.removeRequested.emit(self.attachment))
        row.addWidget(self.label)
        row.addWidget(self.remove_button)


class AttachmentTray(QWidget):
    """The attached files as chips, wrapped onto more lines when they do not fit one; hidden when empty."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("attachmentTray")
        self.flow = FlowLayout(self, spacing=6)
        self.chips: list[AttachmentChip] = []
        follow(self, self._restyle)
        self.setVisible(False)

    @property
    def attachments(self) -> list[Attachment]:
        """The attached files, in the order they were attached."""
        return [chip.attachment for chip in self.chips]

    def has(self, path: str) -> bool:
        """True when the file at path is attached already."""
        return any(chip.attachment.path == path for chip in self.chips)

    def add(self, attachment: Attachment) -> None:
        """Show one more file."""
        chip = AttachmentChip(attachment, self)
        chip.removeRequested.connect(self.remove)
        self.chips.append(chip)
        self.flow.add(chip)
        self._changed()

    def remove(self, attachment: Attachment) -> None:
        """Take a file off (its chip's × or a refusal)."""
        for chip in [c for c in self.chips if c.attachment == attachment]:
            self.chips.remove(chip)
            self.flow.removeWidget(chip)
            chip.deleteLater()
        self._changed()

    def clear(self) -> None:
        """No files (the message was sent, or the composer was emptied)."""
        if self.chips:
            for chip in list(self.chips):
                self.remove(chip.attachment)

    def _changed(self) -> None:
        self.setVisible(bool(self.chips))
        self.changed.emit()

    def _restyle(self) -> None:
        p = theme.palette()
        self.setStyleSheet(
            f"#attachmentChip {{ background: {p.code_bg}; border: 1px solid {p.border}; border-radius: 6px; }}"
            f" #attachmentChip QLabel {{ color: {p.text}; }}"
        )


def local_files(mime: QMimeData | None) -> list[str]:
    """The local files a drag carries (none for text, or for links to the web)."""
    if mime is None or not mime.hasUrls():
        return []
    return [url.toLocalFile() for url in mime.urls() if url.isLocalFile()]


def paperclip_icon(colour: str, ratio: float = 1.0, size: int = 18) -> QIcon:
    """The paperclip in a colour, drawn sharp at the screen's pixel ratio."""
    renderer = QSvgRenderer(QByteArray(PAPERCLIP_SVG.format(colour=colour).encode()))
    pixmap = QPixmap(int(size * ratio), int(size * ratio))
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    renderer.render(painter, QRectF(0, 0, pixmap.width(), pixmap.height()))
    painter.end()
    pixmap.setDevicePixelRatio(ratio)
    return QIcon(pixmap)
