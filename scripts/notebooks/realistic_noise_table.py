"""PSNR of the automatic settings against the best h, on realistic noise (issue 19).

For each clip and noise (8-bit clipped Gaussian with saturated highlights, YUV-domain,
signal-dependent Poisson-Gaussian, demosaiced (spatially correlated), H.264-compressed),
prints the noisy PSNR, the automatic result (``estimate_noise`` + ``apply_estimate``) and the
best of a grid over h, for the default variant (bisquare, centre "one") and exponential weights
with centre "max"; and what a two-pass guide (``Denoiser.denoise_frame(..., guide=)``) gains over the best single pass.

    python scripts/notebooks/realistic_noise_table.py [CLIP.mp4 FIRST_FRAME Y X ...]

Without arguments: the test clip (tests/data/bikes_frames.npz), which the calibration of
``suggest_h`` (on the sample clip) never saw. About 2 minutes per clip on two cores.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np

from nlmeans_studio.engine import Denoiser, NLMParams, psnr
from nlmeans_studio.engine.media.reader import read_frames
from nlmeans_studio.engine.video.choose_h import apply_estimate
from nlmeans_studio.engine.video.noise import estimate_noise
from nlmeans_studio.engine.video.synthetic_noise import add_realistic_noise

CASES = [
    ("clipped", 10),
    ("clipped", 25),
    ("yuv", 10),
    ("signal", 20),
    ("demosaic", 15),
    ("h264", 10),
    ("h264", 15),
    ("h264", 25),
]
VARIANTS = [("bisquare", "one"), ("exponential", "max")]
RATIOS = np.geomspace(0.33, 3.0, 19)  # h relative to the automatic h: 13 % steps


def clips(arguments: list[str]) -> dict[str, np.ndarray]:
    if not arguments:
        with np.load(Path(__file__).parents[2] / "tests" / "data" / "bikes_frames.npz") as archive:
            return {"bikes (test data)": archive["frames"].astype(np.float32) / 255}
    result = {}
    for path, first, y, x in zip(*[iter(arguments)] * 4, strict=True):
        frames = read_frames(path, 3, start=int(first))[:, int(y) : int(y) + 256, int(x) : int(x) + 320]
        result[f"{Path(path).stem} {first}"] = frames.astype(np.float32) / 255
    return result


def run(noisy: np.ndarray, params: NLMParams, h: float, index: int = 1, guide: np.ndarray | None = None) -> np.ndarray:
    return Denoiser(dataclasses.replace(params, h=h), "cpu").denoise_frame(noisy, index, guide=guide)


def main() -> None:
    print("| clip | noise | variant | sigma est. | conf. | noisy | automatic | best (h) | guided gain |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, clean in clips(sys.argv[1:]).items():
        for kind, sigma in CASES:
            source = np.clip(clean * 1.3, 0, 1) if kind == "clipped" else clean  # saturated highlights
            noisy = add_realistic_noise(source, kind, sigma, seed=7)
            source = source[:, : noisy.shape[1], : noisy.shape[2]]
            estimate = estimate_noise(noisy)
            for weighting, center_weight in VARIANTS:
                params = apply_estimate(NLMParams(h=1, weighting=weighting, center_weight=center_weight), estimate)
                automatic = psnr(source[1], run(noisy, params, params.h))
                scores = {ratio: psnr(source[1], run(noisy, params, params.h * ratio)) for ratio in RATIOS}
                best = max(scores, key=scores.get)
                guide = np.stack([run(noisy, params, params.h * best, index) for index in range(len(noisy))])
                guided = max(
                    psnr(source[1], run(noisy, params, params.h * best * ratio, 1, guide))
                    for ratio in np.geomspace(0.25, 1.5, 8)  # the second pass wants a lower h
                )
                print(
                    f"| {name} | {kind} {sigma} | {weighting}/{center_weight} | {estimate.average_sigma:.1f} "
                    f"| {estimate.confidence:.2f} | {psnr(source[1], noisy[1]):.2f} | {automatic:.2f} "
                    f"| {scores[best]:.2f} ({params.h * best:.1f}) | {guided - scores[best]:+.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
