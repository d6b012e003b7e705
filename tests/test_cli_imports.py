"""The command line answers before it loads the engine: parsing and its checks import no MLX, mlx-lm,
transformers or llguidance (seconds of imports), and specchat.engine's names are imported on first use."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import specchat.engine as engine

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("mlx", "mlx_lm", "transformers", "llguidance", "specchat.engine.engine")
# main() as `python -m specchat` runs it, then which heavy modules the process holds
REFUSE_AND_LIST = f"""
import sys
from specchat.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as stop:
    code = stop.code
print("exit", code)
print("loaded", *[name for name in {HEAVY!r} if name in sys.modules])
"""


def run_cli(*args: str, code: str | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "specchat", *args]
    return subprocess.run(command, cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=120)


def test_a_missing_model_folder_is_refused_without_loading_the_engine(tmp_path):
    done = run_cli("generate", "--target", str(tmp_path / "nowhere"), "--prompt", "hi", code=REFUSE_AND_LIST)
    assert done.stdout.splitlines() == ["exit 2", "loaded"], done.stdout + done.stderr
    assert f"argument --target: model folder not found: {tmp_path / 'nowhere'}" in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("generate", "--target", ".", "--prompt", "hi", "--temperature", "9"),  # out of LIMITS' range
        ("generate", "--target", ".", "--prompt", "hi", "--draft-tokens", "soon"),
        ("generate", "--target", ".", "--prompt", "hi", "--mode", "fastest"),
        ("generate", "--target", ".", "--prompt", "hi", "--mode", "mtp", "--draft-tokens", "9"),  # GenerationConfig's
        ("--help",),
    ],
)
def test_argument_checks_and_help_load_no_engine(args):
    done = run_cli(*args, code=REFUSE_AND_LIST)
    lines = done.stdout.splitlines()
    assert lines[-1] == "loaded", done.stdout + done.stderr
    assert lines[-2] == ("exit 0" if args == ("--help",) else "exit 2"), done.stdout + done.stderr


def test_the_refusal_as_a_whole_process(tmp_path):
    done = run_cli("generate", "--target", str(tmp_path / "nowhere"), "--prompt", "hi")
    assert done.returncode == 2
    assert (
        done.stderr == f"specchat generate: error: argument --target: model folder not found: {tmp_path / 'nowhere'}\n"
    )


def test_every_public_engine_name_is_its_submodules_own():
    from specchat.engine import config, errors, events, modes, prompt
    from specchat.engine import engine as engine_module

    homes = [config, engine_module, errors, events, modes, prompt]
    for name in engine.__all__:
        owners = [module for module in homes if name in vars(module)]
        assert owners and getattr(engine, name) is getattr(owners[0], name), name
    assert set(engine.__all__) <= set(dir(engine))


def test_an_unknown_engine_name_is_an_error_naming_it():
    with pytest.raises(AttributeError, match="'specchat.engine' has no attribute 'Enigne'"):
        _ = engine.Enigne
    with pytest.raises(ImportError, match="Enigne"):
        exec("from specchat.engine import Enigne")
