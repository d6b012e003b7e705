"""`--context-length N` for generate and serve: a bad value is refused in one line before any model work, a cap
above what the model holds after the load with both numbers, and a reply stops where the cap is."""

import json

from tests.test_cli import run_cli, run_cli_cases


def test_a_bad_context_length_is_refused_in_one_line(dense_target):
    target = str(dense_target)
    generate = ["generate", "--target", target, "--prompt", "hi"]
    cases = [
        ([*generate, "--context-length", "100"], "between 256 and 1048576, got 100"),
        ([*generate, "--context-length", "8k"], "a whole number, got '8k'"),
        (["serve", "--target", target, "--context-length", "2000000"], "and 1048576, got 2000000"),
    ]
    for (args, words), (code, out, err) in zip(cases, run_cli_cases([(args, b"") for args, _ in cases]), strict=True):
        assert code == 2 and not out, (args, err)
        assert err.strip().startswith(f"specchat {args[0]}: error: argument --context-length: context length must be")
        assert words in err and len(err.strip().splitlines()) == 1, err


def test_generate_stops_at_the_cap_and_refuses_one_above_the_model(dense_target):
    common = ["generate", "--target", str(dense_target), "--raw", "--prompt", "def f(n):", "--max-tokens", "900"]
    capped = run_cli(*common, "--context-length", "256", "--json")
    assert capped.returncode == 0, capped.stderr
    stats = json.loads(capped.stdout)["stats"]
    assert stats["prompt_tokens"] + stats["generated_tokens"] == 256 and stats["stop_reason"] == "length"
    line = run_cli(*common, "--context-length", "256")
    assert line.returncode == 0 and "stopped: the context is full" in line.stderr, line.stderr
    above = run_cli(*common, "--context-length", "40000")
    assert above.returncode == 2 and above.stderr.strip().splitlines()[-1] == (
        "error: context length 40000 is more than dense_target holds: at most 32768 "
        "(max_position_embeddings in config.json)"
    )
