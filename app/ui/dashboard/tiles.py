"""The row of headline figures above the dashboard's charts."""

from __future__ import annotations

from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QVBoxLayout

from .. import theme

DASH = "—"
TILE_STYLE = (f"StatTile {{ background: white; border: 1px solid {theme.BORDER}; border-radius: 10px; }}"
              f" QLabel#tileTitle {{ color: {theme.MUTED}; font-size: 11px; font-weight: 600; }}"
              f" QLabel#tileValue {{ color: {theme.TEXT}; font-size: 21px; font-weight: 600; }}"
              f" QLabel#tileSub {{ color: {theme.MUTED}; font-size: 11px; }}")


class StatTile(QFrame):
    """A title, one large value and a line of detail."""

    def __init__(self, title: str, accent: str, parent=None):
        super().__init__(parent)
        self.setStyleSheet(TILE_STYLE + f" QFrame#tileAccent {{ background: {accent}; border-radius: 2px; }}")
        accent_bar = QFrame(objectName="tileAccent")
        accent_bar.setFixedWidth(4)
        self.title = QLabel(title.upper(), objectName="tileTitle")
        self.value = QLabel(DASH, objectName="tileValue")
        self.sub = QLabel("", objectName="tileSub")
        self.sub.setWordWrap(True)
        self.setMinimumHeight(84)  # room for a two-line detail
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

    def set(self, value: str, sub: str = "") -> None:
        """Show a value and its detail line."""
        self.value.setText(value)
        self.sub.setText(sub)
        self.setToolTip(f"{self.title.text().title()}: {value}" + (f" ({sub})" if sub else ""))


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
    if dash._generating and len(dash.rounds):
        return float(dash.rounds.rolling_tokens_per_s()[-1]), f"rolling, last {dash.rounds.window} rounds"
    if dash.last_stats is not None and not dash._generating:
        return dash.last_stats.decode_tokens_per_s, f"last reply ({dash.last_stats.mode})"
    return None, "generating…" if dash._generating else "no reply yet"


def fill_tiles(dash) -> None:
    """Write the dashboard's current figures into its tiles."""
    tiles = dash.tiles
    speed, speed_note = _speed(dash)
    tiles["speed"].set(fmt_rate(speed), speed_note)
    base = dash.baseline_tps
    if base is None:
        tiles["vs_plain"].set(DASH, "plain decode not measured" if dash.model_key else "no model loaded")
    else:
        ratio = f"{speed / base:.2f}×" if speed is not None and base > 0 else DASH
        tiles["vs_plain"].set(ratio, f"plain decode {base:.1f} tok/s")
    totals = dash.rounds.totals()
    if totals["rounds"]:
        rate = totals["accepted"] / totals["drafted"] if totals["drafted"] else None
        tiles["acceptance"].set(fmt_pct(rate), f"{totals['accepted']:.0f} of {totals['drafted']:.0f} drafted")
        tiles["per_round"].set(f"{totals['accepted'] / totals['rounds']:.2f}",
                               f"over {totals['rounds']:.0f} rounds")
    else:
        tiles["acceptance"].set(DASH, "no drafts yet")
        tiles["per_round"].set(DASH, "no rounds yet")
    _fill_memory(tiles["memory"], dash.last_memory, dash.weights_bytes)
    _fill_power(tiles["power"], dash.last_power)


def _fill_memory(tile: StatTile, sample, weights: int | None) -> None:
    if sample is None:
        tile.set(DASH, "reading…")
        return
    parts = [f"peak {fmt_gb(sample.mlx_peak_bytes)}", f"cache {fmt_gb(sample.mlx_cache_bytes)}"]
    if weights:
        parts.append(f"weights {fmt_gb(weights)}")
    tile.set(fmt_gb(sample.mlx_active_bytes), " · ".join(parts))


def _fill_power(tile: StatTile, reading) -> None:
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
        notes.append(status.detail)
    tile.set(value, " · ".join(notes))
