"""Run SpecChat from an install that is not the source tree (a wheel's files, a py2app layout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# Prints where `specchat` was imported from and the real path of each resource name given as argv[1].
RESOURCE_PROBE = """
import json, sys
import specchat
from specchat.hub.catalog import load_catalog
from specchat.resources import resource_path
paths = {}
for name in json.loads(sys.argv[1]):
    try:
        paths[name] = str(resource_path(name))
    except FileNotFoundError as exc:
        paths[name] = "missing: " + str(exc)
try:
    models = len(load_catalog().models)
except Exception as exc:
    models = f"{type(exc).__name__}: {exc}"
print(json.dumps({"package": specchat.__file__, "paths": paths, "catalog_models": models}))
"""


def isolated_env(site: Path, home: Path) -> dict[str, str]:
    """The shared venv's python with `site` first on sys.path, offline, user folders under home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "SPECCHAT_", "PYTHON"))}
    env.update(
        PYTHONPATH=str(site),
        HF_HUB_OFFLINE="1",
        HF_HOME=str(home / "hf"),
        SPECCHAT_HOME=str(home / "specchat"),
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def run_app(site: Path, home: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m specchat ARGS` importing `specchat` from site, run from home (outside the checkout)."""
    return subprocess.run(
        [sys.executable, "-m", "specchat", *args],
        cwd=home,
        env=isolated_env(site, home),
        capture_output=True,
        text=True,
        timeout=120,
    )


def probe_resources(site: Path, home: Path, names: list[str]) -> dict:
    """RESOURCE_PROBE's answer: {"package": file, "paths": {name: path or "missing: ..."}, "catalog_models": n}."""
    done = subprocess.run(
        [sys.executable, "-c", RESOURCE_PROBE, json.dumps(names)],
        cwd=home,
        env=isolated_env(site, home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def catalog_lines(stdout: str) -> list[str]:
    """Lines of `models search` output that list a catalog model (marked with *)."""
    return [line for line in stdout.splitlines() if " * " in line]
