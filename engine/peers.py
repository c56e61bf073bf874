"""Other NLMeans implementations a user can install, run on our frames for comparison.

They are VapourSynth plugins, imported lazily and only by the benchmark: nlm_ispc on the CPU
(pip packages vapoursynth and vapoursynth-nlm-ispc, Python >= 3.12). Their h is in the same
8-bit levels as ours and ``wmode=2`` is the bisquare weighting; their centre weight (the largest
weight of the other offsets) and borders (zeros outside the frame) differ from ours, so their
PSNR is a sanity check, their time the comparison.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class PeerResult:
    """One peer's time and output on a set of frames."""

    name: str
    seconds_per_frame: float
    outputs: np.ndarray  # (T, H, W, C) float32


def _vapoursynth_core() -> Any | None:
    try:
        import vapoursynth
    except ImportError:
        return None
    return vapoursynth.core


def available_cpu_peers() -> list[str]:
    """Names of the CPU peers installed here."""
    core = _vapoursynth_core()
    return ["nlm_ispc"] if core is not None and hasattr(core, "nlm_ispc") else []


def _planar_clip(core: Any, frames: np.ndarray) -> Any:
    """A YUV444PS VapourSynth clip whose three planes are the frames' R, G and B."""
    import vapoursynth

    count, height, width, _ = frames.shape
    blank = core.std.BlankClip(format=vapoursynth.YUV444PS, width=width, height=height, length=count)

    def fill(n: int, f: Any) -> Any:
        out = f.copy()
        for plane in range(3):
            np.asarray(out[plane])[:] = frames[n, :, :, plane]
        return out

    return core.std.ModifyFrame(blank, blank, fill)


def _frames_of(clip: Any) -> np.ndarray:
    return np.stack([np.stack([np.asarray(f[p]) for p in range(3)], axis=-1) for f in clip.frames()])


def run_nlm_ispc(
    noisy: np.ndarray, *, search_radius: int, temporal_radius: int, patch_radius: int, h: float
) -> PeerResult:
    """Time VapourSynth's nlm_ispc on float RGB frames (T, H, W, 3), all output frames.

    The time is the run's wall time over the frame count, less the time our frame source
    alone takes, with VapourSynth's own threads (one per core, frames in parallel).
    """
    core = _vapoursynth_core()
    if core is None or not hasattr(core, "nlm_ispc"):
        raise RuntimeError("nlm_ispc is not installed: pip install vapoursynth vapoursynth-nlm-ispc (Python >= 3.12)")
    source = _planar_clip(core, noisy)
    started = time.perf_counter()
    for _ in source.frames():
        pass
    source_seconds = time.perf_counter() - started
    filtered = core.nlm_ispc.NLMeans(
        _planar_clip(core, noisy), d=temporal_radius, a=search_radius, s=patch_radius, h=h, channels="YUV", wmode=2
    )
    started = time.perf_counter()
    outputs = _frames_of(filtered)
    seconds = time.perf_counter() - started - source_seconds
    return PeerResult("nlm_ispc", seconds / len(noisy), outputs)
