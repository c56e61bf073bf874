"""Measure the table ``suggest_h`` reads: the PSNR-best h / sigma per window and noise level.

For every weighting and centre weight, patch radius B, search radius A, window length (1 frame,
or one past and one future frame) and noise sigma, a golden-section search over h / sigma finds
the ratio that maximises the mean PSNR of the middle frame of three crops of the bundled sample
clip (Big Buck Bunny) with noise as 8-bit footage has it: Gaussian, rounded to 8 bits and
clipped (``add_realistic_noise(..., "clipped", ...)``). Then, at the default window, the same
search with noise on the gray axis (one draw shared by R, G and B, as compressed footage keeps
its noise in luma): the ratio over white noise's is the factor ``suggest_h`` raises h by for
noise correlated across channels; and with spatially correlated noise (white noise filtered by
[a, 1, a] along rows and columns), indexed by what ``estimate_noise`` reads of it
(``spatial_correlation``). The test clips of
``tests/engine/test_noise.py`` and ``tests/engine/test_realistic_noise.py`` (bikes) are not
used, so the tests check the table on footage it has not seen.

Run from the repository root (about 12 minutes on two cores; the factors alone about 5):

    python scripts/calibrate_h.py                   # rewrites engine/video/h_calibration.json
    python scripts/calibrate_h.py --factors-only    # keeps its table, measures the factors again
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from nlmeans_studio.engine import Denoiser, NLMParams, psnr
from nlmeans_studio.engine.media.reader import read_frames
from nlmeans_studio.engine.video.choose_h import CALIBRATION_FILE
from nlmeans_studio.engine.video.noise import estimate_noise
from nlmeans_studio.engine.video.sample import SAMPLE_CLIP
from nlmeans_studio.engine.video.sure import golden_minimum
from nlmeans_studio.engine.video.synthetic_noise import add_realistic_noise

SIGMAS = [2.5, 5, 10, 25, 40]  # 8-bit levels
SEARCH_RADII = [1, 2, 3, 5, 8]
PATCH_RADII = [2, 4, 6]
WINDOW_FRAMES = [1, 3]  # Dp = Df = 0, or Dp = Df = 1
WEIGHTINGS = ["bisquare", "exponential"]
CENTER_WEIGHTS = ["one", "max"]
CROPS = [(20, 100, 420), (60, 300, 700), (100, 450, 150)]  # (first frame, y, x) of 192 x 256 crops
RATIO_RANGE = (0.3, 4.0)  # h / sigma searched
STEPS = 9  # golden-section steps: the ratio to about 3 %
SMOOTHING = [0.125, 0.25, 0.5]  # a of the [a, 1, a] filter that correlates the noise in space


def crops() -> list[np.ndarray]:
    """Three consecutive clean float32 frames per crop."""
    result = []
    for first, y, x in CROPS:
        frames = read_frames(SAMPLE_CLIP, 3, start=first).astype(np.float32) / 255
        result.append(np.ascontiguousarray(frames[:, y : y + 192, x : x + 256]))
    return result


def mean_psnr(clean: list[np.ndarray], noisy: list[np.ndarray], params: NLMParams) -> float:
    denoiser = Denoiser(params, backend="cpu")
    return float(np.mean([psnr(c[1], denoiser.denoise_frame(n, 1)) for c, n in zip(clean, noisy, strict=True)]))


def best_ratio(clean: list[np.ndarray], noisy: list[np.ndarray], sigma: float, **window: object) -> float:
    """Golden-section search of log(h / sigma) for the highest mean PSNR."""

    def score(log_ratio: float) -> float:
        return mean_psnr(clean, noisy, NLMParams(h=sigma * math.exp(log_ratio), **window))

    low, high = (math.log(r) for r in RATIO_RANGE)
    best, _ = golden_minimum(lambda log_ratio: -score(log_ratio), low, high, STEPS)
    return round(math.exp(best), 3)


def gray_noise(clean: np.ndarray, sigma: float, seed: int) -> np.ndarray:
    """``clean`` with one Gaussian draw of ``sigma`` (8-bit levels) added to all its channels,
    rounded to 8 bits and clipped: noise whose effective channel count is 1."""
    draw = np.random.default_rng(seed).standard_normal((*clean.shape[:-1], 1)) * sigma / 255
    return (np.clip(np.rint((clean + draw) * 255), 0, 255) / 255).astype(np.float32)


def smooth_noise(clean: np.ndarray, sigma: float, seed: int, a: float) -> np.ndarray:
    """``clean`` with Gaussian noise filtered by [a, 1, a] along rows and along columns (each
    channel on its own, wrapping at the edges) and scaled to ``sigma`` (8-bit levels), rounded
    to 8 bits and clipped: spatially correlated noise, as demosaicing or deinterlacing leave it."""
    noise = np.random.default_rng(seed).standard_normal(clean.shape)
    for axis in (-3, -2):  # rows, columns
        noise = noise + a * (np.roll(noise, 1, axis) + np.roll(noise, -1, axis))
    noise *= sigma / 255 / noise.std()
    return (np.clip(np.rint((clean + noise) * 255), 0, 255) / 255).astype(np.float32)


def default_window_ratios(clean: list[np.ndarray], noise: Callable[..., np.ndarray]) -> dict[str, list[float]]:
    """Per weighting/centre weight, the best h / sigma at the default window for each of
    SIGMAS, with ``noise(crop, sigma, seed)`` on the crops."""
    ratios = {}
    for weighting, center_weight in itertools.product(WEIGHTINGS, CENTER_WEIGHTS):
        row = []
        for sigma in SIGMAS:
            noisy = [noise(c, sigma, round(10 * sigma)) for c in clean]
            row.append(best_ratio(clean, noisy, sigma, weighting=weighting, center_weight=center_weight))
        ratios[f"{weighting}/{center_weight}"] = row
    return ratios


def relative(ratios: dict[str, list[float]], white: dict[str, list[float]]) -> dict[str, list[float]]:
    return {key: [round(r / w, 3) for r, w in zip(row, white[key], strict=True)] for key, row in ratios.items()}


def shared_and_smooth_noise_factors(clean: list[np.ndarray]) -> tuple[dict, dict]:
    """The factors over white noise's best h at the default window: for gray-axis noise, and
    for spatially correlated noise (SMOOTHING), indexed by ``estimate_noise``'s reading of its
    ``spatial_correlation`` (the largest white noise gave, where the factor is 1, then each
    filter's mean reading)."""

    def white_noise(c: np.ndarray, sigma: float, seed: int) -> np.ndarray:
        return add_realistic_noise(c, "clipped", sigma, seed=seed)

    white = default_window_ratios(clean, white_noise)
    gray = relative(default_window_ratios(clean, gray_noise), white)
    print(f"gray-axis noise: {gray}", flush=True)

    def reading(noise: Callable[..., np.ndarray], combine: Callable[[list[float]], float]) -> float:
        values = [
            estimate_noise(noise(c, s, round(10 * s) + i)).spatial_correlation
            for s in SIGMAS
            for i, c in enumerate(clean)
        ]
        return round(combine(values), 3)

    readings = [reading(white_noise, max)]
    smooth = {key: [[1.0] * len(SIGMAS)] for key in white}
    for a in SMOOTHING:

        def noise(c: np.ndarray, sigma: float, seed: int, a: float = a) -> np.ndarray:
            return smooth_noise(c, sigma, seed, a)

        readings.append(reading(noise, lambda values: float(np.mean(values))))
        for key, row in relative(default_window_ratios(clean, noise), white).items():
            smooth[key].append(row)
        print(f"smooth noise a = {a} (spatial correlation {readings[-1]}): {smooth}", flush=True)
    if readings != sorted(set(readings)):
        raise RuntimeError(f"the readings of spatial correlation do not grow with the smoothing: {readings}")
    return gray, {"spatial_correlation": readings, **smooth}


def ratio_table(clean: list[np.ndarray]) -> dict[str, list]:
    """The best h / sigma per weighting/centre weight, indexed [B][A][frames][sigma]."""
    started = time.perf_counter()
    noisy_by_sigma = {
        sigma: [add_realistic_noise(c, "clipped", sigma, seed=round(10 * sigma)) for c in clean] for sigma in SIGMAS
    }
    table: dict[str, list] = {}
    for weighting, center_weight in itertools.product(WEIGHTINGS, CENTER_WEIGHTS):
        by_patch = []
        for patch_radius in PATCH_RADII:
            by_search = []
            for search_radius in SEARCH_RADII:
                by_frames = []
                for frames in WINDOW_FRAMES:
                    temporal = frames // 2
                    ratios = [
                        best_ratio(
                            clean,
                            noisy_by_sigma[sigma],
                            sigma,
                            patch_radius=patch_radius,
                            search_radius=search_radius,
                            frames_past=temporal,
                            frames_future=temporal,
                            weighting=weighting,
                            center_weight=center_weight,
                        )
                        for sigma in SIGMAS
                    ]
                    by_frames.append(ratios)
                    print(
                        f"{weighting}/{center_weight} B={patch_radius} A={search_radius} frames={frames}: {ratios} "
                        f"({time.perf_counter() - started:.0f} s)",
                        flush=True,
                    )
                by_search.append(by_frames)
            by_patch.append(by_search)
        table[f"{weighting}/{center_weight}"] = by_patch
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--factors-only", action="store_true", help="keep the ratio table, measure the gray and smooth factors again"
    )
    arguments = parser.parse_args()
    clean = crops()
    if arguments.factors_only:
        calibration = json.loads(Path(CALIBRATION_FILE).read_text())
    else:
        calibration = {
            "patch_radius": PATCH_RADII,
            "search_radius": SEARCH_RADII,
            "window_frames": WINDOW_FRAMES,
            "sigma": SIGMAS,
            "ratio": ratio_table(clean),
        }
    calibration["gray_noise_factor"], calibration["smooth_noise_factor"] = shared_and_smooth_noise_factors(clean)
    calibration["about"] = (
        "PSNR-best h / sigma on 8-bit clipped Gaussian noise; written by scripts/calibrate_h.py, keyed "
        "weighting/center_weight, indexed [B][A][frames][sigma]; gray_noise_factor: the best ratio on gray-axis "
        "noise (one draw for R, G and B) over that on white noise, default window, indexed [sigma]; "
        "smooth_noise_factor: the same for spatially correlated noise, indexed [spatial_correlation][sigma] by "
        "estimate_noise's reading of it"
    )
    Path(CALIBRATION_FILE).write_text(json.dumps(calibration, indent=1) + "\n")
    print(f"wrote {CALIBRATION_FILE}")


if __name__ == "__main__":
    main()
