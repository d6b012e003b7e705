"""Sweep outputs: unwritable paths refused before any model loads; files rewritten after every cell."""

import json
import os
import subprocess
import sys

import pytest

from specchat.cli import main
from specchat.tuning.sweep import SweepRunner
from specchat.tuning.sweep_output import SweepOutputs, UnwritableOutputError, check_writable


@pytest.fixture
def a_file(tmp_path):
    """A plain file: nothing can be written under it, not even by root."""
    path = tmp_path / "a-file"
    path.write_text("not a folder")
    return path


def test_a_path_under_a_file_or_a_folder_path_is_refused_with_its_name(a_file, tmp_path):
    with pytest.raises(
        UnwritableOutputError,
        match=f"cannot write the JSON results to {a_file}/sub/out.json: {a_file} is a file, not a folder",
    ):
        SweepOutputs(json_path=a_file / "sub" / "out.json").check()
    with pytest.raises(UnwritableOutputError, match=f"cannot write the Markdown results to {tmp_path}: it is a folder"):
        SweepOutputs(markdown_path=tmp_path).check()
    fresh = tmp_path / "new" / "folder" / "out.md"
    assert check_writable(fresh, "x") == fresh and fresh.parent.is_dir() and not fresh.exists()


@pytest.mark.parametrize("where", ["--json", "--markdown", "data folder"])
def test_the_cli_refuses_an_unwritable_output_before_loading_models(where, a_file, tmp_path):
    """The folders hold no model: the output check must speak first, in one line, before any load."""
    home, extra = tmp_path / "home", []
    (tmp_path / "no-model").mkdir()
    (tmp_path / "no-draft").mkdir()
    if where == "data folder":
        home = a_file
    else:
        extra = [where, str(a_file / "out")]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "specchat",
            "sweep",
            "--target",
            str(tmp_path / "no-model"),
            "--draft",
            str(tmp_path / "no-draft"),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "SPECCHAT_HOME": str(home)},
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: cannot write the ")
    assert f"{a_file} is a file, not a folder" in proc.stderr and "safetensors" not in proc.stderr
    if where == "data folder":
        assert f"{a_file}/data/tuned_k.json" in proc.stderr and "--no-save" in proc.stderr


def test_an_interrupted_sweep_keeps_every_finished_cell(
    tmp_path, monkeypatch, capsys, dense_target, dense_draft_partial
):
    """Ctrl-C during the K=2 cell: the files hold the baseline and K=1 cells, both valid, marked in progress."""
    out_json, out_md = tmp_path / "out" / "sweep.json", tmp_path / "out" / "sweep.md"
    out_json.parent.mkdir()  # an output's folder must exist (a mistyped one is refused, never created)
    monkeypatch.setenv("SPECCHAT_HOME", str(tmp_path / "home"))
    original, calls = SweepRunner._run_once, []
    seen_after_each_cell = []

    def run_once(self, ids, k, index, reference):
        if k == 2:
            raise KeyboardInterrupt
        if out_json.exists():
            seen_after_each_cell.append([c["k"] for c in json.loads(out_json.read_text())["prompts"][0]["cells"]])
        calls.append(k)
        return original(self, ids, k, index, reference)

    monkeypatch.setattr(SweepRunner, "_run_once", run_once)
    status = main(
        [
            "sweep",
            "--target",
            str(dense_target),
            "--draft",
            str(dense_draft_partial),
            "--draft-tokens",
            "1,2",
            "--reps",
            "2",
            "--warmup",
            "0",
            "--prompts",
            "open",
            "--max-tokens",
            "4",
            "--allow-battery",
            "--json",
            str(out_json),
            "--markdown",
            str(out_md),
        ]
    )
    assert status == 130 and calls == [None, None, 1, 1]
    assert seen_after_each_cell == [[None], [None]]  # written when the baseline cell finished, before K=1 ran
    data = json.loads(out_json.read_text())
    assert data["partial"] is True and data["cancelled"] is False
    assert [c["k"] for c in data["prompts"][0]["cells"]] == [None, 1]
    assert all(len(c["reps"]) == 2 for c in data["prompts"][0]["cells"])
    md = out_md.read_text()
    assert "**In progress**" in md and md.count("\n| ") == 3  # header, baseline, K=1
    err = capsys.readouterr().err
    assert f"interrupted: the cells measured so far are in {out_json} and {out_md}" in err
    assert not (tmp_path / "home" / "data" / "tuned_k.json").exists()


def test_a_finished_sweep_leaves_complete_files(tmp_path, monkeypatch, capsys, dense_target, dense_draft_partial):
    out_json = tmp_path / "sweep.json"
    monkeypatch.setenv("SPECCHAT_HOME", str(tmp_path / "home"))
    assert (
        main(
            [
                "sweep",
                "--target",
                str(dense_target),
                "--draft",
                str(dense_draft_partial),
                "--draft-tokens",
                "1",
                "--reps",
                "1",
                "--warmup",
                "0",
                "--prompts",
                "open",
                "--max-tokens",
                "4",
                "--allow-battery",
                "--json",
                str(out_json),
                "--no-save",
                "--no-dynamic",
            ]
        )
        == 0
    )
    data = json.loads(out_json.read_text())
    assert data["partial"] is False and [c["k"] for c in data["prompts"][0]["cells"]] == [None, 1]
    assert [p for p in tmp_path.iterdir() if p.name != "home"] == [out_json]  # no temp files left behind


def test_a_saved_k_outside_the_limit_is_not_offered(tmp_path):
    """A tuning file from a version that allowed K up to 64: the out-of-range K is ignored, the rest kept."""
    from specchat.paths import AppPaths
    from specchat.tuning.best_k import best_k, pair_key, save_best_k

    paths = AppPaths.under(tmp_path)
    save_best_k(paths, tmp_path / "t", tmp_path / "d", {"open": 4, "structured": 16})
    data = json.loads(paths.tuning_file.read_text())
    data["pairs"][pair_key(tmp_path / "t", tmp_path / "d")]["best_k"]["structured"] = 32
    paths.tuning_file.write_text(json.dumps(data))
    assert best_k(paths, tmp_path / "t", tmp_path / "d") == {"open": 4}
    with pytest.raises(ValueError, match="between 1 and 16, or 0 for Off, or 'auto' for auto K, got 32"):
        save_best_k(paths, tmp_path / "t", tmp_path / "d", {"open": 32})
