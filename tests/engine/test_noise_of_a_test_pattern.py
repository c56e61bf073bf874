"""A clip the ffmpeg command line wrote, mostly clipped: its noise read where a grey box passes.

ffmpeg's testsrc2 is saturated colour bars with an animated checkerboard and a grey box that comes
and goes; ``noise`` adds the noise and libx264 compresses it. The bars clip most of the noise, the
checkerboard changes from frame to frame, and the grey box is the only flat, still, unclipped
place. A new user's clip of this kind was read at 1.7 times its noise with confidence 100 %.
Also ffmpeg's HD bars with noise in their 4:2:0 samples: the strengths SURE chooses for them.
"""

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from clips import CLI, ffmpeg_pattern, run_cli

from nlmeans_studio.engine import choose_filter, estimate_clip_noise, estimate_noise_over, read_frames
from nlmeans_studio.engine.media.reader import VideoReader
from nlmeans_studio.engine.video.noise_estimate import CLEAN_SIGMA

# noise's strength, the size and seconds: strength 30 clips most of the bars' samples (a new user's
# clip, read at 1.7 times its noise); 10 leaves 9 of 582 blocks unclipped in most frames, all on
# the checkerboard (an archivist's clip, read at 3 times its noise).
# The grey box shows from 3.3 to 3.7 s of every 4 (5 s hold it once; the archivist's clip was 10 s).
CASES = [(30, (640, 360), 4), (10, (720, 486), 5)]


def _pattern(size: tuple[int, int]) -> str:
    return f"testsrc2=size={size[0]}x{size[1]}:rate=30000/1001"


def _clean(size: tuple[int, int], seconds: int) -> np.ndarray:
    """The pattern without noise, RGB24 (T, H, W, 3)."""
    raw = subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", _pattern(size), "-t", str(seconds), "-f", "rawvideo",
         "-pix_fmt", "rgb24", "-"],
        check=True, capture_output=True, timeout=120,
    ).stdout  # fmt: skip
    return np.frombuffer(raw, np.uint8).reshape(-1, size[1], size[0], 3)


@pytest.fixture(scope="module", params=CASES, ids=["strong", "light"])
def pattern(request, tmp_path_factory) -> tuple[Path, np.ndarray]:
    """The noisy H.264 clip and its noise's sigma per channel on the grey box (flat, unclipped)."""
    strength, size, seconds = request.param
    path = tmp_path_factory.mktemp("pattern") / "bars.mp4"
    # x264's veryfast: 5 s where its default took 18 on CI's two cores.
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", _pattern(size), "-t", str(seconds), "-vf",
         f"noise=alls={strength}:allf=t", "-c:v", "libx264", "-preset", "veryfast", "-crf", "18", "-pix_fmt",
         "yuv420p", str(path)],
        check=True, timeout=120,
    )  # fmt: skip
    # Decoded as the estimate reads it (the H.273 conversion, chroma interpolated), the clean
    # pattern as ffmpeg draws it in RGB.
    noisy = read_frames(path)
    clean = _clean(size, seconds)
    near = np.abs(np.arange(256) - 128) <= 8  # by sample value: within 8 of mid-grey (arithmetic on the clip took 5 s)
    grey = near[clean[..., 0]] & near[clean[..., 1]] & near[clean[..., 2]]
    # The box's inside: grey with all its neighbours 3 pixels around.
    inside = grey.copy()
    for axis in (1, 2):
        for shift in (-3, 3):
            inside &= np.roll(grey, shift, axis=axis)
    assert inside.sum() > 10_000
    return path, (noisy[inside].astype(np.float64) - clean[inside]).std(axis=0)  # the box alone as float: CI's time


def test_a_mostly_clipped_pattern_is_read_where_the_grey_box_is(pattern) -> None:
    path, truth = pattern
    result = subprocess.run(
        [sys.executable, "-m", "nlmeans_studio.engine", "estimate-noise", str(path), "--json"],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    estimate = json.loads(result.stdout)
    # The temporal change of the box holds all the noise (also what 4:2:0 chroma and the encoder
    # smoothed): within 15 % per channel (the bars and the checkerboard read 1.2 to 1.7 times it).
    np.testing.assert_allclose(estimate["sigma"], truth, rtol=0.15)
    assert estimate["confidence"] >= 0.5


def test_a_range_without_the_grey_box_takes_the_whole_clips_reading(pattern) -> None:
    """denoise --start / --duration: one second of the pattern may never show the box (read 3.4 times the
    noise, unsure, and the archivist's chroma came out 0.6 dB below the noisy clip's); the whole clip's
    confident reading stands, and the warning says where it comes from."""
    path, truth = pattern
    estimate = estimate_clip_noise(path, start=2.0, duration=1.0)
    np.testing.assert_allclose(estimate.sigma, truth, rtol=0.15)
    assert estimate.confidence >= 0.5
    if "read on the whole clip" in (estimate.warning or ""):
        assert "where the range's frames read unsure" in estimate.warning


@pytest.fixture(scope="module")
def bars_with_whole_noise(tmp_path_factory) -> tuple[Path, np.ndarray]:
    """testsrc2 with ffmpeg's noise added to its Y'CbCr samples (an archivist's test of a capture
    chain), FFV1 4:2:0: the saturated bars' noise is whole in the samples, and RGB clips half of it.
    The truth: the noisy frames' RGB, unclipped, less the clean ones', over every pixel."""
    folder = tmp_path_factory.mktemp("whole")
    paths = []
    for name, noise in (("clean.mkv", ""), ("noisy.mkv", ",noise=alls=12:allf=t")):
        paths.append(
            ffmpeg_pattern(folder / name, "testsrc2=size=320x240:rate=25", "-t", "2", "-vf", f"format=yuv420p{noise}",
                           "-c:v", "ffv1")
        )  # fmt: skip
    with VideoReader(paths[0]) as clean, VideoReader(paths[1]) as noisy:
        change = np.stack([noisy.unclipped_frame(i) - clean.unclipped_frame(i) for i in range(0, 50, 7)])
    return paths[1], change.reshape(-1, 3).std(axis=0) * 255


def test_noise_that_rgb_clips_on_saturated_bars_is_read_whole_from_the_samples(bars_with_whole_noise) -> None:
    """Read in RGB, as decoded, the bars' noise was cut off: 6.2, 4.9, 6.7 levels for 10.4, 8.6, 11.8,
    at confidence 0.24 (a new user's ProRes of the pattern: 11.1, 0.5, 2.5). Read where those frames
    are unsure from the frames unclipped (``unclipped_frame``), it is whole."""
    path, truth = bars_with_whole_noise
    result = subprocess.run(
        [sys.executable, "-m", "nlmeans_studio.engine", "estimate-noise", str(path), "--json"],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    estimate = json.loads(result.stdout)
    np.testing.assert_allclose(estimate["sigma"], truth, rtol=0.06)
    assert estimate["confidence"] >= 0.9
    part = estimate_clip_noise(path, start=0.5, duration=0.5)
    np.testing.assert_allclose(part.sigma, truth, rtol=0.06)
    with VideoReader(path) as reader:  # as decoded, unsure and low: what the unclipped reading replaces
        decoded = estimate_noise_over(reader.frame, 0, len(reader))[1]
    assert decoded.confidence < 0.5 and np.all(decoded.sigma < 0.7 * truth)


def test_a_clean_pattern_read_unsure_stays_clean(tmp_path) -> None:
    """A clean testsrc2 in 10-bit H.264, 160x120, 6 frames (an archivist's capture test): unsure
    as decoded and unclipped alike; the unclipped frames' moving parts over the bars read 5.0,
    3.0, 4.2 levels at confidence 0.12, which an unsure reading must not replace clean."""
    path = ffmpeg_pattern(
        tmp_path / "clean.mp4", "testsrc2=size=160x120:rate=30000/1001", "-frames:v", "6", "-c:v", "libx264",
        "-pix_fmt", "yuv420p10le",
    )  # fmt: skip
    estimate = estimate_clip_noise(path)
    assert estimate.average_sigma < CLEAN_SIGMA


def test_a_prores_of_the_pattern_read_in_motion_is_read_unclipped(tmp_path) -> None:
    """ProRes smooths the flat bars' noise, so both readings go by the change in motion (unsure,
    0.4); as decoded the bars' clipped channels read 5.98, 4.51, 6.37 levels for 7.67, 6.01, 8.75
    (a 1080p copy: 0.4, 7.6, 4.4, as a new user's read 11.1, 0.5, 2.5), unclipped within 6 %."""
    paths = {
        name: ffmpeg_pattern(tmp_path / name, "testsrc2=size=960x540:rate=25", "-t", "1", "-vf",
                             f"format=yuv422p10le{noise}", "-c:v", codec)
        for name, noise, codec in (("clean.mkv", "", "ffv1"), ("noisy.mov", ",noise=alls=10:allf=t", "prores_ks"))
    }  # fmt: skip
    with VideoReader(paths["clean.mkv"]) as clean, VideoReader(paths["noisy.mov"]) as noisy:
        change = np.stack([noisy.unclipped_frame(i) - clean.unclipped_frame(i) for i in range(0, 25, 6)])
    truth = change.reshape(-1, 3).std(axis=0) * 255
    estimate = estimate_clip_noise(paths["noisy.mov"])
    np.testing.assert_allclose(estimate.sigma, truth, rtol=0.08)
    # Unsure, and no SURE on noise the codec smoothed: the gentle centre weight ("max": 35.9 dB,
    # "one": 38.4-39.0; read sure, the same noise takes "max").
    assert estimate.confidence < 0.5 and choose_filter(estimate).params.center_weight == "one"
    assert choose_filter(dataclasses.replace(estimate, confidence=1.0)).params.center_weight == "max"


def test_bars_with_noise_in_their_subsampled_chroma_get_chroma_strengths_to_match(tmp_path) -> None:
    """An archivist's HD bars with ffmpeg's noise in their 4:2:0 samples came out 39.9 dB in Cb and Cr,
    where twice the strengths gave 45.5: SURE's probe took one correlation between pixels for the
    luma's white noise and the chroma's, correlated by upsampling, and chose too light. Chroma's
    probe is now correlated as chroma's noise is (here 41.5 dB before)."""
    clean, noisy = (
        ffmpeg_pattern(tmp_path / name, "smptehdbars=size=320x240:rate=25", "-frames:v", "8", "-vf",
                       f"format=yuv420p{noise}", "-c:v", "ffv1")
        for name, noise in (("clean.mkv", ""), ("noisy.mkv", ",noise=alls=12:allf=t"))
    )  # fmt: skip
    out = tmp_path / "out.mkv"
    denoised = run_cli([*CLI, "denoise", str(noisy), str(out), "--codec", "ffv1"], capture_output=True, text=True)
    assert denoised.returncode == 0, denoised.stderr
    compared = subprocess.run(
        ["ffmpeg", "-nostdin", "-i", str(out), "-i", str(clean), "-lavfi", "psnr", "-f", "null", "-"],
        check=True, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    planes = dict(re.findall(r"\b([yuv]):([\d.]+)", compared.stderr.split("PSNR")[-1]))
    assert float(planes["u"]) >= 43.0 and float(planes["v"]) >= 43.0
    assert float(planes["y"]) >= 44.5  # luma 45.9 before: one factor for both gives it up a little
