"""A read-only text view that renders Markdown, fits its height to its content, offers a
copy link per code block (it says Copied for a moment once used), and can tint characters that came
from accepted drafts."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager

from PySide6.QtCore import QSize, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import (
    QColor,
    QDesktopServices,
    QFont,
    QFontDatabase,
    QGuiApplication,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextFormat,
)
from PySide6.QtWidgets import QFrame, QSizePolicy, QTextBrowser

from .. import theme
from .highlight import colour_spans
from .markdown_source import COPIED_LABEL, COPIED_MS, COPY_LABEL, copy_index, prepare_markdown
from .trace import RejectedSpot, align


class MarkdownView(QTextBrowser):
    """Markdown text that grows with its content; emits copied(code) when a copy link is used."""

    copied = Signal(str)

    def __init__(self, parent=None, muted: bool = False):
        super().__init__(parent)
        self.code_blocks: list[str] = []
        self.muted = muted
        self._cursor: QTextCursor | None = None
        self._copied: int | None = None  # the code block whose link says Copied for a moment
        self._copied_reset = QTimer(self, singleShot=True, interval=COPIED_MS)
        self._copied_reset.timeout.connect(self._unmark_copied)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setOpenLinks(False)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.viewport().setAutoFillBackground(False)
        self.setStyleSheet("QTextBrowser { background: transparent; }")
        self.document().setDocumentMargin(2)
        self.document().setUndoRedoEnabled(False)  # read-only: recording format edits only costs time
        self.anchorClicked.connect(self._on_anchor)
        # Height is fitted once per update (not on contentsChanged: every format change would relayout)

    def set_markdown_text(
        self, text: str, draft_flags: Sequence[bool] | None = None, rejections: dict[int, RejectedSpot] | None = None
    ) -> None:
        """Render text; draft_flags[i] tints source char i, rejections mark source offsets."""
        prepared = prepare_markdown(text)
        self.code_blocks = prepared.code_blocks
        self.document().setMarkdown(prepared.markdown)
        with self._edit_block():
            self._style_blocks()
            if draft_flags is not None or rejections:
                mapping = [
                    prepared.origin[m] if m is not None else None
                    for m in align(prepared.markdown, self.document().toPlainText())
                ]
                self._overlay(mapping, draft_flags, rejections or {})
        if self._copied is not None:
            self._relabel(self._copied, COPIED_LABEL)
        self._fit_height()

    def set_plain(
        self, text: str, draft_flags: Sequence[bool] | None = None, rejections: dict[int, RejectedSpot] | None = None
    ) -> None:
        """Show text as is (thinking), with the same tinting as Markdown."""
        self.code_blocks = []
        self.document().setPlainText(text)
        with self._edit_block():
            if self.muted:
                self._apply(0, len(text), _muted_format())
            if draft_flags is not None or rejections:
                self._overlay(list(range(len(text))), draft_flags, rejections or {})
        self._fit_height()

    # --- layout ---

    def sizeHint(self) -> QSize:
        return QSize(200, self._content_height())

    def resizeEvent(self, event):
        super().resizeEvent(event)
        self._fit_height()

    def _content_height(self) -> int:
        self.document().setTextWidth(max(50, self.viewport().width()))
        return int(self.document().size().height()) + 4

    def _fit_height(self) -> None:
        height = self._content_height()
        if self.height() != height:
            self.setFixedHeight(height)

    # --- formatting ---

    @contextmanager
    def _edit_block(self):
        """One cursor and one edit block for a batch of format changes (one relayout, not hundreds)."""
        self._cursor = QTextCursor(self.document())
        self._cursor.beginEditBlock()
        try:
            yield
        finally:
            self._cursor.endEditBlock()
            self._cursor = None

    def _style_blocks(self) -> None:
        """Code blocks, copy links and inline code get their look (each positions the cursor itself)."""
        block = self.document().begin()
        code_run: list = []  # the blocks (lines) of the fenced code block being walked
        while block.isValid():
            if block.blockFormat().hasProperty(QTextFormat.Property.BlockCodeFence):
                code_run.append(block)
            else:
                if code_run:
                    self._style_code(code_run)
                    code_run = []
                if block.text() and _link_index(block) is not None:
                    self._style_link(block)
                else:
                    self._style_inline_code(block)
            block = block.next()
        if code_run:
            self._style_code(code_run)

    def _style_code(self, blocks: list) -> None:
        """A fenced code block: shaded, monospace, its long lines wrapped inside it, then coloured."""
        code = QTextCharFormat()
        code.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        code.setFontPointSize(max(9.0, self.font().pointSizeF() - 1))
        for block in blocks:
            fmt = block.blockFormat()
            fmt.setBackground(QColor(theme.CODE_BG))
            fmt.setLeftMargin(8)
            fmt.setNonBreakableLines(False)  # a long line wraps in the block instead of widening the card
            cursor = self._select_block(block)
            cursor.setBlockFormat(fmt)
            cursor.mergeCharFormat(code)
        self._highlight(blocks)

    def _style_link(self, block) -> None:
        """A copy link: small, in the accent colour, at the right edge just above its code block."""
        right = QTextBlockFormat(block.blockFormat())
        right.setAlignment(Qt.AlignmentFlag.AlignRight)
        right.setBottomMargin(0)
        cursor = self._select_block(block)
        cursor.setBlockFormat(right)
        cursor.mergeCharFormat(self._link_format())

    def _link_format(self) -> QTextCharFormat:
        small = QTextCharFormat()
        small.setFontPointSize(max(8.0, self.font().pointSizeF() - 2))
        small.setForeground(QColor(theme.ACCENT))
        small.setFontUnderline(False)
        return small

    def _select_block(self, block) -> QTextCursor:
        """The edit cursor, selecting the block's text."""
        cursor = self._cursor
        assert cursor is not None  # styled inside _edit_block()
        cursor.setPosition(block.position())
        cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
        return cursor

    def _highlight(self, blocks: list) -> None:
        """Colour one fenced code block (its lines are consecutive blocks) with Pygments."""
        language = blocks[0].blockFormat().property(QTextFormat.Property.BlockCodeLanguage) or ""
        starts, lines = [], []
        offset = 0
        for block in blocks:
            starts.append((offset, block.position()))
            lines.append(block.text())
            offset += len(block.text()) + 1
        for span in colour_spans("\n".join(lines), str(language), dark=theme.is_dark()):
            fmt = QTextCharFormat()
            fmt.setForeground(QColor(span.colour))
            if span.bold:
                fmt.setFontWeight(QFont.Weight.Bold)
            if span.italic:
                fmt.setFontItalic(True)
            for (code_start, doc_start), line in zip(starts, lines):  # a token may span lines
                lo, hi = max(span.start, code_start), min(span.end, code_start + len(line))
                if lo < hi:
                    self._apply(doc_start + lo - code_start, doc_start + hi - code_start, fmt)

    def _style_inline_code(self, block) -> None:
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if fragment.charFormat().fontFixedPitch():
                fmt = QTextCharFormat()
                fmt.setBackground(QColor(theme.CODE_BG))
                self._apply(fragment.position(), fragment.position() + fragment.length(), fmt)
            it += 1

    def _overlay(self, mapping: list[int | None], draft_flags, rejections: dict[int, RejectedSpot]) -> None:
        """Tint shown characters whose source came from a draft; mark rejected spots with a tooltip."""
        tint = QTextCharFormat()
        tint.setBackground(QColor(theme.DRAFT_BG))
        run_start = None
        for i, src in enumerate(mapping + [None]):
            flagged = src is not None and draft_flags is not None and src < len(draft_flags) and draft_flags[src]
            if flagged and run_start is None:
                run_start = i
            elif not flagged and run_start is not None:
                self._apply(run_start, i, tint)
                run_start = None
        shown = {src: i for i, src in enumerate(mapping) if src is not None}
        for offset, spot in rejections.items():
            at = shown.get(offset)
            if at is None:
                continue
            mark = QTextCharFormat()
            mark.setUnderlineStyle(QTextCharFormat.UnderlineStyle.DotLine)  # a wave reads as a spelling mistake
            mark.setUnderlineColor(QColor(theme.REJECT))
            mark.setToolTip(spot.tooltip)
            self._apply(at, at + 1, mark)

    def _apply(self, start: int, end: int, fmt: QTextCharFormat) -> None:
        cursor = self._cursor or QTextCursor(self.document())
        cursor.setPosition(start)
        cursor.setPosition(min(end, self.document().characterCount() - 1), QTextCursor.MoveMode.KeepAnchor)
        cursor.mergeCharFormat(fmt)

    def _on_anchor(self, url: QUrl) -> None:
        index = copy_index(url.toString())
        if index is not None and index < len(self.code_blocks):
            QGuiApplication.clipboard().setText(self.code_blocks[index])
            self._mark_copied(index)
            self.copied.emit(self.code_blocks[index])
        elif url.scheme() in ("http", "https"):
            QDesktopServices.openUrl(url)

    # --- copy feedback ---

    def _mark_copied(self, index: int) -> None:
        """The link of code block `index` says Copied for COPIED_MS (kept across streaming redraws)."""
        self._unmark_copied()
        self._copied = index
        self._relabel(index, COPIED_LABEL)
        self._copied_reset.start()

    def _unmark_copied(self) -> None:
        if self._copied is not None:
            self._relabel(self._copied, COPY_LABEL)
            self._copied = None

    def _relabel(self, index: int, label: str) -> None:
        """Change the text of code block `index`'s copy link, keeping its link and look."""
        block = self.document().begin()
        while block.isValid() and _link_index(block) != index:
            block = block.next()
        if block.isValid():
            cursor = QTextCursor(block)
            cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
            cursor.insertText(label, block.begin().fragment().charFormat())


def _link_index(block) -> int | None:
    """The code block number of the copy link that is this block, else None."""
    it = block.begin()
    return None if it.atEnd() else copy_index(it.fragment().charFormat().anchorHref())


def _muted_format() -> QTextCharFormat:
    fmt = QTextCharFormat()
    fmt.setForeground(QColor(theme.MUTED))
    fmt.setFontItalic(False)
    return fmt


def body_font(size_delta: float = 0.0) -> QFont:
    """The app's reading font, a touch larger than the system default."""
    font = QFont(QGuiApplication.font())
    font.setPointSizeF(font.pointSizeF() + 1 + size_delta)
    return font
