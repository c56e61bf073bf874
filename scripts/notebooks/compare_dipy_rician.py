"""The Rician model of ``denoise_volume`` against DIPY's ``nlmeans(rician=True)``, on a phantom or a NIfTI.

Nested ellipsoids of 100, 200, 300 and 150 in a zero background (``--side`` voxels a side), or
a NIfTI whose background is 0 (``--nifti``, MNI152: the head in its air), every ``--step``-th
voxel, with Rician noise of sigma ``--noise`` % of the maximum (|S + n1 + i n2|). Per run: the
background's bias as DIPY measures it (the mean output there over sigma; 0 is unbiased), the
foreground's PSNR (dB, the maximum as peak) and the wall time on this machine's CPUs. DIPY at its defaults (blockwise,
patch radius 1) and over its settings, this engine at its defaults (h and sigma from the
estimate) and over a few multiples of that h; both are given the true sigma in the runs marked
so. dipy is not a test dependency: ``pip install dipy`` first.

    python scripts/notebooks/compare_dipy_rician.py --side 40
    python scripts/notebooks/compare_dipy_rician.py --nifti ../shared/data/mni152_t1_1mm.nii.gz --step 2 --noise 3
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Callable

import numpy as np

from nlmeans_studio.engine import denoise_volume, estimate_volume_noise, suggest_volume_h
from nlmeans_studio.engine.volume.rician import background_sigma


def phantom(side: int) -> np.ndarray:
    """Return the nested ellipsoids, float32, ``side`` voxels a side."""
    z, y, x = (np.indices((side,) * 3, dtype=np.float32) - (side - 1) / 2) / (side / 2)
    radius = np.sqrt((z / 0.8) ** 2 + (y / 0.9) ** 2 + x**2)
    clean = np.zeros((side,) * 3, dtype=np.float32)
    for outer, value in [(0.9, 100.0), (0.65, 200.0), (0.4, 300.0), (0.2, 150.0)]:
        clean[radius < outer] = value
    return clean


def nifti_voxels(path: str, step: int) -> np.ndarray:
    """Return every ``step``-th voxel of a NIfTI on each axis, float32, its negative values 0."""
    import nibabel

    data = np.asarray(nibabel.load(path).dataobj, dtype=np.float32)
    return np.ascontiguousarray(np.maximum(data[::step, ::step, ::step], 0))


def with_rician_noise(clean: np.ndarray, percent: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray, float]:
    """Return (clean, noisy magnitude, sigma), float32, sigma ``percent`` % of the clean maximum."""
    sigma = percent / 100 * float(clean.max())
    rng = np.random.default_rng(seed)
    noisy = np.hypot(clean + rng.normal(0, sigma, clean.shape), rng.normal(0, sigma, clean.shape))
    return clean, noisy.astype(np.float32), sigma


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--side", type=int, default=40, help="the phantom's side, voxels")
    parser.add_argument("--step", type=int, default=2, help="the NIfTI's voxels taken: every step-th on each axis")
    parser.add_argument("--nifti", default=None, help="a NIfTI with a zero background instead of the phantom")
    parser.add_argument("--noise", type=float, default=5.0, help="Rician sigma, %% of the clean maximum")
    args = parser.parse_args()
    from dipy.denoise.nlmeans import nlmeans

    source = phantom(args.side) if args.nifti is None else nifti_voxels(args.nifti, args.step)
    clean, noisy, sigma = with_rician_noise(source, args.noise)
    inside = clean > 0

    def report(name: str, run: Callable[[], np.ndarray]) -> float:
        start = time.perf_counter()
        filtered = np.asarray(run(), dtype=np.float64)
        seconds = time.perf_counter() - start
        bias = filtered[~inside].mean() / sigma
        psnr = 10 * np.log10(clean.max() ** 2 / np.mean((filtered[inside] - clean[inside]) ** 2))
        print(f"{name:<58}{bias:>12.3f}{psnr:>9.2f}{seconds:>9.2f}")
        return psnr

    estimated = float(estimate_volume_noise(noisy).sigma[0])
    in_air = background_sigma(noisy, estimated)
    name = f"{'x'.join(map(str, clean.shape))} {'phantom' if args.nifti is None else args.nifti}"
    print(f"{name}, sigma {sigma:g} (flattest blocks {estimated:.4g}, air {in_air}), nonzero voxels {inside.sum()}")
    print(f"{'run':<58}{'bias/sigma':>12}{'PSNR dB':>9}{'s':>9}")
    report("noisy", lambda: noisy)
    denoise_volume(noisy[:12, :12, :12], h=10.0, search_radius=1, backend="cpu")  # numba's compile, not timed
    report("ours gaussian, defaults (search 5)", lambda: denoise_volume(noisy, backend="cpu"))
    report("ours rician, defaults", lambda: denoise_volume(noisy, backend="cpu", noise_model="rician"))
    report("ours rician, true sigma", lambda: denoise_volume(noisy, backend="cpu", noise_model="rician", sigma=sigma))
    h = suggest_volume_h(estimate_volume_noise(noisy))
    best = max(
        (
            report(
                f"ours rician, h {factor} x suggested, search {search}",
                lambda factor=factor, search=search: denoise_volume(
                    noisy, h=factor * h, search_radius=search, backend="cpu", noise_model="rician"
                ),
            ),
            f"{factor} x h, search {search}",
        )
        for factor, search in itertools.product((0.8, 1.0, 1.25, 1.5), (3, 5))
    )
    print(f"ours best: {best[1]}, {best[0]:.2f} dB")
    report("dipy, defaults (blockwise, true sigma)", lambda: nlmeans(noisy, sigma, rician=True))
    report("dipy, defaults, our estimated sigma", lambda: nlmeans(noisy, estimated, rician=True))
    best = max(
        (
            report(
                f"dipy {method}, patch {patch}, block {block}",
                lambda method=method, patch=patch, block=block: nlmeans(
                    noisy, sigma, patch_radius=patch, block_radius=block, rician=True, method=method
                ),
            ),
            f"{method}, patch {patch}, block {block}",
        )
        for method, patch, block in itertools.product(("blockwise", "classic"), (1, 2), (3, 5))
    )
    print(f"dipy best: {best[1]}, {best[0]:.2f} dB")


if __name__ == "__main__":
    main()
