"""Import contracts: the core never imports Qt; only specchat.upstream imports mlx-lm, mlx-optiq, huggingface_hub."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    exe = shutil.which("lint-imports")
    assert exe, "import-linter is not installed (pip install -e '.[test]')"
    proc = subprocess.run([exe], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "KEPT" in proc.stdout and "BROKEN" not in proc.stdout


@pytest.mark.parametrize(
    "module, line",
    [
        ("specchat/engine/verify.py", "import mlx_lm.models.cache"),
        ("specchat/hub/units.py", "from huggingface_hub import constants"),
        ("specchat/ui/theme.py", "from optiq.runtime.mtp import runtime"),
    ],
)
def test_upstream_packages_are_fenced_into_specchat_upstream(tmp_path, module, line):
    """A copy of the tree with one direct import of an upstream outside specchat/upstream breaks the contract."""
    exe = shutil.which("lint-imports")
    shutil.copytree(ROOT / "specchat", tmp_path / "specchat", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with (tmp_path / module).open("a", encoding="utf-8") as f:
        f.write(f"\n{line}\n")
    proc = subprocess.run([exe], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    dotted = module.removesuffix(".py").replace("/", ".")
    assert f"{dotted} -> {line.split()[1].split('.')[0]}" in proc.stdout
