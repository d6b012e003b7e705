"""`python -m specchat generate` prints the engine's output."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from specchat.engine import Engine, GenerationConfig


def run_cli(*args, stdin: bytes = b"") -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "specchat", *args], capture_output=True, input=stdin, timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


@pytest.mark.slow
def test_generate_json_equals_the_engine(hybrid_target, hybrid_draft_partial):
    proc = run_cli(
        "generate",
        "--target",
        str(hybrid_target),
        "--draft",
        str(hybrid_draft_partial),
        "--draft-tokens",
        "3",
        "--max-tokens",
        "12",
        "--raw",
        "--prompt",
        "def f(x):",
        "--json",
    )
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


def test_a_folder_without_tokenizer_files_is_a_clear_error(tmp_path, dense_target):
    import shutil

    folder = tmp_path / "no-tokenizer"
    folder.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer_config.json"):
        shutil.copy(dense_target / name, folder / name)
    proc = run_cli("generate", "--target", str(folder), "--prompt", "hi")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().endswith("has no tokenizer files (tokenizer.json, vocab.json or tokenizer.model)")


def test_stats_line_of_an_auto_k_reply_that_never_drafted(dense_target):
    # a raw two-token prompt: prompt lookup finds nothing to propose, so no round drafts
    proc = run_cli(
        "generate",
        "--target",
        str(dense_target),
        "--mode",
        "lookup",
        "--draft-tokens",
        "auto",
        "--max-tokens",
        "6",
        "--raw",
        "--prompt",
        "zq",
    )
    assert proc.returncode == 0, proc.stderr
    assert "acceptance —" in proc.stderr and "0%" not in proc.stderr
    assert "stopped: max tokens (6)" in proc.stderr


def test_ctrl_c_stops_cleanly_with_the_text_so_far_and_the_stats_line(dense_target):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "specchat",
            "generate",
            "--target",
            str(dense_target),
            "--max-tokens",
            "30000",
            "--raw",
            "--prompt",
            "def f(x):",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
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


# generate with an engine that, like one inside a long prefill chunk, is deaf to cancel: it says when it starts
# and when it saw the cancel, then holds the engine thread
STUCK_ENGINE = """
import time
import specchat.engine.owner as owner

def prompt_job(ids, cfg):
    def work(ctx):
        print("busy", flush=True)
        ctx.cancel.wait(120)
        print("cancel seen", flush=True)
        time.sleep(120)
    return work

owner.prompt_job = prompt_job
import sys
from specchat.cli import main
sys.exit(main())
"""


def test_a_second_ctrl_c_exits_at_once_in_one_line(dense_target):
    proc = subprocess.Popen(
        [sys.executable, "-c", STUCK_ENGINE, "generate", "--target", str(dense_target), "--prompt", "hi"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline() == "busy\n"
        proc.send_signal(signal.SIGINT)
        assert proc.stdout.readline() == "cancel seen\n"  # the first Ctrl-C asked the job to stop
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines() == ["specchat generate: Ctrl-C again: stopped at once"], err


def test_bad_arguments_are_refused_in_one_line_before_any_model_work(tmp_path, dense_target):
    a_file = tmp_path / "config.json"
    a_file.write_text("{}")
    target = str(dense_target)
    cases = [
        (["serve", "--target", str(a_file)], "--target", "is a file; give the model's folder"),
        (["serve", "--target", str(tmp_path / "missing")], "--target", "model folder not found"),
        (["serve", "--target", target, "--port", "99999"], "--port", "from 1 to 65535, got 99999"),
        (["serve", "--target", target, "--max-queue", "-1"], "--max-queue", "at least 0, got -1"),
        (["generate", "--target", str(a_file), "--prompt", "hi"], "--target", "is a file"),
        (["generate", "--target", target, "--draft", str(a_file), "--prompt", "hi"], "--draft", "is a file"),
        (["sweep", "--target", target, "--reps", "0"], "--reps", "at least 1, got 0"),
        (["generate", "--target", target, "--prompt", "hi", "--seed", "-5"], "--seed", "between 0 and"),
        (["generate", "--target", target, "--prompt", b"caf\xc3\xa9 \xff"], "--prompt", "byte 6 is 0xff"),
    ]
    bad_utf8, empty, missing = tmp_path / "bad.txt", tmp_path / "empty.txt", tmp_path / "nowhere" / "sweep.json"
    bad_utf8.write_bytes(b"caf\xc3\xa9 \xff")
    empty.write_text(" \n")
    cases += [
        (["generate", "--target", target, "--prompt", ""], "--prompt", "the prompt is empty"),
        (["generate", "--target", target, "--prompt-file", str(bad_utf8)], "--prompt-file", "byte 6 is 0xff"),
        (["generate", "--target", target, "--prompt-file", str(empty)], "--prompt-file", "the prompt is empty"),
        (["generate", "--target", target, "--prompt-file", str(tmp_path / "no.txt")], "--prompt-file", "cannot read"),
        (["generate", "--target", target, "--prompt", "-", b"\xff"], "--prompt", "stdin: not valid UTF-8 text"),
        (["generate", "--target", target, "--prompt", "-", b""], "--prompt", "stdin: the prompt is empty"),
        (["sweep", "--target", target, "--draft", target, "--prompt-file", str(bad_utf8)], "--prompt-file", "0xff"),
        (["sweep", "--target", target, "--draft", target, "--json", str(missing)], "--json", "folder not found"),
    ]
    runs = [
        (args[:-1], args[-1]) if isinstance(args[-1], bytes) and args[-2] == "-" else (args, b"")
        for args, _, _ in cases
    ]
    for (args, flag, words), (code, out, err) in zip(cases, run_cli_cases(runs), strict=True):
        assert code == 2, (args, err)
        error = err.strip().splitlines()[-1]
        assert error.startswith(f"specchat {args[0]}: error: argument {flag}") and words in error, (args, error)
        assert "Traceback" not in err and not out
        assert len(err.strip().splitlines()) == 1, err
    assert not missing.parent.exists()  # refused, never created


# Runs each case's `main(argv)` in one fresh process (one interpreter start, not one per case): argv as the
# interpreter would decode it (os.fsdecode: invalid UTF-8 as surrogate escapes), stdin as bytes.
CLI_CASES = """
import contextlib, io, json, sys
from specchat.cli import main

results = []
for argv, stdin in json.loads(sys.stdin.read()):
    out, err = io.StringIO(), io.StringIO()
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode("latin-1")), encoding="utf-8")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit:
            code = exit.code
    results.append([code, out.getvalue(), err.getvalue()])
print(json.dumps(results))
"""


def run_cli_cases(runs: list[tuple[list, bytes]]) -> list[tuple[int, str, str]]:
    """(exit code, stdout, stderr) of `specchat ARGS` for each (args, stdin), all in one new process."""
    cases = [
        ([os.fsdecode(a) if isinstance(a, bytes) else a for a in args], stdin.decode("latin-1")) for args, stdin in runs
    ]
    proc = subprocess.run(
        [sys.executable, "-c", CLI_CASES], input=json.dumps(cases), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return [tuple(result) for result in json.loads(proc.stdout)]


@pytest.mark.slow
def test_the_prompt_comes_from_a_file_or_stdin_as_from_the_flag(tmp_path, dense_target):
    text = "def café(x):"
    prompt_file = tmp_path / "prompt.txt"
    prompt_file.write_text(text, encoding="utf-8")
    common = ["generate", "--target", str(dense_target), "--max-tokens", "4", "--raw", "--json"]
    outputs = [
        run_cli(*common, "--prompt", text),
        run_cli(*common, "--prompt-file", str(prompt_file)),
        run_cli(*common, "--prompt", "-", stdin=text.encode("utf-8")),
    ]
    assert all(proc.returncode == 0 for proc in outputs), [proc.stderr for proc in outputs]
    tokens = [json.loads(proc.stdout)["tokens"] for proc in outputs]
    assert tokens[0] and tokens[0] == tokens[1] == tokens[2]


@pytest.mark.slow
def test_serve_on_a_port_in_use_says_so_in_one_line_before_loading(dense_target):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run_cli("serve", "--target", str(dense_target), "--port", str(port))
    assert proc.returncode == 2 and not proc.stdout  # no "Serving" line, no model loaded
    assert proc.stderr.strip() == f"specchat serve: cannot listen on 127.0.0.1:{port}: Address already in use"
