"""Seeded clips, real-clip crops, color transforms and the command line the engine's tests share.

A module of its own rather than the conftest: every test folder's conftest.py is imported as
"conftest", so a test importing helpers from one may get the other.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np

DATA = Path(__file__).parent / "data"
CLI = (sys.executable, "-m", "nlmeans_studio.engine")  # the command line, as a subprocess
STDOUT, STDERR = 1, 2  # the file descriptors


def run_cli(
    command: list[str], *, capture_output: bool = False, text: bool = False, **options
) -> subprocess.CompletedProcess:
    """``subprocess.run(command, ...)`` for a ``[*CLI, ...]`` command, in this process (``in_process``) where nothing
    but its output is asked of the process: captured, with no stdin, environment or check of its own."""
    if not capture_output or set(options) - {"cwd", "timeout"} or tuple(command[: len(CLI)]) != CLI:
        return subprocess.run(command, capture_output=capture_output, text=text, **options)
    run = in_process(command[len(CLI) :], cwd=options.get("cwd"))
    if not text:
        run.stdout, run.stderr = run.stdout.encode(), run.stderr.encode()
    return run


def _warning_on_stderr(message, category, filename, lineno, file=None, line=None) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def in_process(arguments: list[str], *, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the command line in this process, as ``subprocess.run([*CLI, *arguments], capture_output=True,
    text=True)`` would: its exit status, and what it wrote on stdout and stderr, Python's and
    FFmpeg's own lines on the file descriptors alike.

    For tests of what a run writes and says: a process of its own costs about a second of CPU
    (the imports, numba's cache) before any work, and the suite starts hundreds. Signals, stdin,
    memory limits and the entry point itself are tested through ``CLI``.
    """
    from nlmeans_studio.engine import command_line

    sys.stdout.flush()
    sys.stderr.flush()
    here, saved = Path.cwd(), {fd: os.dup(fd) for fd in (STDOUT, STDERR)}
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        open(STDOUT, "w", buffering=1, closefd=False) as text_out,
        open(STDERR, "w", buffering=1, closefd=False) as text_err,
    ):
        python = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = text_out, text_err
        os.dup2(out.fileno(), STDOUT)
        os.dup2(err.fileno(), STDERR)
        try:
            if cwd is not None:
                os.chdir(cwd)
            with warnings.catch_warnings():  # Python's warnings on stderr, as a process of its own prints them
                warnings.simplefilter("default")
                warnings.showwarning = _warning_on_stderr
                try:
                    status = command_line([str(argument) for argument in arguments])
                except SystemExit as exit:  # the parser's refusal, or --help
                    status = 0 if exit.code is None else exit.code if isinstance(exit.code, int) else 1
        finally:
            os.chdir(here)
            sys.stdout.flush()
            sys.stderr.flush()
            sys.stdout, sys.stderr = python
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)
        written = []
        for file in (out, err):
            file.seek(0)
            written.append(file.read().decode(errors="replace"))
    return subprocess.CompletedProcess([*CLI, *arguments], status, *written)


def write_ffv1(path: Path, frames: np.ndarray, rate: int = 25, pixel_format: str = "bgr0") -> None:
    """An FFV1 clip of (T, H, W, 3) uint8 RGB frames at ``rate`` fps, written with PyAV: lossless in
    RGB ("bgr0"), or converted to another ``pixel_format`` (untagged: BT.601 at these sizes)."""
    import av

    with av.open(str(path), "w") as container:
        stream = container.add_stream("ffv1", rate=rate)
        stream.height, stream.width = frames.shape[1:3]
        stream.pix_fmt = pixel_format
        for index, frame in enumerate(frames):
            video_frame = av.VideoFrame.from_ndarray(frame, format="rgb24")
            video_frame.pts, video_frame.time_base = index, Fraction(1, rate)
            container.mux(stream.encode(video_frame))
        container.mux(stream.encode(None))


def default_signals() -> None:
    """A child's ``preexec_fn``: the stop signals' default actions, whatever pytest inherited.

    A test that signals its child sets this up itself: started with ``&`` from a script (SIGINT
    ignored) or under nohup (SIGHUP ignored), the child would inherit, and keep, the ignoring.
    """
    for stop in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
        signal.signal(stop, signal.SIG_DFL)


def stopped_under_way(command: list[str], under_way: str, stop: int) -> tuple[int, str]:
    """Run ``command``, send it ``stop`` once its standard error shows ``under_way`` (its progress
    line: the work has started), and return its exit status and all it wrote on standard error."""
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True, preexec_fn=default_signals) as child:
        error = ""
        while under_way not in error:
            error += child.stderr.read(1)
            assert error or child.poll() is None
        child.send_signal(stop)
        error += child.stderr.read()
        return child.wait(timeout=60), error


def real_crops() -> dict[str, np.ndarray]:
    """Six RGB uint8 frames (36 x 44) from each real clip; see tests/data/README.md."""
    with np.load(DATA / "real_crops.npz") as archive:
        return {name: archive[name] for name in archive.files}


def noisy_clip(
    kind: str, seed: int, frames: int = 5, shape: tuple[int, int] = (14, 17), channels: int = 3
) -> np.ndarray:
    """A float32 (T, H, W, C) clip: a smooth random pattern or a real crop, plus noise sigma 0.06.

    Noise on structure makes the weights neither all 0 nor all 1, so errors show. The random
    pattern drifts a little from frame to frame, as video does: with an unrelated pattern per
    frame every temporal weight would be 0, and errors in the other frames would not show.
    """
    rng = np.random.default_rng(seed)
    height, width = shape
    if kind == "random":
        rows = np.linspace(0, 3, height)[:, None, None]
        cols = np.linspace(0, 4, width)[None, :, None]
        phase = rng.uniform(0, 6, size=(1, 1, 1, channels)) + 0.1 * np.arange(frames)[:, None, None, None]
        clean = 0.5 + 0.3 * np.sin(rows + cols + phase)
    else:
        crop = real_crops()[kind][:frames, :height, :width, :channels].astype(np.float64) / 255
        clean = crop
    return (clean + rng.normal(0, 0.06, size=(frames, height, width, channels))).astype(np.float32)


def random_color_transform(seed: int) -> np.ndarray:
    """G = s Sigma^(-1/2) for a random SPD covariance Sigma, as DESIGN.md §1 builds it."""
    rng = np.random.default_rng(seed)
    mixing = rng.normal(size=(3, 3))
    covariance = mixing @ mixing.T + 0.3 * np.eye(3)
    values, vectors = np.linalg.eigh(covariance)
    inverse_root = vectors @ np.diag(values**-0.5) @ vectors.T
    return np.sqrt(np.trace(covariance) / 3) * inverse_root


FLAT_BOX = (36, 10, 45, 26)  # x, y, width, height: sky in the crop of bikes that ``chroma_subsampled_clips`` write
CHANNEL_SIGMAS = (11.0, 8.0, 13.0)  # 8-bit levels: the noise, white in R, G and B


def chroma_subsampled_clips(folder: Path, frames: int = 2) -> tuple[Path, np.ndarray]:
    """A noisy clip as most tools write one, and the noise its decoded frames carry in FLAT_BOX.

    ``frames`` (2 or 3) frames of bikes (rows 0-127, columns 64-223 of tests/data/bikes_frames.npz;
    a bike crosses FLAT_BOX in the third) plus white noise of CHANNEL_SIGMAS, written as FFV1 in
    4:2:0 Y'CbCr: the chroma's noise is averaged over 2 x 2 pixels and interpolated back, so the
    decoded noise is partly smooth and shared by the channels. The clean frames are written the
    same way; returns the noisy clip's path and the (3, 3) covariance (full scale squared) of
    noisy - clean in FLAT_BOX over the frames.
    """
    import av

    from nlmeans_studio.engine.media.reader import read_frames

    with np.load(DATA / "bikes_frames.npz") as archive:
        clean = archive["frames"][:frames, :128, 64:224]
    rng = np.random.default_rng(32)
    noisy = np.clip(np.rint(clean + rng.standard_normal(clean.shape) * CHANNEL_SIGMAS), 0, 255).astype(np.uint8)
    decoded = []
    for name, frames in (("noisy.mkv", noisy), ("clean.mkv", clean)):
        with av.open(str(folder / name), "w") as container:
            stream = container.add_stream("ffv1", rate=25)
            stream.height, stream.width = frames.shape[1:3]
            stream.pix_fmt = "yuv420p"
            for frame in frames:
                container.mux(stream.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(frame), format="rgb24")))
            container.mux(stream.encode(None))
        decoded.append(read_frames(folder / name).astype(np.float64) / 255)
    x, y, width, height = FLAT_BOX
    noise = (decoded[0] - decoded[1])[:, y : y + height, x : x + width].reshape(-1, 3)
    return folder / "noisy.mkv", np.cov(noise.T)


def noise_in_4_2_0_samples(frames: np.ndarray, sigma: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Clean and noisy float32 RGB of uint8 RGB ``frames``, made as a 4:2:0 file's frames are read.

    Each frame goes into BT.709 limited-range 4:2:0 planes; the noisy ones get white Gaussian noise
    of ``sigma`` sample levels in every plane (drawn frame by frame, plane by plane), rounded and
    clamped; both come back through ``planes_to_rgb``, as the reader upsamples chroma. The noise is
    white in Y and, in Cb and Cr, correlated about 0.66 a pixel apart.
    """
    from nlmeans_studio.engine.media.yuv import YuvLayout, planes_to_rgb, rgb_to_planes

    layout = YuvLayout("yuv420p", 8, (1, 1), (0.2126, 0.0722), full_range=False)
    rng = np.random.default_rng(seed)
    clean, noisy = [], []
    for frame in frames:
        planes = rgb_to_planes(np.ascontiguousarray(frame), layout)
        clean.append(planes_to_rgb(planes, layout, np.float32))
        noisy_planes = [np.clip(np.rint(p + rng.normal(0, sigma, p.shape)), 0, 255).astype(np.uint8) for p in planes]
        noisy.append(planes_to_rgb(noisy_planes, layout, np.float32))
    return np.stack(clean), np.stack(noisy)


def clip_with_audio(
    path: Path, audio_codec: str, rate: int, video_codec: str = "ffv1", pixel_format: str = "yuv420p"
) -> Path:
    """Three frames of noise (FFV1 unless ``video_codec``), 0.12 s of a mono sine in ``audio_codec`` at ``rate`` Hz."""
    import av

    with av.open(str(path), "w") as container:
        video = container.add_stream(video_codec, rate=25)
        video.width, video.height, video.pix_fmt = 32, 32, pixel_format
        audio = container.add_stream(audio_codec, rate=rate, layout="mono")
        for index in range(3):
            image = np.random.default_rng(index).integers(0, 256, (32, 32, 3), dtype=np.uint8)
            container.mux(video.encode(av.VideoFrame.from_ndarray(image, format="rgb24").reformat(format=pixel_format)))
        container.mux(video.encode(None))
        samples = (np.sin(np.arange(rate * 12 // 100) / 5) * 0.3).astype(np.float32)[None]
        sound = av.AudioFrame.from_ndarray(samples, format="flt", layout="mono")
        sound.sample_rate, sound.pts = rate, 0
        for resampled in av.AudioResampler(format=audio.format, layout="mono", rate=rate).resample(sound):
            container.mux(audio.encode(resampled))
        container.mux(audio.encode(None))
    return path


def damaged_dvd(folder: Path, how: str) -> tuple[Path, list[int]]:
    """An MPEG-PS (DVD) file from the ffmpeg tool, cut short ("truncated") or with a run of its
    bytes zeroed ("holed"), and the frames FFmpeg's decoder flags damaged in it (0-based, by
    PyAV's own decode). The first cut or hole that damages a frame is taken: where it falls in
    the file depends on the encoder's version."""
    import av
    import pytest

    whole = folder / "whole.mpg"
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=176x144:rate=25", "-f", "lavfi",
         "-i", "sine=frequency=440:sample_rate=48000", "-t", "2", "-c:v", "mpeg2video", "-q:v", "3", "-c:a", "mp2",
         "-f", "dvd", str(whole)],
        check=True, timeout=60,
    )  # fmt: skip
    data = whole.read_bytes()
    damaged = folder / f"{how}.mpg"
    for step in range(40):
        place = len(data) * (55 + step) // 100 if how == "truncated" else len(data) * (30 + step) // 100
        damaged.write_bytes(data[:place] if how == "truncated" else data[:place] + bytes(600) + data[place + 600 :])
        with av.open(str(damaged)) as container:
            flagged = [n for n, frame in enumerate(container.decode(video=0)) if frame.is_corrupt]
        if flagged:
            return damaged, flagged
    pytest.skip(f"no cut or hole damaged a frame of this ffmpeg's DVD file ({how})")


def cut_short_dv(folder: Path, suffix: str = ".avi") -> tuple[Path, Path]:
    """A DV capture from the ffmpeg tool (NTSC, 12 frames; AVI, or raw DV with ``".dv"``) cut in the
    middle of a frame, as a full disk cuts one short, and the whole file it was cut from.

    The AVI demuxer flags the last packet corrupt; raw DV's reaches past the file's end.
    """
    whole = folder / f"whole{suffix}"
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=720x480:rate=30000/1001", "-frames:v",
         "12", "-c:v", "dvvideo", "-pix_fmt", "yuv411p", str(whole)],
        check=True, timeout=60,
    )  # fmt: skip
    cut = folder / f"cut{suffix}"
    cut.write_bytes(whole.read_bytes()[: 5 * 120_000 + 60_000])  # NTSC DV: 120,000 bytes a frame
    return cut, whole


def ffmpeg_pattern(path: Path, pattern: str, *options: str) -> Path:
    """A clip the ffmpeg tool draws from its lavfi source ``pattern`` and writes with ``options``.

    E.g. ``ffmpeg_pattern(path, "testsrc2=size=64x48:rate=25:duration=0.2", "-c:v", "ffv1")``.
    """
    command = ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", pattern, *options, str(path)]
    subprocess.run(command, check=True, timeout=120)
    return path


def anamorphic_clip(path: Path, seconds: float = 0.1) -> Path:
    """A clip of anamorphic pixels from the ffmpeg tool, as DV and DVD have: 10:11 (64x48 shown 40:33), H.264."""
    return ffmpeg_pattern(
        path, "testsrc2=size=64x48:rate=30000/1001", "-t", str(seconds), "-vf", "setsar=10/11", "-c:v", "libx264",
        "-pix_fmt", "yuv420p",
    )  # fmt: skip


def panning_texture(sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """(clean, noisy) uint8 (T, H, W, 3): four 96 x 128 frames of a fine random colour texture (no
    patch has a twin) panning 0.4 and 0.7 pixels a frame, with white noise of ``sigma`` levels."""
    rng = np.random.default_rng(5)
    texture = rng.normal(0, 1, (104, 136, 3))
    for axis in (0, 1):
        texture = (np.roll(texture, 1, axis) + 2 * texture + np.roll(texture, -1, axis)) / 4
    texture = 128 + 90 * texture
    frames = []
    for t in range(4):  # bilinear, at sub-pixel offsets
        y, x = 4 + 0.4 * t, 4 + 0.7 * t
        top, left, fy, fx = int(y), int(x), y % 1, x % 1
        window = texture[top : top + 97, left : left + 129]
        frames.append(
            (1 - fy) * (1 - fx) * window[:-1, :-1]
            + (1 - fy) * fx * window[:-1, 1:]
            + fy * (1 - fx) * window[1:, :-1]
            + fy * fx * window[1:, 1:]
        )
    clean = np.clip(np.rint(np.stack(frames)), 0, 255)
    noisy = np.clip(np.rint(clean + np.random.default_rng(3).normal(0, sigma, clean.shape)), 0, 255)
    return clean.astype(np.uint8), noisy.astype(np.uint8)
