"""The windows fit MacBook screens: laptop_checks.py runs in its own process on an offscreen screen of each size
(Qt's offscreen platform takes the screen's geometry from a JSON config file, read once at start)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # one app process per screen size

ROOT = Path(__file__).resolve().parents[2]
CHECKS = Path(__file__).with_name("laptop_checks.py")
SCREENS = [(1280, 800), (1440, 900), (1512, 982)]  # MacBook Air 13", MacBook Pro 15", MacBook Pro 14" (points)


@pytest.mark.slow
@pytest.mark.parametrize("width,height", SCREENS, ids=[f"{w}x{h}" for w, h in SCREENS])
def test_windows_fit_a_laptop_screen(tmp_path, width, height):
    config = tmp_path / "screen.json"
    config.write_text(
        json.dumps(
            {
                "screens": [
                    {
                        "name": "Laptop",
                        "x": 0,
                        "y": 0,
                        "width": width,
                        "height": height,
                        "logicalDpi": 96,
                        "logicalBaseDpi": 96,
                        "dpr": 1,
                    }
                ]
            }
        )
    )
    env = dict(os.environ, QT_QPA_PLATFORM=f"offscreen:configfile={config}", SPECCHAT_TEST_SCREEN=f"{width}x{height}")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-p", "no:randomly", str(CHECKS)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "\n5 passed" in run.stdout, run.stdout[-2000:]  # the checks ran, none was skipped
