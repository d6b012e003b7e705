"""Colours and the style sheet of the app (one light palette)."""

ACCENT = "#2f6fde"
MUTED = "#6b7280"
TEXT = "#1f2328"
CODE_BG = "#f3f4f6"
DRAFT_BG = "#d9f2dc"      # characters from accepted drafts
REJECT = "#d64545"        # where the target refused a draft
USER_BG = "#eef3fd"
ASSISTANT_BG = "#ffffff"
WINDOW_BG = "#f7f8fa"
BORDER = "#e3e6ea"
BANNER_ERROR = ("#fdecec", "#8a1f1f", "#f3b4b4")
BANNER_WARNING = ("#fff6e0", "#7a5200", "#f1d48a")
BANNER_INFO = ("#e9f1fe", "#1d4aa0", "#b9cff7")

STYLE_SHEET = f"""
QMainWindow, #centralArea {{ background: {WINDOW_BG}; }}
#sidebar {{ background: #eef0f3; border-right: 1px solid {BORDER}; }}
#sidebar QListWidget {{ background: transparent; border: none; }}
#sidebar QListWidget::item {{ padding: 7px 8px; border-radius: 6px; }}
#sidebar QListWidget::item:selected {{ background: #dce6f9; color: {TEXT}; }}
#messageCard[role="user"] {{ background: {USER_BG}; border: 1px solid #d6e2fa; border-radius: 10px; }}
#messageCard[role="assistant"] {{ background: {ASSISTANT_BG}; border: 1px solid {BORDER}; border-radius: 10px; }}
#roleLabel {{ color: {MUTED}; font-weight: 600; }}
#footer {{ color: {MUTED}; }}
#emptyTitle {{ color: {TEXT}; }}
#emptyHint {{ color: {MUTED}; }}
#composer {{ background: white; border: 1px solid {BORDER}; border-radius: 10px; }}
#composer QPlainTextEdit {{ border: none; background: transparent; }}
QPushButton#primary {{ background: {ACCENT}; color: white; border: none; border-radius: 6px; padding: 6px 16px; }}
QPushButton#primary:disabled {{ background: #a9bde6; }}
QToolButton#link {{ border: none; color: {ACCENT}; padding: 0 4px; }}
QToolButton#link:hover {{ text-decoration: underline; }}
#settingsPanel {{ background: #fbfbfc; border-left: 1px solid {BORDER}; }}
"""
