"""Sweeps and A/B with a DFlash drafter: its Ks (at most block_size - 1), its folder named as the pair's drafter,
identical greedy output in every cell, the CLI's --dflash."""

import json
import os
import subprocess
import sys

import pytest

from specchat.engine import ConfigError, Engine
from specchat.engine.config import DFLASH_MAX_DRAFT_TOKENS
from specchat.paths import AppPaths
from specchat.system.power import PowerStatus
from specchat.tuning.ab_compare import AB_MODES, MODE_TITLES, run_ab
from specchat.tuning.best_k import best_choices
from specchat.tuning.sweep import DEFAULT_DFLASH_KS, SweepConfig, SweepRunner, default_ks
from specchat.tuning.sweep_prompts import SweepPrompt
from specchat.tuning.sweep_report import to_markdown
from tests.fixtures.dflash_models import build_dflash

AC = PowerStatus("ac", None, None, "test: mains")
MACHINE = {"chip": "Test Chip", "memory_total": "1.0 GB", "os": "TestOS", "mlx": "1", "mlx-lm": "2", "mlx-optiq": "3"}
SHORT = (SweepPrompt("short", "Say hi."),)


@pytest.fixture(scope="module")
def dflash_folder(dense_target, tmp_path_factory):
    return build_dflash(tmp_path_factory.mktemp("tuning_dflash") / "dflash-b16", dense_target)


@pytest.fixture(scope="module")
def engine(dense_target, dflash_folder):
    return Engine.load(dense_target, dflash=dflash_folder)


def sweep(engine, **kw):
    base = dict(mode="dflash", ks=(1, 15), reps=1, warmup=0, max_tokens=10, prompts=SHORT, dynamic=True)
    cfg = SweepConfig(**{**base, **kw})
    return SweepRunner(engine, cfg, read_power=lambda: AC, machine_info=lambda: dict(MACHINE)).run()


def test_a_dflash_sweep_takes_its_own_ks_and_refuses_a_longer_block():
    assert default_ks("dflash") == DEFAULT_DFLASH_KS and max(DEFAULT_DFLASH_KS) == DFLASH_MAX_DRAFT_TOKENS
    assert default_ks("mtp") == (1, 2, 3, 4) and default_ks("draft") == (1, 2, 4, 8, 16)
    assert SweepConfig(mode="dflash", ks=DEFAULT_DFLASH_KS, prompts=SHORT).auto_max_k == DFLASH_MAX_DRAFT_TOKENS
    with pytest.raises(ConfigError, match=r"DFlash draft tokens \(K\) must be a whole number between 1 and 15"):
        SweepConfig(mode="dflash", ks=(16,), prompts=SHORT)


def test_a_dflash_sweep_names_its_drafter_and_matches_plain_decoding(engine, dflash_folder):
    result = sweep(engine)
    assert result.mode == "dflash" and result.drafter == str(dflash_folder)
    cells = result.prompts[0].cells
    assert [c.k for c in cells] == [None, 1, 15, "auto"]
    assert all(c.identical for c in cells)
    assert all(c.acceptance_rate is not None for c in cells[1:3])  # fixed Ks draft every round
    assert cells[-1].max_k == DFLASH_MAX_DRAFT_TOKENS
    assert result.settings["auto_max_k"] == DFLASH_MAX_DRAFT_TOKENS
    assert to_markdown(result).startswith(f"## Sweep: {engine.target.path.name} + DFlash dflash-b16")


def test_a_sweep_without_a_dflash_drafter_fails_with_the_engines_reason(dense_target):
    plain = Engine.load(dense_target)
    with pytest.raises(ConfigError, match="no DFlash drafter loaded"):
        sweep(plain)


class Recording:
    """An engine that records the configs it generates with."""

    def __init__(self, engine):
        self.engine, self.configs = engine, []
        self.tokenizer = engine.tokenizer

    def available_modes(self):
        return self.engine.available_modes()

    def generate(self, ids, cfg, cancel=None):
        self.configs.append(cfg)
        return self.engine.generate(ids, cfg, cancel)

    def stream(self, ids, cfg, cancel=None):
        return self.engine.stream(ids, cfg, cancel)

    def reset(self):
        self.engine.reset()


def test_ab_runs_dflash_beside_the_other_modes_with_its_k_capped(engine):
    assert AB_MODES[-1] == "dflash" and MODE_TITLES["dflash"] == "DFlash"
    recording = Recording(engine)
    ids = list(engine.tokenizer.encode("Once upon a time"))
    rows = {row.mode: row for row in run_ab(recording, ids, 16, 12)}
    assert list(rows) == list(AB_MODES)
    assert rows["dflash"].unavailable is None and rows["dflash"].identical is True
    assert rows["dflash"].generated_tokens == rows["baseline"].generated_tokens == 12
    assert rows["draft"].unavailable and rows["mtp"].unavailable  # no draft model, no head
    k_of = {cfg.mode: cfg.num_draft_tokens for cfg in recording.configs}
    assert k_of["dflash"] == DFLASH_MAX_DRAFT_TOKENS and k_of["lookup"] == 16


def cli(tmp_path, *args):
    env = {**os.environ, "SPECCHAT_HOME": str(tmp_path / "home")}
    command = [sys.executable, "-m", "specchat", "sweep", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)


def test_cli_sweeps_a_dflash_drafter_and_saves_its_best_k(tmp_path, dense_target, dflash_folder):
    out = tmp_path / "out.json"
    proc = cli(
        tmp_path, "--target", dense_target, "--dflash", dflash_folder, "--draft-tokens", "2,15", "--reps", "1",
        "--warmup", "0", "--prompts", "open", "--max-tokens", "6", "--json", out, "--allow-battery",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["mode"] == "dflash" and data["drafter"] == str(dflash_folder)
    assert [c["k"] for c in data["prompts"][0]["cells"]] == [None, 2, 15, "auto"]
    assert all(c["identical"] for c in data["prompts"][0]["cells"])
    assert "+ DFlash dflash-b16" in proc.stdout
    assert best_choices(AppPaths.under(tmp_path / "home"), dense_target, dflash_folder) == data["best_k"]


def test_cli_takes_one_drafter_and_names_a_block_too_long(tmp_path, dense_target, dflash_folder):
    both = cli(tmp_path, "--target", dense_target, "--dflash", dflash_folder, "--mtp")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
    long = cli(
        tmp_path, "--target", dense_target, "--dflash", dflash_folder, "--draft-tokens", "16", "--allow-battery",
        "--no-save",
    )  # fmt: skip
    assert long.returncode != 0 and "between 1 and 15" in long.stderr
