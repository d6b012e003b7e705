"""The model manager's look: its style sheet, the coloured pills (in both palettes) and the hub state pill."""

from __future__ import annotations

from .. import theme

# tone: ((light background, light text), (dark background, dark text)); every pair has a WCAG contrast of
# at least 4.5:1, and the dark backgrounds are dark tints that sit on the dark surfaces
TONES = {
    "good": (("#dff3e6", "#1d6b3c"), ("#1f3d2a", "#9fe0b5")),
    "warn": (("#fff1d6", "#8a5a00"), ("#3d321c", "#f1d48a")),
    "bad": (("#fdecec", "#8a1f1f"), ("#3d1f22", "#f6b9b9")),
    "info": (("#e4edfc", "#1d4aa0"), ("#1d2a40", "#b9cff7")),
    "neutral": (("#eef0f3", "#4b5563"), ("#2c3038", "#c3c9d2")),
}
STATES = {"online": ("Online", "good"), "offline": ("Offline", "warn"), "searching": ("Searching…", "info")}


def tone_colours(tone: str) -> tuple[str, str]:
    """(background, text) of a pill of this tone in the current palette."""
    light, dark = TONES.get(tone, TONES["neutral"])
    return dark if theme.is_dark() else light


def tone_text(tone: str) -> str:
    """The text colour of a tone, for marks and words on the window's own background."""
    return tone_colours(tone)[1]


def pill(text: str, tone: str) -> str:
    """Rich text: a label with a coloured background in the current palette."""
    background, colour = tone_colours(tone)
    return f"<span style='background:{background}; color:{colour}; font-weight:600;'>&nbsp;{text}&nbsp;</span>"


def muted(html: str, tag: str = "span") -> str:
    """Rich text in the current palette's muted colour."""
    return f"<{tag} style='color:{theme.MUTED}'>{html}</{tag}>"


def style_sheet() -> str:
    """The Models window's style sheet in the current palette."""
    return f"""
#modelsWindow {{ background: {theme.WINDOW_BG}; }}
#windowTitle {{ font-size: 20px; font-weight: 700; color: {theme.TEXT}; }}
#sectionTitle {{ font-size: 15px; font-weight: 700; color: {theme.TEXT}; }}
#hint {{ color: {theme.MUTED}; }}
#fieldLabel {{ color: {theme.MUTED}; font-weight: 600; }}
#searchBox {{ background: {theme.SURFACE}; border: 1px solid {theme.BORDER}; border-radius: 8px;
              padding: 6px 10px;
              min-width: 280px; }}
#searchBox:focus {{ border-color: {theme.ACCENT}; }}
#modelsWindow QPushButton {{ background: {theme.SURFACE}; border: 1px solid {theme.BORDER}; border-radius: 6px;
                             padding: 5px 12px; color: {theme.TEXT}; }}
#modelsWindow QPushButton:hover {{ border-color: {theme.MUTED}; background: {theme.PANEL_BG}; }}
#modelsWindow QPushButton:disabled {{ color: {theme.MUTED}; background: {theme.CODE_BG}; }}
#modelsWindow QPushButton#primary {{ background: {theme.PRIMARY_BG}; color: white; border: none; }}
#modelsWindow QPushButton#primary:disabled {{ background: {theme.CODE_BG}; color: {theme.MUTED};
                                              border: 1px solid {theme.BORDER}; }}
#modelsTable {{ background: {theme.SURFACE}; color: {theme.TEXT}; alternate-background-color: {theme.PANEL_BG};
                border: 1px solid {theme.BORDER};
                border-radius: 10px; selection-background-color: {theme.SELECTION_BG}; selection-color: {theme.TEXT}; }}
#modelsTable QHeaderView::section {{ background: {theme.SURFACE}; border: none; border-bottom: 1px solid {theme.BORDER};
                                     padding: 6px 8px; color: {theme.MUTED}; font-weight: 600; }}
#modelsTable::item {{ padding: 0 4px; }}
#pairPanel {{ background: {theme.SURFACE}; border: 1px solid {theme.BORDER}; border-radius: 10px; }}
#pairChecks {{ background: {theme.PANEL_BG}; border: 1px solid {theme.BORDER}; border-radius: 8px;
               padding: 6px 10px; }}
QSplitter::handle {{ background: transparent; width: 12px; }}
"""


def state_pill(state: str) -> str:
    """Rich text: the hub state (online, offline, searching) as a coloured pill."""
    label, tone = STATES.get(state, STATES["offline"])
    return pill(f"● Hugging Face: {label}", tone)
