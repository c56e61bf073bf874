"""The PyInstaller bundle: built from this checkout, its self-test passes offscreen.

Building takes minutes and needs PyInstaller (pip install -e ".[installer]"), so it runs only
when asked: NLMEANS_TEST_INSTALLER=1 python -m pytest -m installer
"""

import faulthandler
import os
import platform
import subprocess
import sys
import tarfile
from importlib.metadata import version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "dist" / "nlmeans-studio"

pytestmark = [
    pytest.mark.installer,
    pytest.mark.timeout(1800),
    pytest.mark.skipif(
        os.environ.get("NLMEANS_TEST_INSTALLER") != "1", reason="builds the bundle: set NLMEANS_TEST_INSTALLER=1"
    ),
]


@pytest.fixture(scope="module")
def build() -> subprocess.CompletedProcess:
    """installers/build.py --self-test, run once for the module."""
    faulthandler.cancel_dump_traceback_later()  # it builds for minutes: no stack printed at faulthandler_timeout
    command = [sys.executable, str(ROOT / "installers" / "build.py"), "--self-test"]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)


def test_the_bundle_builds_and_passes_its_self_test(build) -> None:
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    lines = build.stdout.splitlines()
    assert lines[-1] == "self-test passed"
    assert [line.split()[1] for line in lines if line.startswith(("ok ", "skip ", "FAIL "))] == [
        "sample", "cpu", "gpu", "export", "window",
    ]  # fmt: skip


def test_the_bundle_holds_no_tests_and_no_test_data(build) -> None:
    internal = APP / "_internal"
    assert not any(part.name in ("tests", "pytest", "_pytest") for part in internal.iterdir())
    assert sorted(p.name for p in (internal / "nlmeans_studio" / "resources").iterdir()) == [
        "icon.png",
        "presets",
        "sample.mp4",
    ]
    assert not (internal / "PySide6" / "Qt" / "translations").exists()


def test_the_program_reports_its_version(build) -> None:
    run = subprocess.run([str(APP / "nlmeans-studio"), "--version"], capture_output=True, text=True, check=False)
    assert run.returncode == 0 and run.stdout.strip() == f"nlmeans-studio {version('nlmeans-studio')}"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the tarball is the Linux package")
def test_the_linux_tarball_holds_the_app_the_menu_entry_and_the_note(build) -> None:
    tarball = ROOT / "dist" / f"nlmeans-studio-{version('nlmeans-studio')}-linux-{platform.machine()}.tar.gz"
    with tarfile.open(tarball) as archive:
        names = set(archive.getnames())
    expected = {
        "nlmeans-studio/" + name for name in ("nlmeans-studio", "install.sh", "INSTALL.txt", "nlmeans-studio.desktop")
    }
    assert expected <= names


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the menu entry is the Linux one")
def test_install_sh_adds_the_menu_entry_and_removes_it(build, tmp_path) -> None:
    environment = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    subprocess.run([str(APP / "install.sh")], env=environment, check=True, capture_output=True)
    entry = (tmp_path / "data" / "applications" / "nlmeans-studio.desktop").read_text()
    assert f"Exec={APP}/nlmeans-studio gui %f" in entry and "@APP@" not in entry
    assert (tmp_path / "data" / "icons" / "hicolor" / "256x256" / "apps" / "nlmeans-studio.png").is_file()
    assert (tmp_path / ".local" / "bin" / "nlmeans-studio").resolve() == APP / "nlmeans-studio"
    subprocess.run([str(APP / "install.sh"), "--remove"], env=environment, check=True, capture_output=True)
    assert not any(path.is_file() or path.is_symlink() for path in tmp_path.rglob("*"))
