"""How well ``tune`` chooses: per clip and target rate, its window's true PSNR against the best the grid has there.

    python3 scripts/study_tune_for_fps.py [--size 128x96] [--targets 10,25,60] [--backend cpu] [--codec h264]

Each clip is made here with its clean frames known (not the calibration clips): white Gaussian noise
of sigma 15 levels is added and the noisy frames written losslessly (FFV1), which ``tune_for_fps``
reads as a user's file. The whole grid (A 1..8 with each (Dp, Df) of ``tune.TEMPORAL``) is timed as
the tune times a window (its export, ``--codec``, fastest of two or three) and scored against the
clean frames: at the strengths the tune's SURE chooses, and at the best of factors 0.5..2 on them.
Then, per target, ``tune_for_fps`` runs as the command runs it, and a row says what it chose, its
measured fps, its true PSNR, the best window reaching the target (by the grid's timings and the tune's
own, the larger) with its true PSNR at its best strengths, and the gap.

Which estimate ranks windows best is measured on the grid too: among the windows reaching each
target, the window SURE's PSNR ranks first and the one a pseudo-clean reference ranks first (the
clip's strongest window at twice its strengths as the reference, noise of the estimated covariance
added to it, each window scored against it), and the true PSNR each loses against the best.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import tempfile
import threading
import time
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from nlmeans_studio.engine import NLMParams, add_noise, psnr, tune_for_fps
from nlmeans_studio.engine.backend import cpu_name
from nlmeans_studio.engine.frames import to_float32
from nlmeans_studio.engine.media.reader import VideoReader
from nlmeans_studio.engine.video import tune
from nlmeans_studio.engine.video.default_filter import SURE_FRAMES, choose_filter
from nlmeans_studio.engine.video.export import clip_sample, estimate_clip_noise
from nlmeans_studio.engine.video.luma_chroma import matrix_for

FRAMES = 24
SIGMA = 15.0  # levels
FACTORS = np.geomspace(0.5, 2.0, 7)


def clean_clip(name: str, height: int, width: int) -> np.ndarray:
    """(T, H, W, 3) float64 levels: motion and texture, a flat band at the top for the noise estimate.

    ``name``: "texture pan", "moving objects", "gratings" or "textured pan" (grain, blobs, shading and
    sharp-edged patches of a larger scene, panned).
    """
    rows, columns = np.mgrid[0:height, 0:width]
    rng = np.random.default_rng(11)
    frames = []
    if name == "texture pan":
        base = rng.normal(0, 1, (height + FRAMES, width + FRAMES, 3))
        for axis in (0, 1):
            base = (np.roll(base, 1, axis) + 2 * base + np.roll(base, -1, axis)) / 4
        frames = [128 + 150 * base[rows + t, columns + t] for t in range(FRAMES)]
    elif name == "moving objects":
        centres = rng.uniform(0.2, 0.8, (6, 2)) * (height, width)
        speeds = rng.uniform(-2.5, 2.5, (6, 2))
        colours = rng.uniform(40, 220, (6, 3))
        for t in range(FRAMES):
            frame = np.stack([80 + columns * 0.6, 90 + rows * 0.8, 150 + 20 * np.sin(columns / 7.0)], axis=-1)
            for centre, speed, colour in zip(centres, speeds, colours, strict=True):
                y, x = centre + t * speed
                frame[(rows - y) ** 2 + (columns - x) ** 2 < 60] = colour
            frames.append(frame)
    elif name == "textured pan":  # a camera panning 3 px right and 1 px down a frame over a larger scene
        down, right = 1, 3
        scene = np.zeros((height + down * FRAMES, width + right * FRAMES, 3))
        for radius, amplitude in ((1, 12), (6, 35), (30, 50)):  # fine grain, mid-scale blobs, broad shading
            layer = box_blur(rng.normal(0, 1, (*scene.shape[:2], 1)) + 0.3 * rng.normal(0, 1, scene.shape), radius)
            scene += amplitude * layer / layer.std()  # mostly brightness, some colour: as scenes are
        scene_rows, scene_columns = np.mgrid[0 : scene.shape[0], 0 : scene.shape[1]]
        for _ in range(12):  # sharp-edged patches: the edges the filter must keep
            top, left = rng.uniform(0, 1, 2) * scene.shape[:2]
            size = rng.uniform(0.03, 0.15) * min(scene.shape[:2])
            inside = (abs(scene_rows - top) < size) & (abs(scene_columns - left) < size * 1.5)
            scene[inside] = rng.uniform(-80, 80, 3)
        frames = [128 + scene[down * t : down * t + height, right * t : right * t + width] for t in range(FRAMES)]
    else:  # "gratings"
        frames = [
            np.stack(
                [
                    128 + 60 * np.sin((columns - 1.5 * t) / 3.0) * np.cos(rows / 6.0),
                    128 + 50 * np.sin((columns + rows + 2 * t) / 7.0),
                    110 + 70 * (((columns + t) // 9 + rows // 9) % 2),
                ],
                axis=-1,
            )
            for t in range(FRAMES)
        ]
    clean = np.stack(frames).clip(20, 235)
    # Flat enough for the noise estimate's blocks; the ramp stops at 200 levels so that at any width the
    # clean levels stay in 0..255 and noise of SIGMA seldom clips.
    clean[:, :16] = np.minimum(100 + columns[:16, :, None] * 0.3, 200)
    return clean.round()


def box_blur(image: np.ndarray, radius: int) -> np.ndarray:
    """``image`` averaged over (2 radius + 1)^2 pixels around each, edges clamped."""
    for axis in (0, 1):
        padded = np.concatenate(
            [
                np.repeat(image.take([0], axis), radius + 1, axis),
                image,
                np.repeat(image.take([-1], axis), radius, axis),
            ],
            axis,
        )
        sums = np.cumsum(padded, axis)
        size = image.shape[axis]
        image = (sums.take(range(2 * radius + 1, 2 * radius + 1 + size), axis) - sums.take(range(size), axis)) / (
            2 * radius + 1
        )
    return image


def write_clip(path: Path, frames: np.ndarray) -> None:
    """Write (T, H, W, 3) uint8 frames losslessly: FFV1 in a .mkv, uncompressed in a .nut."""
    with av.open(str(path), "w") as container:
        stream = container.add_stream("rawvideo" if path.suffix == ".nut" else "ffv1", rate=25)
        stream.height, stream.width = frames.shape[1:3]
        stream.pix_fmt = "bgr0"
        for index, frame in enumerate(frames):
            video_frame = av.VideoFrame.from_ndarray(frame, format="rgb24")
            video_frame.pts, video_frame.time_base = index, Fraction(1, 25)
            container.mux(stream.encode(video_frame))
        container.mux(stream.encode(None))


def true_psnr(choice, clean: np.ndarray, noisy: np.ndarray, backend: str) -> float:
    """PSNR against the clean frames over the SURE_FRAMES middle frames the tune scores."""
    denoiser = choice.denoiser(backend)
    first = (FRAMES - SURE_FRAMES) // 2
    return float(np.mean([psnr(clean[i], denoiser.denoise_frame(noisy, i)) for i in range(first, first + SURE_FRAMES)]))


def at_factor(choice, factor: float):
    if choice.luma_chroma is None:
        return dataclasses.replace(choice, params=dataclasses.replace(choice.params, h=factor * choice.params.h))
    h_luma, h_chroma, matrix = choice.luma_chroma
    return dataclasses.replace(choice, luma_chroma=(factor * h_luma, factor * h_chroma, matrix))


def pseudo_clean_psnr(choice, reference: np.ndarray, renoised: np.ndarray, window: NLMParams, backend: str) -> float:
    """The window's PSNR on the re-noised reference against the reference, over the frames SURE scores."""
    denoiser = choice.denoiser(backend)
    most_past = max(past for past, _ in tune.TEMPORAL)
    scored = [most_past + k for k in range(SURE_FRAMES)]
    return float(np.mean([psnr(reference[i], denoiser.denoise_frame(renoised, i)) for i in scored]))


def make_clip(
    name: str, height: int, width: int, folder: Path, *, suffix: str = ".mkv"
) -> tuple[Path, np.ndarray, np.ndarray]:
    """Write clip ``name`` with noise of SIGMA levels losslessly; return its path, clean and noisy frames.

    ``suffix``: ".mkv" for FFV1, ".nut" for uncompressed frames (no decoding in the exports' time:
    FFV1 decoded 960x540 at 15 fps on this loaded 2-core machine). The frames are (T, H, W, 3)
    float32 on the 0..1 scale, the noisy ones as the file holds them.
    """
    clean = clean_clip(name, height, width)
    noisy8 = np.clip(np.rint(clean + np.random.default_rng(5).normal(0, SIGMA, clean.shape)), 0, 255)
    path = folder / f"{name.replace(' ', '-')}{suffix}"
    write_clip(path, noisy8.astype(np.uint8))
    return path, (clean / 255).astype(np.float32), (noisy8 / 255).astype(np.float32)


def window_key(window: NLMParams) -> tuple[int, int, int]:
    """The grid's key of a window: its offsets per pixel (the grid's order), A and Dp."""
    return tune._offsets(window), window.search_radius, window.frames_past


def score_grid(
    path: Path,
    clean: np.ndarray,
    noisy: np.ndarray,
    backend: str,
    codec: str,
    *,
    factors: np.ndarray = FACTORS,
    pseudo: bool = True,
    shown=None,
    until: float = math.inf,
) -> tuple[dict, float]:
    """Time and score every window of the grid (A 1..8 with each (Dp, Df) of ``tune.TEMPORAL``) on the clip.

    Returns the rows by ``window_key`` (window, fps, SURE dB, true dB at SURE's strengths and at
    the best of ``factors`` on them, SURE's choice, and the pseudo-clean dB where ``pseudo``), and
    the noise sigma the clip's estimate reads. ``shown`` is called with each row as it is made; no
    window is begun after ``until`` (seconds of ``time.perf_counter``), the rows then a part of the grid.
    """
    height = clean.shape[1]
    grid = [
        NLMParams(search_radius=a, frames_past=past, frames_future=future)
        for past, future in tune.TEMPORAL
        for a in range(1, max(tune.COARSE_SEARCH_RADII) + 1)
    ]
    with VideoReader(path) as reader:
        estimate = estimate_clip_noise(reader)
        matrix = matrix_for(reader.info.color.get("colorspace", 2), height)
        most_past = max(past for past, _ in tune.TEMPORAL)
        span = SURE_FRAMES + most_past + max(future for _, future in tune.TEMPORAL)
        sample = to_float32(clip_sample(reader, span))
        middle = (FRAMES - tune.TIMED_FRAMES) // 2
        timed = range(middle, middle + tune.TIMED_FRAMES)
        tune._timing(reader, choose_filter(estimate, grid[0], matrix=matrix), timed[:3], backend,
                     codec, None, threading.Event())  # fmt: skip
        if pseudo:
            untimed = tune._Timing(0.0, backend, "")
            strongest = tune._scored(grid[-1], untimed, estimate, sample, most_past, matrix, backend).choice
            reference = at_factor(strongest, 2.0).denoiser(backend)
            reference = np.stack([reference.denoise_frame(sample, i) for i in range(len(sample))])
            renoised = np.clip(add_noise(reference, estimate.covariance, seed=9), 0, 1).astype(np.float32)
        rows = {}
        for window in grid:
            if time.perf_counter() > until:
                break
            timing = choose_filter(estimate, window, matrix=matrix)
            timed_run = tune._timing(reader, timing, timed, backend, codec, None, threading.Event())
            rate = timed_run.fps
            scored = tune._scored(window, timed_run, estimate, sample, most_past, matrix, backend)
            truths = [true_psnr(at_factor(scored.choice, f), clean, noisy, backend) for f in factors]
            row = {
                "window": window,
                "fps": rate,
                "sure": math.nan if scored.estimated_psnr is None else scored.estimated_psnr,  # SURE read no error
                "choice": scored.choice,
                "true": true_psnr(scored.choice, clean, noisy, backend),
                "best": max(truths),
            }
            if pseudo:
                row["pseudo"] = pseudo_clean_psnr(scored.choice, reference, renoised, window, backend)
            rows[window_key(window)] = row
            if shown is not None:
                shown(row)
    return rows, estimate.average_sigma


def reaching(rows: dict, target: float, tune_rates: dict) -> list[dict]:
    """The grid's rows whose window reaches ``target`` fps in the grid's timing or the tune's (the larger).

    ``tune_rates`` holds the rates the tune measured, by ``window_key``.
    """
    rates = {key: max(row["fps"], tune_rates.get(key, 0.0)) for key, row in rows.items()}
    return [rows[key] for key, rate in rates.items() if rate >= target]


def study_clip(name: str, args: argparse.Namespace, folder: Path) -> None:
    height, width = args.size
    path, clean, noisy = make_clip(name, height, width, folder)
    started = time.perf_counter()
    rows, sigma = score_grid(path, clean, noisy, args.backend, args.codec)
    print(f"\n## {name}, {width}x{height}, {FRAMES} frames, sigma {SIGMA:g} (estimated {sigma:.1f})")
    print(f"grid timed and scored in {time.perf_counter() - started:.0f} s\n")
    print("| window | fps | SURE dB | pseudo-clean dB | true dB (SURE's h) | true dB (best h) |")
    print("|---|---|---|---|---|---|")
    for row in sorted(rows.values(), key=lambda r: tune._offsets(r["window"])):
        w = row["window"]
        print(
            f"| A {w.search_radius}, Dp {w.frames_past}, Df {w.frames_future} | {row['fps']:.1f} | {row['sure']:.2f} | "
            f"{row['pseudo']:.2f} | {row['true']:.2f} | {row['best']:.2f} |"
        )
    print(
        "\n| target fps | chosen | its fps | its true dB | best reaching | its true dB (best h) | gap dB | "
        "SURE's pick loses | pseudo-clean's pick loses | tune s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for target in args.targets:
        started = time.perf_counter()
        try:
            result = tune_for_fps(path, target, backend=args.backend, codec=args.codec)
        except tune.TargetNotReachedError as error:
            print(f"| {target:g} | none: {error} | | | | | | | | {time.perf_counter() - started:.0f} |")
            continue
        seconds = time.perf_counter() - started
        tune_rates: dict = {}
        for candidate in result.candidates:
            key = window_key(candidate.window)
            tune_rates[key] = max(tune_rates.get(key, 0.0), candidate.fps)
        reached = reaching(rows, target, tune_rates)
        best = max(reached, key=lambda r: r["best"])
        chosen = result.chosen
        chosen_true = true_psnr(chosen.choice, clean, noisy, args.backend)
        sure_pick = max(reached, key=lambda r: r["sure"])
        pseudo_pick = max(reached, key=lambda r: r["pseudo"])
        bw = best["window"]
        print(
            f"| {target:g} | {chosen.describe()} | {chosen.fps:.1f} | {chosen_true:.2f} | "
            f"A {bw.search_radius}, Dp {bw.frames_past}, Df {bw.frames_future} | {best['best']:.2f} | "
            f"{best['best'] - chosen_true:.2f} | {best['best'] - sure_pick['true']:.2f} | "
            f"{best['best'] - pseudo_pick['true']:.2f} | {seconds:.0f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="128x96", help="WIDTHxHEIGHT (default 128x96)")
    parser.add_argument("--targets", default="10,25,60", help="frames a second (default 10,25,60)")
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--codec", default="h264", help="what the timed exports write (default h264, as denoise)")
    parser.add_argument("--clips", default="gratings,texture pan,moving objects")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    args.size = (height, width)
    args.targets = [float(v) for v in args.targets.split(",")]
    print(f"# tune for fps study: {cpu_name()}, backend {args.backend}, timed exports written as {args.codec}")
    with tempfile.TemporaryDirectory() as folder:
        for name in args.clips.split(","):
            study_clip(name, args, Path(folder))


if __name__ == "__main__":
    main()
