"""Measure the table ``suggest_h`` reads: the PSNR-best h / sigma per window and noise level.

For every weighting, patch radius B, search radius A, window length (1 frame, or one past and
one future frame) and noise sigma, a golden-section search over h / sigma finds the ratio that
maximises the mean PSNR of the middle frame of three crops of the bundled sample clip (Big Buck
Bunny) with white Gaussian noise added. The test clip of ``tests/engine/test_noise.py`` (bikes)
is not used, so the tests check the table on footage it has not seen.

Run from the repository root (about 5 minutes on two cores):

    python scripts/calibrate_h.py        # rewrites engine/h_calibration.json
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np

from engine import Denoiser, NLMParams, psnr
from engine.noise import CALIBRATION_FILE
from engine.sample import SAMPLE_CLIP, noisy_frames
from engine.video import read_frames

SIGMAS = [2.5, 5, 10, 25, 40]  # 8-bit levels
SEARCH_RADII = [1, 2, 3, 5, 8]
PATCH_RADII = [2, 4, 6]
WINDOW_FRAMES = [1, 3]  # Dp = Df = 0, or Dp = Df = 1
WEIGHTINGS = ["bisquare", "exponential"]
CROPS = [(20, 100, 420), (60, 300, 700), (100, 450, 150)]  # (first frame, y, x) of 192 x 256 crops
RATIO_RANGE = (0.3, 4.0)  # h / sigma searched
STEPS = 9  # golden-section steps: the ratio to about 3 %


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

    golden = (math.sqrt(5) - 1) / 2
    low, high = (math.log(r) for r in RATIO_RANGE)
    left, right = high - golden * (high - low), low + golden * (high - low)
    left_score, right_score = score(left), score(right)
    for _ in range(STEPS):
        if left_score >= right_score:
            high, right, right_score = right, left, left_score
            left = high - golden * (high - low)
            left_score = score(left)
        else:
            low, left, left_score = left, right, right_score
            right = low + golden * (high - low)
            right_score = score(right)
    return round(math.exp((low + high) / 2), 3)


def main() -> None:
    clean = crops()
    started = time.perf_counter()
    table: dict[str, list] = {}
    for weighting in WEIGHTINGS:
        by_patch = []
        for patch_radius in PATCH_RADII:
            by_search = []
            for search_radius in SEARCH_RADII:
                by_frames = []
                for frames in WINDOW_FRAMES:
                    temporal = frames // 2
                    ratios = []
                    for sigma in SIGMAS:
                        noisy = [noisy_frames(c, sigma, seed=round(10 * sigma)) for c in clean]
                        ratios.append(
                            best_ratio(
                                clean,
                                noisy,
                                sigma,
                                patch_radius=patch_radius,
                                search_radius=search_radius,
                                frames_past=temporal,
                                frames_future=temporal,
                                weighting=weighting,
                            )
                        )
                    by_frames.append(ratios)
                    print(
                        f"{weighting} B={patch_radius} A={search_radius} frames={frames}: {ratios} "
                        f"({time.perf_counter() - started:.0f} s)",
                        flush=True,
                    )
                by_search.append(by_frames)
            by_patch.append(by_search)
        table[weighting] = by_patch
    calibration = {
        "about": "PSNR-best h / sigma; written by scripts/calibrate_h.py, indexed [B][A][frames][sigma]",
        "patch_radius": PATCH_RADII,
        "search_radius": SEARCH_RADII,
        "window_frames": WINDOW_FRAMES,
        "sigma": SIGMAS,
        "ratio": table,
    }
    Path(CALIBRATION_FILE).write_text(json.dumps(calibration, indent=1) + "\n")
    print(f"wrote {CALIBRATION_FILE}")


if __name__ == "__main__":
    main()
