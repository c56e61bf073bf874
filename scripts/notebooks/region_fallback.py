"""The low-confidence fall-back on H.264 noise (issue 19): h from a region the user draws.

Where the automatic estimate is not confident (H.264 at sigma 10: the encoder removed the
noise from every flat block), the window asks for a region. This prints, per clip and variant,
the automatic result, the result with h from each of six regions a user might draw (the whole
frame, its centre half, four 64 x 64 corners), and the best of a grid of h in levels.

    python scripts/notebooks/region_fallback.py [CLIP.mp4 FIRST_FRAME Y X ...]

Same clips, crops, noise and seed as scripts/notebooks/realistic_noise_table.py (whose ``clips`` it uses).
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
from realistic_noise_table import clips

from nlmeans_studio.engine import Denoiser, NLMParams, add_realistic_noise, apply_estimate, estimate_noise, psnr

VARIANTS = [("bisquare", "one"), ("exponential", "max")]
GRID = np.geomspace(0.4, 40, 24)  # h in 8-bit levels: 22 % steps


def regions(height: int, width: int) -> dict[str, tuple[int, int, int, int]]:
    """(x, y, width, height) of regions a user might draw, by name."""
    corner = 64
    return {
        "frame": (0, 0, width, height),
        "centre": (width // 4, height // 4, width // 2, height // 2),
        "top left": (0, 0, corner, corner),
        "top right": (width - corner, 0, corner, corner),
        "bottom left": (0, height - corner, corner, corner),
        "bottom right": (width - corner, height - corner, corner, corner),
    }


def score(noisy: np.ndarray, clean: np.ndarray, params: NLMParams, h: float) -> float:
    """PSNR (dB) of the middle frame denoised at ``h`` against the clean one."""
    result = Denoiser(dataclasses.replace(params, h=h), "cpu").denoise_frame(noisy, 1)
    return psnr(clean[1], result)


def main() -> None:
    print("| clip | variant | automatic (h) | from a region: worst, best (h range) | best of the grid (h) |")
    print("|---|---|---|---|---|")
    for name, clean in clips(sys.argv[1:]).items():
        noisy = add_realistic_noise(clean, "h264", 10, seed=7)
        clean = clean[:, : noisy.shape[1], : noisy.shape[2]]

        estimates = [estimate_noise(noisy, roi) for roi in regions(*noisy.shape[1:3]).values()]
        for weighting, center_weight in VARIANTS:
            base = NLMParams(weighting=weighting, center_weight=center_weight)
            automatic = apply_estimate(base, estimate_noise(noisy))
            drawn = [apply_estimate(base, estimate).h for estimate in estimates]
            drawn_scores = [score(noisy, clean, base, h) for h in drawn]
            grid = {h: score(noisy, clean, base, h) for h in GRID}
            best = max(grid, key=grid.get)
            automatic_score = score(noisy, clean, base, automatic.h)
            print(
                f"| {name} | {weighting}/{center_weight} | {automatic_score:.2f} ({automatic.h:.1f}) | "
                f"{min(drawn_scores):.2f}, {max(drawn_scores):.2f} ({min(drawn):.1f}-{max(drawn):.1f}) | "
                f"{grid[best]:.2f} ({best:.1f}) |",
                flush=True,
            )


if __name__ == "__main__":
    main()
