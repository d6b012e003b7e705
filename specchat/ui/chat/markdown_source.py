"""Prepare a reply's Markdown for display: a copy link above each fenced code block that has code.
Plain Python (no Qt)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

COPY_SCHEME = "copy"
COPY_LABEL = "Copy code"
COPIED_LABEL = "Copied ✓"
COPIED_MS = 1500  # how long a copy link or button says COPIED_LABEL
_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")


@dataclass(frozen=True)
class PreparedMarkdown:
    """Markdown to render, where each of its characters came from (None: added), and the code blocks."""

    markdown: str
    origin: list[int | None]
    code_blocks: list[str]


@dataclass
class _Fence:
    """An open fenced code block: its fence, indentation, where its link goes, and its lines so far."""

    marker: str
    indent: str
    link_at: int  # index into the pieces of the output
    lines: list[str] = field(default_factory=list)

    def code(self) -> str:
        return "".join(self.lines).rstrip("\r\n")


def prepare_markdown(text: str) -> PreparedMarkdown:
    """Insert a `[Copy code](copy:N)` line above each fenced code block with code in it; collect the code.

    An empty block (a stray or still unfinished fence) gets no link. The link is indented like its
    fence, so a code block in a list item keeps its link inside the item."""
    pieces: list[tuple[str, int | None]] = []  # (text, its offset in `text`, None for an added link)
    blocks: list[str] = []
    fence: _Fence | None = None
    pos = 0
    for line in text.splitlines(keepends=True):
        bare = line.rstrip("\r\n")
        if fence is None:
            fence = _opening(bare, len(pieces))
        elif _closes(bare, fence.marker):
            _add_link(pieces, blocks, fence)
            fence = None
        else:
            fence.lines.append(_dedent(line, fence.indent))
        pieces.append((line, pos))
        pos += len(line)
    if fence is not None:  # unterminated: the block runs to the end (a reply still streaming)
        _add_link(pieces, blocks, fence)
    origin: list[int | None] = []
    for piece, start in pieces:
        origin.extend([None] * len(piece) if start is None else range(start, start + len(piece)))
    return PreparedMarkdown("".join(piece for piece, _ in pieces), origin, blocks)


def _opening(line: str, link_at: int) -> _Fence | None:
    """The fence this line opens, if it is one (a backtick fence's info string has no backtick: ```x``` is
    inline code)."""
    match = _FENCE.match(line)
    if match is None or (match.group(2)[0] == "`" and "`" in match.group(3)):
        return None
    return _Fence(match.group(2), match.group(1), link_at)


def _closes(line: str, marker: str) -> bool:
    match = _FENCE.match(line)
    return match is not None and match.group(2).startswith(marker) and not match.group(3).strip()


def _dedent(line: str, indent: str) -> str:
    """A code line without (up to) the fence's indentation, as CommonMark shows it."""
    spaces = len(line) - len(line.lstrip(" "))
    return line[min(spaces, len(indent)) :]


def _add_link(pieces: list[tuple[str, int | None]], blocks: list[str], fence: _Fence) -> None:
    code = fence.code()
    if not code.strip():
        return
    link = f"\n{fence.indent}[{COPY_LABEL}]({COPY_SCHEME}:{len(blocks)})\n\n"
    pieces.insert(fence.link_at, (link, None))
    blocks.append(code)


def copy_index(url: str) -> int | None:
    """The code block number of a copy link, or None for any other link."""
    prefix = f"{COPY_SCHEME}:"
    if url.startswith(prefix) and url[len(prefix) :].isdigit():
        return int(url[len(prefix) :])
    return None
