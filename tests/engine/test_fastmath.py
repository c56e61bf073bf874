"""Every numba kernel of the engine is compiled with fastmath flags that change no result.

The first run on a machine compiles a kernel in its own process and every later run loads it from
numba's cache, optimised apart: with "reassoc" or "contract" the two rounded differently, and a
10-bit export's first run differed from every later one in 1,067 of 11.5 million samples
(``engine/cpu/fastmath.py``). Kernel modules are found by their source, so that a new one is
checked too.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from numba.core.registry import CPUDispatcher

from nlmeans_studio.engine.cpu.fastmath import FASTMATH

ENGINE = Path(__file__).resolve().parents[2] / "engine"


def _kernels() -> dict[str, CPUDispatcher]:
    """Each numba function of the engine's modules that compile one, by module and name."""
    found = {}
    for source in sorted(ENGINE.rglob("*.py")):
        if "numba.njit" not in source.read_text():
            continue
        module_name = "nlmeans_studio.engine." + ".".join(source.relative_to(ENGINE).with_suffix("").parts)
        module = importlib.import_module(module_name)
        for name, value in vars(module).items():
            if isinstance(value, CPUDispatcher) and value.__module__ == module_name:
                found[f"{module_name}.{name}"] = value
    return found


def test_every_kernel_keeps_to_the_flags_that_change_no_result() -> None:
    kernels = _kernels()
    assert len(kernels) >= 15, sorted(kernels)  # the filters', the volume's, the estimate's, the conversions'
    loose = {}
    for name, kernel in kernels.items():
        flags = kernel.targetoptions.get("fastmath", False)
        if flags is True or (flags and not set(flags) <= FASTMATH):
            loose[name] = flags
    assert not loose, f"fastmath flags that let a first run round otherwise than a later one: {loose}"
