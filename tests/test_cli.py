"""`python -m app generate` prints the engine's output."""

import json
import re
import signal
import subprocess
import sys
import time

from app.engine import Engine, GenerationConfig


def run_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, timeout=120)


def test_generate_json_equals_the_engine(hybrid_target, hybrid_draft_partial):
    proc = run_cli("generate", "--target", str(hybrid_target), "--draft", str(hybrid_draft_partial),
                   "--draft-tokens", "3", "--max-tokens", "12", "--raw", "--prompt", "def f(x):", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    engine = Engine.load(hybrid_target)
    expected = engine.generate(engine.tokenizer.encode("def f(x):"), GenerationConfig(max_tokens=12))
    assert out["tokens"] == expected.tokens and out["text"] == expected.text
    assert out["stats"]["mode"] == "draft" and out["stats"]["num_draft_tokens"] == 3


def test_generate_streams_text_then_a_stats_line(dense_target):
    proc = run_cli("generate", "--target", str(dense_target), "--max-tokens", "6", "--prompt", "hi")
    assert proc.returncode == 0, proc.stderr
    assert "6 tokens" in proc.stderr and "tok/s decode" in proc.stderr and "mode baseline" in proc.stderr


def test_a_bad_folder_is_a_clear_error(tmp_path):
    proc = run_cli("generate", "--target", str(tmp_path / "missing"), "--prompt", "hi")
    assert proc.returncode == 2 and "model folder not found" in proc.stderr


def test_ctrl_c_stops_cleanly_with_the_text_so_far_and_the_stats_line(dense_target):
    proc = subprocess.Popen([sys.executable, "-m", "app", "generate", "--target", str(dense_target),
                             "--max-tokens", "30000", "--raw", "--prompt", "def f(x):"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.read(1)  # text is streaming: the model is generating
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    match = re.search(r"\[(\d+) tokens, stopped by Ctrl-C, .* tok/s decode", err)
    assert match and 0 < int(match.group(1)) < 30000, err
    assert len(first + out) > 0
