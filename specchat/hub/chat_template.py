"""What a model's chat template offers, read from its files (no tokenizer load)."""

from __future__ import annotations

import json
from pathlib import Path

THINKING_SWITCH = "enable_thinking"


def chat_template_text(folder: Path) -> str:
    """Every chat template the folder ships (tokenizer_config.json, chat_template.jinja/.json), joined."""
    folder = Path(folder)
    parts: list[str] = []
    for name in ("tokenizer_config.json", "chat_template.json"):
        try:
            template = json.loads((folder / name).read_text(encoding="utf-8")).get("chat_template")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(template, str):
            parts.append(template)
        elif isinstance(template, list):  # named templates: [{"name": ..., "template": ...}]
            parts += [t.get("template", "") for t in template if isinstance(t, dict)]
    try:
        parts.append((folder / "chat_template.jinja").read_text(encoding="utf-8"))
    except OSError:
        pass
    return "\n".join(p for p in parts if isinstance(p, str))


def has_thinking_switch(folder: Path) -> bool:
    """True when the chat template reads `enable_thinking` (Qwen3-style think / no-think)."""
    return THINKING_SWITCH in chat_template_text(folder)
