"""Build NLMeans Studio as a one-folder application, and on Linux its tarball.

    python installers/build.py [--self-test]

Runs PyInstaller on ``installers/nlmeans-studio.spec`` with the Python it is started with (its
installed packages go into the bundle: install with ``pip install -e ".[installer]"`` first, and
a CuPy build too for a GPU bundle). Prints the folder's size and its largest parts. On Linux it
adds the desktop entry, ``install.sh`` and ``INSTALL.txt``, and packs
``dist/nlmeans-studio-VERSION-linux-ARCH.tar.gz``. ``--self-test`` then runs the built program's
``self-test`` and exits with its status.
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "installers" / "nlmeans-studio.spec"
DIST = ROOT / "dist"
WORK = ROOT / "build" / "pyinstaller"
NAME = "nlmeans-studio"
LINUX_FILES = ROOT / "installers" / "linux"


def folder_size(path: Path) -> int:
    """Bytes of the files under ``path`` (links not followed)."""
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file() and not item.is_symlink())


def report_size(app: Path) -> None:
    """The bundle's size in MiB and its ten largest parts (links to libraries not counted)."""
    print(f"{app}: {folder_size(app) / 2**20:.0f} MiB")
    internal = app / "_internal"
    if internal.is_dir():
        sizes = {
            part.name: folder_size(part) if part.is_dir() else part.stat().st_size
            for part in internal.iterdir()
            if not part.is_symlink()
        }
        for name, size in sorted(sizes.items(), key=lambda item: item[1], reverse=True)[:10]:
            print(f"  {size / 2**20:7.1f} MiB  {name}")


def linux_tarball(app: Path, version: str) -> Path:
    """Add the desktop entry, install script and note to ``app`` and pack it as a .tar.gz."""
    for name in ("nlmeans-studio.desktop", "install.sh"):
        shutil.copy2(LINUX_FILES / name, app / name)
    gpu = (
        "CuPy is inside: with an NVIDIA driver for CUDA 12 / 13 the GPU is used, else the CPU."
        if importlib.util.find_spec("cupy")
        else "this build has no CuPy and denoises on the CPU."
    )
    note = (LINUX_FILES / "INSTALL.txt").read_text()
    note = note.replace("@VERSION@", version).replace("@GLIBC@", platform.libc_ver()[1]).replace("@GPU@", gpu)
    (app / "INSTALL.txt").write_text(note)
    tarball = DIST / f"{NAME}-{version}-linux-{platform.machine()}.tar.gz"
    with tarfile.open(tarball, "w:gz") as archive:
        archive.add(app, arcname=NAME)
    print(f"{tarball}: {tarball.stat().st_size / 2**20:.0f} MiB")
    return tarball


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--self-test", action="store_true", help="run the built program's self-test")
    args = parser.parse_args()
    if importlib.util.find_spec("PyInstaller") is None:
        print('build.py: error: PyInstaller is not installed: pip install -e ".[installer]"', file=sys.stderr)
        return 1
    from importlib.metadata import version

    import PyInstaller.__main__

    PyInstaller.__main__.run([str(SPEC), "--noconfirm", "--clean", "--distpath", str(DIST), "--workpath", str(WORK)])
    app = DIST / NAME
    report_size(app)
    if sys.platform.startswith("linux"):
        linux_tarball(app, version("nlmeans-studio"))
    if args.self_test:
        program = app / (f"{NAME}.exe" if sys.platform == "win32" else NAME)
        return subprocess.run([str(program), "self-test"], check=False).returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
