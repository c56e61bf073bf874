"""Times ``denoise_volume`` with a mask against the whole volume, on the CPU (issue 38's target:
a mask of 30 % of the voxels at most 0.5x the whole volume's time).

The volume is the MNI152 T1 template (``--volume``, any NIfTI or .npy) with Gaussian noise; the
mask is the brightest voxels, grown into a round region of ``--fraction`` of the volume (a brain
mask's shape), or a ball where ``--ball``. Whole and masked runs alternate, ``--repeats`` each,
and the best of each is printed with their ratio and the mask's thin boxes.

    python scripts/bench_volume_mask.py --volume ../shared/data/mni152_t1_1mm.nii.gz --search 3 --threads 1
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def ball(shape: tuple[int, int, int], fraction: float) -> np.ndarray:
    """An ellipsoid touching the volume's faces' middles, scaled to ``fraction`` of the voxels."""
    grid = np.ogrid[tuple(slice(0, n) for n in shape)]
    radius = (fraction * 6 / np.pi) ** (1 / 3)
    return sum(((axis - n / 2 + 0.5) / (n / 2)) ** 2 for axis, n in zip(grid, shape, strict=True)) < radius**2


def brightest(volume: np.ndarray, fraction: float) -> np.ndarray:
    """The ``fraction`` of voxels with the most smoothed signal (a head's brain and tissue, not the air)."""
    from scipy import ndimage

    smooth = ndimage.uniform_filter(volume, 9)
    inside = np.zeros(volume.shape, dtype=bool)
    inside.flat[np.argsort(smooth, axis=None, kind="stable")[-round(fraction * volume.size) :]] = True
    return inside  # by rank: a template's background ties at 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--volume", help="a NIfTI or .npy volume (default: a 96^3 ramp)")
    parser.add_argument("--fraction", type=float, default=0.3, help="the mask's share of the voxels")
    parser.add_argument("--ball", action="store_true", help="an ellipsoid mask rather than the brightest voxels")
    parser.add_argument("--search", type=int, default=3, help="search radius, voxels")
    parser.add_argument("--threads", type=int, help="numba threads (default: all)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from nlmeans_studio.engine import denoise_volume, read_volume
    from nlmeans_studio.engine.volume.denoise import MASK_BOX_PLANES
    from nlmeans_studio.engine.volume.mask import mask_boxes

    if args.volume:
        clean = np.asarray(read_volume(args.volume).data, dtype=np.float32)
    else:
        clean = np.indices((96, 96, 96), dtype=np.float32).sum(axis=0)
    volume = clean + np.random.default_rng(0).normal(0, 0.05 * float(clean.max()), clean.shape).astype(np.float32)
    inside = ball(volume.shape, args.fraction) if args.ball else brightest(clean, args.fraction)
    settings = {"h": 0.06 * float(clean.max()), "search_radius": args.search, "backend": "cpu", "threads": args.threads}
    boxes = mask_boxes(inside, (args.search + 1,) * 3, thickest=MASK_BOX_PLANES)
    boxed = sum(int(np.prod([part.stop - part.start for part in box])) for box in boxes)
    print(
        f"{'x'.join(map(str, volume.shape))} voxels, mask {inside.mean():.1%}, {len(boxes)} boxes of at most "
        f"{MASK_BOX_PLANES} planes holding {boxed / inside.size:.1%} of the volume; search radius {args.search}, "
        f"threads {args.threads or 'all'}"
    )
    denoise_volume(volume[:16, :16, :16], **settings)  # load the compiled filter, start the pool
    times: dict[str, list[float]] = {"whole": [], "mask": []}
    for _ in range(args.repeats):
        for name, mask in (("whole", None), ("mask", inside)):
            start = time.perf_counter()
            denoise_volume(volume, mask=mask, **settings)
            times[name].append(time.perf_counter() - start)
    whole, masked = min(times["whole"]), min(times["mask"])
    print(f"whole {whole:.3f} s, mask {masked:.3f} s: {masked / whole:.2f}x (best of {args.repeats} each)")


if __name__ == "__main__":
    main()
