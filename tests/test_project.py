"""Promises of the repository itself: the README's commands, CI, code style."""

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands() -> list[str]:
    """The commands of the README's "Set up" section."""
    setup = (ROOT / "README.md").read_text().split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(python3 -m venv .*?)\n```", setup)


def test_readme_has_the_two_setup_commands_and_ci_runs_the_second() -> None:
    run_app, run_tests = _readme_commands()
    assert "nlmeans-studio" in run_app
    assert run_tests.endswith("-m pytest -n auto")  # pytest-xdist: one process a core
    assert run_tests in (ROOT / ".ci" / "run").read_text().splitlines()


def test_the_readme_python_examples_run(tmp_path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.DOTALL)
    assert blocks
    for block in blocks:
        run = [sys.executable, "-c", block]
        result = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, block + result.stderr


def test_the_readme_python_example_denoises(tmp_path) -> None:
    """The "Use from Python" block prints the PSNR of its noisy and denoised frame: the filter
    gains (it returned the input unchanged when the example was uniform random data)."""
    section = (ROOT / "README.md").read_text().split("## Use from Python", 1)[1].split("\n## ", 1)[0]
    block = re.findall(r"```python\n(.*?)```", section, re.DOTALL)[0]
    result = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    printed = re.search(r"PSNR ([\d.]+) dB noisy, ([\d.]+) dB denoised", result.stdout)
    assert printed, f"the example prints no PSNR: {result.stdout!r}"
    noisy, denoised = float(printed[1]), float(printed[2])
    assert denoised > noisy + 10, result.stdout  # sigma 15 on a smooth picture: the README says 24.6 -> 41.3 dB
    assert result.stdout.splitlines()[-1] in section  # the printed figures are the README's


def test_the_import_contracts_hold() -> None:
    """The import-linter contracts of pyproject.toml, over every module: no Qt in the engine, and the
    window keeps to the engine's public face."""
    lint_imports = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert lint_imports, "import-linter is part of the test extra"
    result = subprocess.run([lint_imports], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_code_is_ruff_clean() -> None:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is part of the test extra"
    for command in ([ruff, "check", "."], [ruff, "format", "--check", "."]):
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr


def test_the_readmes_links_to_files_of_the_repository_resolve() -> None:
    links = re.findall(r"\]\(([^)#\s]+)\)", (ROOT / "README.md").read_text())
    local = [link for link in links if "://" not in link]
    assert "docs/DESIGN.md" in local  # the filter's definition ships with the code
    assert [link for link in local if not (ROOT / link).exists()] == []


def test_every_code_folder_is_a_package_of_the_wheel() -> None:
    """A folder left out of pyproject's list was missing from `pip install .` (the editable install
    the tests use finds it anyway): the command line and the video filters did not import."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {
        ".".join((package, *path.parent.relative_to(ROOT / folder).parts))
        for package, folder in setuptools["package-dir"].items()
        for path in (ROOT / folder).rglob("*.py")
    }
    assert "nlmeans_studio.engine.video.filters" in folders  # every mapped folder, its subfolders too
    assert folders <= set(setuptools["packages"])


def test_the_package_and_its_engine_ship_their_type_hints() -> None:
    """PEP 561's py.typed marker in nlmeans_studio and nlmeans_studio.engine, and in the wheel's package data."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    for package in ("nlmeans_studio", "nlmeans_studio.engine"):
        folder = ROOT / setuptools["package-dir"][package]
        assert (folder / "py.typed").is_file() and "py.typed" in setuptools["package-data"][package]


def test_the_package_folder_links_the_folders_mapped_into_it() -> None:
    """package/ (nlmeans_studio itself) holds links to engine/, gui/ and resources/: tools that walk a
    package's folder, as import-linter does, find its subpackages in an editable install as in a wheel."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    top = ROOT / setuptools["package-dir"]["nlmeans_studio"]
    for package, folder in setuptools["package-dir"].items():
        if package != "nlmeans_studio":
            link = top / package.removeprefix("nlmeans_studio.")
            assert link.is_symlink() and link.resolve() == (ROOT / folder).resolve(), link
