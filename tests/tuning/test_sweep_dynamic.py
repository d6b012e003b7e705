"""The sweep's dynamic cell: auto K after the fixed Ks, its identity gate, when it is the best, saved, read back."""

import argparse
import json
from dataclasses import replace

import pytest

from specchat.engine import Engine
from specchat.engine.config import AUTO_MAX_DRAFT_TOKENS
from specchat.paths import AppPaths
from specchat.system.power import PowerStatus
from specchat.tuning import sweep_cli
from specchat.tuning.best_k import best_choices, best_k, save_best_k, save_sweep, tuning_entry
from specchat.tuning.sweep import SweepConfig, SweepRunner
from specchat.tuning.sweep_prompts import SweepPrompt, builtin_prompts
from specchat.tuning.sweep_report import from_json, read_json, to_json, to_markdown, write_json
from specchat.tuning.sweep_results import (
    AUTO,
    OFF,
    PromptResult,
    RunDone,
    RunRecord,
    SweepResult,
    summarize_cell,
)

AC = PowerStatus("ac", None, None, "test: mains")
MACHINE = {"chip": "Test Chip", "memory_total": "1.0 GB", "os": "TestOS"}


@pytest.fixture(scope="module")
def engine(hybrid_target, hybrid_draft_partial):
    return Engine.load(hybrid_target, hybrid_draft_partial)


def sweep(engine, events=None, generate=None, **kw):
    base = dict(ks=(1, 2), reps=2, warmup=1, max_tokens=8, prompts=tuple(builtin_prompts("structured,open")))
    cfg = SweepConfig(**{**base, **kw})
    runner = SweepRunner(engine, cfg, read_power=lambda: AC, machine_info=lambda: dict(MACHINE), generate=generate)
    return cfg, runner.run(None if events is None else events.append)


def run(tps: float, k_drafted: int = 6) -> RunRecord:
    return RunRecord(0, False, tps, 8, 0.1, 3, k_drafted, 3, 1000, "length", "ac", "", True, None)


def prompt_with(auto_tps: list[float] | None, fixed_tps=(110.0, 111.0, 109.0), name="chat") -> PromptResult:
    """A prompt whose plain decoding runs at 100 tok/s (CV about 1%), K=2 at fixed_tps, auto K at auto_tps."""
    base = summarize_cell(None, [run(100.0), run(101.0), run(99.0)], [], None, "ac")
    k2 = summarize_cell(2, [run(t) for t in fixed_tps], [], base, "ac")
    cells = [base, k2]
    if auto_tps is not None:
        cells.append(summarize_cell(AUTO, [run(t) for t in auto_tps], [], base, "ac", max_k=8))
    return PromptResult(name, "text", 5, "reply", tuple(cells))


def result_of(*prompts: PromptResult, target="t", drafter="d") -> SweepResult:
    settings = {"ks": [2], "reps": 3, "warmup": 0, "max_tokens": 8, "temperature": 0.0, "dynamic": True}
    return SweepResult(
        target, drafter, "draft", {**settings, "auto_max_k": 8}, MACHINE, {"source": "ac"}, "2026-01-01", prompts
    )


# --- the runner on the tiny hybrid pair ---


@pytest.mark.slow
def test_each_prompt_ends_with_an_auto_cell_whose_greedy_output_is_plains(engine):
    events, configs = [], []

    def recording(ids, cfg, cancel=None):
        configs.append(cfg)
        return engine.generate(ids, cfg, cancel)

    cfg, result = sweep(engine, events, generate=recording)
    assert cfg.total_runs == 2 * 4 * 3 == len([e for e in events if isinstance(e, RunDone)])
    for prompt in result.prompts:
        assert [c.k for c in prompt.cells] == [None, 1, 2, AUTO]
        auto = prompt.dynamic
        assert auto is prompt.cells[-1] and auto.identical is True and auto.usable
        assert len(auto.reps) == 2 and len(auto.warmups) == 1 and auto.cv is None  # same reps/warmups as the others
        assert auto.max_k == AUTO_MAX_DRAFT_TOKENS and auto.label == "dynamic (auto K)"
        assert auto.speedup_pct == pytest.approx(
            (auto.median_tokens_per_s / prompt.baseline.median_tokens_per_s - 1) * 100
        )
    auto_cfgs = [c for c in configs if c.num_draft_tokens == "auto"]
    assert len(auto_cfgs) == 2 * 3 and all(c.mode == "draft" and c.greedy for c in auto_cfgs)
    assert all(e.identical is True for e in events if isinstance(e, RunDone) and e.k == AUTO)
    assert result.settings["dynamic"] is True and result.settings["auto_max_k"] == AUTO_MAX_DRAFT_TOKENS

    data = json.loads(json.dumps(to_json(result)))
    assert [c["k"] for c in data["prompts"][0]["cells"]] == [None, 1, 2, "auto"]
    assert data["prompts"][0]["cells"][-1]["max_k"] == AUTO_MAX_DRAFT_TOKENS
    md = to_markdown(result)
    assert (
        md.count("\n| dynamic (auto K) | ") == 2
        and f"at most {AUTO_MAX_DRAFT_TOKENS} tokens (the engine's default max)" in md
    )


def test_the_dynamic_cell_can_be_left_out(engine):
    cfg, result = sweep(engine, ks=(2,), reps=1, warmup=0, dynamic=False, prompts=(SweepPrompt("s", "Say hi."),))
    assert cfg.total_runs == 2 and [c.k for c in result.prompts[0].cells] == [None, 2]
    assert result.settings["auto_max_k"] is None and "| dynamic (auto K) |" not in to_markdown(result)


def test_an_auto_cell_whose_output_differs_is_never_the_best(engine):
    def wrong_auto(ids, cfg, cancel=None):
        result = engine.generate(ids, cfg, cancel)
        if cfg.num_draft_tokens == "auto":
            return replace(result, tokens=[*result.tokens[:-1], (result.tokens[-1] + 1) % 50])
        return result

    _, result = sweep(engine, generate=wrong_auto, prompts=(SweepPrompt("s", "Say hi."),), reps=1, warmup=0)
    auto = result.prompts[0].dynamic
    assert auto.identical is False and not auto.usable and result.best_k()["s"] != AUTO
    assert "output differs from baseline" in to_markdown(result)


# --- the best choice: auto K only beyond the noise of plain and the fastest fixed K ---


@pytest.mark.parametrize(
    "auto_tps,expected",
    [
        ([130.0, 131.0, 129.0], AUTO),  # +18% over K=2 with CVs about 1%: beyond the 5% floor
        ([113.0, 114.0, 112.0], 2),  # +2.7% over K=2: within the noise, the fixed K stays
        ([105.0, 106.0, 104.0], 2),  # slower than K=2 (though faster than plain)
        ([130.0, 180.0, 95.0], 2),  # faster median but noisy (CV 40%): within the noise
    ],
)
def test_auto_is_the_best_only_beyond_the_noise_of_the_fastest_k(auto_tps, expected):
    prompt = prompt_with(auto_tps)
    assert prompt.best_fixed_choice() == 2
    assert prompt.best_choice() == expected and prompt.dynamic_wins() is (expected == AUTO)


def test_auto_must_beat_plain_too_and_alone_it_still_decides():
    steady_k = (101.0, 102.0, 100.0)  # K=2 no faster than plain: Off
    assert prompt_with([104.0, 105.0, 103.0], steady_k).best_choice() == OFF  # auto +4%: within the noise
    assert prompt_with([120.0, 121.0, 119.0], steady_k).best_choice() == AUTO
    assert prompt_with(None).best_choice() == 2  # an old sweep without the cell: as before
    base = summarize_cell(None, [run(100.0)] * 3, [], None, "ac")
    differs = summarize_cell(2, [replace(run(150.0), identical=False)] * 3, [], base, "ac")
    slow_auto = summarize_cell(AUTO, [run(90.0)] * 3, [], base, "ac", max_k=8)
    assert PromptResult("p", "", 1, "", (base, differs, slow_auto)).best_choice() == OFF
    fast_auto = summarize_cell(AUTO, [run(130.0)] * 3, [], base, "ac", max_k=8)
    assert PromptResult("p", "", 1, "", (base, differs, fast_auto)).best_choice() == AUTO


def test_the_report_says_why_auto_won_or_not():
    result = result_of(
        prompt_with([130.0, 131.0, 129.0], name="code"), prompt_with([112.0, 113.0, 111.0], name="prose")
    )
    assert result.best_k() == {"code": AUTO, "prose": 2}
    md = to_markdown(result)
    assert "Best: **dynamic (auto K)** (130.0 tok/s, +30.0% vs baseline; faster than the fastest K, 2" in md
    assert "dynamic (auto K): 112.0 tok/s, +12.0% vs baseline; it does not beat both plain decoding" in md
    assert "Best K per prompt type: code **auto**, prose **2**" in md


# --- saved as the chat's default ---


def test_auto_is_saved_as_the_best_choice_and_read_back(tmp_path):
    paths = AppPaths.under(tmp_path)
    result = result_of(prompt_with([130.0, 131.0, 129.0], name="code"), prompt_with(None, name="prose"))
    save_sweep(paths, result)
    assert best_choices(paths, "t", "d") == {"code": "auto", "prose": 2}
    assert best_k(paths, "t", "d") == {"prose": 2}  # whole-number readers see the fixed Ks only
    assert tuning_entry(paths, "t", "d")["speedup_pct"] == {"code": pytest.approx(30.0), "prose": pytest.approx(10.0)}
    save_best_k(paths, "t", "mtp", {"open": "auto"})
    assert best_choices(paths, "t", "mtp") == {"open": "auto"} and best_k(paths, "t", "mtp") is None
    with pytest.raises(ValueError, match="'auto' for auto K, got 'Auto'"):
        save_best_k(paths, "t", "d", {"open": "Auto"})


# --- JSON read back, old files included ---


def test_a_sweep_reads_back_from_its_json(tmp_path):
    result = result_of(prompt_with([130.0, 131.0, 129.0]))
    assert read_json(write_json(result, tmp_path / "s.json")) == result


def test_an_old_json_without_the_auto_cell_loads(tmp_path):
    """A file from before auto K: no dynamic cell, no max_k, no dynamic settings; its best K stands."""
    data = json.loads(json.dumps(to_json(result_of(prompt_with(None)))))
    for cell in data["prompts"][0]["cells"]:
        del cell["max_k"]
    for key in ("dynamic", "auto_max_k"):
        del data["settings"][key]
    (tmp_path / "old.json").write_text(json.dumps(data))
    old = read_json(tmp_path / "old.json")
    assert [c.k for c in old.prompts[0].cells] == [None, 2] and old.prompts[0].dynamic is None
    assert old.best_k() == {"chat": 2} == data["best_k"]
    assert "| dynamic (auto K) |" not in to_markdown(old) and "at most" not in to_markdown(old)
    assert from_json({**data, "future_key": 1}).best_k() == {"chat": 2}  # a newer file's extra keys are left out


# --- the command line ---


def test_the_cli_has_a_switch_to_leave_the_dynamic_cell_out():
    parser = argparse.ArgumentParser()
    sweep_cli.register(parser.add_subparsers())
    common = ["sweep", "--target", ".", "--draft", "."]
    assert parser.parse_args(common).no_dynamic is False
    assert parser.parse_args([*common, "--no-dynamic"]).no_dynamic is True
