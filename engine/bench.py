"""The engine benchmark: the paper's Table 1 layout, our methods against installed peers.

For each search radius A and temporal window (Dp, Df) it denoises frames with full windows
from noisy copies of clean frames (white Gaussian noise, fixed seed) and reports the median
time per frame after a warm-up, the frames per second and the output PSNR against the clean
frames. Engine-only: frames are already in memory as float32.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from . import peers
from .denoiser import Denoiser
from .metrics import psnr
from .params import NLMParams
from .sample import load_clean_frames, noisy_frames

PAPER_SEARCH_RADII = (2, 3, 5, 10)
PAPER_TEMPORAL = ((0, 0), (1, 0), (2, 0), (3, 0), (1, 1))


@dataclass(frozen=True)
class BenchCase:
    """One row of the table."""

    search_radius: int
    frames_past: int
    frames_future: int

    @property
    def window(self) -> int:
        """Offsets per pixel, (2A+1)^2 (Dp + Df + 1)."""
        return (2 * self.search_radius + 1) ** 2 * (self.frames_past + self.frames_future + 1)


@dataclass(frozen=True)
class Timing:
    """Median seconds per frame and mean output PSNR (dB) of one implementation on one case."""

    seconds: float
    psnr: float


def time_denoiser(
    denoiser: Denoiser, noisy: np.ndarray, clean: np.ndarray, outputs: Sequence[int], repeats: int
) -> Timing:
    """Median wall time of ``denoise_frame`` over ``outputs`` x ``repeats`` calls, after a warm-up."""
    denoiser.denoise_frame(noisy, outputs[0])
    samples, quality = [], []
    for _ in range(repeats):
        for index in outputs:
            started = time.perf_counter()
            result = denoiser.denoise_frame(noisy, index)
            samples.append(time.perf_counter() - started)
            quality.append(psnr(clean[index], result))
    return Timing(statistics.median(samples), statistics.fmean(quality))


def run_table(
    *,
    backend: str,
    methods: Sequence[str],
    cases: Sequence[BenchCase],
    height: int,
    width: int,
    frames: int,
    repeats: int,
    sigma: float,
    h: float,
    patch_radius: int,
    source: str | None,
    with_peers: bool,
    print_line=print,
) -> list[dict]:
    """Run every case and print one table row each; returns the rows as dicts."""
    most_past = max(c.frames_past for c in cases)
    most_future = max(c.frames_future for c in cases)
    clean = load_clean_frames(source, frames + most_past + most_future, height, width)
    noisy = noisy_frames(clean, sigma, seed=0)
    peer_names = peers.available_cpu_peers() if with_peers else []
    if with_peers and not peer_names:
        print_line("# peers: none installed here (pip install vapoursynth vapoursynth-nlm-ispc, Python >= 3.12)")
    probe = Denoiser(NLMParams(h=h), backend, method=methods[0])
    print_line(f"# {width}x{height} RGB, B = {patch_radius}, sigma = {sigma} levels, h = {h}, seed 0, {frames} frames")
    print_line(f"# backend {probe.backend} on {probe.device_name}; input PSNR {psnr(clean, noisy):.2f} dB")
    columns = ["A", "Dp", "Df", "window"]
    for method in methods:
        columns += [f"{method} ms", f"{method} fps", f"{method} dB"]
    for name in peer_names:
        columns += [f"{name} ms", f"{name} dB", f"{methods[0]}/{name}"]
    print_line(" | ".join(columns))
    rows = []
    for case in cases:
        params = NLMParams(
            h=h,
            patch_radius=patch_radius,
            search_radius=case.search_radius,
            frames_past=case.frames_past,
            frames_future=case.frames_future,
        )
        outputs = list(range(most_past, most_past + frames))
        row: dict = {"A": case.search_radius, "Dp": case.frames_past, "Df": case.frames_future, "window": case.window}
        for method in methods:
            timing = time_denoiser(Denoiser(params, backend, method=method), noisy, clean, outputs, repeats)
            row[method] = timing
        for name in peer_names:
            row[name] = _peer_timing(name, params, noisy, clean, outputs)
        rows.append(row)
        print_line(" | ".join(_format_row(row, methods, peer_names)))
    return rows


def _peer_timing(
    name: str, params: NLMParams, noisy: np.ndarray, clean: np.ndarray, outputs: Sequence[int]
) -> Timing | None:
    if params.frames_past != params.frames_future:
        return None  # the peers search Dp = Df = d only
    result = peers.run_nlm_ispc(
        noisy,
        search_radius=params.search_radius,
        temporal_radius=params.frames_past,
        patch_radius=params.patch_radius,
        h=params.h,
    )
    quality = statistics.fmean(psnr(clean[i], result.outputs[i]) for i in outputs)
    return Timing(result.seconds_per_frame, quality)


def _format_row(row: dict, methods: Sequence[str], peer_names: Sequence[str]) -> list[str]:
    cells = [str(row["A"]), str(row["Dp"]), str(row["Df"]), str(row["window"])]
    for method in methods:
        timing = row[method]
        cells += [f"{timing.seconds * 1e3:.1f}", f"{1 / timing.seconds:.1f}", f"{timing.psnr:.2f}"]
    for name in peer_names:
        timing = row[name]
        if timing is None:
            cells += ["-", "-", "-"]
            continue
        cells += [
            f"{timing.seconds * 1e3:.1f}",
            f"{timing.psnr:.2f}",
            f"{row[methods[0]].seconds / timing.seconds:.2f}x",
        ]
    return cells


def paper_cases(search_radii: Sequence[int], temporal: Sequence[tuple[int, int]]) -> list[BenchCase]:
    """The paper's Table 1 grid: every search radius with every (Dp, Df)."""
    return [BenchCase(a, past, future) for a in search_radii for past, future in temporal]
