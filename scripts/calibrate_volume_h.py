"""The volume filter's best h / sigma for each weighting, centre weight and patch size: the table
``engine/volume/noise.py`` suggests h from (``H_PER_SIGMA``).

On a 48^3 crop of the MNI152 T1 template (scaled to 0..255) with Gaussian noise of each sigma,
search radius 5, the h of least squared error is found on a grid of k = h / sigma (ratios of
2^(1/4)) and refined by a parabola through the best three (in log k). Prints, per setting, the
best k at each sigma and their geometric mean.

    python scripts/calibrate_volume_h.py /path/to/mni152_t1_1mm.nii.gz
"""

from __future__ import annotations

import argparse
import itertools
import math

import numpy as np

from nlmeans_studio.engine import CENTER_WEIGHTS, WEIGHTINGS, denoise_volume, read_volume

SIGMAS = (5.0, 10.0, 20.0)  # of 255
PATCH_RADII = (0, 1, 2, 3)
K_GRID = 2.0 ** (np.arange(-8, 17) / 4)  # 0.25 .. 16


def best_k(clean: np.ndarray, noisy: np.ndarray, sigma: float, **settings: object) -> float:
    """k = h / sigma of least squared error: the grid's best, refined by a parabola in log k."""
    errors = []
    for k in K_GRID:
        errors.append(float(np.mean((denoise_volume(noisy, h=k * sigma, backend="cpu", **settings) - clean) ** 2)))
        if len(errors) > 3 and errors[-1] > errors[-2] > errors[-3]:
            break  # past the minimum
    best = int(np.argmin(errors))
    if 0 < best < len(errors) - 1:
        low, middle, high = errors[best - 1 : best + 2]
        step = 0.5 * (low - high) / (low - 2 * middle + high)  # in grid steps from the best
        return float(K_GRID[best] * 2.0 ** (step / 4))
    return float(K_GRID[best])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("template", help="mni152_t1_1mm.nii.gz")
    args = parser.parse_args()
    volume = read_volume(args.template).data.astype(np.float32)
    clean = volume[70:118, 90:138, 75:123] * np.float32(255 / volume.max())
    rng = np.random.default_rng(0)
    noisy = {sigma: clean + rng.normal(0, sigma, clean.shape).astype(np.float32) for sigma in SIGMAS}
    for weighting, center, patch in itertools.product(WEIGHTINGS, CENTER_WEIGHTS, PATCH_RADII):
        settings = {"weighting": weighting, "center_weight": center, "patch_radius": patch, "search_radius": 5}
        ks = [best_k(clean, noisy[sigma], sigma, **settings) for sigma in SIGMAS]
        mean = math.exp(sum(math.log(k) for k in ks) / len(ks))
        print(f"{weighting:11s} {center:3s} patch {patch}: " + " ".join(f"{k:5.2f}" for k in ks) + f"  mean {mean:.2f}")


if __name__ == "__main__":
    main()
