"""Write the H.264 clip ``bench --pipeline`` is measured on: the sample, scaled, with noise.

    python scripts/make_bench_clip.py OUT.mp4 [--size 1920x1080] [--frames 120] [--sigma 10]
        [--input .bench/sample.npy]

The sample's first frames (or a .npy of uint8 frames, for machines without the video) are
scaled bilinearly, repeated to ``--frames``, given white Gaussian noise of ``--sigma`` levels
and encoded with libx264 (CRF 12, yuv420p, 25 fps), as a noisy camera clip would arrive.
"""

from __future__ import annotations

import argparse
from fractions import Fraction

import av
import numpy as np

from nlmeans_studio.engine.video.sample import load_clean_frames, noisy_frames


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--frames", type=int, default=120)
    parser.add_argument("--sigma", type=float, default=10.0)
    parser.add_argument("--input", default=None)
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    clean = load_clean_frames(args.input, 10, height, width)
    with av.open(args.output, "w") as container:
        stream = container.add_stream("libx264", rate=25, options={"crf": "12", "preset": "veryfast"})
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for index in range(args.frames):
            noisy = noisy_frames(clean[index % len(clean)], args.sigma, seed=index)
            frame = av.VideoFrame.from_ndarray(np.clip(np.rint(noisy * 255), 0, 255).astype(np.uint8), format="rgb24")
            frame.pts, frame.time_base = index, Fraction(1, 25)
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))


if __name__ == "__main__":
    main()
