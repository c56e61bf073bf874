"""The engine benchmark: the paper's Table 1 layout, our methods against installed peers.

For each search radius A and temporal window (Dp, Df) it denoises frames with full windows
from noisy copies of clean frames (white Gaussian noise, fixed seed) and reports the median
time per frame after a warm-up, the frames per second and the output PSNR against the clean
frames.

- CPU: ``denoise_frame`` on float32 frames already in memory (wall time).
- GPU: engine-only time with the frames resident on the GPU (CUDA events), its ratio to the
  floor of DESIGN.md §4, and the end-to-end rate of uint8 host frames in, uint8 host frames
  out through ``GpuPipeline`` (copies overlapped with the filter): new arrays out, and the
  pipeline's pinned buffers handed out as views (``views=True``), with the latter's share of
  the engine's rate.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..backend import cupy_module, resolve_backend
from ..frames import FULL_SCALE_BITS, from_float32
from ..metrics import psnr
from ..video.denoiser import Denoiser
from ..video.filters import WindowFilter, window_filter
from ..video.params import NLMParams, window_indices
from ..video.sample import load_clean_frames, noisy_frames
from . import peers

PAPER_SEARCH_RADII = (2, 3, 5, 10)
PAPER_TEMPORAL = ((0, 0), (1, 0), (2, 0), (3, 0), (1, 1))
# DESIGN.md §4: H100 ceilings and the arithmetic of separable running box sums with symmetry.
COPY_BANDWIDTH = 2.98e12  # bytes/s, read + write
FP32_RATE = 63e12  # FLOP/s
FLOP_PER_SPATIAL_OFFSET = 15
FLOP_PER_TEMPORAL_OFFSET = 22
PEER_STREAMS = (4, 8)
E2E_FRAMES = 96  # frames per timed end-to-end run
PIPELINE_ROUNDS = 3  # turns of the four export measurements (decode, denoise, encode, end to end)


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

    def floor_ms(self, height: int, width: int, channels: int = 3) -> float:
        """DESIGN.md §4's floor: float32 frame read once and written once, or the arithmetic."""
        pixels = height * width
        spatial = (2 * self.search_radius + 1) ** 2
        temporal = self.window - spatial
        arithmetic = pixels * (FLOP_PER_SPATIAL_OFFSET * spatial + FLOP_PER_TEMPORAL_OFFSET * temporal) / FP32_RATE
        memory = 2 * pixels * channels * 4 / COPY_BANDWIDTH
        return 1e3 * max(arithmetic, memory)


@dataclass(frozen=True)
class Timing:
    """Median seconds per frame and mean output PSNR (dB) of one implementation on one case."""

    seconds: float
    psnr: float


def paper_cases(search_radii: Sequence[int], temporal: Sequence[tuple[int, int]]) -> list[BenchCase]:
    """Return the paper's Table 1 grid: every search radius with every (Dp, Df)."""
    return [BenchCase(a, past, future) for a in search_radii for past, future in temporal]


def time_cpu(denoiser: Denoiser, noisy: np.ndarray, clean: np.ndarray, outputs: Sequence[int], repeats: int) -> Timing:
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


def time_gpu_engine(
    window_filter: WindowFilter,
    resident: list[Any],
    params: NLMParams,
    clean: np.ndarray,
    outputs: Sequence[int],
    repeats: int,
) -> Timing:
    """Median per-frame GPU time of ``window_filter`` on frames already on the GPU (CUDA events).

    The host queues every repeat before it waits for any, so that the GPU never idles between
    two events waiting for the next launch: a wait per repeat added the host's time to launch
    the first window (tens of microseconds) to every sample.
    """
    cupy = cupy_module()

    def window(index: int) -> tuple[list[Any], int]:
        indices = window_indices(index, len(resident), params)
        return resident[indices.start : indices.stop], index - indices.start

    for index in outputs:  # compiles, and makes what each window keeps from call to call
        window_filter(*window(index), params)
    events = []
    for _ in range(repeats):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for index in outputs:
            window_filter(*window(index), params)
        end.record()
        events.append((start, end))
    events[-1][1].synchronize()
    samples = [cupy.cuda.get_elapsed_time(start, end) / 1e3 / len(outputs) for start, end in events]
    quality = [psnr(clean[index], window_filter.download(window_filter(*window(index), params))) for index in outputs]
    return Timing(statistics.median(samples), statistics.fmean(quality))


def time_gpu_pipeline(
    params: NLMParams, noisy_8bit: np.ndarray, clean: np.ndarray, repeats: int, *, views: bool = False
) -> Timing:
    """End-to-end seconds per frame, uint8 host frames in and out, best of ``repeats`` runs.

    ``views``: the outputs are the pipeline's pinned buffers (``GpuPipeline.run``), not new arrays.

    Each timed run streams E2E_FRAMES frames (the clip's frames over and over) so that the
    pipeline's fill and drain do not count; the PSNR comes from one run over the clip itself.
    """
    from ..video.gpu_pipeline import GpuPipeline

    with contextlib.closing(GpuPipeline(cupy_module(), params, np.uint8)) as pipeline:
        outputs = list(pipeline.run(noisy_8bit))  # also compiles and allocates
        quality = statistics.fmean(psnr(c, o.astype(np.float32) / 255) for c, o in zip(clean, outputs, strict=True))
        best = float("inf")
        for _ in range(repeats):
            stream = itertools.islice(itertools.cycle(noisy_8bit), E2E_FRAMES)
            started = time.perf_counter()
            for _ in pipeline.run(stream, views=views):
                pass
            best = min(best, (time.perf_counter() - started) / E2E_FRAMES)
    return Timing(best, quality)


def _peer_timing(name: str, params: NLMParams, noisy: np.ndarray, clean: np.ndarray) -> Timing | None:
    """Return the peer's best time over the stream counts tried; None where it cannot run this case."""
    if params.frames_past != params.frames_future:
        return None  # the peers search Dp = Df = d only
    arguments = dict(
        search_radius=params.search_radius,
        temporal_radius=params.frames_past,
        patch_radius=params.patch_radius,
        h=params.h,
    )
    options = [{}] if name == "nlm_ispc" else [{"num_streams": n} for n in PEER_STREAMS]
    results = [peers.run_peer(name, noisy, **arguments, **option) for option in options]
    best = min(results, key=lambda result: result.seconds_per_frame)
    scale = 255.0 if best.outputs.dtype == np.uint8 else 1.0
    quality = statistics.fmean(psnr(c, o.astype(np.float32) / scale) for c, o in zip(clean, best.outputs, strict=True))
    return Timing(best.seconds_per_frame, quality)


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
    frame_dtype: Any = np.uint8,
    weighting: str = "bisquare",
    center_weight: str = "one",
    print_line: Callable[[str], None] = print,
) -> list[dict]:
    """Run every case and print one table row each; returns the rows as dicts.

    On the GPU the engine-only columns filter frames resident as uploaded from ``frame_dtype``
    host frames: uint8 (as the end-to-end column and the peers get them) or float32.
    """
    backend = resolve_backend(backend)
    most_past = max(c.frames_past for c in cases)
    most_future = max(c.frames_future for c in cases)
    clean = load_clean_frames(source, frames + most_past + most_future, height, width)
    noisy = noisy_frames(clean, sigma, seed=0)
    outputs = list(range(most_past, most_past + frames))
    peer_names = peers.available_peers(backend) if with_peers else []
    if with_peers and not peer_names:
        print_line(f"# peers: none installed here for the {backend} (see engine/bench/peers.py)")
    probe = Denoiser(NLMParams(h=h), backend, method=methods[0])
    print_line(
        f"# {width}x{height} RGB, B = {patch_radius}, sigma = {sigma} levels, h = {h}, {weighting} weights, "
        f"centre weight {center_weight}, seed 0, {frames} frames"
    )
    print_line(f"# backend {probe.backend} on {probe.device_name}; input PSNR {psnr(clean, noisy):.2f} dB")
    columns = ["A", "Dp", "Df", "window"]
    for method in methods:
        columns += [f"{method} ms", f"{method} dB"] + ([f"{method} x floor"] if backend == "gpu" else [])
    if backend == "gpu":
        columns += ["e2e fps", "e2e views fps", "views / engine", "e2e dB"]
    for name in peer_names:
        if backend == "gpu":
            columns += [f"{name} fps", f"{name} dB", f"e2e speed / {name}"]
        else:
            columns += [f"{name} ms", f"{name} dB", f"{methods[0]} time / {name}"]
    print_line(" | ".join(columns))
    noisy_8bit = from_float32(noisy, np.uint8)
    resident_8bit = np.dtype(frame_dtype) == np.uint8
    if backend == "gpu":
        print_line(f"# GPU engine-only columns: frames resident from {np.dtype(frame_dtype).name} host frames")
    gpu_filters = {method: window_filter("gpu", method) for method in methods} if backend == "gpu" else {}
    resident = noisy_8bit if resident_8bit else noisy
    gpu_frames = [gpu_filters[methods[0]].upload(frame) for frame in resident] if backend == "gpu" else []
    rows = []
    for case in cases:
        params = NLMParams(
            h=h,
            patch_radius=patch_radius,
            search_radius=case.search_radius,
            frames_past=case.frames_past,
            frames_future=case.frames_future,
            weighting=weighting,
            center_weight=center_weight,
        )
        row: dict = {"case": case}
        cells = [str(case.search_radius), str(case.frames_past), str(case.frames_future), str(case.window)]
        for method in methods:
            if backend == "gpu":
                timing = time_gpu_engine(gpu_filters[method], gpu_frames, params, clean, outputs, repeats)
                cells += [f"{timing.seconds * 1e3:.3f}", f"{timing.psnr:.2f}"]
                cells.append(f"{timing.seconds * 1e3 / case.floor_ms(height, width):.1f}")
            else:
                timing = time_cpu(Denoiser(params, backend, method=method), noisy, clean, outputs, repeats)
                cells += [f"{timing.seconds * 1e3:.1f}", f"{timing.psnr:.2f}"]
            row[method] = timing
        ours = row[methods[0]]
        if backend == "gpu":
            copies = time_gpu_pipeline(params, noisy_8bit, clean, repeats)
            ours = row["e2e"] = time_gpu_pipeline(params, noisy_8bit, clean, repeats, views=True)
            share = row[methods[0]].seconds / ours.seconds
            cells += [f"{1 / copies.seconds:.1f}", f"{1 / ours.seconds:.1f}", f"{share:.2f}", f"{ours.psnr:.2f}"]
        for name in peer_names:
            timing = row[name] = _peer_timing(name, params, noisy_8bit if backend == "gpu" else noisy, clean)
            if timing is None:
                cells += ["-", "-", "-"]
                continue
            speed = f"{1 / timing.seconds:.1f}" if backend == "gpu" else f"{timing.seconds * 1e3:.1f}"
            ratio = timing.seconds / ours.seconds if backend == "gpu" else ours.seconds / timing.seconds
            cells += [speed, f"{timing.psnr:.2f}", f"{ratio:.2f}x"]
        rows.append(row)
        print_line(" | ".join(cells))
    if backend == "gpu":
        pool = cupy_module().get_default_memory_pool()
        print_line(f"# GPU memory held by the run's pool at the end: {pool.total_bytes() / 2**20:.0f} MiB")
    return rows


def run_pipeline(
    source: str,
    *,
    backend: str,
    params: NLMParams,
    frames: int,
    rounds: int = PIPELINE_ROUNDS,
    print_line: Callable[[str], None] = print,
) -> dict[str, float]:
    """Frames per second of decoding, denoising, encoding (H.264) and the whole export of ``source``.

    Each stage runs alone on the first ``frames`` frames (decoded ones held in memory), then
    ``denoise_file`` runs them end to end; the export should go at the slowest stage's speed.
    The four run in turn ``rounds`` times and each reports its median, so that the machine's
    drift (on a shared host the encoder alone varies from run to run) weighs on all alike.
    The export is also timed in its steady state, from its 10th to its 90th percentile frame: a
    short clip pays its fixed costs (opening the decoders, the buffers, draining the encoder's
    lookahead: about a second) over few frames, a real export once over many.
    """
    import tempfile
    from pathlib import Path

    from ..media.reader import VideoReader
    from ..media.writer import VideoWriter
    from ..video.export import denoise_file

    denoiser = Denoiser(params, backend, bit_depth=FULL_SCALE_BITS)  # the reader's uint16 frames
    hardware_decoding = denoiser.backend == "gpu"  # as the export decodes
    with VideoReader(source, hardware_decoding=hardware_decoding) as reader:
        info, decoder = reader.info, reader.decoder
        decoded = list(itertools.islice(reader.frames(), frames))
    list(denoiser.export_stream(decoded[:2], info.dtype))  # compiles and allocates
    outputs = list(denoiser.export_stream(decoded, info.dtype))
    duration = len(decoded) / float(info.frame_rate)

    def decode(folder: Path) -> None:
        with VideoReader(source, hardware_decoding=hardware_decoding) as reader:
            for _ in itertools.islice(reader.frames(), len(decoded)):
                pass

    def denoise(folder: Path) -> None:
        for _ in denoiser.export_stream(decoded, info.dtype):
            pass

    def encode(folder: Path) -> None:
        with VideoWriter(folder / "encode.mp4", info, overwrite=True) as writer:
            for frame in outputs:
                writer.write(frame)

    steady: list[float] = []

    def end_to_end(folder: Path) -> None:
        handed: list[float] = []  # seconds at which each frame went to the encoder
        denoise_file(
            source, folder / "export.mp4", params, backend=backend, duration=duration, overwrite=True,
            progress=lambda done, total, seconds: handed.append(seconds),
        )  # fmt: skip
        first, last = len(handed) // 10, len(handed) * 9 // 10
        if last == first:  # a clip of a few frames has no steady state
            first, last = 0, len(handed) - 1
        steady.append((last - first) / (handed[last] - handed[first]) if last > first else float("nan"))

    stages = {"decode": decode, "denoise": denoise, "encode": encode, "end to end": end_to_end}
    samples: dict[str, list[float]] = {name: [] for name in stages}
    cpu_ms: dict[str, list[float]] = {name: [] for name in stages}  # CPU time of all threads, per frame
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(rounds):
            for name, stage in stages.items():
                started, cpu_started = time.perf_counter(), time.process_time()
                stage(Path(folder))
                samples[name].append(len(decoded) / (time.perf_counter() - started))
                cpu_ms[name].append((time.process_time() - cpu_started) * 1e3 / len(decoded))
    samples["end to end, steady"] = steady
    rates = {name: statistics.median(values) for name, values in samples.items()}
    slowest = min(("decode", "denoise", "encode"), key=rates.__getitem__)
    print_line(f"# {source}: {info.width}x{info.height} {info.pixel_format}, {len(decoded)} frames")
    print_line(
        f"# {denoiser.backend} on {denoiser.device_name}; A = {params.search_radius}, B = {params.patch_radius}, "
        f"Dp = {params.frames_past}, Df = {params.frames_future}, h = {params.h:g}; decoded on the {decoder}; "
        f"H.264 crf 18 medium; median of {rounds} rounds"
    )
    print_line("stage | fps | each round | CPU ms per frame (all threads)")
    for name, rate in rates.items():
        rounds_text = ", ".join(f"{value:.1f}" for value in samples[name])
        cpu = f"{statistics.median(cpu_ms[name]):.1f}" if name in cpu_ms else "-"
        print_line(f"{name} | {rate:.1f} | {rounds_text} | {cpu}")
    print_line(
        f"# slowest stage: {slowest}; the export runs at {rates['end to end'] / rates[slowest]:.2f}x its speed "
        f"over the whole run (opening and draining included), {rates['end to end, steady'] / rates[slowest]:.2f}x "
        "between its 10th and 90th percentile frames"
    )
    return rates


def run_preview(
    source: str | None,
    *,
    backend: str,
    params: NLMParams,
    height: int,
    width: int,
    frames: int,
    print_line: Callable[[str], None] = print,
) -> dict[str, float]:
    """Time the GUI's preview path without Qt: previews per second and a slider change's latency.

    ``frames`` uint8 frames of ``source`` are held in memory as decoded ones would be. Scrubbing
    renders every frame once in a shuffled order (random access, each with its neighbours,
    uint8 back on the host; on the GPU a neighbour still resident there is not sent again); a
    slider change renders the middle frame again with a new h, and on the GPU sends no frame.
    """
    from ..video.preview import ArrayFrames, Previewer

    clip = from_float32(load_clean_frames(source, frames, height, width), np.uint8)
    previewer = Previewer(ArrayFrames(clip), backend)
    previewer.render(0, params)  # compiles and allocates
    order = np.random.default_rng(0).permutation(frames)
    started = time.perf_counter()
    engine = [previewer.render(int(index), params).engine_ms for index in order]
    scrub = frames / (time.perf_counter() - started)
    previewer.render(frames // 2, params)
    uploaded = previewer.frames_uploaded
    changes = []
    for step in range(5):
        started = time.perf_counter()
        previewer.render(frames // 2, dataclasses.replace(params, h=params.h + 1 + step))
        changes.append((time.perf_counter() - started) * 1000)
    denoiser = previewer.denoiser
    print_line(f"# preview path, {width}x{height} RGB uint8, {frames} frames in memory")
    print_line(
        f"# {denoiser.backend} on {denoiser.device_name}; A = {params.search_radius}, B = {params.patch_radius}, "
        f"Dp = {params.frames_past}, Df = {params.frames_future}, h = {params.h:g}"
    )
    figures = {
        "previews per second (scrubbing)": scrub,
        "engine ms per preview (median)": statistics.median(engine),
        "slider change to result, ms (median of 5)": statistics.median(changes),
        "frames sent to the GPU per slider change": (previewer.frames_uploaded - uploaded) / len(changes),
    }
    print_line("measure | value")
    for name, value in figures.items():
        print_line(f"{name} | {value:.1f}")
    return figures
