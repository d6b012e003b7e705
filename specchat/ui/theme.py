"""Colours and the style sheet of the app: a light and a dark palette, one of them current.

`theme.MUTED` (any upper-case colour name) reads the current palette, so code that looks colours up
when it draws follows a switch; widgets that bake colours into a style sheet re-style through
`specchat.ui.theme_switch.follow`. Which palette is current is decided by theme_switch (system / light / dark).
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Palette:
    """Every colour the app paints with, for one scheme."""

    dark: bool
    accent: str  # links and highlights on the window's background
    primary_bg: str  # a primary button's fill under white text (>= 4.5:1 contrast)
    muted: str
    text: str
    code_bg: str
    draft_bg: str  # characters from accepted drafts
    reject: str  # where the target refused a draft
    user_bg: str
    user_border: str
    assistant_bg: str
    window_bg: str
    surface: str  # cards, tables, the composer
    border: str
    sidebar_bg: str
    selection_bg: str
    panel_bg: str
    primary_disabled: str
    chart_bg: str
    chart_label_fill: tuple[int, int, int, int]
    banner_error: tuple[str, str, str]  # background, text, border
    banner_warning: tuple[str, str, str]
    banner_info: tuple[str, str, str]


LIGHT = Palette(
    dark=False,
    accent="#2f6fde",
    primary_bg="#2f6fde",
    muted="#6b7280",
    text="#1f2328",
    code_bg="#f3f4f6",
    draft_bg="#d9f2dc",
    reject="#d64545",
    user_bg="#eef3fd",
    user_border="#d6e2fa",
    assistant_bg="#ffffff",
    window_bg="#f7f8fa",
    surface="#ffffff",
    border="#e3e6ea",
    sidebar_bg="#eef0f3",
    selection_bg="#dce6f9",
    panel_bg="#fbfbfc",
    primary_disabled="#a9bde6",
    chart_bg="#ffffff",
    chart_label_fill=(255, 255, 255, 200),
    banner_error=("#fdecec", "#8a1f1f", "#f3b4b4"),
    banner_warning=("#fff6e0", "#7a5200", "#f1d48a"),
    banner_info=("#e9f1fe", "#1d4aa0", "#b9cff7"),
)

DARK = Palette(
    dark=True,
    accent="#5b93f0",
    primary_bg="#3b6fd6",
    muted="#9aa3af",
    text="#e6e8eb",
    code_bg="#2a2e35",
    draft_bg="#1f4a2c",
    reject="#f07070",
    user_bg="#1f2a3d",
    user_border="#2f4163",
    assistant_bg="#22252b",
    window_bg="#181a1f",
    surface="#22252b",
    border="#363b44",
    sidebar_bg="#1d2026",
    selection_bg="#2c3d5e",
    panel_bg="#1d2026",
    primary_disabled="#3a4a6b",
    chart_bg="#22252b",
    chart_label_fill=(34, 37, 43, 210),
    banner_error=("#3d1f22", "#f6b9b9", "#6e3438"),
    banner_warning=("#3a3020", "#f1d48a", "#6b5a2e"),
    banner_info=("#1d2a40", "#b9cff7", "#34507e"),
)

_current: Palette = LIGHT
_NAMES = {f.name.upper() for f in fields(Palette)}


def palette() -> Palette:
    """The current palette."""
    return _current


def is_dark() -> bool:
    """True while the dark palette is current."""
    return _current.dark


def use(palette_: Palette) -> None:
    """Make a palette current (theme_switch calls this; widgets then re-style)."""
    global _current
    _current = palette_


def __getattr__(name: str):
    """theme.MUTED, theme.BANNER_ERROR, ...: that colour of the current palette."""
    if name in _NAMES:
        return getattr(_current, name.lower())
    if name == "STYLE_SHEET":
        return style_sheet()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def style_sheet(p: Palette | None = None) -> str:
    """The main window's style sheet in a palette (default: the current one), focus rings included."""
    p = p or _current
    return _BASE_SHEET.format(p=p) + focus_sheet(p)


_BASE_SHEET = """
QMainWindow, #centralArea {{ background: {p.window_bg}; }}
#sidebar {{ background: {p.sidebar_bg}; border-right: 1px solid {p.border}; }}
#sidebar QListWidget {{ background: transparent; border: 2px solid transparent; border-radius: 8px; color: {p.text}; }}
#sidebar QListWidget::item {{ padding: 7px 8px; border-radius: 6px; }}
#sidebar QListWidget::item:selected {{ background: {p.selection_bg}; color: {p.text}; }}
#messageCard[role="user"] {{ background: {p.user_bg}; border: 1px solid {p.user_border}; border-radius: 10px; }}
#messageCard[role="assistant"] {{ background: {p.assistant_bg}; border: 1px solid {p.border}; border-radius: 10px; }}
#roleLabel {{ color: {p.muted}; font-weight: 600; }}
#footer {{ color: {p.muted}; }}
#emptyTitle {{ color: {p.text}; }}
#emptyHint {{ color: {p.muted}; }}
#composer {{ background: {p.surface}; border: 1px solid {p.border}; border-radius: 10px; }}
#composer QPlainTextEdit {{ border: 2px solid transparent; border-radius: 6px; background: transparent; color: {p.text}; }}
QPushButton {{ background: {p.surface}; color: {p.text}; border: 1px solid {p.border}; border-radius: 6px; padding: 5px 12px; }}
QPushButton:hover {{ border-color: {p.muted}; }}
QPushButton:disabled {{ color: {p.muted}; }}
QPushButton#primary {{ background: {p.primary_bg}; color: white; border: 1px solid {p.primary_bg}; padding: 5px 15px; }}
QPushButton#primary:disabled {{ background: {p.primary_disabled}; border-color: {p.primary_disabled}; }}
QToolButton {{ background: {p.surface}; color: {p.text}; border: 1px solid {p.border}; border-radius: 5px; padding: 2px 6px; }}
QToolButton#link {{ background: transparent; border: 2px solid transparent; border-radius: 4px; color: {p.accent}; padding: 0 2px; }}
QToolButton#link:hover {{ text-decoration: underline; }}
QToolButton#link:disabled {{ color: {p.muted}; text-decoration: none; }}
QLineEdit {{ background: {p.surface}; color: {p.text}; border: 1px solid {p.border}; border-radius: 6px; padding: 3px 6px; }}
#settingsPanel QPlainTextEdit {{ background: {p.surface}; color: {p.text}; border: 1px solid {p.border}; border-radius: 6px; padding: 2px; }}
QCheckBox {{ border: 2px solid transparent; border-radius: 4px; padding: 1px 3px; }}
#centralArea > QScrollArea {{ border: 2px solid transparent; border-radius: 8px; }}
#settingsPanel {{ background: {p.panel_bg}; border-left: 1px solid {p.border}; }}
#quickSwitcher {{ background: {p.surface}; border: 1px solid {p.muted}; }}
#quickSwitcher QListWidget {{ background: {p.surface}; border: none; color: {p.text}; }}
#quickSwitcher QListWidget::item {{ padding: 5px 6px; border-radius: 6px; }}
#quickSwitcher QListWidget::item:selected {{ background: {p.selection_bg}; color: {p.text}; }}
"""


def focus_sheet(p: Palette | None = None) -> str:
    """Focus rings: every control the Tab key stops at shows a ring in the accent colour when it has the
    focus (in the text colour on a button filled with the accent, where an accent ring would not show).
    A 1px border becomes 2px with 1px less padding, so nothing moves when the focus arrives.

    Combo boxes and spin boxes keep the style's own frame (a style sheet border would make Qt drop their
    arrows); the style draws their focus frame in the palette's Highlight, which theme_switch sets to the
    accent."""
    p = p or _current
    return f"""
QPushButton:focus {{ border: 2px solid {p.accent}; padding: 4px 11px; }}
QPushButton#primary:focus {{ border: 2px solid {p.text}; padding: 4px 14px; }}
QToolButton:focus {{ border: 2px solid {p.accent}; padding: 1px 5px; }}
QToolButton#link:focus {{ border: 2px solid {p.accent}; padding: 0 2px; }}
QLineEdit:focus {{ border: 2px solid {p.accent}; padding: 2px 5px; }}
QAbstractSpinBox QLineEdit, QAbstractSpinBox QLineEdit:focus, QComboBox QLineEdit, QComboBox QLineEdit:focus {{ border: none; padding: 0; background: transparent; }}
#settingsPanel QPlainTextEdit:focus {{ border: 2px solid {p.accent}; padding: 1px; }}
#composer QPlainTextEdit:focus {{ border: 2px solid {p.accent}; }}
#sidebar QListWidget:focus {{ border: 2px solid {p.accent}; }}
QCheckBox:focus {{ border: 2px solid {p.accent}; }}
#centralArea > QScrollArea:focus {{ border: 2px solid {p.accent}; }}
"""
