"""The model manager's look: its style sheet and the hub state pill."""

from __future__ import annotations

from .. import theme

STATES = {  # state: (label, background, text colour)
    "online": ("Online", "#dff3e6", "#1d6b3c"),
    "offline": ("Offline", "#fff1d6", "#8a5a00"),
    "searching": ("Searching…", "#e4edfc", "#1d4aa0"),
}


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
#modelsWindow QPushButton#primary {{ background: {theme.ACCENT}; color: white; border: none; }}
#modelsWindow QPushButton#primary:disabled {{ background: {theme.PRIMARY_DISABLED}; color: #eef3fd; }}
#modelsTable {{ background: {theme.SURFACE}; color: {theme.TEXT}; alternate-background-color: {theme.PANEL_BG};
                border: 1px solid {theme.BORDER};
                border-radius: 10px; selection-background-color: {theme.SELECTION_BG}; selection-color: {theme.TEXT}; }}
#modelsTable QHeaderView::section {{ background: {theme.SURFACE}; border: none; border-bottom: 1px solid {theme.BORDER};
                                     padding: 6px 8px; color: {theme.MUTED}; font-weight: 600; }}
#modelsTable::item {{ padding: 0 6px; }}
#pairPanel {{ background: {theme.SURFACE}; border: 1px solid {theme.BORDER}; border-radius: 10px; }}
#pairChecks {{ background: {theme.PANEL_BG}; border: 1px solid {theme.BORDER}; border-radius: 8px;
               padding: 6px 10px; }}
QSplitter::handle {{ background: transparent; width: 12px; }}
"""


DARK_STATES = {
    "online": ("Online", "#1f3d2a", "#9fe0b5"),
    "offline": ("Offline", "#3d321c", "#f1d48a"),
    "searching": ("Searching…", "#1d2a40", "#b9cff7"),
}


def state_pill(state: str) -> str:
    """Rich text: the hub state (online, offline, searching) as a coloured pill."""
    states = DARK_STATES if theme.is_dark() else STATES
    label, background, colour = states.get(state, states["offline"])
    return (
        f"<span style='background:{background}; color:{colour}; font-weight:600;'>"
        f"&nbsp;● Hugging Face: {label}&nbsp;</span>"
    )
