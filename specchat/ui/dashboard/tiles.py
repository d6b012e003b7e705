"""The row of headline figures above the dashboard's charts."""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QPainter, QTextLayout, QTextOption
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QSizePolicy, QVBoxLayout

from specchat.tuning.reference import FASTER, SLOWER, compare
from specchat.ui.chat.footer import EARLY_STOP_WHY, MODE_NAMES, early_stop_text

from .. import theme
from ..theme_switch import follow

DASH = "—"
DETAIL_LINES = 2  # a tile's detail shows at most this many lines, the last elided: every tile keeps one height
NBSP = "\u00a0"  # keeps a number with its unit (and a short phrase together) when a tile's line wraps
VERDICT_COLORS = {FASTER: "#1f9d55", SLOWER: theme.REJECT}  # within noise: the tile's grey
TILE_HELP = {
    "speed": "Decode speed: tokens per second after the first token. While a reply streams: the rolling rate over "
    "the last rounds; after it: the reply's generated tokens over the time from the end of prompt "
    "processing to its last token (the engine's clock).",
    "vs_plain": "The last reply's decode speed divided by plain decoding (speculation off) on the same target with "
    "the same sampling settings and power source, timed by the same clock: this session's plain "
    "replies of comparable context length when there are any, else a measurement. Green: faster "
    "beyond the noise; red: slower beyond it; grey: within noise (or a stale reference). The band is "
    "ratio × (1 ± noise), noise = max(5%, 2 × the spread (CV) of the plain replies), 5% with fewer "
    "than 3.",
    "acceptance": "Share of drafted tokens the target accepted, over the rounds of the last reply ( — when nothing "
    "was drafted). Under Auto K, how many drafting rounds stopped early, at the drafter's median confidence "
    "(its top-1 probability) where they stopped.",
    "per_round": "Accepted drafted tokens per speculative round of the last reply (each round also adds one token "
    "of the target's own).",
    "memory": "MLX active memory now (mx.get_active_memory), with the peak since the reply started and the "
    "loaded weights' size; below, MLX's buffer cache.",
    "power": "The power source and battery level read from the OS (pmset on macOS; psutil / sysfs elsewhere), "
    "and whether low-power mode is on: speeds on battery or low power are not comparable.",
}


def tile_style() -> str:
    """The tile's style sheet in the current palette."""
    return (
        f"StatTile {{ background: {theme.SURFACE}; border: 1px solid {theme.BORDER}; border-radius: 10px; }}"
        f" QLabel#tileTitle {{ color: {theme.MUTED}; font-size: 11px; font-weight: 600; }}"
        f" QLabel#tileValue {{ color: {theme.TEXT}; font-size: 21px; font-weight: 600; }}"
        f" QLabel#tileSub {{ color: {theme.MUTED}; font-size: 11px; }}"
    )


class DetailLabel(QLabel):
    """A tile's detail line: wrapped over at most DETAIL_LINES lines, the last one elided with '…' (the whole
    text is in the tile's tooltip), so a long detail never makes its tile, or its row of tiles, taller."""

    def __init__(self, text: str = "", parent=None, **kwargs):
        super().__init__(text, parent, **kwargs)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)

    def _height(self) -> int:
        return DETAIL_LINES * self.fontMetrics().lineSpacing()

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        return QSize(self.fontMetrics().averageCharWidth() * 12, self._height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return QSize(0, self._height())

    def shown_lines(self, width: int | None = None) -> list[str]:
        """The lines drawn at this width (the label's own by default), the last elided when the text goes on."""
        width = max(self.contentsRect().width() if width is None else width, 1)
        text = self.text()
        layout = QTextLayout(text, self.font())
        option = QTextOption()
        option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        layout.setTextOption(option)
        layout.beginLayout()
        lines: list[str] = []
        while len(lines) < DETAIL_LINES:
            line = layout.createLine()
            if not line.isValid():
                break
            line.setLineWidth(width)
            start = line.textStart()
            if len(lines) == DETAIL_LINES - 1:  # the last line shown takes the rest, elided
                rest = text[start:].strip()
                lines.append(self.fontMetrics().elidedText(rest, Qt.TextElideMode.ElideRight, width))
            else:
                lines.append(text[start : start + line.textLength()].rstrip())
        layout.endLayout()
        return lines

    def is_elided(self) -> bool:
        """True when the text does not fit in DETAIL_LINES lines and shows shortened."""
        return any(line.endswith("…") for line in self.shown_lines()) and not self.text().endswith("…")

    def paintEvent(self, event) -> None:  # noqa: N802
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        rect, step = self.contentsRect(), self.fontMetrics().lineSpacing()
        align = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop
        for row, line in enumerate(self.shown_lines(rect.width())):
            painter.drawText(QRect(rect.left(), rect.top() + row * step, rect.width(), step), int(align), line)


class StatTile(QFrame):
    """A title, one large value and a line of detail."""

    def __init__(self, title: str, accent: str | None, parent=None):
        super().__init__(parent)
        self.accent = accent  # the edge's colour; None: the theme's border (no verdict, nothing to say)
        follow(self, self._restyle)
        accent_bar = QFrame(objectName="tileAccent")  # type: ignore[call-arg]
        accent_bar.setFixedWidth(4)
        self.title = QLabel(title.upper(), objectName="tileTitle")  # type: ignore[call-overload]
        self.value = QLabel(DASH, objectName="tileValue")  # type: ignore[call-overload]
        self.help = ""  # what the figure measures and how (the tooltip's first part)
        self.sub = DetailLabel("", objectName="tileSub")
        self.setMinimumHeight(84)  # room for a two-line detail
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)  # one height, whatever it says
        text = QVBoxLayout()
        text.setSpacing(1)
        for label in (self.title, self.value, self.sub):
            text.addWidget(label)
        text.addStretch(1)
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 8, 8, 8)
        row.setSpacing(8)
        row.addWidget(accent_bar)
        row.addLayout(text, 1)

    def _restyle(self) -> None:
        edge = self.accent or theme.BORDER
        self.setStyleSheet(tile_style() + f" QFrame#tileAccent {{ background: {edge}; border-radius: 2px; }}")

    def set_accent(self, color: str | None) -> None:
        """Colour the tile's edge (None: the theme's border)."""
        if color != self.accent:
            self.accent = color
            self._restyle()

    def set(self, value: str, sub: str = "", color: str | None = None, detail: str = "", note: str = "") -> None:
        """Show a value (in a colour, else the usual one) and its detail line; `detail` (technical: what the
        OS reported) and `note` (what the short line leaves out) go in the tooltip only."""
        self.value.setText(value)
        self.value.setStyleSheet(f"color: {color};" if color else "")
        self.sub.setText(sub)
        now = f"{self.title.text().title()}: {value}" + (f" ({sub.replace(NBSP, ' ')})" if sub else "")
        if note:
            now += f"\n{note}"
        if detail:
            now += f"\nReported: {detail}"
        self.setToolTip(f"{self.help}\n\n{now}" if self.help else now)


def unbroken(*parts: str) -> str:
    """Parts joined by ' · ', each kept on one line (a tile wraps between parts only)."""
    return " · ".join(part.replace(" ", NBSP) for part in parts if part)


def plural(count: float, word: str) -> str:
    """A whole count and its word, singular for one: '1 round', '3 rounds'."""
    n = int(round(count))
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def mode_words(mode: str) -> str:
    """A reply's mode as the menus name it ('plain decoding' for speculation off), never the raw key."""
    return "plain decoding" if mode == "baseline" else MODE_NAMES.get(mode, mode)


def power_words(source: str | None, percent: float | None = None) -> str:
    """A power source in plain words: 'on mains power', 'on battery 80%', 'power source unknown'."""
    shown = f" {percent:.0f}%" if percent is not None and percent == percent else ""
    if source == "ac":
        return "on mains power" + (f", battery{shown}" if shown else "")
    if source == "battery":
        return "on battery" + shown
    return "power source unknown"


def fmt_rate(tps: float | None) -> str:
    """Tokens per second with one decimal, or a dash."""
    return DASH if tps is None or tps != tps else f"{tps:.1f} tok/s"


def fmt_pct(fraction: float | None) -> str:
    """A fraction as a whole percent, or a dash."""
    return DASH if fraction is None or fraction != fraction else f"{fraction * 100:.0f}%"


def fmt_gb(n_bytes: float | None) -> str:
    """Bytes as GB with two decimals below 10 GB, one above; a dash when unknown."""
    if n_bytes is None or n_bytes != n_bytes:
        return DASH
    gb = n_bytes / 1e9
    return f"{gb:.2f} GB" if gb < 10 else f"{gb:.1f} GB"


def _speed(dash) -> tuple[float | None, str]:
    """The headline speed: rolling while rounds come in, else the last reply's decode speed."""
    if dash.generating and len(dash.rounds):
        return float(dash.rounds.rolling_tokens_per_s()[-1]), f"rolling, last {plural(dash.rounds.window, 'round')}"
    if dash.last_stats is not None and not dash.generating:
        return dash.last_stats.decode_tokens_per_s, f"last {dash.source_name} ({mode_words(dash.last_stats.mode)})"
    return None, "generating…" if dash.generating else "no reply yet"


def fill_tiles(dash) -> None:
    """Write the dashboard's current figures into its tiles."""
    tiles = dash.tiles
    for name, tile in tiles.items():
        tile.help = TILE_HELP.get(name, "")
    speed, speed_note = _speed(dash)
    tiles["speed"].set(fmt_rate(speed), speed_note)
    _fill_vs_plain(tiles["vs_plain"], dash, speed)
    _fill_rounds(tiles, dash)
    _fill_memory(tiles["memory"], dash.last_memory, dash.weights_bytes)
    _fill_power(tiles["power"], dash.last_power)


def _fill_rounds(tiles: dict[str, StatTile], dash) -> None:
    """Acceptance and accepted per drafting round, from the followed generation's rounds (the charts' own):
    Auto K's plain bursts are rounds of the same list, so their count is never negative."""
    figures = dash.round_figures()
    if not figures.rounds:
        tiles["acceptance"].set(DASH, "no drafts yet")
        tiles["per_round"].set(DASH, "no rounds yet")
        return
    short, note = _early_stops(dash.confidence)
    drafted = unbroken(f"{figures.accepted} of {figures.drafted} drafted")
    tiles["acceptance"].set(fmt_pct(figures.acceptance), " · ".join(p for p in (drafted, short) if p), note=note)
    if figures.per_round is None:
        tiles["per_round"].set(DASH, f"no drafting rounds ({plural(figures.plain, 'plain round')})")
    elif figures.plain:
        over = f"over {plural(figures.drafting, 'drafting round')} (+{figures.plain} plain)"
        tiles["per_round"].set(f"{figures.per_round:.2f}", over)
    else:
        tiles["per_round"].set(f"{figures.per_round:.2f}", f"over {plural(figures.rounds, 'round')}")


def _early_stops(history) -> tuple[str, str]:
    """The acceptance tile's words for rounds that stopped drafting early: '12/30 stopped at 0.41' and the
    tooltip's sentence; ('', '') when none did."""
    stops, rounds = history.early_stops, history.drafting_rounds
    if not stops:
        return "", ""
    confidence = history.median_stop_confidence()
    # only 'at' may start a second line: the counts and the confidence stay whole
    at = f" at{NBSP}{confidence:.2f}" if confidence is not None else f"{NBSP}early"
    sentence = early_stop_text(stops, rounds, confidence)
    return f"{stops}/{max(rounds, stops)}{NBSP}stopped{at}", f"{sentence[0].upper()}{sentence[1:]}: {EARLY_STOP_WHY}."


def _fill_vs_plain(tile: StatTile, dash, speed: float | None) -> None:
    """The ratio to plain decoding, coloured by whether its band clears 1.0, with its reference's source and age."""
    tile.set_accent(None)  # the edge shows a verdict only, never one for nothing
    ref = dash.reference()
    if ref is None:
        tile.set(DASH, "plain decode not measured" if dash.model_key else "no model loaded")
        return
    line = ref.describe(dash.plain.clock())
    too_old = f"(older than {dash.plain.max_age_s / 60:.0f} min)"
    if ref.stale and ref.stale.endswith(too_old):  # its age is in the line already: said once
        line = f"stale {too_old}: {line}"
    elif ref.stale:
        line = f"stale: {ref.stale} · {line}"
    if speed is None:
        tile.set(DASH, line)
        return
    result = compare(speed, ref)
    live = dash.generating  # a rolling rate over rounds: not the reply's own clock, so no verdict yet
    plain = not live and dash.last_stats is not None and dash.last_stats.mode == "baseline"
    if live or plain:  # a plain reply is plain decoding: its ratio is the noise, not a gain or a loss
        note = "live; " if live else "speculation off: plain decoding against plain decoding; "
        tile.set(f"{result.ratio:.2f}×", note + line)
        return
    color = VERDICT_COLORS.get(result.verdict)
    tile.set(f"{result.ratio:.2f}×", line, color)
    tile.set_accent(color)


def _fill_memory(tile: StatTile, sample, weights: int | None) -> None:
    if sample is None:
        tile.set(DASH, "reading…")
        return
    weighed = f"weights {fmt_gb(weights)}" if weights else ""
    cache = f"MLX buffer cache {fmt_gb(sample.mlx_cache_bytes)}"
    tile.set(fmt_gb(sample.mlx_active_bytes), unbroken(f"peak {fmt_gb(sample.mlx_peak_bytes)}", weighed), note=cache)


def _fill_power(tile: StatTile, reading) -> None:
    """The source and battery level, then what else is known in plain words; the OS's own words in the tooltip."""
    if reading is None:
        tile.set(DASH, "reading…")
        return
    status, low_power = reading
    percent = f" {status.percent:.0f}%" if status.percent is not None else ""
    value = {"ac": "Mains", "battery": "Battery"}.get(status.source, "Unknown") + percent
    notes = []
    if status.charging:
        notes.append("charging")
    if low_power:
        notes.append("low-power mode on")
    elif low_power is False:
        notes.append("low-power mode off")
    if status.source == "unknown" or not notes:
        notes.insert(0, power_words(status.source, status.percent))
    tile.set(value, " · ".join(notes), detail=status.detail)
