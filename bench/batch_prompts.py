"""What each concurrent client asks, and in which mode it speculates (bench/concurrent_clients.py).

The default prompts are short chat requests (code and prose). `--mix lengths` gives the N clients prompts
spread evenly from 50 to 2,000 tokens (counted with the pair's tokenizer, chat template included), built
from Python's own standard-library source (real code and docstrings, cut at a line) with a task: summarise
it, continue it, or answer about it. `--mix modes` gives the speculating clients draft, lookup, mtp and dflash
in turn (those the pair offers); the plain side stays baseline for every client.
"""

from __future__ import annotations

import sysconfig
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from specchat.engine import Failed, GenerationConfig, TextChunk
from specchat.engine.owner import EngineHost

PROMPTS = [
    "Write a Python function that merges two sorted lists into one sorted list, with a docstring.",
    "Tell me a short story about a lighthouse keeper who finds a message in a bottle.",
    "Write a JavaScript function that debounces another function, with comments.",
    "Describe a walk through an autumn forest in a few sentences.",
    "Write a SQL query that finds the ten customers with the largest total order value.",
    "Explain to a child why the sky is blue.",
    "Write a Rust function that reverses the words of a sentence.",
    "Write a letter to a friend about a trip to the mountains.",
]
# standard-library modules long enough for a 2,000-token excerpt on their own (each is 10k-80k characters)
STDLIB_MODULES = ("textwrap", "heapq", "fractions", "calendar", "shlex", "statistics", "string", "difflib")
TASKS = (
    "Summarise what this part of a Python standard-library module does, in a few sentences.",
    "Continue this Python code where it stops, in the same style.",
    "Answer about this Python code: which functions and classes does it define, and what does each return?",
)
SHORTEST, LONGEST = 50, 2000
CHARS_PER_TOKEN_MAX = 8  # no tokenizer packs more characters in a token of source: bounds the bisection
SPECULATION_MODES = ("draft", "lookup", "mtp", "dflash")
MIXES = ("lengths", "modes")

CountTokens = Callable[[str], int]  # a user message's content -> its chat prompt's token count


@dataclass(frozen=True)
class Client:
    """One client's request: its message, and the mode it speculates in (the plain side runs baseline)."""

    content: str
    mode: str = "draft"


def parse_mix(value: str) -> frozenset[str]:
    """'lengths', 'modes', 'lengths,modes' (or '' for neither) as a set; ValueError on anything else."""
    mix = frozenset(part.strip() for part in value.split(",") if part.strip())
    unknown = mix - set(MIXES)
    if unknown:
        raise ValueError(f"unknown --mix {', '.join(sorted(unknown))}: choose from {', '.join(MIXES)}")
    return mix


def speculation_modes(available: dict[str, str | None], mixed: bool) -> list[str]:
    """The modes the speculating clients take in turn: draft alone, or every one of draft / lookup / mtp / dflash
    the pair offers (available maps a mode to why it is off, None when it is on)."""
    if not mixed:
        return ["draft"]
    return [mode for mode in SPECULATION_MODES if available.get(mode, "unknown") is None]


def length_targets(n: int, longest: int) -> list[int]:
    """n prompt lengths spread evenly from SHORTEST to `longest` tokens (N=1: the shortest)."""
    if n == 1:
        return [SHORTEST]
    return [round(SHORTEST + (longest - SHORTEST) * i / (n - 1)) for i in range(n)]


@cache
def stdlib_lines(first: int) -> tuple[str, ...]:
    """The source lines of the standard-library modules, starting with module `first` (in turn)."""
    folder = Path(sysconfig.get_paths()["stdlib"])
    names = STDLIB_MODULES[first % len(STDLIB_MODULES) :] + STDLIB_MODULES[: first % len(STDLIB_MODULES)]
    lines: list[str] = []
    for name in names:
        path = folder / f"{name}.py"
        if path.is_file():
            lines += [f"# --- {name}.py ---", *path.read_text(encoding="utf-8").splitlines()]
    if not lines:
        raise RuntimeError(f"no standard-library sources under {folder}")
    return tuple(lines)


def excerpt_prompt(task: str, lines: Sequence[str]) -> str:
    """A task about the given source lines, as one user message."""
    return f"{task}\n\n```python\n" + "\n".join(lines) + "\n```"


def fitted_prompt(task: str, lines: Sequence[str], target: int, count: CountTokens) -> str:
    """The task with as many leading source lines as keep the chat prompt at or under `target` tokens
    (found by bisection on the line count; at least the task itself)."""
    low, high, chars = 0, 0, 0
    while high < len(lines) and chars <= target * CHARS_PER_TOKEN_MAX:
        chars += len(lines[high]) + 1
        high += 1
    while low < high:
        mid = (low + high + 1) // 2
        if count(excerpt_prompt(task, lines[:mid])) <= target:
            low = mid
        else:
            high = mid - 1
    return excerpt_prompt(task, lines[:low])


def length_prompts(n: int, longest: int, count: CountTokens) -> list[str]:
    """n stdlib-excerpt prompts of lengths spread from SHORTEST to `longest` tokens; client i reads module i's
    source and gets task i (both in turn)."""
    return [
        fitted_prompt(TASKS[i % len(TASKS)], stdlib_lines(i), target, count)
        for i, target in enumerate(length_targets(n, longest))
    ]


def client_plan(n: int, mix: frozenset[str], modes: list[str], longest: int, count: CountTokens) -> list[Client]:
    """The n clients' requests for this mix: prompts (default or mixed lengths) and speculating modes (in turn)."""
    if "lengths" in mix:
        contents = length_prompts(n, longest, count)
    else:
        contents = [PROMPTS[i % len(PROMPTS)] for i in range(n)]
    return [Client(content, modes[i % len(modes)]) for i, content in enumerate(contents)]


def longest_prompt(window: int | None, reply_tokens: int) -> tuple[int, str]:
    """The longest prompt the clients get, and a note for the header: LONGEST, capped so that the prompt and its
    reply fit the model's context window."""
    if window is None:
        return LONGEST, "context window unknown: no cap"
    cap = window - reply_tokens - 1
    if cap >= LONGEST:
        return LONGEST, f"context {window}: no cap"
    return max(SHORTEST, cap), f"capped at {max(SHORTEST, cap)} by the context of {window} tokens"


def messages(content: str) -> list[dict[str, str]]:
    """A one-message chat."""
    return [{"role": "user", "content": content}]


def chat_ids(engine, content: str) -> list[int]:
    """The chat prompt's token ids, ready for the assistant's reply (on the engine thread)."""
    return list(engine.tokenizer.apply_chat_template(messages(content), add_generation_prompt=True))


def client_plans(
    host: EngineHost, ns: list[int], mix: frozenset[str], tokens: int
) -> tuple[dict[int, list[Client]], str]:
    """Each N's clients, and a header on their lengths and modes (tokens counted on the engine thread)."""

    def work(ctx) -> tuple[dict[int, list[Client]], str]:
        engine, available = ctx.engine, ctx.engine.available_modes()
        modes = speculation_modes(available, "modes" in mix)
        window = engine.context_window()
        longest, note = longest_prompt(window[0] if window else None, tokens)
        plan = {n: client_plan(n, mix, modes, longest, lambda c: len(chat_ids(engine, c))) for n in ns}
        off = "".join(f"; {m} off: {why}" for m, why in available.items() if m in SPECULATION_MODES and why)
        header = f"speculating clients' modes in turn: {', '.join(modes)}{off}"
        if "lengths" in mix:
            lengths = {n: [len(chat_ids(engine, c.content)) for c in clients] for n, clients in plan.items()}
            header += f"\nprompt tokens per N (stdlib source + a task; {note}): {lengths}"
        return plan, header

    result: tuple[dict[int, list[Client]], str] = host.submit("bench-plan", work).result()
    return result


Reply = tuple[str, list[tuple[int, str]]]  # the text, and (tokens so far, text so far) after each chunk


def solo_replies(host: EngineHost, contents: set[str], tokens: int) -> dict[str, Reply]:
    """Each prompt's greedy reply from the engine alone (plain decoding, one token a chunk; speculation gives
    the same text), with the text after each token: how many tokens a streamed text holds."""

    def work(ctx) -> dict[str, Reply]:
        replies = {}
        for content in contents:
            text, produced, prefixes = "", 0, []
            for event in ctx.engine.stream(chat_ids(ctx.engine, content), GenerationConfig(max_tokens=tokens)):
                if isinstance(event, TextChunk):
                    text, produced = text + event.text, produced + len(event.token_ids)
                    prefixes.append((produced, text))
                elif isinstance(event, Failed):
                    raise RuntimeError(f"solo reply: {event.message}")
            replies[content] = (text, prefixes)
        return replies

    result: dict[str, Reply] = host.submit("bench-solo", work).result()
    return result
