"""The K sweep: statistics, identity gate, power checks, reports, saved best K, the CLI."""

import json
import os
import re
import subprocess
import sys
import threading
from dataclasses import replace
from importlib import metadata

import pytest

from specchat.engine import ConfigError, Engine
from specchat.paths import AppPaths
from specchat.system.power import PowerStatus
from specchat.tuning.best_k import best_choices, best_k, pair_key, save_best_k, save_sweep, tuning_entry
from specchat.tuning.sweep import OnBatteryError, SweepConfig, SweepRunner
from specchat.tuning.sweep_prompts import BUILTIN_PROMPTS, SweepPrompt, builtin_prompts, load_prompt_file, merge_prompts
from specchat.tuning.sweep_report import TABLE_HEADER, to_json, to_markdown
from specchat.tuning.sweep_results import CellDone, RunDone, SweepFinished, SweepStarted
from specchat.tuning.sweep_stats import is_noisy, mad, median, robust_cv, speedup_pct

AC = PowerStatus("ac", None, None, "test: mains")
BATTERY = PowerStatus("battery", 80.0, False, "test: battery 80%")
MACHINE = {"chip": "Test Chip", "memory_total": "1.0 GB", "os": "TestOS", "mlx": "1", "mlx-lm": "2", "mlx-optiq": "3"}
SHORT = (SweepPrompt("short", "Say hi."),)
CELL_FIELDS = {
    "k",
    "median_tokens_per_s",
    "measured_median_tokens_per_s",
    "cv",
    "noisy",
    "speedup_pct",
    "acceptance_rate",
    "mean_accepted_per_round",
    "peak_memory_bytes",
    "peak_memory_delta_bytes",
    "identical",
    "first_mismatch",
    "power_sources",
    "power_changed",
    "reps",
    "warmups",
    "max_k",
}
RUN_FIELDS = {
    "index",
    "warmup",
    "tokens_per_s",
    "generated_tokens",
    "decode_s",
    "rounds",
    "drafted",
    "accepted",
    "peak_memory_bytes",
    "stop_reason",
    "power_source",
    "power_detail",
    "identical",
    "first_mismatch",
}


@pytest.fixture(scope="module")
def engine(dense_target, dense_draft_partial):
    return Engine.load(dense_target, dense_draft_partial)


def config(**kw) -> SweepConfig:
    base = dict(ks=(1, 3), reps=2, warmup=1, max_tokens=8, prompts=SHORT, dynamic=False)  # auto K: test_sweep_dynamic
    return SweepConfig(**{**base, **kw})


def runner(engine, cfg, **kw) -> SweepRunner:
    kw = {"read_power": lambda: AC, "machine_info": lambda: dict(MACHINE), **kw}
    return SweepRunner(engine, cfg, **kw)


# --- statistics on known numbers ---


def test_median_mad_and_robust_cv_on_known_numbers():
    values = [10.0, 12.0, 11.0, 13.0, 50.0]  # median 12; deviations 2,0,1,1,38 -> MAD 1
    assert median(values) == 12.0 and mad(values) == 1.0
    assert robust_cv(values) == pytest.approx(1.4826 / 12)
    assert is_noisy(robust_cv(values))
    steady = [100.0, 101.0, 99.0, 100.0]  # median 100; deviations 0,1,1,0 -> MAD 0.5
    assert median(steady) == 100.0 and mad(steady) == 0.5
    assert robust_cv(steady) == pytest.approx(0.0074130)
    assert not is_noisy(robust_cv(steady))
    assert robust_cv([7.0]) is None and robust_cv([7.0, 9.0]) is None and median([4.0, 8.0]) == 6.0
    assert not is_noisy(None)
    assert speedup_pct(150.0, 100.0) == pytest.approx(50.0) and speedup_pct(80.0, 100.0) == pytest.approx(-20.0)
    assert speedup_pct(1.0, 0.0) is None


# --- the runner on a tiny pair ---


def test_table_and_json_have_every_cell_and_field(engine):
    events = []
    cfg = config(prompts=tuple(builtin_prompts("structured,open")))
    result = runner(engine, cfg).run(events.append)
    assert isinstance(events[0], SweepStarted) and isinstance(events[-1], SweepFinished)
    runs = [e for e in events if isinstance(e, RunDone)]
    assert [e.done for e in runs] == list(range(1, cfg.total_runs + 1)) == list(range(1, 2 * 3 * 3 + 1))
    assert len([e for e in events if isinstance(e, CellDone)]) == 6

    data = json.loads(json.dumps(to_json(result)))
    assert data["machine"] == MACHINE and data["power_at_start"]["source"] == "ac"
    assert data["settings"]["ks"] == [1, 3] and data["settings"]["reps"] == 2
    assert [p["name"] for p in data["prompts"]] == ["structured", "open"]
    for prompt in cfg.prompts:  # through the chat template, thinking off
        ids = engine.tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt.text}], add_generation_prompt=True, enable_thinking=False
        )
        assert next(p for p in data["prompts"] if p["name"] == prompt.name)["prompt_tokens"] == len(ids)
    for prompt in data["prompts"]:
        assert [c["k"] for c in prompt["cells"]] == [None, 1, 3]
        base = prompt["cells"][0]
        for cell in prompt["cells"]:
            assert set(cell) == CELL_FIELDS
            assert len(cell["reps"]) == 2 and len(cell["warmups"]) == 1
            assert all(set(r) == RUN_FIELDS for r in cell["reps"] + cell["warmups"])
            assert cell["identical"] is True and cell["power_sources"] == ["ac"] * 3
            speeds = sorted(r["tokens_per_s"] for r in cell["reps"])
            assert cell["median_tokens_per_s"] == pytest.approx(sum(speeds) / 2)
            assert cell["peak_memory_bytes"] == max(r["peak_memory_bytes"] for r in cell["reps"]) > 0
        for cell in prompt["cells"][1:]:
            drafted = sum(r["drafted"] for r in cell["reps"])
            accepted = sum(r["accepted"] for r in cell["reps"])
            assert drafted > 0 and cell["acceptance_rate"] == pytest.approx(accepted / drafted)
            rounds = sum(r["rounds"] for r in cell["reps"])
            assert cell["mean_accepted_per_round"] == pytest.approx(accepted / rounds)
            assert cell["speedup_pct"] == pytest.approx(
                (cell["median_tokens_per_s"] / base["median_tokens_per_s"] - 1) * 100
            )
            assert cell["peak_memory_delta_bytes"] == cell["peak_memory_bytes"] - base["peak_memory_bytes"]
        assert base["acceptance_rate"] is None and base["speedup_pct"] is None
    assert set(data["best_k"]) == {"structured", "open"} and set(data["best_k"].values()) <= {0, 1, 3}
    assert all(c["cv"] is None for p in data["prompts"] for c in p["cells"])  # 2 reps: CV n/a, null in JSON

    md = to_markdown(result)
    assert md.count(TABLE_HEADER) == 2 and "Test Chip" in md
    for prompt in result.prompts:
        assert f"### {prompt.name} (" in md
        for cell in prompt.cells:
            assert f"| {cell.label} | {cell.median_tokens_per_s:.1f} |" in md


def test_identity_gate_catches_a_wrong_cell(engine):
    def wrong_at_k3(ids, cfg, cancel=None):
        result = engine.generate(ids, cfg, cancel)
        if cfg.num_draft_tokens == 3 and cfg.mode == "draft":
            tokens = result.tokens[:-1] + [(result.tokens[-1] + 1) % 50]
            return replace(result, tokens=tokens)
        return result

    events = []
    result = runner(engine, config(), generate=wrong_at_k3).run(events.append)
    base, k1, k3 = result.prompts[0].cells
    assert base.identical is True and k1.identical is True and k1.median_tokens_per_s is not None
    assert k3.identical is False and not k3.usable
    assert k3.median_tokens_per_s is None and k3.speedup_pct is None
    assert k3.measured_median_tokens_per_s > 0  # measured, kept in the raw data, but not reported
    assert k3.first_mismatch == base.reps[0].generated_tokens - 1  # only the last token was changed
    assert result.best_k()["short"] in (0, 1)  # never the wrong K3; Off when K1 does not beat plain
    best = "Off" if result.best_k()["short"] == 0 else "1"
    assert f"Best K per prompt type: short **{best}**" in to_markdown(result)
    assert all(e.identical is False for e in events if isinstance(e, RunDone) and e.k == 3)
    assert all(e.identical is True for e in events if isinstance(e, RunDone) and e.k != 3)
    row = next(line for line in to_markdown(result).splitlines() if line.startswith("| 3 |"))
    assert row.startswith("| 3 | — | — |") and "output differs from baseline at token" in row


def test_refuses_to_start_on_battery_unless_allowed(engine):
    calls = []

    def counting(ids, cfg, cancel=None):
        calls.append(cfg)
        return engine.generate(ids, cfg, cancel)

    with pytest.raises(OnBatteryError, match="battery 80%.*--allow-battery"):
        runner(engine, config(), generate=counting, read_power=lambda: BATTERY).run()
    assert calls == []
    result = runner(engine, config(ks=(2,), reps=1, warmup=0, allow_battery=True), read_power=lambda: BATTERY).run()
    assert result.power_at_start["source"] == "battery"
    assert all(c.power_sources == ("battery",) and not c.power_changed for c in result.prompts[0].cells)


def test_flags_cells_where_the_power_source_changed(engine):
    readings = iter([AC, AC, AC, BATTERY, AC, AC, AC])  # start, baseline x2, K=1 x2, K=3 x2

    result = runner(engine, config(ks=(1, 3), reps=2, warmup=0), read_power=lambda: next(readings)).run()
    base, k1, k3 = result.prompts[0].cells
    assert not base.power_changed and base.power_sources == ("ac", "ac")
    assert k1.power_changed and k1.power_sources == ("battery", "ac")
    assert not k3.power_changed
    assert "power source changed (battery, ac)" in to_markdown(result)


def test_at_temperature_above_zero_the_gate_is_off(engine):
    result = runner(engine, config(ks=(2,), reps=1, warmup=0, temperature=0.8)).run()
    assert all(c.identical is None and c.median_tokens_per_s is not None for c in result.prompts[0].cells)
    assert "identity gate off" in to_markdown(result)


def test_cancel_stops_between_runs_with_a_partial_result(engine):
    cancel = threading.Event()

    def stop_after_three(event):
        if isinstance(event, RunDone) and event.done == 3:
            cancel.set()

    result = runner(engine, config(), cancel=cancel).run(stop_after_three)
    assert result.cancelled and [c.k for c in result.prompts[0].cells] == [None]
    assert "Cancelled" in to_markdown(result)


def test_mtp_without_a_head_fails_with_the_engines_reason(engine):
    reason = engine.available_modes()["mtp"]
    assert reason
    with pytest.raises(ConfigError, match=re.escape(reason)):
        runner(engine, config(mode="mtp")).run()


@pytest.mark.parametrize("history", [False, True])
def test_mtp_sweep_runs_the_head_with_or_without_history(mtp_partial, history):
    engine = Engine.load(mtp_partial)
    result = runner(engine, config(mode="mtp", ks=(2,), reps=1, warmup=0, mtp_history=history)).run()
    assert result.settings["mtp_history"] is history
    assert all(c.identical for p in result.prompts for c in p.cells)
    assert (engine.drafters["mtp"].entries > 0) is history  # only a head with history keeps a cache


def test_bad_settings_are_named():
    with pytest.raises(ConfigError, match="reps"):
        config(reps=0)
    with pytest.raises(ConfigError, match=r"draft tokens \(K\) must be a whole number between 1 and 16"):
        config(ks=(0, 2))
    with pytest.raises(ConfigError, match="mode"):
        config(mode="baseline")


# --- prompts ---


def test_prompt_files_and_names(tmp_path):
    (tmp_path / "mine.json").write_text(json.dumps({"sql": "Write a SQL query.", "poem": "A poem."}))
    (tmp_path / "essay.txt").write_text("Write an essay.\n")
    prompts = merge_prompts(
        builtin_prompts("open"), load_prompt_file(tmp_path / "mine.json"), load_prompt_file(tmp_path / "essay.txt")
    )
    assert [(p.name, p.text) for p in prompts][1:] == [
        ("sql", "Write a SQL query."),
        ("poem", "A poem."),
        ("essay", "Write an essay."),
    ]
    assert prompts[0].text == BUILTIN_PROMPTS["open"] and "four small Python functions" in BUILTIN_PROMPTS["structured"]
    with pytest.raises(ConfigError, match="unknown built-in prompt 'nope'"):
        builtin_prompts("structured,nope")
    with pytest.raises(ConfigError, match="used twice"):
        merge_prompts(builtin_prompts("open"), builtin_prompts("open"))
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(ConfigError, match="bad.json must hold a JSON object"):
        load_prompt_file(tmp_path / "bad.json")
    with pytest.raises(ConfigError, match="cannot read prompt file"):
        load_prompt_file(tmp_path / "missing.txt")


# --- best K saved per pair ---


def test_best_k_saved_and_read_back(engine, tmp_path, dense_target, dense_draft_partial):
    paths = AppPaths.under(tmp_path)
    assert best_k(paths, dense_target, dense_draft_partial) is None
    result = runner(engine, config(ks=(1, 3))).run()
    assert (result.target, result.drafter) == (str(dense_target.resolve()), str(dense_draft_partial.resolve()))
    save_sweep(paths, result)
    via_dots = dense_target.parent / ".." / dense_target.parent.name / dense_target.name
    assert best_k(paths, via_dots, dense_draft_partial) == result.best_k() == {"short": result.best_k()["short"]}
    assert best_k(paths, dense_target, "mtp") is None
    save_best_k(paths, dense_target, "mtp", {"structured": 2, "open": 1})
    assert best_k(paths, dense_target, "mtp") == {"structured": 2, "open": 1}
    assert best_k(paths, dense_target, dense_draft_partial) == result.best_k()  # the other pair is kept
    entry = tuning_entry(paths, dense_target, dense_draft_partial)
    expected = 0.0 if result.best_k()["short"] == 0 else result.prompts[0].best_cell().speedup_pct
    assert entry["speedup_pct"]["short"] == pytest.approx(expected)
    assert pair_key(dense_target, "mtp").endswith("::mtp")
    paths.tuning_file.write_text("{not json")
    assert best_k(paths, dense_target, "mtp") is None
    save_best_k(paths, dense_target, "mtp", {"open": 0})  # 0: Off
    assert best_k(paths, dense_target, "mtp") == {"open": 0}
    with pytest.raises(ValueError, match="whole number"):
        save_best_k(paths, dense_target, "mtp", {"open": -1})


# --- the command line ---


@pytest.mark.slow
def test_cli_sweep_writes_json_markdown_and_saves_best_k(tmp_path, dense_target, dense_draft_partial):
    out_json, out_md = tmp_path / "out.json", tmp_path / "out.md"
    env = {**os.environ, "SPECCHAT_HOME": str(tmp_path / "home")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "specchat",
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
            "1",
            "--prompts",
            "open",
            "--max-tokens",
            "6",
            "--tag",
            "ci",
            "--json",
            str(out_json),
            "--markdown",
            str(out_md),
            "--allow-battery",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out_json.read_text())
    assert data["machine"]["mlx"] == metadata.version("mlx") and data["machine"]["chip"]
    assert data["tag"] == "ci" and [c["k"] for c in data["prompts"][0]["cells"]] == [None, 1, 2, "auto"]
    assert all(len(c["reps"]) == 2 for c in data["prompts"][0]["cells"])
    assert data["prompts"][0]["cells"][-1]["identical"] is True and data["settings"]["dynamic"] is True
    md = out_md.read_text()
    assert md in proc.stdout and "[ci]" in md and md.count("\n| ") == 5
    assert "\n| dynamic (auto K) | " in md
    assert "12/12" in proc.stderr and "auto K" in proc.stderr  # the progress bar reached the end
    paths = AppPaths.under(tmp_path / "home")
    assert best_choices(paths, dense_target, dense_draft_partial) == data["best_k"]


def test_cli_names_a_bad_draft_tokens_list(dense_target):
    proc = subprocess.run(
        [sys.executable, "-m", "specchat", "sweep", "--target", str(dense_target), "--mtp", "--draft-tokens", "1,x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "draft tokens must be whole numbers" in proc.stderr


# --- the best choice never recommends a slowdown ---


def speeds_set(engine, plain_tps: float, draft_tps):
    """A generate hook that reports chosen decode speeds (the tokens stay the engine's own)."""

    def generate(ids, cfg, cancel=None):
        result = engine.generate(ids, cfg, cancel)
        tps = plain_tps if cfg.mode == "baseline" else draft_tps(cfg.num_draft_tokens)
        return replace(result, stats=replace(result.stats, decode_tokens_per_s=tps))

    return generate


def test_a_sweep_where_speculation_is_slower_recommends_off(engine, tmp_path, dense_target, dense_draft_partial):
    slower = speeds_set(engine, 20.0, lambda k: {1: 15.0, 3: 19.5}[k])
    result = runner(engine, config(reps=3, warmup=0), generate=slower).run()
    prompt = result.prompts[0]
    assert prompt.best_cell().k == 3 and prompt.best_choice() == 0 and result.best_k() == {"short": 0}
    assert all(c.cv == 0.0 for c in prompt.cells)  # 3 reps: a CV
    md = to_markdown(result)
    assert "Best: **Off** (plain decoding): the fastest K, 3 (-2.5% vs baseline)" in md
    assert "Best K per prompt type: short **Off**" in md and to_json(result)["best_k"] == {"short": 0}
    paths = AppPaths.under(tmp_path)
    save_sweep(paths, result)
    assert best_k(paths, dense_target, dense_draft_partial) == {"short": 0}
    assert tuning_entry(paths, dense_target, dense_draft_partial)["speedup_pct"] == {"short": 0.0}


@pytest.mark.parametrize(
    "k_tps,reps,expected",
    [
        (21.5, 3, 1),  # +7.5% with steady reps (CV 0): beyond the 5% floor
        (20.9, 3, 0),  # +4.5%: within the 5% floor
        (23.0, 2, 1),  # +15% with CVs n/a (2 reps): beyond the 10% band
        (21.5, 2, 0),  # +7.5% with CVs n/a: within the 10% band
    ],
)
def test_a_k_is_best_only_beyond_the_noise(engine, k_tps, reps, expected):
    result = runner(
        engine, config(ks=(1,), reps=reps, warmup=0), generate=speeds_set(engine, 20.0, lambda k: k_tps)
    ).run()
    assert result.best_k() == {"short": expected}
