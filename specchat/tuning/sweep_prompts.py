"""Prompts a sweep runs: the built-in `structured` and `open` ones, and user prompt files."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from specchat.engine.errors import ConfigError

STRUCTURED = """\
Write four small Python functions, each with type hints and a one-line docstring, and no \
other text:
1. `is_palindrome(s: str) -> bool`: True when s reads the same backwards, ignoring case \
and non-alphanumeric characters.
2. `chunk(items: list[int], size: int) -> list[list[int]]`: split items into consecutive \
lists of length size (the last may be shorter); raise ValueError when size < 1.
3. `word_counts(text: str) -> dict[str, int]`: how often each lowercase word occurs, \
words being runs of letters.
4. `merge_sorted(a: list[int], b: list[int]) -> list[int]`: merge two sorted lists into \
one sorted list in linear time."""

OPEN = """\
Write a short reflective piece, a few paragraphs, about what it feels like to return to \
a place you knew as a child and find it changed. No headings, no lists."""

BUILTIN_PROMPTS = {"structured": STRUCTURED, "open": OPEN}
DEFAULT_PROMPTS = ("structured", "open")
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class SweepPrompt:
    """One prompt type of a sweep: its name (the key for the best K) and its user message."""

    name: str
    text: str


def builtin_prompts(names: str | list[str] | tuple[str, ...] = DEFAULT_PROMPTS) -> list[SweepPrompt]:
    """Built-in prompts by name ("structured,open" or a list); unknown names are an error."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in names if n not in BUILTIN_PROMPTS]
    if unknown:
        raise ConfigError(
            f"unknown built-in prompt {', '.join(map(repr, unknown))}; choose from {', '.join(BUILTIN_PROMPTS)}"
        )
    return [SweepPrompt(n, BUILTIN_PROMPTS[n]) for n in dict.fromkeys(names)]


def load_prompt_file(path: str | Path) -> list[SweepPrompt]:
    """Prompts from a file: JSON {"name": "text", ...}, or any other file as one prompt named after it."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read prompt file {path}: {exc.strerror or exc}") from exc
    if path.suffix.lower() == ".json":
        return _json_prompts(path, raw)
    if not raw.strip():
        raise ConfigError(f"prompt file {path} is empty")
    return [SweepPrompt(_checked_name(path.stem, path), raw.strip())]


def _json_prompts(path: Path, raw: str) -> list[SweepPrompt]:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"prompt file {path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict) or not data:
        raise ConfigError(f'prompt file {path} must hold a JSON object {{"name": "prompt text", ...}}')
    prompts = []
    for name, text in data.items():
        if not isinstance(text, str) or not text.strip():
            raise ConfigError(f"prompt {name!r} in {path} must be non-empty text")
        prompts.append(SweepPrompt(_checked_name(name, path), text.strip()))
    return prompts


def _checked_name(name: str, path: Path) -> str:
    if not _NAME.match(name):
        raise ConfigError(f"prompt name {name!r} in {path} may only use letters, digits, '_', '-' and '.'")
    return name


def merge_prompts(*groups: list[SweepPrompt]) -> list[SweepPrompt]:
    """Concatenate prompt lists; the same name twice is an error."""
    merged: dict[str, SweepPrompt] = {}
    for prompt in (p for group in groups for p in group):
        if prompt.name in merged:
            raise ConfigError(f"prompt name {prompt.name!r} is used twice")
        merged[prompt.name] = prompt
    if not merged:
        raise ConfigError("no prompts to sweep")
    return list(merged.values())
