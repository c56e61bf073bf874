"""CUDA kernels compiled as C++ for the CPU through ``cuda_on_cpu.h``, its header precompiled once a process.

Parsing the header's standard library took 1.7 of the 2.9 s each test's g++ run took (36 kernel
programs in tests/engine/test_fused_kernel_on_cpu.py alone); the precompiled header is made
once a test process (4 s) with the flags every program is compiled with.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import subprocess
import tempfile
from pathlib import Path

from nlmeans_studio.engine.gpu.device import KERNELS

COMPILER = shutil.which("g++")
FLAGS = ["-O1", "-std=c++20", "-pthread"]  # the precompiled header's and every program's
HEADER = Path(__file__).with_name("cuda_on_cpu.h")


@functools.cache
def _precompiled_header() -> Path:
    """Return a copy of ``cuda_on_cpu.h`` beside its precompiled form (g++ takes the .gch where it finds the .h)."""
    folder = Path(tempfile.mkdtemp(prefix="cuda-on-cpu-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    shutil.copy(HEADER, folder / HEADER.name)
    command = [COMPILER, *FLAGS, "-x", "c++-header", HEADER.name, "-o", f"{HEADER.name}.gch"]
    subprocess.run(command, cwd=folder, check=True)
    return folder / HEADER.name


def compile_program(folder: Path, kernel_source: str, main: str) -> Path:
    """Compile ``main`` (a C++ ``main`` function) after the header and the kernels' ``kernel_source`` (file name
    in ``folder``); return the program, ``folder``/kernel. ``-Winvalid-pch``: a header g++ cannot use is said."""
    (folder / "main.cpp").write_text(f'#include "{_precompiled_header()}"\n#include "{kernel_source}"\n{main}')
    command = [COMPILER, *FLAGS, "-Winvalid-pch", f"-I{KERNELS}", "-o", "kernel", "main.cpp"]
    subprocess.run(command, cwd=folder, check=True)
    return folder / "kernel"
