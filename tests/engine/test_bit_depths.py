"""Every depth and chroma sampling through the command line and the readers: a clean Y'CbCr
source through a near-identity filter comes back within rounding, and deep frames are read
at their full precision (issue 32)."""

import subprocess
from pathlib import Path

import numpy as np
import pytest
from clips import CLI, run_cli

from nlmeans_studio.engine import VideoReader, VideoWriter, read_frames

av = pytest.importorskip("av", reason="PyAV is not installed (the GPU machine has none)")

BT709, FULL_RANGE = 1, 2


def yuv_planes(pixel_format: str, frames: int = 3, size: tuple[int, int] = (48, 64)) -> list[list[np.ndarray]]:
    """Sample planes of a clean clip: a luma ramp with a moving bar, and chroma blocks with sharp
    edges (where a chroma siting error shows), all inside RGB's range after any interpolation:
    luma 0.3..0.7 of its range, Cb and Cr within +-0.1."""
    form = av.VideoFormat(pixel_format, size[1], size[0])
    bits = form.components[0].bits
    height, width = size
    chroma_height, chroma_width = form.components[1].height, form.components[1].width
    rng = np.random.default_rng(7)
    step = 2 ** (bits - 8)
    clip = []
    for t in range(frames):
        luma = 0.3 + 0.3 * np.linspace(0, 1, width)[None, :] * np.ones((height, 1))
        luma[:, (4 * t) % width : (4 * t) % width + 5] += 0.1
        chroma = [
            np.kron(rng.uniform(-0.1, 0.1, (chroma_height // 4 + 1, chroma_width // 4 + 1)), np.ones((4, 4)))
            for _ in range(2)
        ]
        planes = [np.rint((16 + 219 * luma) * step)]
        planes += [np.rint((128 + 224 * plane[:chroma_height, :chroma_width]) * step) for plane in chroma]
        clip.append([plane.astype(np.uint8 if bits == 8 else np.uint16) for plane in planes])
    return clip


def write_yuv(path: Path, pixel_format: str, clip: list[list[np.ndarray]], colorspace: int = 2) -> None:
    """A file holding ``clip``'s sample planes exactly, tagged with ``colorspace``, limited range:
    FFV1, y4m for a .y4m name, raw video for a big-endian format (as raw video in a MOV can be)."""
    height, width = clip[0][0].shape
    y4m, big_endian = path.suffix == ".y4m", pixel_format.endswith("be")
    codec = "wrapped_avframe" if y4m else "rawvideo" if big_endian else "ffv1"
    with av.open(str(path), "w", format="yuv4mpegpipe" if y4m else None, options={"strict": "-1"}) as container:
        stream = container.add_stream(codec, rate=25)
        stream.width, stream.height, stream.pix_fmt = width, height, pixel_format
        stream.codec_context.colorspace = colorspace
        stream.codec_context.color_range = 1
        for planes in clip:
            frame = av.VideoFrame(width, height, pixel_format)
            for plane, samples in zip(frame.planes, planes, strict=True):
                stored = samples.dtype.newbyteorder(">" if big_endian else "<")
                row = np.zeros((plane.height, plane.line_size // samples.itemsize), stored)
                row[:, : plane.width] = samples
                plane.update(row.tobytes())
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))


def read_yuv(path: Path) -> tuple[str, list[list[np.ndarray]]]:
    """A file's pixel format and sample planes, as FFmpeg decodes them."""
    with av.open(str(path)) as container:
        frames = list(container.decode(video=0))
    clip = []
    for frame in frames:
        dtype = np.uint8 if frame.format.components[0].bits == 8 else np.uint16
        clip.append(
            [
                np.frombuffer(plane, dtype).reshape(plane.height, -1)[:, : plane.width].astype(np.int64)
                for plane in frame.planes
            ]
        )
    return frames[0].format.name, clip


@pytest.mark.parametrize(
    ("pixel_format", "colorspace", "source"),
    [
        ("yuv420p", 2, "clean.mkv"),
        ("yuv411p", 6, "clean.mkv"),  # DV's: swscale's chroma came back 10 to 13 dB off
        ("yuv420p10le", 2, "clean.mkv"),
        ("yuv420p10le", BT709, "clean.mkv"),
        ("yuv422p10le", 2, "clean.mkv"),
        ("yuv420p12le", BT709, "clean.mkv"),
        ("yuv444p12le", 2, "clean.mkv"),
        ("yuv420p10le", 2, "clean.y4m"),  # on standard input: y4m declares C420p10
    ],
)
def test_a_clean_source_comes_back_within_rounding(tmp_path, pixel_format, colorspace, source) -> None:
    clip = yuv_planes(pixel_format)
    write_yuv(tmp_path / source, pixel_format, clip, colorspace)
    assert _near_identity_round_trip(tmp_path / source, clip) == pixel_format


def test_an_odd_sized_four_two_zero_source_stays_four_two_zero_in_ffv1(tmp_path) -> None:
    """FFV1 takes 4:2:0 at any size; the writer refused odd sizes, telling the user to choose FFV1."""
    clip = yuv_planes("yuv420p10le", size=(49, 65))
    write_yuv(tmp_path / "odd.mkv", "yuv420p10le", clip)
    assert _near_identity_round_trip(tmp_path / "odd.mkv", clip) == "yuv420p10le"


def test_a_ten_bit_gray_source_stays_ten_bit_within_rounding(tmp_path) -> None:
    clip = [planes[:1] for planes in yuv_planes("yuv420p10le")]
    write_yuv(tmp_path / "gray.mkv", "gray10le", clip)
    # FFV1 keeps the source's depth, as it does for color
    assert _near_identity_round_trip(tmp_path / "gray.mkv", clip) == "gray10le"


def _near_identity_round_trip(source: Path, clip: list[list[np.ndarray]]) -> str:
    """``source`` (holding ``clip``'s planes) through ``denoise`` at h 0.001 into FFV1, y4m on
    standard input where it is one; asserts every sample came back within one level of the
    source's depth (the 16-bit, or 8-bit for 8-bit sources, RGB between reading and writing can
    move a sample that sits on a half step) and returns the pixel format written."""
    piped = source.suffix == ".y4m"
    output = source.with_name("out.mkv")
    command = [*CLI, "denoise", "-" if piped else str(source), str(output), "--quiet"]
    command += [
        "--h",
        "0.001",
        "--weighting",
        "bisquare",
        "--noise",
        "none",
        "--codec",
        "ffv1",
        "--patch-radius",
        "1",
        "--search-radius",
        "1",
    ]
    with open(source, "rb") as standard_input:
        result = run_cli(command, stdin=standard_input if piped else None, capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr.decode()
    written_format, back = read_yuv(output)
    for planes, planes_back in zip(clip, back, strict=True):
        for plane, plane_back in zip(planes, planes_back, strict=True):
            assert np.abs(plane_back - plane).max() <= 1
    return written_format


@pytest.mark.parametrize("depth", [10, 12])
def test_a_source_with_alpha_is_denoised_in_its_picture_and_says_so(tmp_path, depth) -> None:
    """ProRes 4444 and FFV1 carry an alpha plane (yuva444p10le): the picture comes back within
    rounding, and the user is told that the alpha is not kept. The output holds no alpha plane:
    FFV1 in yuva444p12le, which FFV1 kept from a ProRes 4444 master, was a file the ffmpeg tool of
    Debian 12 (FFmpeg 5.1) cannot decode."""
    clip = [[*planes, np.full_like(planes[0], 512)] for planes in yuv_planes(f"yuv444p{depth}le")]
    write_yuv(tmp_path / "alpha.mkv", f"yuva444p{depth}le", clip)
    command = [*CLI, "denoise", str(tmp_path / "alpha.mkv"), str(tmp_path / "out.mkv"), "--codec", "ffv1"]
    command += [
        "--h",
        "0.001",
        "--weighting",
        "bisquare",
        "--noise",
        "none",
        "--patch-radius",
        "1",
        "--search-radius",
        "1",
    ]
    result = run_cli(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert f"the video has an alpha channel (yuva444p{depth}le)" in result.stderr and "opaque" in result.stderr
    written_format, back = read_yuv(tmp_path / "out.mkv")
    assert written_format == f"yuv444p{depth}le"
    for planes, planes_back in zip(clip, back, strict=True):
        assert len(planes_back) == 3
        for plane, plane_back in zip(planes[:3], planes_back, strict=True):
            assert np.abs(plane_back - plane).max() <= 1
    decoded = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", str(tmp_path / "out.mkv"), "-f", "null", "-"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert decoded.returncode == 0 and decoded.stderr == ""


def test_big_endian_samples_read_as_the_same_frames(tmp_path) -> None:
    clip = yuv_planes("yuv420p10le")
    write_yuv(tmp_path / "little.mkv", "yuv420p10le", clip)
    write_yuv(tmp_path / "big.nut", "yuv420p10be", clip)
    assert np.array_equal(read_frames(tmp_path / "big.nut"), read_frames(tmp_path / "little.mkv"))


@pytest.mark.parametrize(
    ("colorspace", "height", "weights"),
    [
        (BT709, 48, (0.2126, 0.0722)),
        (2, 48, (0.299, 0.114)),  # untagged SD: BT.601
        (2, 720, (0.2126, 0.0722)),  # untagged HD: BT.709, as players show it
    ],
)
def test_deep_frames_are_read_at_their_full_precision(tmp_path, colorspace, height, weights) -> None:
    clip = yuv_planes("yuv444p10le", frames=1, size=(height, 64))
    write_yuv(tmp_path / "deep.mkv", "yuv444p10le", clip, colorspace)
    luma, blue, red = (plane.astype(np.float64) / 4 for plane in clip[0])
    y, pb, pr = (luma - 16) / 219, (blue - 128) / 224, (red - 128) / 224
    kr, kb = weights  # ITU-T H.273
    r, b = y + 2 * (1 - kr) * pr, y + 2 * (1 - kb) * pb
    expected = np.stack([r, (y - kr * r - kb * b) / (1 - kr - kb), b], axis=-1) * 65535
    frames = read_frames(tmp_path / "deep.mkv")
    assert frames.dtype == np.uint16
    # Half a 16-bit level of rounding, and float32's arithmetic.
    assert np.abs(frames[0] - expected).max() <= 0.6


def test_the_writer_takes_ten_bit_samples_in_uint16(tmp_path) -> None:
    """Frames from VapourSynth (10-bit samples in uint16) written with bit_depth=10 come out as
    the frames they are, not 64 times darker."""
    write_yuv(tmp_path / "clean.mkv", "yuv444p10le", yuv_planes("yuv444p10le"))
    frames = read_frames(tmp_path / "clean.mkv")
    samples = np.rint(frames * (1023 / 65535)).astype(np.uint16)
    with (
        VideoReader(tmp_path / "clean.mkv") as reader,
        VideoWriter(tmp_path / "out.mkv", reader.info, codec="ffv1", bit_depth=10) as writer,
    ):
        for frame in samples:
            writer.write(frame)
    # Half a 10-bit level (32 16-bit levels), and the conversions' rounding.
    assert np.abs(read_frames(tmp_path / "out.mkv").astype(int) - frames).max() <= 40
    beyond = samples[0].copy()
    beyond[0, 0, 0] = 2000
    writer = VideoWriter(tmp_path / "more.mkv", reader.info, codec="ffv1", bit_depth=10)
    with pytest.raises(ValueError, match=r"bit_depth=10 holds samples up to 1023, but this frame has 2000"):
        writer.write(beyond)
    writer.abort()


def test_writers_on_several_threads_at_once_write_what_each_writes_alone(tmp_path) -> None:
    """The conversion to Y'CbCr keeps its scratch from frame to frame, one a thread: two writers
    converting frames of one size at once write the frames each writes alone."""
    import concurrent.futures

    write_yuv(tmp_path / "clean.mkv", "yuv420p", yuv_planes("yuv420p", frames=2, size=(360, 640)))
    clean = read_frames(tmp_path / "clean.mkv")
    rng = np.random.default_rng(3)
    noisy = [np.clip(clean[t % 2] + rng.integers(-40, 41, clean[0].shape), 0, 255).astype(np.uint8) for t in range(16)]
    clips = {"one": noisy[:8], "two": noisy[8:]}

    def write(name: str, suffix: str) -> np.ndarray:
        with (
            VideoReader(tmp_path / "clean.mkv") as reader,
            VideoWriter(tmp_path / f"{name}{suffix}.mkv", reader.info, codec="ffv1") as writer,
        ):
            for frame in clips[name]:
                writer.write(frame)
        return read_frames(tmp_path / f"{name}{suffix}.mkv")

    alone = {name: write(name, "-alone") for name in clips}
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        together = dict(zip(clips, pool.map(write, clips, ["-together"] * 2), strict=True))
    for name in clips:
        np.testing.assert_array_equal(together[name], alone[name])


@pytest.mark.parametrize(
    ("pixel_format", "codec"),
    [("yuv422p10le", "ffv1"), ("yuv420p", "libx264")],  # a 10-bit master; an 8-bit H.264 with B-frames
)
def test_a_sources_samples_past_the_range_come_back_in_the_luma_chroma_mode(tmp_path, pixel_format, codec) -> None:
    """Super-whites and sub-blacks (a tape's capture, a camera's master) and colour bars' chroma are kept.

    Made by the ffmpeg tool: SMPTE bars with luma stretched past 16..235 to the code range's ends.
    The RGB between reading and writing clipped them: luma came back in 64..940, 33 dB from the source.
    """
    source = tmp_path / f"bars.{'mkv' if codec == 'ffv1' else 'mp4'}"
    top = 2 ** (10 if "10" in pixel_format else 8) - 1
    stretch = f"lutyuv=y='clip(val*1.3-{50 * (top + 1) // 256},0,{top})'"
    made = subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "smptebars=s=160x120:r=30000/1001:d=0.4",
         "-vf", f"format={pixel_format},{stretch}", "-c:v", codec, "-pix_fmt", pixel_format,
         *(["-qp", "0", "-bf", "2"] if codec == "libx264" else []), str(source)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    output = tmp_path / "out.mkv"
    command = [*CLI, "denoise", str(source), str(output), "--quiet", "--codec", "ffv1", "--noise", "none"]
    command += ["--luma-chroma", "0.001,0.001", "--center-weight", "one"]
    result = run_cli(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    _, clip = read_yuv(source)
    written_format, back = read_yuv(output)
    assert written_format == pixel_format and len(back) == len(clip) == 12
    assert clip[0][0].min() < 16 * (top + 1) // 256 and clip[0][0].max() > 235 * (top + 1) // 256  # past the range
    for planes, planes_back in zip(clip, back, strict=True):
        for plane, plane_back in zip(planes, planes_back, strict=True):
            np.testing.assert_array_equal(plane_back, plane)
