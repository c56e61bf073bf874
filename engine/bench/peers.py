"""Other NLMeans implementations a user can install, run on our frames for comparison.

They are VapourSynth plugins, imported lazily and only by the benchmark: nlm_ispc on the CPU
(pip packages vapoursynth and vapoursynth-nlm-ispc, Python >= 3.12), and on the GPU vszipcu and
nlm_cuda (vapoursynth==79, vapoursynth-vszipcu, vapoursynth-nlm-cuda; ../shared/tools/peer-wheels
says how to install them on the GPU machine). Their h is in the same
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


def available_peers(backend: str) -> list[str]:
    """Names of the peers installed here for ``backend`` ("cpu": nlm_ispc; "gpu": vszipcu, nlm_cuda)."""
    core = _vapoursynth_core()
    names = ["nlm_ispc"] if backend == "cpu" else ["vszipcu", "nlm_cuda"]
    return [name for name in names if core is not None and hasattr(core, name)]


def _clip(core: Any, frames: np.ndarray) -> Any:
    """Return a VapourSynth clip of (T, H, W, 3) frames: float32 as YUV444PS planes R, G, B, uint8 as RGB24."""
    import vapoursynth

    count, height, width, _ = frames.shape
    format_id = vapoursynth.RGB24 if frames.dtype == np.uint8 else vapoursynth.YUV444PS
    blank = core.std.BlankClip(format=format_id, width=width, height=height, length=count)

    def fill(n: int, f: Any) -> Any:
        out = f.copy()
        for plane in range(3):
            np.asarray(out[plane])[:] = frames[n, :, :, plane]
        return out

    return core.std.ModifyFrame(blank, blank, fill)


def _frames_of(clip: Any) -> np.ndarray:
    return np.stack([np.stack([np.asarray(f[p]) for p in range(3)], axis=-1) for f in clip.frames()])


TIMED_FRAMES = 32  # frames per timed peer run: enough for VapourSynth's frame threads to fill


def run_peer(
    name: str,
    noisy: np.ndarray,
    *,
    search_radius: int,
    temporal_radius: int,
    patch_radius: int,
    h: float,
    **options: Any,
) -> PeerResult:
    """Run peer ``name`` on (T, H, W, 3) frames for its output, and time it on a blank clip.

    float32 frames go in as YUV444PS (planes R, G, B; channels "YUV" is our RGB distance),
    uint8 frames as RGB24 (channels "RGB"). The time is the wall time of TIMED_FRAMES frames of
    a constant clip of the same format and size, which VapourSynth makes at no cost, so that the
    peer's own work (transfers included) is timed and not our Python frame source; NLMeans does
    the same arithmetic on any content. ``options`` go to the plugin (num_streams).
    """
    import vapoursynth

    core = _vapoursynth_core()
    if core is None or not hasattr(core, name):
        raise RuntimeError(f"the peer {name} is not installed")
    plugin = getattr(core, name).NLMeans
    arguments = dict(
        d=temporal_radius,
        a=search_radius,
        s=patch_radius,
        h=h,
        channels="YUV" if name == "nlm_ispc" else "RGB",
        wmode=2,
        **options,
    )
    outputs = _frames_of(plugin(_clip(core, noisy), **arguments))
    _, height, width, _ = noisy.shape
    format_id = vapoursynth.RGB24 if noisy.dtype == np.uint8 else vapoursynth.YUV444PS
    blank = core.std.BlankClip(format=format_id, width=width, height=height, length=TIMED_FRAMES)
    timed = plugin(blank, **arguments)
    started = time.perf_counter()
    for _ in timed.frames():
        pass
    return PeerResult(name, (time.perf_counter() - started) / TIMED_FRAMES, outputs)
