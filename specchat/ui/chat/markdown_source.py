"""Prepare a reply's Markdown for display: a copy link above each fenced code block.
Plain Python (no Qt)."""

from __future__ import annotations

import re
from dataclasses import dataclass

COPY_SCHEME = "copy"
COPY_LABEL = "Copy code"
_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")


@dataclass(frozen=True)
class PreparedMarkdown:
    """Markdown to render, where each of its characters came from (None: added), and the code blocks."""

    markdown: str
    origin: list[int | None]
    code_blocks: list[str]


def prepare_markdown(text: str) -> PreparedMarkdown:
    """Insert a `[Copy code](copy:N)` line above each fenced code block; collect the code."""
    out: list[str] = []
    origin: list[int | None] = []
    blocks: list[str] = []
    fence: str | None = None
    code: list[str] = []
    pos = 0
    for line in text.splitlines(keepends=True):
        match = _FENCE.match(line.rstrip("\r\n"))
        if fence is None and match:
            fence = match.group(2)[0] * len(match.group(2))
            link = f"\n[{COPY_LABEL}]({COPY_SCHEME}:{len(blocks)})\n\n"
            out.append(link)
            origin.extend([None] * len(link))
            blocks.append("")
            code = []
        elif fence is not None and match and match.group(2).startswith(fence) and not match.group(3).strip():
            fence = None
        elif fence is not None:
            code.append(line)
            blocks[-1] = "".join(code).rstrip("\n")
        out.append(line)
        origin.extend(range(pos, pos + len(line)))
        pos += len(line)
    return PreparedMarkdown("".join(out), origin, blocks)


def copy_index(url: str) -> int | None:
    """The code block number of a copy link, or None for any other link."""
    prefix = f"{COPY_SCHEME}:"
    if url.startswith(prefix) and url[len(prefix) :].isdigit():
        return int(url[len(prefix) :])
    return None
