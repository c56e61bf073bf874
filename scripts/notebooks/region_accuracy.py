"""A drawn region's noise estimate on files other tools wrote (issue 32): sigma and PSNR.

Per source (the test clip, the sample clip, ffmpeg's testsrc2 and mandelbrot, a pan over a
synthetic texture), white noise of 11, 8 and 13 levels in R, G and B is added and the clip
written as FFV1 in 4:2:0 or 4:4:4 Y'CbCr, or as H.264 (CRF 23, 4:2:0); the clean frames the
same way. On the flattest 45 x 26 region in the mid-tones it prints the noise the decoded
frames carry there, the region's estimate (frames 0 and 1, as the window's "Use this region"),
the automatic estimate, and the PSNR gain of frame 1 with h from each (bisquare, centre "one",
patch radius 2, search radius 5).

    python scripts/notebooks/region_accuracy.py

About a minute on two cores; needs ffmpeg on the PATH for the lavfi sources.
"""

from __future__ import annotations

import subprocess
import tempfile
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from nlmeans_studio.engine import Denoiser, NLMParams, apply_estimate, estimate_noise, psnr
from nlmeans_studio.engine.media.reader import read_frames
from nlmeans_studio.engine.video.noise_estimate import NoiseEstimate

ROOT = Path(__file__).resolve().parents[2]
SIGMAS = (11.0, 8.0, 13.0)  # 8-bit levels
BOX = (45, 26)  # width, height: the region
ENCODINGS = {
    "ffv1 4:2:0": ("ffv1", "yuv420p", {}),
    "ffv1 4:4:4": ("ffv1", "yuv444p", {}),
    "h264 crf 23": ("libx264", "yuv420p", {"crf": "23", "preset": "fast"}),
}
PARAMS = NLMParams(patch_radius=2, search_radius=5)


def lavfi(source: str, frames: int = 3, width: int = 320, height: int = 240) -> np.ndarray:
    """Frames of one of ffmpeg's generated sources, RGB uint8."""
    command = ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", f"{source}=size={width}x{height}:rate=25"]
    command += ["-frames:v", str(frames), "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]
    raw = subprocess.run(command, capture_output=True, check=True).stdout
    return np.frombuffer(raw, np.uint8).reshape(frames, height, width, 3)


def pan(frames: int = 3) -> np.ndarray:
    """A window panning 3 pixels a frame over sines of several periods around a flat patch."""
    rows, cols = np.mgrid[:300, :420]
    texture = np.stack(
        [
            120 + 60 * np.sin(cols / 7) * np.cos(rows / 11),
            100 + 50 * np.sin((cols + rows) / 5),
            140 + 40 * np.cos(cols / 3),
        ],
        axis=-1,
    )
    texture[60:200, 100:300] = (150, 120, 90)
    return np.stack([texture[20:260, 40 + 3 * t : 360 + 3 * t] for t in range(frames)]).astype(np.uint8)


def write(path: Path, frames: np.ndarray, encoding: str) -> np.ndarray:
    """Write ``frames`` with ``encoding``; the decoded frames, float in full scale."""
    codec, pixel_format, options = ENCODINGS[encoding]
    with av.open(str(path), "w") as container:
        stream = container.add_stream(codec, rate=25)
        stream.height, stream.width, stream.pix_fmt, stream.options = *frames.shape[1:3], pixel_format, options
        for index, frame in enumerate(frames):
            video_frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(frame), format="rgb24")
            video_frame.pts, video_frame.time_base = index, Fraction(1, 25)
            container.mux(stream.encode(video_frame))
        container.mux(stream.encode(None))
    return read_frames(path).astype(np.float32) / 255


def flattest(clean: np.ndarray) -> tuple[int, int, int, int]:
    """The BOX-sized region of the clean first frame with the least spread, its mean in the mid-tones."""
    width, height = BOX
    frame = clean[0] * 255
    candidates = (
        (frame[y : y + height, x : x + width].std(), (x, y, width, height))
        for y in range(0, frame.shape[0] - height, 4)
        for x in range(0, frame.shape[1] - width, 4)
        if 25 < frame[y : y + height, x : x + width].mean() < 230
    )
    return min(candidates)[1]


def gain(noisy: np.ndarray, clean: np.ndarray, estimate: NoiseEstimate) -> float:
    params = apply_estimate(PARAMS, estimate)
    return psnr(clean[1], Denoiser(params, backend="cpu").denoise_frame(noisy, 1)) - psnr(clean[1], noisy[1])


def main() -> None:
    with np.load(ROOT / "tests/data/bikes_frames.npz") as archive:
        bikes = archive["frames"]
    sources = {
        "bikes": bikes,
        "bigbuckbunny": read_frames(ROOT / "resources/sample.mp4", 3, start=40)[:, 200:456, 400:720],
        "testsrc2": lavfi("testsrc2"),
        "mandelbrot": lavfi("mandelbrot"),
        "pan": pan(),
    }
    print("| source | file | region | noise there | region's estimate | automatic | dB: region, automatic |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for name, frames in sources.items():
            rng = np.random.default_rng(3)
            noisy_frames = np.clip(np.rint(frames + rng.standard_normal(frames.shape) * SIGMAS), 0, 255)
            for encoding in ENCODINGS:
                noisy = write(Path(folder) / "noisy.mkv", noisy_frames.astype(np.uint8), encoding)
                clean = write(Path(folder) / "clean.mkv", frames, encoding)
                x, y, width, height = box = flattest(clean)
                noise = (noisy - clean)[:2, y : y + height, x : x + width].reshape(-1, 3).astype(np.float64)
                truth = NoiseEstimate(np.cov(noise.T), [], 0)
                region, automatic = estimate_noise(noisy[:2], roi=box), estimate_noise(noisy)
                sigmas = [", ".join(f"{s:.1f}" for s in e.sigma) for e in (truth, region, automatic)]
                gains = f"{gain(noisy, clean, region):+.2f}, {gain(noisy, clean, automatic):+.2f}"
                print(f"| {name} | {encoding} | {box} | {sigmas[0]} | {sigmas[1]} | {sigmas[2]} | {gains} |")


if __name__ == "__main__":
    main()
