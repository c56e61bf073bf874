"""Frames per second through VapourSynth: our NLMeans filter against vszipcu's, each at its fastest input format.

Issue 36's comparison: nlmeans_studio.vapoursynth.NLMeans and core.vszipcu.NLMeans (GPU only) with
the same KNLMeansCL arguments (d = 1, s = 4, a = 2 and 3, all three planes filtered together) on a
noisy clip, timed as a VapourSynth user gets frames: ``clip.frames()`` on core.num_threads threads
(each count given to ``--threads`` in turn).
Each filter runs at every input format it takes of those tried (8-bit, 16-bit and float, RGB and
YUV 4:4:4) and at a few stream counts; its fastest run is compared. The clip loops 8 noisy frames
(a gradient with white noise of 10 levels) rendered once and kept in VapourSynth's cache
(``std.Loop``), so that the source costs nothing and runs no Python, as a source filter in C
(ffms2, bestsource) would not. vszipcu is skipped where it is not installed (scripts/device_env.sh installs it on the
GPU machine; on the CPU, ``--backend cpu`` times our filter alone).

    source scripts/device_env.sh && python3 scripts/bench_vapoursynth_gpu.py
    python scripts/bench_vapoursynth_gpu.py --size 320x240 --frames 16 --backend cpu
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

DISTINCT_FRAMES = 8
SIGMA = 10.0  # noise, 8-bit levels
H = 0.6 * SIGMA  # the Welsch weights' rule of thumb (the filter's docstring); the cost does not depend on it
FORMATS = ("RGB24", "YUV444P8", "RGB48", "YUV444P16", "RGBS", "YUV444PS")
STREAMS = {"ours": (1, 2, 4, 8), "vszipcu": (4, 8)}  # num_streams: frames filtered at once; vszipcu's best were 4 or 8


@dataclass(frozen=True)
class Run:
    """One timed run: a filter at an input format, search radius and stream count."""

    filter: str
    format: str
    search_radius: int
    streams: int
    threads: int
    fps: float | None  # None: the filter refused the format
    note: str = ""


def _size(text: str) -> tuple[int, int]:
    """'1920x1080' -> (1920, 1080)."""
    width, _, height = text.partition("x")
    try:
        return int(width), int(height)
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must be WIDTHxHEIGHT, as 1920x1080, got {text!r}") from None


def noisy_frames(width: int, height: int) -> np.ndarray:
    """DISTINCT_FRAMES (T, H, W, 3) uint8 frames: a colour gradient moving 4 pixels a frame, with white noise."""
    rows, columns = np.mgrid[0:height, 0:width].astype(np.float32)
    rng = np.random.default_rng(0)
    frames = []
    for t in range(DISTINCT_FRAMES):
        clean = np.stack([40 + 160 * rows / height, 40 + 160 * (columns + 4 * t) / width, 120 + 0 * rows], axis=-1)
        frames.append(np.clip(np.rint(clean + rng.normal(0, SIGMA, clean.shape)), 0, 255).astype(np.uint8))
    return np.stack(frames)


class HeldSource:
    """A clip of any length looping DISTINCT_FRAMES frames rendered once, in each format asked for.

    The frames are rendered by Python once and then come from VapourSynth's cache (``std.Loop``
    asks for frame n % DISTINCT_FRAMES), so that a timed run measures the filter, not the making
    of its input; ``renders`` counts the frames rendered, to tell if the cache gave any up.
    """

    def __init__(self, core: Any, frames: np.ndarray) -> None:
        import vapoursynth as vs

        self.core, self.vs = core, vs
        self.renders = 0
        count, height, width, _ = frames.shape
        blank = core.std.BlankClip(format=vs.RGB24, width=width, height=height, length=count)

        def fill(n: int, f: Any) -> Any:
            self.renders += 1
            out = f.copy()
            for plane in range(3):
                np.asarray(out[plane])[...] = frames[n, :, :, plane]
            return out

        self.rgb24 = core.std.ModifyFrame(blank, blank, fill)

    def clip(self, format_name: str, length: int) -> Any:
        """A clip of ``length`` frames in format ``format_name``, looping the rendered frames."""
        vs, core = self.vs, self.core
        target = getattr(vs, format_name)
        converted = self.rgb24
        if format_name != "RGB24":
            is_yuv = core.get_video_format(target).color_family == vs.YUV
            converted = core.resize.Point(self.rgb24, format=target, matrix_s="709" if is_yuv else None)
        return core.std.Loop(converted, times=-(-length // DISTINCT_FRAMES))[:length]


def frames_per_second(clip: Any, warmup: int, frames: int) -> float:
    """Frames a second of ``clip``'s frames ``warmup`` .. ``warmup + frames`` - 1, after its first ``warmup``."""
    for _ in clip[:warmup].frames():  # compiles, allocates and fills the GPU's queues
        pass
    started = time.perf_counter()
    for _ in clip[warmup : warmup + frames].frames():
        pass
    return frames / (time.perf_counter() - started)


def _filters(core: Any, backend: str) -> dict[str, Callable[..., Any]]:
    """The filters to time, by name: ours on ``backend``, and vszipcu where it is installed."""
    from nlmeans_studio.vapoursynth import NLMeans

    filters = {"ours": lambda clip, **arguments: NLMeans(clip, **arguments, backend=backend)}
    if hasattr(core, "vszipcu"):
        filters["vszipcu"] = core.vszipcu.NLMeans
    return filters


def run_all(arguments: argparse.Namespace, print_line: Callable[[str], None] = print) -> list[Run]:
    """Time every filter at every thread count, format, search radius and stream count; print a line per run."""
    import vapoursynth as vs

    core = vs.core
    width, height = arguments.size
    source = HeldSource(core, noisy_frames(width, height))
    filters = _filters(core, arguments.backend)
    if "vszipcu" not in filters:
        print_line("vszipcu is not installed here (core.vszipcu): timing our filter alone")
    length = arguments.warmup + arguments.frames
    print_line(f"{'filter':8} {'format':10} {'a':>2} {'streams':>7} {'threads':>7} {'fps':>9}")
    runs = []
    for threads in arguments.threads:
        core.num_threads = threads
        for format_name in arguments.formats:
            clip = source.clip(format_name, length)
            channels = "YUV" if core.get_video_format(getattr(vs, format_name)).color_family == vs.YUV else "RGB"
            for name, nlmeans in filters.items():
                streams = (1,) if name == "ours" and arguments.backend == "cpu" else STREAMS[name]
                for search_radius in arguments.search_radii:
                    for count in streams:
                        try:
                            filtered = nlmeans(
                                clip,
                                d=arguments.d,
                                a=search_radius,
                                s=arguments.s,
                                h=arguments.strength,
                                channels=channels,
                                wmode=arguments.wmode,
                                num_streams=count,
                            )
                            fps = frames_per_second(filtered, arguments.warmup, arguments.frames)
                            run = Run(name, format_name, search_radius, count, threads, fps)
                        except vs.Error as error:
                            note = str(error).splitlines()[0]
                            run = Run(name, format_name, search_radius, count, threads, None, note)
                        runs.append(run)
                        shown = f"{run.fps:9.1f}" if run.fps is not None else f"{'refused':>9}  {run.note}"
                        print_line(f"{name:8} {format_name:10} {search_radius:>2} {count:>7} {threads:>7} {shown}")
    print_line(f"source frames rendered: {source.renders} (each of the {DISTINCT_FRAMES} once per format: cached)")
    return runs


def best_runs(runs: list[Run]) -> dict[tuple[str, int], Run]:
    """Each filter's fastest run at each search radius, over formats and stream counts."""
    best: dict[tuple[str, int], Run] = {}
    for run in runs:
        key = (run.filter, run.search_radius)
        if run.fps is not None and (key not in best or run.fps > best[key].fps):
            best[key] = run
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=_size, default=(1920, 1080), help="WIDTHxHEIGHT (default 1920x1080)")
    parser.add_argument("--frames", type=int, default=240, help="frames timed per run")
    parser.add_argument("--warmup", type=int, default=24, help="frames filtered before the timing")
    parser.add_argument("--backend", choices=("auto", "cpu", "gpu"), default="auto", help="our filter's")
    parser.add_argument(
        "--threads", type=int, nargs="+", default=[os.cpu_count()], help="core.num_threads, each in turn"
    )
    parser.add_argument("--formats", nargs="+", choices=FORMATS, default=list(FORMATS))
    parser.add_argument("--search-radii", type=int, nargs="+", default=[2, 3], help="a")
    parser.add_argument("-d", type=int, default=1, help="temporal radius")
    parser.add_argument("-s", type=int, default=4, help="patch radius")
    parser.add_argument("--strength", type=float, default=H, help="h, in 8-bit levels")
    parser.add_argument("--wmode", type=int, choices=(0, 2), default=0, help="0 Welsch, 2 bisquare")
    arguments = parser.parse_args()
    width, height = arguments.size
    print(
        f"{width}x{height}, d = {arguments.d}, s = {arguments.s}, h = {arguments.strength}, wmode = {arguments.wmode}, "
        f"{arguments.frames} frames timed after {arguments.warmup}, core.num_threads = {arguments.threads}, "
        f"our backend {arguments.backend}"
    )
    best = best_runs(run_all(arguments))
    print("\nfastest of each filter (format, streams, threads): fps, and ours / vszipcu")
    for search_radius in arguments.search_radii:
        ours, theirs = best.get(("ours", search_radius)), best.get(("vszipcu", search_radius))
        line = f"a = {search_radius}:"
        for run in (ours, theirs):
            if run is not None:
                line += f"  {run.filter} {run.fps:.1f} fps ({run.format}, {run.streams} streams, {run.threads} threads)"
        if ours is not None and theirs is not None:
            line += f"  ratio {ours.fps / theirs.fps:.2f}x"
        print(line)


if __name__ == "__main__":
    main()
