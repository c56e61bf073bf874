"""How far the automatic noise estimate reads from the noise the clips carry (issue 33).

The corpora and noises of ``study_defaults.py`` (clean 7-frame clips with sub-pixel pans and
zooms, six noises each). Per case: the true sigma (8-bit levels: the nominal sigma of white
noise; for the others the RGB standard deviation of noisy - clean over the clip), the sigma
``estimate_noise_over`` reads over the clip as ``denoise --noise auto`` does, its method and
spatial correlation, their ratio, and the h ``apply_estimate`` gives bisquare/one and
exponential/max (demosaiced and compressed noise are judged by that h). Then the median and
worst ratio over the white, YUV and signal-dependent cases, the target's.

    python scripts/notebooks/study_noise_estimate.py .study/corpus.npz --corpus calibration
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from study_defaults import CORPORA, NOISES, _noisy

from nlmeans_studio.engine import NLMParams, apply_estimate, estimate_noise_over

TARGETED = ("white10", "white25", "yuv10", "signal15")  # the noises the +-15 % target covers


def true_sigma(arrays: dict, source: str, noise: str, noisy: np.ndarray) -> float:
    """The sigma the clip carries, in 8-bit levels."""
    kind, sigma = NOISES[noise]
    if kind == "clipped":
        return sigma
    clean = arrays[f"{source}/clean"][:, : noisy.shape[1], : noisy.shape[2]].astype(np.float64) / 255
    return float(np.std(noisy - clean) * 255)


def run(corpus_file: Path, corpus: str) -> None:
    print(f"# {corpus} corpus: sigma in 8-bit levels, h for bisquare/one and exponential/max")
    print("source               noise      |  true |  read | ratio | method   | corr. | h b/one | h e/max")
    ratios = []
    with np.load(corpus_file) as stored:
        for source, _ in CORPORA[corpus]:
            arrays = {key: stored[key] for key in (f"{source}/clean", f"{source}/h264")}
            for noise in NOISES:
                noisy = _noisy(arrays, source, noise)
                truth = true_sigma(arrays, source, noise, noisy)
                _, estimate = estimate_noise_over(lambda i, noisy=noisy: noisy[i], 0, len(noisy))
                read = estimate.average_sigma
                hs = [
                    apply_estimate(NLMParams(weighting=weighting, center_weight=centre), estimate).h
                    for weighting, centre in (("bisquare", "one"), ("exponential", "max"))
                ]
                print(
                    f"{source:20s} {noise:10s} | {truth:5.1f} | {read:5.1f} | {read / truth:5.2f} | "
                    f"{estimate.method:8s} | {estimate.spatial_correlation:5.2f} | {hs[0]:7.1f} | {hs[1]:7.1f}",
                    flush=True,
                )
                if noise in TARGETED:
                    ratios.append((read / truth, source, noise))
    values = np.array([ratio for ratio, _, _ in ratios])
    worst = max(ratios, key=lambda item: abs(np.log(item[0])))
    within = int(np.sum(np.abs(values - 1) <= 0.15))
    print(
        f"# {', '.join(TARGETED)}: median ratio {np.median(values):.2f}, worst {worst[0]:.2f} "
        f"({worst[1]} {worst[2]}), within 15 %: {within} of {len(values)}"
    )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus_file", type=Path)
    parser.add_argument("--corpus", choices=list(CORPORA), default="calibration")
    args = parser.parse_args(argv)
    run(args.corpus_file, args.corpus)


if __name__ == "__main__":
    main(sys.argv[1:])
