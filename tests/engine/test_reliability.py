"""Careless and hostile use: two runs at once, odd sizes, nonsense arguments, files that are not
video, signals at every stage, fuzzed files. Nothing lost, nothing wrong, every error one clear
line and never a traceback (issue 20)."""

from __future__ import annotations

import errno
import itertools
import json
import os
import random
import re
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

av = pytest.importorskip("av", reason="PyAV is not installed (the GPU machine has none)")

from clips import (  # noqa: E402
    CLI,
    clip_with_audio,
    cut_short_dv,
    damaged_dvd,
    default_signals,
    ffmpeg_pattern,
    in_process,
)
from media_corpus import ClipSpec, frame_number, plain_pyav_numbers, write_clip  # noqa: E402

from nlmeans_studio.engine import (  # noqa: E402
    Denoiser,
    NLMParams,
    denoise_file,
    estimate_noise,
    gpu_unavailable_reason,
    read_frames,
    read_volume,
    suggest_h,
)
from nlmeans_studio.engine.cli.denoise import Stop  # noqa: E402
from nlmeans_studio.engine.media.ffmpeg import VideoError  # noqa: E402
from nlmeans_studio.engine.media.formats import IMAGE_FORMATS  # noqa: E402
from nlmeans_studio.engine.media.reader import VideoReader  # noqa: E402
from nlmeans_studio.engine.media.writer import VideoWriter  # noqa: E402

FAST = ["--noise", "none", "--h", "20", "--patch-radius", "1", "--search-radius", "1"]


def _cli(*arguments: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return in_process(list(arguments), cwd=cwd)


def _one_clear_line(run: subprocess.CompletedProcess, message: str) -> None:
    assert run.returncode in (1, 2), run.stderr
    assert "Traceback" not in run.stderr
    assert message in run.stderr.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_clip(tmp_path_factory.mktemp("clip"), ClipSpec("clip.mkv", "ffv1", pixel_format="bgr0", frames=30))


def _hidden_parts(folder: Path) -> list[Path]:
    return [path for path in folder.iterdir() if path.name.startswith(".") and ".part" in path.name]


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_second_run_to_the_same_output_is_refused_while_the_first_writes(clip, tmp_path, overwrite) -> None:
    output = tmp_path / "out.mkv"
    extra = ["--overwrite"] if overwrite else []
    first_command = [*CLI, "denoise", str(clip), str(output), "--codec", "ffv1",
                     "--noise", "none", "--h", "20", "--search-radius", "10", "--frames-past", "1",
                     "--frames-future", "1", *extra]  # fmt: skip
    # Seconds of work (search radius 6 alone finished before the second run reached the output on CI).
    with subprocess.Popen(first_command, stderr=subprocess.PIPE, text=True) as first:
        deadline = time.monotonic() + 120
        while not _hidden_parts(tmp_path):  # the first run holds its output
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        second = _cli("denoise", str(clip), str(output), "--codec", "ffv1", *FAST, *extra)
        assert first.wait(timeout=240) == 0, first.stderr.read()
    _one_clear_line(second, f"{output}: another run is writing it now; wait for it or choose another name")
    assert plain_pyav_numbers(output) == list(range(30))  # the first run's work, whole
    assert not _hidden_parts(tmp_path)


def test_what_a_killed_run_left_behind_does_not_block_the_next(clip, tmp_path) -> None:
    output = tmp_path / "out.mkv"
    first = subprocess.Popen([*CLI, "denoise", str(clip), str(output), "--codec", "ffv1",
                              "--noise", "none", "--h", "20", "--search-radius", "6"])  # fmt: skip
    while not _hidden_parts(tmp_path):
        time.sleep(0.05)
    first.kill()  # SIGKILL: no handler runs, the hidden file stays
    first.wait()
    assert _hidden_parts(tmp_path)
    run = _cli("denoise", str(clip), str(output), "--codec", "ffv1", *FAST)
    assert run.returncode == 0, run.stderr
    assert plain_pyav_numbers(output) == list(range(30)) and not _hidden_parts(tmp_path)


def test_an_output_that_appeared_meanwhile_is_not_replaced(clip, tmp_path) -> None:
    output = tmp_path / "out.mkv"
    with (
        VideoReader(clip) as reader,
        pytest.raises(VideoError, match=r"appeared while this run wrote it; the result is"),
        VideoWriter(output, reader.info, codec="ffv1") as writer,
    ):
        writer.write(reader.frame(0))
        output.write_bytes(b"someone else's file")
    assert output.read_bytes() == b"someone else's file"
    kept = [path for path in tmp_path.iterdir() if path.name.startswith("out.") and path != output]
    assert len(kept) == 1 and plain_pyav_numbers(kept[0]) == [0]


def test_an_image_sequence_is_published_whole_or_not_at_all(clip, tmp_path) -> None:
    """Images were moved into place one at a time: one that failed (here, a name someone took
    meanwhile) left the images before it published, and a rerun was then refused."""
    output = tmp_path / "o_%04d.png"
    with (
        VideoReader(clip) as reader,
        pytest.raises(VideoError, match=r"o_0003\.png: appeared while this run wrote the sequence; nothing of it"),
        VideoWriter(output, reader.info) as writer,
    ):
        for frame in itertools.islice(reader.frames(), 4):
            writer.write(frame)
        (tmp_path / "o_0003.png").write_bytes(b"someone else's image")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["o_0003.png"]
    assert (tmp_path / "o_0003.png").read_bytes() == b"someone else's image"


def test_overwrite_replaces_an_older_longer_sequence_whole(clip, tmp_path) -> None:
    output = tmp_path / "o_%04d.png"
    assert _cli("denoise", str(clip), str(output), *FAST).returncode == 0
    (tmp_path / "o_0000.png").write_bytes(b"an image of the same name, numbered 0")
    run = _cli("denoise", str(clip), str(output), "--duration", "0.4", "--overwrite", *FAST)
    assert run.returncode == 0, run.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == [f"o_{n:04d}.png" for n in range(1, 11)]


@pytest.mark.parametrize(
    ("first", "source", "output"), [(86400, "reel1_%07d.png", "reel1_%06d.png"), (0, "%06d.png", "%05d.png")]
)
def test_an_output_sequence_whose_name_matches_the_inputs_images_is_refused(tmp_path, first, source, output) -> None:
    """A restorer's scans reel1_%07d.dpx written as reel1_%06d.dpx --overwrite were all removed as
    an older sequence's images (their seven digits match %06d); %06d into %05d lost 000000."""
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-frames:v", "5",
         "-start_number", str(first), str(tmp_path / source)],
        check=True,
    )  # fmt: skip
    scans = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    run = _cli("denoise", str(tmp_path / source), str(tmp_path / output), "--overwrite", *FAST)
    _one_clear_line(run, "its images would replace the input's")
    assert f"is an image of both {source} and {output}); write the output to another folder" in run.stderr
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == scans


@pytest.mark.parametrize(("codec", "name"), [("prores", "out.mov"), ("h264", "out.mp4")])
def test_an_rgb_source_written_in_ycbcr_is_tagged_as_its_samples_are(tmp_path, codec, name) -> None:
    """A restorer's RGB FFV1 (tagged "gbr", full range) into ProRes held full-range samples tagged
    limited, and "gbr" on Y'CbCr: FFmpeg decoded every frame 5 to 12 levels off."""
    source = tmp_path / "rgb.mkv"
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=96x64:rate=24", "-frames:v", "4",
         "-c:v", "ffv1", "-pix_fmt", "gbrp10le", str(source)],
        check=True,
    )  # fmt: skip
    run = _cli("denoise", str(source), str(tmp_path / name), "--codec", codec, *FAST)
    assert run.returncode == 0, run.stderr
    probe = subprocess.run(
        ["ffprobe", "-v", "error", "-show_entries", "stream=color_space,color_range", "-of", "csv=p=0",
         str(tmp_path / name)],
        capture_output=True, text=True, check=True,
    ).stdout.split()[0]  # fmt: skip
    assert probe == "tv,bt470bg"  # BT.601 below HD, as an untagged source's frames are converted

    def decoded(path: Path) -> np.ndarray:  # by FFmpeg, as players read the tags
        raw = subprocess.run(["ffmpeg", "-loglevel", "error", "-i", str(path), "-f", "rawvideo", "-pix_fmt", "rgb48le",
                              "-"], capture_output=True, check=True).stdout  # fmt: skip
        return np.frombuffer(raw, "<u2").reshape(-1, 64, 96, 3) / 257

    shift = (decoded(tmp_path / name) - decoded(source)).mean(axis=(0, 1, 2))
    np.testing.assert_allclose(shift, 0, atol=1.0)  # 8-bit levels; it was -5 to -12


def test_an_output_sequence_keeps_its_frames_numbers(clip, tmp_path) -> None:
    """A restorer's reel scanned from 086400 came back numbered from 000001, and a range from 000005
    too: a conform by file name took the wrong frames. A sequence keeps its images' numbers, a
    video's frames are numbered from 1."""
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-frames:v", "6",
         "-start_number", "86400", str(tmp_path / "r_%06d.png")],
        check=True,
    )  # fmt: skip
    (tmp_path / "out").mkdir()
    run = _cli("denoise", str(tmp_path / "r_%06d.png"), str(tmp_path / "out" / "o_%06d.png"), "--start", "0.08", *FAST)
    assert run.returncode == 0, run.stderr
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == [f"o_{n:06d}.png" for n in range(86402, 86406)]
    run = _cli("denoise", str(tmp_path / "r_%06d.png"), str(tmp_path / "out" / "o_%06d.png"), "--overwrite", *FAST)
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == [f"o_{n:06d}.png" for n in range(86400, 86406)]
    run = _cli("denoise", str(clip), str(tmp_path / "v_%03d.png"), "--start", "0.4", "--duration", "0.2", *FAST)
    assert run.returncode == 0, run.stderr
    assert sorted(path.name for path in tmp_path.glob("v_*")) == [f"v_{n:03d}.png" for n in range(11, 16)]  # 25 fps


def test_estimate_noise_reads_a_tiff_sequence_as_a_clip(tmp_path) -> None:
    """It said "no such file" of a restorer's %06d.tif, which denoise opens: .tif went to the volumes."""
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-frames:v", "6",
         "-vf", "noise=alls=20:allf=t", "-pix_fmt", "rgb48le", str(tmp_path / "%06d.tif")],
        check=True,
    )  # fmt: skip
    run = _cli("estimate-noise", str(tmp_path / "%06d.tif"), "--json")
    assert run.returncode == 0, run.stderr
    assert len(json.loads(run.stdout)["sigma"]) == 3


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_an_exr_sequence_keeps_its_highlights_above_one(tmp_path, backend) -> None:
    """A restorer's linear EXR scans (up to 1.94) came back cut at 1.0: read as 16-bit, as a single
    EXR is not. Floats stay floats, from the reader through the filter to the images written."""
    rng = np.random.default_rng(3)
    ramp = np.linspace(0.0, 2.0, 64, dtype=np.float32)[None, :, None] * np.ones((48, 1, 3), np.float32)
    with av.open(str(tmp_path / "scan%04d.exr"), "w", format="image2") as container:
        stream = container.add_stream("exr", rate=24)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "gbrpf32le"
        for _ in range(4):
            noisy = (ramp + rng.normal(0, 0.02, ramp.shape)).astype(np.float32)
            container.mux(stream.encode(av.VideoFrame.from_ndarray(noisy, format="gbrpf32le")))
        container.mux(stream.encode(None))
    (tmp_path / "out").mkdir()
    run = _cli(
        "denoise",
        str(tmp_path / "scan%04d.exr"),
        str(tmp_path / "out" / "scan%04d.exr"),
        "--h",
        "2",
        "--backend",
        backend,
    )
    assert run.returncode == 0, run.stderr
    written = read_frames(tmp_path / "out" / "scan%04d.exr")
    assert written.dtype == np.float32 and written.shape == (4, 48, 64, 3)
    bright = ramp > 1.2  # the highlights: 1.2 to 2.0
    np.testing.assert_allclose(written[:, bright[..., 0]].mean(), ramp[bright].mean(), rtol=0.02)


@pytest.mark.parametrize(
    ("given", "written"), [("gbrp10le", "gbrp10le"), ("gbrp12le", "gbrp12le"), ("rgb48le", "rgb48le")]
)
def test_a_dpx_scan_is_written_back_at_its_depth(tmp_path, given, written) -> None:
    """A restorer's 10-bit DPX came back as 16-bit DPX, half again the space."""
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=24", "-frames:v", "3",
         "-pix_fmt", given, str(tmp_path / "r%04d.dpx")],
        check=True,
    )  # fmt: skip
    (tmp_path / "out").mkdir()
    run = _cli("denoise", str(tmp_path / "r%04d.dpx"), str(tmp_path / "out" / "r%04d.dpx"), *FAST)
    assert run.returncode == 0, run.stderr
    probe = subprocess.run(
        ["ffprobe", "-v", "error", "-show_entries", "stream=pix_fmt", "-of", "csv=p=0",
         str(tmp_path / "out" / "r0001.dpx")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert probe.stdout.strip() == written
    assert (tmp_path / "out" / "r0001.dpx").stat().st_size == (tmp_path / "r0001.dpx").stat().st_size


def test_a_film_scan_sequence_is_read_at_the_rate_given(clip, tmp_path) -> None:
    """A restorer's 24 fps scans became 25 fps ProRes, FFmpeg's rate for images that carry none."""
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-frames:v", "6",
         str(tmp_path / "r%04d.png")],
        check=True,
    )  # fmt: skip
    run = _cli("denoise", str(tmp_path / "r%04d.png"), str(tmp_path / "out.mkv"), "--frame-rate", "23.976", *FAST)
    assert run.returncode == 0, run.stderr
    with av.open(str(tmp_path / "out.mkv")) as container:
        assert container.streams.video[0].average_rate == Fraction(24000, 1001)
    assert len(read_frames(tmp_path / "out.mkv")) == 6
    run = _cli("denoise", str(clip), str(tmp_path / "v.mkv"), "--frame-rate", "24", *FAST)
    _one_clear_line(run, "a frame rate is given to image sequences, whose images carry none; a video keeps its own")


def test_a_link_to_nothing_as_output_is_refused_before_any_work(clip, tmp_path) -> None:
    """It was found only when the finished file was to be renamed into place."""
    (tmp_path / "out.mkv").symlink_to(tmp_path / "gone" / "out.mkv")
    run = _cli("denoise", str(clip), str(tmp_path / "out.mkv"), "--noise", "auto")
    _one_clear_line(run, f"out.mkv: is a link to {tmp_path}/gone/out.mkv, which does not exist; pass --overwrite")
    assert "noise:" not in run.stderr  # before the estimate
    assert _cli("denoise", str(clip), str(tmp_path / "out.mkv"), "--overwrite", *FAST).returncode == 0
    assert not (tmp_path / "out.mkv").is_symlink() and plain_pyav_numbers(tmp_path / "out.mkv") == list(range(30))


@pytest.mark.parametrize(
    "command",
    [
        ["denoise", "{clip}", "{long}.mkv"],
        ["denoise", "{long}.mkv", "out.mkv"],
        ["denoise-volume", "{long}.npy", "out.npy"],
        ["estimate-noise", "{long}.mkv"],
    ],
)
def test_an_over_long_name_is_said_briefly_with_the_limit(clip, tmp_path, command) -> None:
    """Each was "[Errno 36] File name too long: '...'" with the 5000-character name whole."""
    long = "d" * 5000
    run = _cli(*(part.format(clip=clip, long=long) for part in command), cwd=tmp_path)
    assert run.returncode == 1 and len(run.stderr) < 400, run.stderr
    assert re.fullmatch(
        r"nlmeans-studio: error: d{50,}…d{50,}\.(mkv|npy): the name is too long: 5004 bytes in one part and 5004 in "
        r"all, where file systems take at most 255 and 4096; choose a shorter name\n",
        run.stderr,
    ), run.stderr


def test_an_escaped_percent_sign_is_no_frame_number(clip, tmp_path) -> None:
    """ "%%d" is FFmpeg's "%d" as text: it was taken for a frame number's place, and FFmpeg then
    refused the name with "Invalid argument: '.../.f2c49ea95816.part/o%%d.png' returned 22"."""
    _one_clear_line(_cli("denoise", str(clip), str(tmp_path / "o%%d.png"), *FAST),
                    "o%%d.png: one image cannot hold a video; for an image sequence put the frame number's place in "
                    "the name: o%%d%06d.png")  # fmt: skip
    assert _cli("denoise", str(clip), str(tmp_path / "o%%_%03d.png"), "--duration", "0.2", *FAST).returncode == 0
    assert sorted(path.name for path in tmp_path.iterdir()) == [f"o%_{n:03d}.png" for n in range(1, 6)]
    with VideoReader(tmp_path / "o%%_%03d.png") as reader:
        assert reader.info.frame_count == 5


def test_a_long_output_name_is_written(clip, tmp_path) -> None:
    output = tmp_path / ("n" * 246 + ".mkv")  # 250 characters, the file system's limit is 255
    run = _cli("denoise", str(clip), str(output), "--codec", "ffv1", *FAST)
    assert run.returncode == 0, run.stderr
    assert plain_pyav_numbers(output) == list(range(30))


def test_only_regular_files_are_outputs(clip, tmp_path) -> None:
    fifo = tmp_path / "fifo.mkv"
    os.mkfifo(fifo)
    _one_clear_line(
        _cli("denoise", str(clip), str(fifo), "--overwrite", *FAST), "is not a regular file; the output must be a file"
    )
    assert fifo.exists() and not fifo.is_file()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda folder: folder,
            "is a folder, not a video file: give one of its files, or denoise them all with 'nlmeans-studio batch",
        ),
        (lambda folder: _fifo(folder / "in.mkv"), "is not a regular file (a pipe or a device); for a y4m pipe give -"),
        (lambda folder: _write(folder / "notes.txt", b"hello, world\n" * 300), "is text (ansi), not a video"),
        (lambda folder: _write(folder / "empty.mp4", b""), "not a video file FFmpeg can read"),
    ],
)
def test_inputs_that_are_not_video_are_refused(tmp_path, make, message) -> None:
    source = make(tmp_path)
    _one_clear_line(_cli("denoise", str(source), str(tmp_path / "out.mkv")), message)
    assert not (tmp_path / "out.mkv").exists()


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _y4m(header: str = "W32 H32 F25:1 Ip C420jpeg", frames: int = 3) -> bytes:
    """A y4m stream written by hand: ``header``'s tags and ``frames`` frames of 4:2:0 noise."""
    rng = np.random.default_rng(5)
    body = b"".join(
        b"FRAME\n" + rng.integers(16, 236, 32 * 32 * 3 // 2, dtype=np.uint8).tobytes() for _ in range(frames)
    )
    return f"YUV4MPEG2 {header}\n".encode() + body


@pytest.mark.parametrize("noise", [["--noise", "auto"], FAST])
@pytest.mark.parametrize(
    ("stream", "message"),
    [
        (b"", "standard input: nothing came, not even a y4m header; pipe a clip in: ffmpeg -i INPUT -f yuv4mpegpipe -"),
        (_y4m(frames=0), "standard input: the y4m stream holds no frame (its header 'YUV4MPEG2 W32 H32 F25:1 Ip "),
        (_y4m("W0 H0 F25:1 C420jpeg"), "the y4m header (YUV4MPEG2 W0 H0 F25:1 C420jpeg) gives no size of at least 1x1"),
        (_y4m("W100000 H100000 F25:1"), "gives a picture of 100000x100000 pixels, larger than FFmpeg reads"),
        (_y4m("W32 H32 F25:1 Im"), "the y4m header says Im (frames of mixed interlacing), which FFmpeg does not read"),
        (_y4m("W32 H32 F25:1 C555"), "the y4m color space C555 is not one FFmpeg reads (420jpeg, 420mpeg2, "),
        (_y4m().replace(b"FRAME", b"FRAMX", 2).replace(b"FRAMX", b"FRAME", 1),
         "standard input: frame 2 (counting from 1) of the y4m stream cannot be read (Invalid data found"),
        (_y4m()[:-100], "standard input: the y4m stream ends in the middle of frame 3 (counting from 1), 1442 bytes"),
        (_y4m("W32 H32 F25:1 Ip C420jpeg XLENGTH=5"),
         "standard input: the y4m stream ended after 3 of the 5 frames its header declares (XLENGTH=5): its sender"),
    ],
)  # fmt: skip
def test_y4m_streams_that_hold_no_whole_clip_are_refused_saying_why(tmp_path, stream, message, noise) -> None:
    """A header and no frame exited 0 with an empty file (--noise auto: an IndexError); a wrong
    header said "Device or resource busy", a bad FRAME marker a raw errno; a cut frame was dropped;
    a vspipe script that failed after 3 of 5 frames (its header's XLENGTH) left a 3-frame file."""
    run = subprocess.run([*CLI, "denoise", "-", str(tmp_path / "out.mkv"), *noise], input=stream, capture_output=True)
    _one_clear_line(subprocess.CompletedProcess(run.args, run.returncode, "", run.stderr.decode()), message)
    assert list(tmp_path.iterdir()) == []


def test_a_y4m_stream_of_the_length_its_header_declares_is_denoised_whole(tmp_path) -> None:
    run = subprocess.run(
        [*CLI, "denoise", "-", str(tmp_path / "out.mkv"), *FAST],
        input=_y4m("W32 H32 F25:1 Ip C420jpeg XLENGTH=3"),
        capture_output=True,
    )
    assert run.returncode == 0, run.stderr.decode()
    assert len(read_frames(tmp_path / "out.mkv")) == 3


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("W0 H0 F25:1 C420jpeg", "the y4m header (YUV4MPEG2 W0 H0 F25:1 C420jpeg) gives no size of at least 1x1"),
        ("W100000 H100000 F25:1", "the y4m header (YUV4MPEG2 W100000 H100000 F25:1) gives a picture of 100000x100000"),
        ("W32 H32 F25:1 Im", "the y4m header says Im (frames of mixed interlacing), which FFmpeg does not read"),
        ("W32 H32 F25:1 C555", "the y4m color space C555 is not one FFmpeg reads (420jpeg, 420mpeg2, "),
    ],
)
def test_y4m_files_whose_header_ffmpeg_refuses_are_said_why(tmp_path, header, message) -> None:
    """A y4m file of W0 H0 was "not a video file FFmpeg can read (Device or resource busy)"."""
    (tmp_path / "in.y4m").write_bytes(_y4m(header))
    _one_clear_line(_cli("denoise", str(tmp_path / "in.y4m"), str(tmp_path / "out.mkv"), *FAST), f"in.y4m: {message}")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.y4m"]


def test_a_y4m_file_with_a_bad_frame_marker_is_said_to_be_damaged_there(tmp_path) -> None:
    """It was "the video stream cannot be read: Invalid data found when processing input"."""
    (tmp_path / "in.y4m").write_bytes(_y4m().replace(b"FRAME", b"FRAMX", 2).replace(b"FRAMX", b"FRAME", 1))
    _one_clear_line(
        _cli("denoise", str(tmp_path / "in.y4m"), str(tmp_path / "out.mkv"), *FAST),
        "in.y4m: frame 2 (counting from 1) does not start with FRAME where the y4m header's size puts it (Invalid data",
    )


def test_a_y4m_file_cut_in_a_frame_is_said_to_be_cut(tmp_path) -> None:
    """FFmpeg's demuxer ends quietly at a frame cut short: one frame fewer, and no word of it."""
    (tmp_path / "cut.y4m").write_bytes(_y4m(frames=3)[:-100])
    run = _cli("denoise", str(tmp_path / "cut.y4m"), str(tmp_path / "out.mkv"), *FAST)
    assert run.returncode == 0, run.stderr
    warning = "cut.y4m: it ends in the middle of frame 3 (1442 of its 1542 bytes): it was cut; the frames before it"
    assert warning in run.stderr
    (tmp_path / "whole.y4m").write_bytes(_y4m(frames=3))
    assert "warning" not in _cli("denoise", str(tmp_path / "whole.y4m"), str(tmp_path / "out2.mkv"), *FAST).stderr


def test_a_picture_too_wide_for_the_encoder_is_said_so_with_the_way_out(tmp_path) -> None:
    """libx264 said "Generic error in an external library" for a 20000-pixel-wide y4m."""
    stream = b"YUV4MPEG2 W16400 H16 F25:1 Ip C420jpeg\n" + b"FRAME\n" + bytes([128]) * (16400 * 16 * 3 // 2)
    command = [*CLI, "denoise", "-", str(tmp_path / "out.mkv"), "--codec", "h264", *FAST]  # raw frames: FFV1's
    run = subprocess.run(command, input=stream, capture_output=True)
    message = "out.mkv: the h264 encoder refuses 16400x16 yuv420p frames (Generic error in an external library); its "
    _one_clear_line(subprocess.CompletedProcess(run.args, run.returncode, "", run.stderr.decode()), message)
    assert run.stderr.decode().endswith("choose --codec ffv1 (lossless, any size) or scale the clip down\n")
    assert list(tmp_path.iterdir()) == []


def test_a_y4m_stream_of_one_frame_has_its_noise_estimated_and_is_denoised(tmp_path) -> None:
    run = subprocess.run([*CLI, "denoise", "-", str(tmp_path / "out.mkv")], input=_y4m(frames=1), capture_output=True)
    assert run.returncode == 0, run.stderr.decode()
    with VideoReader(tmp_path / "out.mkv") as reader:
        assert reader.info.frame_count == 1


def _images(folder: Path, numbers: list[int], suffix: str = ".png", pixel_format: str = "rgb24") -> Path:
    """Images ``f%04d`` + ``suffix`` of noise, numbered ``numbers``, as FFmpeg writes a sequence; their pattern."""
    folder.mkdir()
    with av.open(str(folder / f"w%04d{suffix}"), "w", format="image2") as container:
        stream = container.add_stream(IMAGE_FORMATS[suffix][0], rate=25)
        stream.width, stream.height, stream.pix_fmt = 32, 32, pixel_format
        for index in range(len(numbers)):
            frame = np.random.default_rng(index).integers(0, 256, (32, 32, 3), dtype=np.uint8)
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(stream.encode(None))
    for index, number in enumerate(numbers):
        (folder / f"w{index + 1:04d}{suffix}").rename(folder / f"f{number:04d}{suffix}")
    return folder / f"f%04d{suffix}"


def _empty_third(folder: Path) -> Path:
    pattern = _images(folder, [1, 2, 3, 4, 5])
    (folder / "f0003.png").write_bytes(b"")
    return pattern


def _wider_second(folder: Path) -> Path:
    pattern = _images(folder, [1, 3, 4])
    with av.open(str(folder / "f0002.png"), "w", format="image2") as container:
        stream = container.add_stream("png", rate=25)
        stream.width, stream.height, stream.pix_fmt = 40, 32, "rgb24"
        container.mux(stream.encode(av.VideoFrame.from_ndarray(np.zeros((32, 40, 3), np.uint8), format="rgb24")))
        container.mux(stream.encode(None))
    return pattern


def _damaged_third(folder: Path) -> Path:
    pattern = _images(folder, [1, 2, 3, 4, 5])
    (folder / "f0003.png").write_bytes(b"not a PNG image")
    return pattern


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda folder: _images(folder, [1, 3, 5, 7]),
         "f%04d.png: f0002.png is missing: the 4 images are numbered 1 to 7 with a gap after f0001.png; add the "
         "missing images, or number the images without gaps"),
        (_empty_third, "f0003.png: is empty (0 bytes), frame 3 of the 5 images of f%04d.png; replace it with"),
        (lambda folder: _images(folder, []), "f%04d.png: no images of this sequence exist"),
        (_damaged_third, "f%04d.png: decoding stopped at frame 3 (counting from 1), the image f0003.png: Invalid"),
        (_wider_second, "f%04d.png: frame 2 (counting from 1), the image f0002.png, is 40x32 pixels, but the clip's "
         "first is 32x32; a clip's frames must all have one size: scale them to one first (FFmpeg's scale filter)"),
    ],
)  # fmt: skip
def test_image_sequences_with_a_frame_missing_are_refused_naming_it(tmp_path, make, message) -> None:
    """A gap (1, 3, 5, 7) exported 1 frame and an empty image dropped the rest, with exit 0."""
    pattern = make(tmp_path / "scans")
    _one_clear_line(_cli("denoise", str(pattern), str(tmp_path / "out.mkv"), *FAST), message)
    assert not (tmp_path / "out.mkv").exists()


@pytest.mark.parametrize(("numbers", "suffix", "pixel_format"), [([100, 101, 102], ".png", "rgb24"),
                                                                 ([1, 2, 3], ".exr", "gbrpf32le")])  # fmt: skip
def test_image_sequences_are_read_whole_from_their_first_number_into_ffv1(tmp_path, numbers, suffix, pixel_format):
    """A sequence from 0100 was not found (FFmpeg looks among 0 to 4); float EXR into FFV1 failed
    with FFmpeg's "Invalid data found" (its float formats are experimental): 16-bit RGB now."""
    pattern = _images(tmp_path / "scans", numbers, suffix, pixel_format)
    run = _cli("denoise", str(pattern), str(tmp_path / "out.mkv"), "--codec", "ffv1", *FAST)
    assert run.returncode == 0, run.stderr
    with VideoReader(tmp_path / "out.mkv") as reader:
        assert reader.info.frame_count == 3
        assert reader.info.pixel_format == ("bgr0" if suffix == ".png" else "gbrp16le")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--start", "-1"], "a time is a finite number of seconds >= 0, like 12.5, got '-1'"),
        (["--start", "inf"], "a time is a finite number of seconds >= 0, like 12.5, got 'inf'"),
        (["--start", "nan"], "a time is a finite number of seconds >= 0, like 12.5, got 'nan'"),
        (["--start", "-1", "--noise", "none"], "a time is a finite number of seconds >= 0"),
        (["--duration", "inf"], "a duration is a finite number of seconds > 0, like 2.5, got 'inf'"),
        (["--duration", "nan"], "a duration is a finite number of seconds > 0, like 2.5, got 'nan'"),
        (["--duration", "0"], "a duration is a finite number of seconds > 0, like 2.5, got '0'"),
        (["--h", "1e-300"], "h must be a finite number"),
        (["--preset", "bogus"], "preset must be one of ultrafast, superfast, veryfast"),
        (["--crf", "99"], "crf must be an integer in 0..51, got 99"),
        (["--start", "99"], "no frames between 99 s and the end of the clip (the clip lasts 1.2 s)"),
        # Options, not the engine's Python names (a first-time user read "search_radius must ..").
        (["--search-radius", "40"], "--search-radius must be an integer in 0..16, got 40"),
        (["--frames-past", "9"], "--frames-past must be an integer in 0..8, got 9"),
        (["--noise", "high"], "expected auto, none or a region X,Y,W,H in pixels (like 10,20,64,64), got 'high'"),
    ],
)
def test_nonsense_denoise_arguments_get_one_clear_line(clip, tmp_path, arguments, message) -> None:
    _one_clear_line(_cli("denoise", str(clip), str(tmp_path / "out.mp4"), *arguments), message)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(gpu_unavailable_reason() is None, reason="a GPU is here: --backend gpu runs")
def test_an_unavailable_gpu_is_said_before_the_noise_estimate(clip, tmp_path) -> None:
    run = _cli("denoise", str(clip), str(tmp_path / "out.mkv"), "--backend", "gpu")
    _one_clear_line(run, "the GPU backend is unavailable")
    assert "noise:" not in run.stderr and list(tmp_path.iterdir()) == []


def test_the_windows_presets_work_on_the_command_line(clip, tmp_path) -> None:
    # A first-time user tried --preset vhs (the encoder's speed) for the window's VHS preset.
    run = _cli("denoise", str(clip), str(tmp_path / "vhs.mkv"), "--codec", "ffv1", "--filter-preset", "VHS")
    assert run.returncode == 0, run.stderr
    # vhs.json: strength 1.2, luma/chroma auto (both strengths 1.2 x those the noise suggests), centre weight
    # auto: "one" for this clip's light noise (0.3 levels)
    assert re.search(
        r"luma/chroma \(bt\d+\) exponential/one, h_Y = [\d.]+, h_UV = [\d.]+ \(.*VHS's strength: x1\.2\)", run.stderr
    ), run.stderr
    own = tmp_path / "own.json"
    own.write_text('{"h": 9, "patch_radius": 2, "search_radius": 2}')
    run = _cli("denoise", str(clip), str(tmp_path / "own.mkv"), "--codec", "ffv1", "--filter-preset", str(own))
    assert run.returncode == 0 and f"h = 9.0 ({own}'s; the noise suggests" in run.stderr  # its own h stands
    _one_clear_line(
        _cli("denoise", str(clip), str(tmp_path / "x.mkv"), "--filter-preset", "betamax"),
        "betamax: no such preset; the shipped ones are light, medium, strong, vhs, or give a .json file",
    )
    _one_clear_line(
        _cli("denoise", str(clip), str(tmp_path / "x.mkv"), "--filter-preset", "vhs", "--noise", "none"),
        "--filter-preset vhs sets h from the noise: give --h with --noise none",
    )
    assert not (tmp_path / "x.mkv").exists()


def test_an_explicit_h_is_said_to_be_yours_beside_the_one_the_noise_suggests(clip, tmp_path) -> None:
    run = _cli("denoise", str(clip), str(tmp_path / "out.mkv"), "--codec", "ffv1", "--h", "7")
    assert run.returncode == 0, run.stderr
    assert re.search(r"h = 7\.0 \(yours; the noise suggests \d+\.\d\)", run.stderr), run.stderr


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["bench", "--frames", "0"], "a count is a whole number >= 1, got '0'"),
        (["bench", "--repeats", "-3"], "a count is a whole number >= 1, got '-3'"),
        (["estimate-noise", "CLIP", "--frame", "-1"], "a frame number is a whole number >= 0, got '-1'"),
        (["estimate-noise", "CLIP", "--frames", "0"], "a count is a whole number >= 1, got '0'"),
        (["estimate-noise", "CLIP", "--frames", "-2"], "a count is a whole number >= 1, got '-2'"),
        (["estimate-noise", "CLIP", "--frame", "30"], "has 30 frames (0 to 29), but 3 consecutive frames"),
    ],
)
def test_nonsense_arguments_of_the_other_commands(clip, arguments, message) -> None:
    _one_clear_line(_cli(*[str(clip) if part == "CLIP" else part for part in arguments]), message)


@pytest.mark.parametrize(
    ("size", "arguments", "message"),
    [
        ((1, 1), [], "frames of 1x1 pixels are too small for the automatic noise estimate"),
        ((5, 7), [], "frames of 7x5 pixels are too small for the automatic noise estimate"),
        ((2, 2), ["--noise", "none"], "frames of 2x2 pixels are too small for search_radius 3 and patch_radius 4"),
        ((17, 33), ["--noise", "none"], "yuv420p keeps color at half resolution and needs an even width and height"),
        (
            (17, 33),
            ["--noise", "none", "--codec", "h265"],
            "but the clip is 33x17; use --codec ffv1 (lossless, any size), or crop it by a pixel first "
            "(ffmpeg -i IN -map 0:v -map 0:a? -map 0:s? -vf crop=32:16:0:0 -c:v ffv1 -c:a copy CROPPED.mkv)",
        ),
    ],
)
def test_odd_and_tiny_sizes_get_a_reason(tmp_path, size, arguments, message) -> None:
    source = write_clip(tmp_path, ClipSpec("tiny.mkv", "ffv1", pixel_format="bgr0", size=size, frames=4))
    _one_clear_line(_cli("denoise", str(source), str(tmp_path / "out.mp4"), *arguments), message)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["tiny.mkv"]


def test_an_odd_size_is_refused_before_the_noise_is_measured(tmp_path) -> None:
    """A restorer's odd-sized clip into .mp4 was measured first (the noise lines, a warning), then refused."""
    source = write_clip(tmp_path, ClipSpec("odd.mkv", "ffv1", pixel_format="bgr0", size=(35, 49), frames=4))
    run = _cli("denoise", str(source), str(tmp_path / "out.mp4"))
    _one_clear_line(run, "yuv420p keeps color at half resolution and needs an even width and height")
    assert "noise:" not in run.stderr and sorted(path.name for path in tmp_path.iterdir()) == ["odd.mkv"]


def test_odd_sizes_are_written_by_a_codec_that_takes_them(tmp_path) -> None:
    source = write_clip(tmp_path, ClipSpec("odd.mkv", "ffv1", pixel_format="bgr0", size=(17, 33), frames=4))
    run = _cli("denoise", str(source), str(tmp_path / "out.mkv"), "--codec", "ffv1", "--noise", "none",
               "--search-radius", "2", "--patch-radius", "1")  # fmt: skip
    assert run.returncode == 0, run.stderr
    with VideoReader(tmp_path / "out.mkv") as reader:
        assert (reader.info.width, reader.info.height, reader.info.frame_count) == (33, 17, 4)


@pytest.fixture(scope="module")
def long_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clip that takes the default filter seconds to denoise: time to signal every stage."""
    spec = ClipSpec("long.mkv", "ffv1", pixel_format="bgr0", frames=200)
    return write_clip(tmp_path_factory.mktemp("long"), spec)


def _read_until(child: subprocess.Popen, marker: str) -> str:
    """The child's stderr up to and including ``marker``; fails, with what it said, if it ends first."""
    error = ""
    while marker not in error:
        character = child.stderr.read(1)
        assert character, f"the run ended before {marker!r}:\n{error}"
        error += character
    return error


@pytest.mark.parametrize("stop", [signal.SIGHUP, signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("stage", ["importing", "estimating", "writing"])
def test_a_signal_at_any_stage_leaves_nothing_and_no_traceback(long_clip, tmp_path, stop, stage) -> None:
    """Sent while Python imports the engine, about when the noise is estimated, or once frames
    are being written (the progress bar shows)."""
    program = Path(sys.executable).parent / "nlmeans-studio"  # as a person runs it
    command = [str(program), "denoise", str(long_clip), str(tmp_path / "out.mkv")]
    # Python's start-up lists each import on stderr as it ends: the first stages wait for the
    # engine's. A signal inside Python's own start-up, before any of the program runs, is
    # CPython's fatal error (a fixed sleep got there on a busy machine).
    environment = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"} if stage != "writing" else None
    # The signals' default actions, whatever this test inherited (nohup or a background job would
    # leave the run ignoring SIGHUP or SIGINT, as it should: the next test).
    with subprocess.Popen(
        command, stderr=subprocess.PIPE, text=True, env=environment, preexec_fn=default_signals
    ) as child:
        error = _read_until(child, "frames (" if stage == "writing" else "nlmeans_studio.engine")
        time.sleep({"importing": 0.0, "estimating": 0.8, "writing": 0.0}[stage])
        child.send_signal(stop)
        error += child.stderr.read()
        status = child.wait(timeout=120)
    assert status in (130, -stop), error  # -stop: the signal came before Python could handle it
    assert "Traceback" not in error
    assert list(tmp_path.iterdir()) == []


def test_a_stop_python_drops_in_its_own_callback_still_stops_the_run(monkeypatch) -> None:
    """A signal handled while Python ran a callback of its own (here an object's ``__del__``; in the run
    above, an import lock's weak reference) raises where Python prints the exception and drops it: the
    estimate went on to a whole export, with a traceback on stderr."""
    printed = []
    monkeypatch.setattr(sys, "unraisablehook", printed.append)  # what Python would print
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)  # a run started with & ignores it
    stop = Stop()
    try:

        class Collected:
            def __init__(self, raises: Callable[[], None]) -> None:
                self.raises = raises

            def __del__(self) -> None:
                self.raises()

        Collected(lambda: signal.raise_signal(signal.SIGINT))
        assert printed == []
        Collected(lambda: int("x"))  # any other error is printed as before
        assert [type(dropped.exc_value) for dropped in printed] == [ValueError]
        with pytest.raises(KeyboardInterrupt):
            stop.start_exporting()
    finally:
        stop.restore()
        signal.signal(signal.SIGINT, inherited)
    assert sys.unraisablehook == printed.append


def _ignore_hangups() -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # what nohup does


def test_a_run_started_under_nohup_outlives_its_terminal(long_clip, tmp_path) -> None:
    # The run's own handlers made SIGHUP cancel an export that nohup had told to ignore it.
    program = Path(sys.executable).parent / "nlmeans-studio"
    command = [str(program), "denoise", str(long_clip), str(tmp_path / "out.mkv"), *FAST, "--codec", "ffv1"]
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True, preexec_fn=_ignore_hangups) as child:
        error = _read_until(child, "frames (")
        child.send_signal(signal.SIGHUP)
        error += child.stderr.read()
        status = child.wait(timeout=120)
    assert status == 0, error
    assert plain_pyav_numbers(tmp_path / "out.mkv") == list(range(200))


def test_a_truncated_mp4_is_reported_with_its_frame_count(tmp_path) -> None:
    source = write_clip(tmp_path, ClipSpec("whole.mp4", "libx264", frames=12, options={"x264-params": "keyint=4"}))
    with av.open(str(source)) as container, av.open(str(tmp_path / "faststart.mp4"), "w",
                                                    options={"movflags": "faststart"}) as out:  # fmt: skip
        stream = out.add_stream_from_template(container.streams.video[0])
        for packet in container.demux(container.streams.video[0]):
            if packet.size:
                packet.stream = stream
                out.mux(packet)
    data = (tmp_path / "faststart.mp4").read_bytes()
    (tmp_path / "cut.mp4").write_bytes(data[: len(data) * 6 // 10])
    run = _cli("denoise", str(tmp_path / "cut.mp4"), str(tmp_path / "out.mkv"), "--codec", "ffv1", *FAST)
    assert run.returncode == 0, run.stderr
    held = re.search(
        r"the file declares 12 frames but holds (\d+): it is truncated or damaged; it ends inside", run.stderr
    )
    assert held is not None, run.stderr
    assert plain_pyav_numbers(tmp_path / "out.mkv") == list(range(int(held[1])))  # the frames before the cut one


@pytest.mark.parametrize("suffix", [".avi", ".dv"])
def test_a_capture_cut_inside_a_frame_is_denoised_to_its_last_whole_frame(tmp_path, suffix) -> None:
    """A tape archivist's DV capture cut inside a frame was refused whole ("decoding stopped at
    frame 16"): its whole frames are written, each its own, and the cut one is said to be left out."""
    cut, whole = cut_short_dv(tmp_path, suffix)
    run = _cli("denoise", str(cut), str(tmp_path / "out.mkv"), "--codec", "ffv1", *FAST)
    assert run.returncode == 0, run.stderr
    assert "warning: " in run.stderr and "ends inside the frame at 0.167 s, which is left out" in run.stderr
    written, source = read_frames(tmp_path / "out.mkv"), read_frames(whole)
    assert len(written) == 5
    for number, frame in enumerate(written):
        errors = [np.mean((frame.astype(np.float64) - other) ** 2) for other in source]
        assert int(np.argmin(errors)) == number


def test_interlaced_video_is_said_to_be_filtered_as_progressive(tmp_path) -> None:
    # Tape captures (a DVD's MPEG-2, DV) are interlaced; a first-time user found the flag lost
    # without a word. The filter treats woven fields as one picture: the user is told so.
    interlaced = ClipSpec("tape.mkv", "mpeg2video", pixel_format="yuv420p", frames=6,
                          options={"flags": "+ilme+ildct", "top": "1"})  # fmt: skip
    source = write_clip(tmp_path, interlaced)
    run = _cli("denoise", str(source), str(tmp_path / "out.mkv"), "--codec", "ffv1", *FAST)
    assert run.returncode == 0, run.stderr
    assert "warning: " in run.stderr and "the video is interlaced: each frame's two fields are filtered" in run.stderr
    assert plain_pyav_numbers(tmp_path / "out.mkv") == plain_pyav_numbers(source)


# Interlaced captures made by the ffmpeg tool: the picture, the file, the options.
INTERLACED_SOURCES = {
    "prores tff": ("160x120:rate=30000/1001", "capture.mov", ["-vf", "setfield=tff", "-c:v", "prores_ks", "-pix_fmt",
                                                              "yuv422p10le"]),
    "dv": ("720x576:rate=25", "tape.dv", ["-c:v", "dvvideo", "-pix_fmt", "yuv420p"]),
}  # fmt: skip


@pytest.mark.parametrize(
    ("source", "output", "codec", "order"),
    [("prores tff", "out.mov", "prores", "tb"), ("prores tff", "out.mkv", "ffv1", "tb"),
     ("prores tff", "out.mp4", "h264", "tt"), ("dv", "out.mkv", "ffv1", "bb"), ("dv", "out.mp4", "h264", "bb")],
)  # fmt: skip
def test_interlaced_video_keeps_its_field_order(tmp_path, source, output, codec, order) -> None:
    """A VHS archivist's top-field-first capture came out tagged progressive (ffprobe's field_order), its
    frames still two fields each: the next tool would not deinterlace it. Made by the ffmpeg tool, which
    tags its ProRes "tb"; H.264 codes the fields top first, as FFmpeg's own x264 command (tff=1) does.
    A broadcast archivist's DV came out progressive too: FFmpeg leaves a DV stream's field order
    unknown, and standard-definition DV's fields come bottom first (IEC 61834)."""
    picture, name, options = INTERLACED_SOURCES[source]
    ffmpeg_pattern(tmp_path / name, f"testsrc2=size={picture}:duration=0.2", *options)
    run = _cli("denoise", str(tmp_path / name), str(tmp_path / output), "--codec", codec, *FAST)
    assert run.returncode == 0, run.stderr
    probed = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=field_order", "-of", "csv=p=0",
         str(tmp_path / output)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert probed.stdout.split() == [order], probed.stdout


def test_the_writer_and_the_reader_refuse_misuse_with_a_reason(clip, tmp_path) -> None:
    with VideoReader(clip) as reader:
        frame, info = reader.frame(0), reader.info
    with pytest.raises(VideoError, match=r"the reader is closed; open the file again"):
        reader.frame(1)
    writer = VideoWriter(tmp_path / "out.mkv", info, codec="ffv1")
    with pytest.raises(VideoError, match=r"frames must be 192x128, as the source, got 96x64"):
        writer.write(frame[::2, ::2])
    writer.write(frame)
    writer.close()
    with pytest.raises(VideoError, match=r"the writer is closed"):
        writer.write(frame)
    writer.close()  # idempotent
    assert plain_pyav_numbers(tmp_path / "out.mkv") == [0]


FRAMES = np.full((2, 32, 32, 3), 0.5, np.float32)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: Denoiser(NLMParams(h=10), "cpu").denoise_frame(None, 0), ValueError,
         "clip must be an array of frames or a sequence of them, got NoneType"),
        (lambda: Denoiser(NLMParams(h=10), "cpu").denoise_frame(FRAMES[:0], 0), ValueError, "clip holds no frame"),
        (lambda: Denoiser(NLMParams(h=10), "cpu").denoise_frame(FRAMES[:, :0], 0), ValueError,
         r"a frame must have at least 1x1 pixels, got shape \(0, 32, 3\)"),
        (lambda: list(Denoiser(NLMParams(h=10), "cpu").stream([None])), ValueError,
         "a frame must be an array of numbers, got None"),
        (lambda: Denoiser(NLMParams(h=10), "cpu").denoise_frame([["a"]], 0), ValueError,
         r"a frame must be an array of numbers, got an array of <U1 of shape \(1,\)"),
        (lambda: NLMParams(h=10, color_transform=[[1, 0, 0], [0, 1], [0, 0, 1]]), ValueError,
         r"color_transform must be None or a C x C matrix of numbers with C = 1 or 3, got '\[\[1, 0, 0\], \[0, 1\]"),
        (lambda: estimate_noise(FRAMES[:0]), ValueError, "frames must hold at least one frame of at least 1x1 pixels"),
        (lambda: estimate_noise([]), ValueError, r"frames must hold at least one frame .*, got shape \(0,\)"),
        (lambda: estimate_noise(None), ValueError, "a frame must be an array of numbers, got None"),
        (lambda: estimate_noise("abc"), ValueError, "a frame must be an array of numbers, got 'abc'"),
        (lambda: estimate_noise(FRAMES, roi=(1, 2, 3)), ValueError,
         r"roi must be \(x, y, width, height\) in whole pixels, like \(10, 20, 64, 64\), got \(1, 2, 3\)"),
        (lambda: estimate_noise(FRAMES, roi=(0, 0, float("nan"), 16)), ValueError, r"roi must be .*, got \(0, 0, nan"),
        (lambda: estimate_noise(FRAMES, roi="0,0,16,16"), ValueError, "roi must be .*, got '0,0,16,16'"),
        (lambda: suggest_h(None, NLMParams(h=1)), TypeError, "suggest_h takes a NoiseEstimate and NLMParams, got "),
        (lambda: VideoReader(None), TypeError, r"path must be a file name \(str or Path\), got NoneType 'None'"),
        (lambda: read_volume(None), TypeError, r"path must be a file name \(str or Path\), got NoneType 'None'"),
    ],
)  # fmt: skip
def test_the_public_api_says_what_it_takes_when_given_nonsense(call, error, message) -> None:
    """Each said numpy's or Python's own text ("list index out of range", "setting an array element
    with a sequence", "not enough values to unpack", "expected str, bytes or os.PathLike object")."""
    with pytest.raises(error, match=message):
        call()


def test_huge_float_values_are_refused_saying_where() -> None:
    clip = np.full((3, 20, 24, 3), 0.5, np.float32)
    clip[1, 5, 6, 2] = 1e20
    with pytest.raises(ValueError, match=r"got 1e\+20 at row 5, column 6, channel 2"):
        Denoiser(NLMParams(h=20, patch_radius=1, search_radius=1), "cpu").denoise_frame(clip, 1)


FUZZ_SOURCES = ["h264.mp4", "mpeg2.ts", "ffv1.mkv", "mjpeg.avi"]


@pytest.mark.timeout(240)
def test_fuzzed_files_give_frames_or_a_video_error_and_never_hang(tmp_path) -> None:
    """200 copies of small clips with bytes overwritten, cut or repeated (seed 0): opening and
    reading each gives its frames or one VideoError; no other exception, no hang."""
    specs = {
        "h264.mp4": ClipSpec("h264.mp4", "libx264", frames=20, options={"x264-params": "keyint=6:bframes=2"}),
        "mpeg2.ts": ClipSpec("mpeg2.ts", "mpeg2video", frames=20, gop=6, options={"bf": "2"}),
        "ffv1.mkv": ClipSpec("ffv1.mkv", "ffv1", pixel_format="bgr0", frames=20),
        "mjpeg.avi": ClipSpec("mjpeg.avi", "mjpeg", pixel_format="yuvj420p", frames=20),
    }
    originals = {name: write_clip(tmp_path, spec).read_bytes() for name, spec in specs.items()}
    rng = random.Random(0)
    outcomes = {"read": 0, "refused": 0}
    for number in range(200):
        name = FUZZ_SOURCES[number % len(FUZZ_SOURCES)]
        data = bytearray(originals[name])
        for _ in range(rng.randrange(1, 20)):
            kind, place = rng.randrange(3), rng.randrange(len(data))
            if kind == 0:
                data[place] = rng.randrange(256)
            elif kind == 1:
                del data[place : place + rng.randrange(1, 200)]
            else:
                data[place:place] = data[max(0, place - 100) : place]
        path = tmp_path / f"fuzz{number}{Path(name).suffix}"
        path.write_bytes(bytes(data))
        try:
            with VideoReader(path) as reader:
                for frame in reader.frames():
                    frame_number(frame)
                count = reader.info.frame_count
                for index in (count - 1, 0, count // 2):
                    reader.frame(index)
            outcomes["read"] += 1
        except VideoError:
            outcomes["refused"] += 1
        path.unlink()
    assert outcomes["read"] > 0 and outcomes["refused"] > 0, outcomes


@pytest.mark.parametrize(
    ("name", "codec", "message"),
    [
        ("out.xyz", "h264", "'.xyz' is not a container this tool writes; name the output .mkv, .mp4, .mov, .ts"),
        ("out", "h264", "a name without an extension is not a container this tool writes"),
        ("out.webm", "h264", "'.webm' is not a container this tool writes"),
        (
            "frame.png",
            "h264",
            "one image cannot hold a video; for an image sequence put the frame number's place in the name: "
            "frame%06d.png",
        ),
        ("out.avi", "h264", "a .avi file holds ffv1 here, not h264; choose .mkv, .mp4, .mov or .ts for h264, or"),
        (
            "out.mp4",
            "prores",
            "a .mp4 file holds h264, h265, h264-nvenc, h265-nvenc, ffv1 here, not prores; choose "
            ".mkv, .mov or .mxf for prores, or another --codec",
        ),
        ("out.mov", "ffv1", "a .mov file holds h264, h265, h264-nvenc, h265-nvenc, prores here, not ffv1"),
        ("out.ts", "prores", "a .ts file holds h264, h265, h264-nvenc, h265-nvenc here, not prores"),
    ],
)
def test_an_output_name_no_container_fits_is_refused_before_any_work_and_leaves_nothing(
    clip, tmp_path, name, codec, message
) -> None:
    # Found by a first-time user: '.xyz' gave FFmpeg's "Could not determine output format" after
    # the noise estimate had run, and left an empty hidden .part file; H.264 in AVI and ProRes in
    # MPEG-TS were written without an error and could not be decoded again.
    run = _cli("denoise", str(clip), str(tmp_path / name), "--codec", codec)  # with the noise estimate
    _one_clear_line(run, message)
    assert "noise:" not in run.stderr  # refused before the estimate
    assert list(tmp_path.iterdir()) == []
    with VideoReader(clip) as reader, pytest.raises(VideoError, match=re.escape(message)):
        VideoWriter(tmp_path / name, reader.info, codec=codec)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "codec"), [("out.avi", "ffv1"), ("out.ts", "h264"), ("out.mp4", "ffv1"), ("out.mxf", "prores")]
)
def test_every_container_writes_what_it_holds_frame_for_frame(clip, tmp_path, name, codec) -> None:
    run = _cli("denoise", str(clip), str(tmp_path / name), "--codec", codec, *FAST)
    assert run.returncode == 0, run.stderr
    assert plain_pyav_numbers(tmp_path / name) == list(range(30))


def test_a_file_ffmpeg_cannot_open_gives_one_line_in_our_words_and_verbose_shows_ffmpegs(tmp_path) -> None:
    # Found by a first-time user: FFmpeg's "[mov,mp4,.. @ 0x55..] moov atom not found" came first,
    # and the message carried PyAV's "[Errno 1094995529]".
    fake = _write(tmp_path / "fake.mp4", b"hello, world\n" * 300)
    run = _cli("denoise", str(fake), str(tmp_path / "out.mkv"))
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == [
        f"nlmeans-studio: error: {fake}: not a video file FFmpeg can read (Invalid data found when processing input)"
    ]
    verbose = _cli("denoise", str(fake), str(tmp_path / "out.mkv"), "--verbose")
    assert "moov atom not found" in verbose.stderr and verbose.returncode == 1


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--crf", "99"], "crf must be an integer in 0..51, got 99"),
        (["--preset", "quick"], "preset must be one of ultrafast"),
        (["--rgb", "--codec", "h264"], "RGB output is for the ffv1 codec, got 'h264'"),
    ],
)
def test_encoding_options_are_refused_before_the_noise_estimate(clip, tmp_path, extra, message) -> None:
    run = _cli("denoise", str(clip), str(tmp_path / "out.mkv"), *extra)
    _one_clear_line(run, message)
    assert "noise:" not in run.stderr and list(tmp_path.iterdir()) == []


def _address_space(megabytes: int, kind: int = resource.RLIMIT_AS):
    """A child's ``preexec_fn``: at most ``megabytes`` of address space, as ``ulimit -v`` sets
    (or of ``kind``: RLIMIT_DATA, as ``ulimit -d`` sets)."""

    def limit() -> None:
        resource.setrlimit(kind, (megabytes << 20, megabytes << 20))

    return limit


def _short_run(command: str, folder: Path, clip: Path, megabytes: int, threads: int) -> subprocess.CompletedProcess:
    """``command`` on a small clip or a 100 x 200 x 200 float32 volume, on the CPU with ``threads``
    threads, under an address-space limit."""
    if command == "denoise":
        arguments = [str(clip), str(folder / "out.mkv"), *FAST]
    else:
        volume = np.random.default_rng(1).normal(100, 10, (100, 200, 200)).astype(np.float32)
        np.save(folder / "in.npy", volume)
        arguments = [str(folder / "in.npy"), str(folder / "out.npy"), "--h", "10", "--search-radius", "1",
                     "--patch-radius", "1"]  # fmt: skip
    environment = {**os.environ, "NUMBA_NUM_THREADS": str(threads)}
    return subprocess.run([*CLI, command, *arguments, "--backend", "cpu"], capture_output=True, text=True,
                          timeout=120, env=environment, preexec_fn=_address_space(megabytes))  # fmt: skip


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="address-space limits as Linux counts them")
@pytest.mark.parametrize("command", ["denoise", "denoise-volume"])
@pytest.mark.parametrize(("megabytes", "way_out"), [(250, "raise the limit (ulimit -v)"), (600, "NUMBA_NUM_THREADS=")])
def test_a_run_short_of_address_space_says_so_and_what_to_lower(clip, tmp_path, command, megabytes, way_out) -> None:
    """Under ``ulimit -v`` a run failed wherever its next mapping fell: 'libllvmlite.so' not found,
    the clip 'cannot be read: Resource temporarily unavailable', libgomp's exit, a traceback, or
    (600 MB, this volume, a thread a CPU of a big machine: 64 here) no end at all."""
    run = _short_run(command, tmp_path, clip, megabytes, threads=64)
    _one_clear_line(run, "error: not enough memory for this run: it needs about ")
    assert way_out in run.stderr.splitlines()[-1]
    assert not any(path.name.startswith(("out", ".")) for path in tmp_path.iterdir())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="address-space limits as Linux counts them")
def test_a_run_that_fits_its_address_space_runs(clip, tmp_path) -> None:
    # Under the limit the threads share malloc's arenas (8 MB of address space each, not 72).
    run = _short_run("denoise-volume", tmp_path, clip, 1000, threads=16)
    assert run.returncode == 0, run.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="address-space limits as Linux counts them")
def test_an_export_whose_frames_do_not_fit_says_so_before_the_first_frame(tmp_path) -> None:
    """A 1080p window of five frames under 800 MB ended mid-run in NumPy's 'Unable to allocate
    71.8 MiB for an array with shape (3, 3, 1086, 1926)', with no word of what to lower."""
    spec = ClipSpec("hd.mkv", "ffv1", pixel_format="bgr0", size=(1080, 1920), frames=3)
    source = write_clip(tmp_path, spec)
    command = [*CLI, "denoise", str(source), str(tmp_path / "out.mkv"), "--backend", "cpu", "--noise", "none",
               "--frames-past", "2", "--frames-future", "2"]  # fmt: skip
    environment = {**os.environ, "NUMBA_NUM_THREADS": "2"}
    run = subprocess.run(command, capture_output=True, text=True, timeout=120, env=environment,
                         preexec_fn=_address_space(800))  # fmt: skip
    _one_clear_line(run, "error: not enough memory for this run: it needs about ")
    assert "use a smaller temporal window (frames_past, frames_future)" in run.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["hd.mkv"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="address-space limits as Linux counts them")
@pytest.mark.parametrize("command", ["estimate-noise", "denoise-volume"])
def test_a_noise_estimate_short_of_memory_says_what_to_lower(tmp_path, command) -> None:
    """The volume's noise estimate (float64 copies: about 900 MB for this 40 MB volume) under
    500 MB ended in NumPy's bare 'Unable to allocate 77.5 MiB', or in a traceback where a
    thread could not start."""
    volume = np.random.default_rng(2).normal(100, 10, (64, 256, 640)).astype(np.float32)
    np.save(tmp_path / "in.npy", volume)
    command_line = [*CLI, command, str(tmp_path / "in.npy")]
    if command == "denoise-volume":
        command_line += [str(tmp_path / "out.npy"), "--backend", "cpu"]
    run = subprocess.run(command_line, capture_output=True, text=True, timeout=120, preexec_fn=_address_space(500))
    _one_clear_line(run, "out of memory (")
    last = run.stderr.splitlines()[-1]
    assert "crop the volume, or raise the limit (ulimit -v)" in last
    assert command == "estimate-noise" or last.endswith("give --h instead")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="data limits as Linux counts them")
@pytest.mark.parametrize("megabytes", [120, 150, 200])
def test_a_volume_run_short_of_its_data_limit_says_what_to_lower(tmp_path, megabytes) -> None:
    """Under ``ulimit -d`` (heap, stacks and private mappings) a volume run ended in a bare
    'error: ' (numba's import finding no room), in a traceback ('can't start new thread', the
    next slab's reader), or in NumPy's 'Unable to allocate 45.8 MiB' with no way out."""
    np.save(tmp_path / "in.npy", np.random.default_rng(1).normal(100, 10, (100, 200, 200)).astype(np.float32))
    command = [*CLI, "denoise-volume", str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--backend", "cpu",
               "--h", "10", "--search-radius", "1"]  # fmt: skip
    environment = {**os.environ, "NUMBA_NUM_THREADS": "2"}
    run = subprocess.run(command, capture_output=True, text=True, timeout=120, env=environment,
                         preexec_fn=_address_space(megabytes, resource.RLIMIT_DATA))  # fmt: skip
    _one_clear_line(run, "error: out of memory")
    assert run.stderr.splitlines()[-1].endswith("or raise the limit (ulimit -d)")


def _system_error_around_memory_error() -> None:
    try:
        raise MemoryError("Unable to allocate 45.8 MiB")
    except MemoryError as error:
        raise SystemError("<built-in function empty> returned a result with an exception set") from error


def _no_memory_for_a_file() -> None:
    raise OSError(errno.ENOMEM, "Cannot allocate memory", "site-packages/numba/core/rewrites")


@pytest.mark.parametrize("failure", [_system_error_around_memory_error, _no_memory_for_a_file])
def test_running_out_of_memory_inside_c_code_is_said_as_out_of_memory(monkeypatch, capsys, tmp_path, failure) -> None:
    """Under ulimit -d the volume run ended in a traceback or a bare "Cannot allocate memory": C code
    short of memory surfaced as a SystemError around the MemoryError, or an import as ENOMEM."""
    import importlib

    command_line = importlib.import_module("nlmeans_studio.engine.cli.main")

    def short_of_memory(args) -> int:
        failure()

    monkeypatch.setattr(command_line, "_denoise_volume", short_of_memory)
    np.save(tmp_path / "in.npy", np.zeros((8, 8, 8), np.float32))
    assert command_line.main(["denoise-volume", str(tmp_path / "in.npy"), str(tmp_path / "out.npy")]) == 1
    error = capsys.readouterr().err
    assert error.startswith("nlmeans-studio: error: out of memory") and "Traceback" not in error


def test_a_y4m_stream_with_a_duration_past_the_lookahead_has_its_noise_estimated_on_it(tmp_path) -> None:
    """A duration past the LOOKAHEAD frames a pipe keeps was an IndexError from the noise estimate."""
    run = subprocess.run(
        [*CLI, "denoise", "-", str(tmp_path / "out.mkv"), "--codec", "ffv1", "--duration", "1"],
        input=_y4m(frames=30),
        capture_output=True,
    )
    assert run.returncode == 0, run.stderr.decode()
    with VideoReader(tmp_path / "out.mkv") as reader:
        assert reader.info.frame_count == 25


@pytest.mark.parametrize("order", ["t", "b"])
def test_an_interlaced_y4m_stream_is_said_to_be_filtered_as_progressive(tmp_path, order) -> None:
    """A file flagged interlaced was warned about, the same stream on standard input was not."""
    run = subprocess.run(
        [*CLI, "denoise", "-", str(tmp_path / "out.mkv"), *FAST],
        input=_y4m(f"W32 H32 F25:1 I{order} C420jpeg"),
        capture_output=True,
    )
    assert run.returncode == 0, run.stderr.decode()
    assert "warning: -: the video is interlaced: each frame's two fields are filtered as one" in run.stderr.decode()


def test_24_bit_pcm_into_mp4_is_said_to_be_misread_by_older_readers(tmp_path) -> None:
    """An archivist's 24-bit PCM, copied into .mp4 as 'ipcm', read as 16-bit noise in FFmpeg 5.1:
    the command said nothing; into .mov it is kept as it is, and nothing is said."""
    source = clip_with_audio(tmp_path / "a.mov", "pcm_s24le", 48000, "prores_ks", "yuv422p10le")
    run = _cli("denoise", str(source), str(tmp_path / "out.mp4"), *FAST)
    assert run.returncode == 0, run.stderr
    assert f"warning: {tmp_path / 'out.mp4'}: the audio is copied unchanged, but a .mp4 file keeps PCM audio " in (
        run.stderr
    )
    run = _cli("denoise", str(source), str(tmp_path / "out.mov"), *FAST)
    assert run.returncode == 0 and "ipcm" not in run.stderr, run.stderr  # (its 4:2:2 written 4:2:0 is said)
    with av.open(str(tmp_path / "out.mov")) as output:
        assert [stream.codec_context.name for stream in output.streams.audio] == ["pcm_s24le"]
    # 16-bit little-endian PCM is what those readers take 'ipcm' for: it comes back as it was.
    source = clip_with_audio(tmp_path / "b.mov", "pcm_s16le", 48000, "prores_ks", "yuv422p10le")
    run = _cli("denoise", str(source), str(tmp_path / "out16.mp4"), *FAST)
    assert run.returncode == 0 and "ipcm" not in run.stderr, run.stderr


def test_mxf_output_of_audio_it_cannot_hold_is_refused_before_any_work(tmp_path) -> None:
    """AAC audio failed at the end of the run: "[pcm_rechunk] Codec 'aac' ... is not supported",
    then "'.0742e491bef2.part.mxf' returned 22"; 48 kHz PCM is copied."""
    source = clip_with_audio(tmp_path / "aac.mkv", "aac", 48000)
    run = _cli("denoise", str(source), str(tmp_path / "out.mxf"), "--codec", "ffv1")  # the noise estimate too
    _one_clear_line(run, "out.mxf: a .mxf file holds 48 kHz PCM audio only (pcm_s16le, pcm_s24le), no subtitles, ")
    assert "are aac at 48000 Hz; write .mkv, or convert the source's audio first (ffmpeg -i" in run.stderr
    assert "noise:" not in run.stderr and sorted(path.name for path in tmp_path.iterdir()) == ["aac.mkv"]
    with VideoReader(source) as reader, pytest.raises(VideoError, match=r"out\.mxf: a \.mxf file holds 48 kHz PCM"):
        VideoWriter(tmp_path / "out.mxf", reader.info, codec="prores")
    source = clip_with_audio(tmp_path / "pcm.mkv", "pcm_s16le", 48000)
    assert _cli("denoise", str(source), str(tmp_path / "out.mxf"), "--codec", "ffv1", *FAST).returncode == 0
    with av.open(str(tmp_path / "out.mxf")) as output:
        assert [stream.codec_context.name for stream in output.streams.audio] == ["pcm_s16le"]


@pytest.mark.parametrize(
    ("audio", "subtitles", "suffix", "message"),
    [
        ("libopus", None, ".mov", "a .mov file cannot hold the source's opus audio, copied unchanged; write .mkv, "
         ".mp4 or .ts, which hold them, then convert them for .mov (ffmpeg -i OUT.mkv -map 0:v -map 0:a? -map "
         "0:s? -c copy -c:a aac OUT.mov)"),
        ("aac", "mov_text", ".mkv", "a .mkv file cannot hold the source's mov_text subtitles, copied unchanged; "
         "write .mp4 or .mov, which hold them, then convert them for .mkv (ffmpeg -i OUT.mp4 -map 0:v -map 0:a? "
         "-map 0:s? -c copy -c:s srt OUT.mkv)"),
        ("aac", "srt", ".ts", "a .ts file cannot hold the source's srt subtitles, copied unchanged; write .mkv, "
         "which holds them, then leave them out for .ts (ffmpeg -i OUT.mkv -map 0:v -map 0:a? -c copy OUT.ts)"),
    ],
)  # fmt: skip
def test_an_output_that_cannot_hold_the_sources_other_streams_is_refused_before_any_work(
    tmp_path, audio, subtitles, suffix, message
) -> None:
    """A web video's Opus into .mov failed at the end of the run ("writing failed: Invalid argument"); a
    phone's mov_text subtitles into .mkv failed at the start with no way out; text subtitles into .ts
    came out as data no player shows. Each is refused before any work, naming the containers that
    hold the streams and FFmpeg's command that converts them afterwards (converting the source
    first fails where the container cannot hold its picture either: VP9 in MOV)."""
    source = tmp_path / ("source.mp4" if subtitles == "mov_text" else "source.mkv")
    text = tmp_path / "words.srt"
    text.write_text("1\n00:00:00,000 --> 00:00:00,400\nhello\n")
    caption = ["-i", str(text), "-map", "0:v", "-map", "1:a", "-map", "2", "-c:s", subtitles] if subtitles else []
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-f", "lavfi", "-i",
         "sine=r=48000", *caption, "-t", "0.5", "-c:v", "libx264", "-c:a", audio, str(source)],
        check=True, timeout=60,
    )  # fmt: skip
    run = _cli("denoise", str(source), str(tmp_path / f"out{suffix}"), *FAST)
    _one_clear_line(run, f"out{suffix}: {message}")
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr  # not FFmpeg's "[mov @ 0x..] opus only ..."
    assert "noise:" not in run.stderr and sorted(path.name for path in tmp_path.iterdir()) == sorted(
        [source.name, text.name]
    )


def _with_a_repeated_audio_time(source: Path, target: Path) -> Path:
    """``source`` remuxed with its third audio packet given the time of the second, as a DVD's AC3 had it."""
    with av.open(str(source)) as given, av.open(str(target), "w") as remuxed:
        streams = {stream.index: remuxed.add_stream_from_template(stream) for stream in given.streams}
        audio, last = 0, None
        for packet in given.demux():
            if packet.dts is None:
                continue
            if packet.stream.type == "audio":
                audio += 1
                if audio == 3:
                    packet.pts = packet.dts = last
                last = packet.dts
            packet.stream = streams[packet.stream.index]
            remuxed.mux(packet)
    return target


def test_an_audio_packet_of_a_repeated_time_is_copied_into_mp4(tmp_path) -> None:
    """An archivist's DVD .mpg into .mp4 failed after the whole run ("non monotonically increasing dts",
    then "'.db04e647f072.part.mp4' returned 22") and left its hidden file: MP4 refuses a packet whose
    time is not after the one before; FFmpeg's own command moves it one tick later, as this does."""
    source = _with_a_repeated_audio_time(clip_with_audio(tmp_path / "a.mkv", "ac3", 48000), tmp_path / "dvd.mkv")
    run = _cli("denoise", str(source), str(tmp_path / "out.mp4"), *FAST)
    assert run.returncode == 0, run.stderr
    with av.open(str(source)) as given, av.open(str(tmp_path / "out.mp4")) as written:
        audio = given.demux(given.streams.audio[0])  # with the packet leading into frame 0: MP4 holds times before 0
        kept = [packet for packet in audio if packet.dts is not None and packet.pts + packet.duration >= 0]
        copied = [packet for packet in written.demux(written.streams.audio[0]) if packet.dts is not None]
        assert [bytes(packet) for packet in copied] == [bytes(packet) for packet in kept]
        assert all(later.dts > earlier.dts for earlier, later in itertools.pairwise(copied))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a.mkv", "dvd.mkv", "out.mp4"]


def test_a_packet_the_muxer_refuses_at_the_end_leaves_nothing_behind(tmp_path, monkeypatch) -> None:
    """Whatever fails while the last packets go in, the hidden file is removed and one VideoError says why."""
    from nlmeans_studio.engine.media import copied_streams

    def refused(self, mux) -> None:
        raise av.error.FFmpegError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(copied_streams.CopiedStreams, "copy", refused)
    source = clip_with_audio(tmp_path / "a.mkv", "ac3", 48000)
    with pytest.raises(av.error.FFmpegError):
        denoise_file(source, tmp_path / "out.mp4", NLMParams(h=20, patch_radius=1, search_radius=1), backend="cpu")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a.mkv"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "tape-07.mp4: no such file"),
        (["--search-radius", "500"], "--search-radius must be an integer in 0..16, got 500"),
        (["--codec", "prores"], "out.mp4: a .mp4 file holds h264, h265, h264-nvenc, h265-nvenc, ffv1 here, not prores"),
        (["--start", "30"], "a.mkv: no frames between 30 s and the end of the clip"),
    ],
)
def test_what_is_wrong_is_said_before_an_output_that_exists(tmp_path, extra, message) -> None:
    """The archivist's mistyped input, a radius of 500, ProRes into .mp4 or a start past the clip's
    end answered only "out.mp4: exists; pass --overwrite", and what was wrong once --overwrite was
    added."""
    (tmp_path / "out.mp4").write_bytes(b"an earlier export")
    source = tmp_path / "tape-07.mp4" if not extra else clip_with_audio(tmp_path / "a.mkv", "aac", 48000)
    run = _cli("denoise", str(source), str(tmp_path / "out.mp4"), *extra)
    _one_clear_line(run, message)
    assert "exists; pass --overwrite" not in run.stderr
    assert (tmp_path / "out.mp4").read_bytes() == b"an earlier export"


def test_a_range_running_past_the_end_says_how_much_there_is(tmp_path) -> None:
    """--start 7.5 --duration 1 on an 8 s DVD file wrote half a second without a word."""
    source = clip_with_audio(tmp_path / "a.mkv", "aac", 48000)
    frames = len(read_frames(source))
    run = _cli("denoise", str(source), str(tmp_path / "out.mkv"), "--codec", "ffv1", "--h", "5", "--noise", "none",
               "--start", "0.04", "--duration", "5")  # fmt: skip
    assert run.returncode == 0, run.stderr
    written = len(read_frames(tmp_path / "out.mkv"))
    assert f"warning: {source}: the clip lasts " in run.stderr and f"s asked for ({written} frames)" in run.stderr
    assert written < frames
    whole = _cli("denoise", str(source), str(tmp_path / "all.mkv"), "--codec", "ffv1", "--h", "5", "--noise", "none",
                 "--duration", "0.05")  # fmt: skip
    assert whole.returncode == 0 and "the clip lasts" not in whole.stderr


@pytest.mark.parametrize("how", ["truncated", "holed"])
def test_damaged_frames_are_named_after_an_export_not_passed_silently(tmp_path, how) -> None:
    """An archivist's truncated DVD rip exported its damaged last frame without a word (only
    FFmpeg's own 'ac-tex damaged' line): the frames the decoder filled in are named."""
    source, flagged = damaged_dvd(tmp_path, how)
    with VideoReader(source) as reader:
        count = len(list(reader.frames()))
        assert reader.damaged_frames == tuple(flagged)
    output = tmp_path / "out.mkv"
    run = subprocess.run(
        [*CLI, "denoise", str(source), str(output), "--codec", "ffv1", "--h", "5", "--noise", "none",
         "--search-radius", "1", "--patch-radius", "1", "--frames-past", "0", "--frames-future", "0"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert len(read_frames(output)) == count
    numbers = ", ".join(str(n + 1) for n in flagged[:5])
    said = f"warning: {source}: {len(flagged)} frame{'s' if len(flagged) > 1 else ''} of the source"
    assert said in run.stderr
    assert f"(frame{'s' if len(flagged) > 1 else ''} {numbers}" in run.stderr
    assert "Traceback" not in run.stderr
    clean = denoise_file(
        source, tmp_path / "before.mkv", NLMParams(h=5.0, search_radius=1, patch_radius=1, frames_past=0,
        frames_future=0), codec="ffv1", frames=range(0, flagged[0]),
    )  # fmt: skip
    assert clean.damaged_frames == () and clean.damage_warning is None  # a range before them: none to say
