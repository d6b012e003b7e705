"""DFlash and Auto from the command line: `generate --dflash DIR` drafts with the block drafter (and its output
is the target's own), `--mode auto` picks the drafter each round, and `serve --dflash` offers the mode."""

import json

import httpx
import pytest

from specchat.engine import Engine, GenerationConfig
from specchat.server.running import free_port
from tests.fixtures.dflash_models import build_dflash

from .server.test_shutdown import start_serve
from .test_cli import run_cli


def test_generate_with_a_dflash_drafter_equals_plain_decoding(tmp_path, dense_target):
    drafter = build_dflash(tmp_path / "dflash", dense_target)
    args = ["generate", "--target", str(dense_target), "--max-tokens", "12", "--raw", "--prompt", "def f(x):"]
    proc = run_cli(*args, "--dflash", str(drafter), "--draft-tokens", "6", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    engine = Engine.load(dense_target)
    expected = engine.generate(engine.tokenizer.encode("def f(x):"), GenerationConfig(max_tokens=12))
    assert out["tokens"] == expected.tokens
    assert out["stats"]["mode"] == "dflash" and out["stats"]["rounds"] > 0


def test_generate_in_auto_mode_names_its_drafters(dense_target, dense_draft_partial):
    args = ["generate", "--target", str(dense_target), "--draft", str(dense_draft_partial), "--max-tokens", "12"]
    proc = run_cli(*args, "--mode", "auto", "--raw", "--prompt", "a b c a b c a b", "--json")
    assert proc.returncode == 0, proc.stderr
    stats = json.loads(proc.stdout)["stats"]
    assert stats["mode"] == "auto" and stats["drafter_rounds"]


def test_a_missing_dflash_folder_is_refused_in_one_line(dense_target):
    proc = run_cli("generate", "--target", str(dense_target), "--dflash", "/nope", "--prompt", "hi")
    assert proc.returncode == 2 and "model folder not found: /nope" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_serve_with_a_dflash_drafter_offers_the_mode(tmp_path, dense_target, dense_draft_partial):
    drafter = build_dflash(tmp_path / "dflash", dense_target)
    port = free_port()
    proc = start_serve(dense_target, dense_draft_partial, port, "--dflash", str(drafter))
    try:
        base = f"http://127.0.0.1:{port}"
        assert httpx.get(base + "/specchat/v1/status", timeout=30).json()["available_modes"]["dflash"] is None
        body = {"prompt": "def f(x):", "max_tokens": 6, "speculation": {"mode": "dflash", "num_draft_tokens": 4}}
        answer = httpx.post(base + "/v1/completions", json=body, timeout=120).json()
        assert answer["usage"]["speculation"]["mode"] == "dflash"
    finally:
        proc.terminate()
        proc.wait(timeout=60)
