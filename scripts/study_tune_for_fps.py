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
    """(T, H, W, 3) float64 levels: motion and texture, a flat band at the top for the noise estimate."""
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
    clean[:, :16] = 100 + columns[:16, :, None] * 0.3  # flat enough for the noise estimate's blocks
    return clean.round()


def write_clip(path: Path, frames: np.ndarray) -> None:
    with av.open(str(path), "w") as container:
        stream = container.add_stream("ffv1", rate=25)
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


def study_clip(name: str, args: argparse.Namespace, folder: Path) -> None:
    height, width = args.size
    clean = clean_clip(name, height, width)
    noisy8 = np.clip(np.rint(clean + np.random.default_rng(5).normal(0, SIGMA, clean.shape)), 0, 255)
    path = folder / f"{name.replace(' ', '-')}.mkv"
    write_clip(path, noisy8.astype(np.uint8))
    clean, noisy = (clean / 255).astype(np.float32), (noisy8 / 255).astype(np.float32)
    grid = [
        NLMParams(search_radius=a, frames_past=past, frames_future=future)
        for past, future in tune.TEMPORAL
        for a in range(1, max(tune.COARSE_SEARCH_RADII) + 1)
    ]
    started = time.perf_counter()
    with VideoReader(path) as reader:
        estimate = estimate_clip_noise(reader)
        matrix = matrix_for(reader.info.color.get("colorspace", 2), height)
        most_past = max(past for past, _ in tune.TEMPORAL)
        span = SURE_FRAMES + most_past + max(future for _, future in tune.TEMPORAL)
        sample = to_float32(clip_sample(reader, span))
        middle = (FRAMES - tune.TIMED_FRAMES) // 2
        timed = range(middle, middle + tune.TIMED_FRAMES)
        tune._export_rate(reader, choose_filter(estimate, grid[0], matrix=matrix), timed[:3], args.backend,
                          args.codec, threading.Event())  # fmt: skip
        strongest = tune._scored(grid[-1], 0.0, estimate, sample, most_past, matrix, args.backend).choice
        reference = at_factor(strongest, 2.0).denoiser(args.backend)
        reference = np.stack([reference.denoise_frame(sample, i) for i in range(len(sample))])
        renoised = np.clip(add_noise(reference, estimate.covariance, seed=9), 0, 1).astype(np.float32)
        rows = {}
        for window in grid:
            timing = choose_filter(estimate, window, matrix=matrix)
            rate = tune._export_rate(reader, timing, timed, args.backend, args.codec, threading.Event())[0]
            scored = tune._scored(window, rate, estimate, sample, most_past, matrix, args.backend)
            truths = [true_psnr(at_factor(scored.choice, f), clean, noisy, args.backend) for f in FACTORS]
            rows[tune._offsets(window), window.search_radius, window.frames_past] = {
                "window": window,
                "fps": rate,
                "sure": scored.estimated_psnr,
                "pseudo": pseudo_clean_psnr(scored.choice, reference, renoised, window, args.backend),
                "true": true_psnr(scored.choice, clean, noisy, args.backend),
                "best": max(truths),
            }
    print(f"\n## {name}, {width}x{height}, {FRAMES} frames, sigma {SIGMA:g} (estimated {estimate.average_sigma:.1f})")
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
        rates = {key: row["fps"] for key, row in rows.items()}
        for candidate in result.candidates:
            key = (tune._offsets(candidate.window), candidate.window.search_radius, candidate.window.frames_past)
            rates[key] = max(rates[key], candidate.fps)
        reaching = [rows[key] for key, rate in rates.items() if rate >= target]
        best = max(reaching, key=lambda r: r["best"])
        chosen = result.chosen
        chosen_true = true_psnr(chosen.choice, clean, noisy, args.backend)
        sure_pick = max(reaching, key=lambda r: r["sure"])
        pseudo_pick = max(reaching, key=lambda r: r["pseudo"])
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
