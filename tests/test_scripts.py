"""The product's scripts (scripts/*.py: benchmarks, calibrations, the clip, icon and screenshot
makers) start and answer --help; the one-off studies in scripts/notebooks/ are not held to it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRODUCT_SCRIPTS = sorted(path.name for path in (ROOT / "scripts").glob("*.py"))


def test_the_product_scripts_are_found() -> None:
    assert {"bench_volume.py", "calibrate_h.py", "make_bench_clip.py", "screenshot.py"} <= set(PRODUCT_SCRIPTS)


@pytest.mark.parametrize("name", PRODUCT_SCRIPTS)
def test_a_product_script_answers_help(name: str) -> None:
    """--help exits 0 with argparse's usage line, before any work (no GPU, clip or display needed)."""
    environment = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / name), "--help"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith(f"usage: {name}"), result.stdout
