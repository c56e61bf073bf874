"""Interleaved A/B timing of versions of the fused kernel on the GPU machine.

Each version is a folder of kernel sources (nlm.cu, common.cuh, ...; e.g. made with
``git archive REV engine/kernels | tar -x -C .bench/prev``) that fits this engine/video/filters/fused_layout.py: the
same template arguments and shared-memory layout (``fused_layout``), else the launch reads
past its shared memory. Every iteration times every version on every case in turn, 4 outputs
between two CUDA events, so that the GPU's clock drift over a run hits all versions alike;
single runs on different loans of the machine differ by several percent, these medians by a
fraction of one.

    python3 scripts/notebooks/kernel_ab.py prev=.bench/prev/engine/kernels new=engine/kernels \\
        --input .bench/sample.npy --cases 3:1,5:1,3:1:exponential:max --iterations 30

A case is A:d[:weighting[:centre weight[:h]]] (d = Dp = Df; bisquare, centre weight one and
h = 50 unless given). Prints each version's mean output PSNR per case (the versions must
agree), then per case the median and 20th percentile of engine milliseconds per frame (1080p
uint8 frames by default).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import numpy as np

from nlmeans_studio.engine import NLMParams
from nlmeans_studio.engine.backend import cupy_module
from nlmeans_studio.engine.frames import from_float32
from nlmeans_studio.engine.gpu import device
from nlmeans_studio.engine.metrics import psnr
from nlmeans_studio.engine.video.filters.fused_gpu import FusedGpuFilter
from nlmeans_studio.engine.video.params import window_indices
from nlmeans_studio.engine.video.sample import load_clean_frames, noisy_frames

OUTPUTS = (2, 3, 4, 5)  # frames filtered per sample, of a clip of 8


def parse_case(text: str) -> tuple[str, NLMParams]:
    """A case's label and parameters from A:d[:weighting[:centre weight[:h]]]."""
    fields = text.split(":")
    weighting, center, h = (fields[2:] + ["bisquare", "one", "50"][len(fields) - 2 :])[:3]
    a, d = int(fields[0]), int(fields[1])
    params = NLMParams(
        h=float(h), search_radius=a, frames_past=d, frames_future=d, weighting=weighting, center_weight=center
    )
    options = "" if len(fields) == 2 else f"-{weighting[:3]}-{center}" + (f"-h{h}" if len(fields) > 4 else "")
    return f"A{a}d{d}{options}", params


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="+", help="NAME=FOLDER of kernel sources")
    parser.add_argument("--input", required=True, help=".npy of uint8 (T, H, W, 3) frames, or a video")
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--cases", default="2:1,3:1,5:1", help="A:d[:weighting[:centre weight[:h]]], d = Dp = Df")
    parser.add_argument("--iterations", type=int, default=30)
    args = parser.parse_args()

    cupy = cupy_module()
    width, height = (int(value) for value in args.size.split("x"))
    clean = load_clean_frames(args.input, 8, height, width)
    noisy = [from_float32(frame, np.uint8) for frame in noisy_frames(clean, 25, 0)]
    fused = FusedGpuFilter(cupy)
    resident = [fused.upload(frame) for frame in noisy]
    versions = {name: Path(folder).resolve() for name, folder in (item.split("=", 1) for item in args.versions)}
    params = dict(parse_case(case) for case in args.cases.split(","))
    cases = list(params)

    def run(name: str, case: str, index: int) -> object:
        device.KERNELS = versions[name]  # the compile cache keeps each folder's kernels
        window = window_indices(index, len(resident), params[case])
        return fused(resident[window.start : window.stop], index - window.start, params[case])

    for name in versions:  # compiles every version, and shows that they agree
        quality = [np.mean([psnr(clean[i], cupy.asnumpy(run(name, case, i))) for i in OUTPUTS]) for case in cases]
        print(name, " ".join(f"{case} {value:.3f} dB" for case, value in zip(cases, quality, strict=True)))

    samples: dict[tuple[str, str], list[float]] = {(n, c): [] for n in versions for c in cases}
    for iteration in range(args.iterations):
        order = list(versions) if iteration % 2 == 0 else list(versions)[::-1]
        events = []
        for case in cases:
            for name in order:
                start, end = cupy.cuda.Event(), cupy.cuda.Event()
                start.record()
                for index in OUTPUTS:
                    run(name, case, index)
                end.record()
                events.append((name, case, start, end))
        events[-1][3].synchronize()
        for name, case, start, end in events:
            samples[(name, case)].append(cupy.cuda.get_elapsed_time(start, end) / len(OUTPUTS))
    for case in cases:
        figures = " | ".join(
            f"{name} {statistics.median(times):.4f} (p20 {np.percentile(times, 20):.4f})"
            for name, times in ((name, samples[(name, case)]) for name in versions)
        )
        print(f"{case} ms: {figures}", flush=True)


if __name__ == "__main__":
    main()
