"""Syntax colours for fenced code blocks, from Pygments: which character ranges get which colour.
Plain Python (no Qt); the Markdown view applies the ranges to its document."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name, guess_lexer
from pygments.styles import get_style_by_name
from pygments.util import ClassNotFound

LIGHT_STYLE = "friendly"
DARK_STYLE = "monokai"
GUESS_MIN_CHARS = 40  # shorter untagged snippets are left plain: a guess on a few characters is noise


@dataclass(frozen=True)
class ColourSpan:
    """Characters [start, end) of the code get this foreground colour ('#rrggbb'), maybe bold/italic."""

    start: int
    end: int
    colour: str
    bold: bool = False
    italic: bool = False


def colour_spans(code: str, language: str = "", dark: bool = False) -> list[ColourSpan]:
    """Colour ranges for `code` in `language` (a fence's info string); [] when no lexer fits."""
    lexer = _lexer(language.strip().split(" ")[0].lower() if language else "", code)
    if lexer is None:
        return []
    style = _style(DARK_STYLE if dark else LIGHT_STYLE)
    spans: list[ColourSpan] = []
    pos = 0
    for token_type, value in lexer.get_tokens(code):
        end = pos + len(value)
        look = style.style_for_token(token_type)
        if look["color"] and value.strip():
            spans.append(ColourSpan(pos, end, f"#{look['color']}", bool(look["bold"]), bool(look["italic"])))
        pos = end
    return spans


def _lexer(language: str, code: str) -> Lexer | None:
    # stripnl=False keeps the lexer's offsets equal to the code's own
    try:
        if language:
            return get_lexer_by_name(language, stripnl=False, ensurenl=False)
        if len(code) >= GUESS_MIN_CHARS:
            return guess_lexer(code, stripnl=False, ensurenl=False)
    except ClassNotFound:
        pass
    return None


@lru_cache(maxsize=4)
def _style(name: str):
    return get_style_by_name(name)
