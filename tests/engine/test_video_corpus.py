"""The reader on files other encoders and muxers wrote: every frame FFmpeg plays, exactly.

Each clip of ``media_corpus.CORPUS`` (and a few damaged ones) carries its frame numbers in its
pixels. For each: the frame count equals plain PyAV's sequential decode, sequential reading
gives its frames in order, random access in several orders gives the frame asked for, and
``denoise`` with its defaults writes every frame, in order.
"""

from __future__ import annotations

import fcntl
import io
import os
import random
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

av = pytest.importorskip("av", reason="PyAV is not installed (the GPU machine has none)")

from clips import CLI, run_cli  # noqa: E402
from media_corpus import CORPUS, ClipSpec, frame_number, plain_pyav_numbers, write_clip  # noqa: E402

from nlmeans_studio.engine.media.ffmpeg import VideoError  # noqa: E402
from nlmeans_studio.engine.media.reader import VideoReader  # noqa: E402
from nlmeans_studio.engine.video.export import denoise_file  # noqa: E402
from nlmeans_studio.engine.video.params import NLMParams  # noqa: E402

SPECS = {spec.name: spec for spec in CORPUS}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpus, written once a test run (the first test process to ask writes it for the others,
    which wait for it: 10 s of two cores each), plus damaged copies: truncated files and transport
    streams cut in the middle of a GOP (a broadcast capture), and a raw H.264 stream (no timestamps)."""
    run = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        run = run.parent  # the run's folder, above each worker's own
    folder = run / "corpus"
    with open(run / "corpus.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "complete").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            _write_corpus(folder)
            (folder / "complete").touch()
    return folder


def _write_corpus(folder: Path) -> None:
    for spec in CORPUS:
        write_clip(folder, spec)
    for name in ("h264.mkv", "mpeg2.ts", "hevc10.mkv"):
        data = (folder / name).read_bytes()
        (folder / f"truncated-{name}").write_bytes(data[: len(data) * 2 // 3])
    for name in ("h264.ts", "mpeg2.ts"):
        data = (folder / name).read_bytes()
        (folder / f"midgop-{name}").write_bytes(data[len(data) // 3 // 188 * 188 :])  # whole TS packets
    write_clip(folder, ClipSpec("raw.h264", "libx264", container="h264", options={"x264-params": "keyint=24"}))
    write_clip(folder, ClipSpec("wrap.ts", "mpeg2video", gop=15, options={"bf": "2"}, first_pts=2**33 // 3600 - 30))


DAMAGED = ["truncated-h264.mkv", "truncated-mpeg2.ts", "truncated-hevc10.mkv", "midgop-h264.ts", "midgop-mpeg2.ts"]
ALL_FILES = [*SPECS, *DAMAGED, "raw.h264", "wrap.ts"]


def _numbers(reader: VideoReader, order: list[int]) -> list[int]:
    return [frame_number(reader.frame(index)) for index in order]


@pytest.mark.parametrize("name", ALL_FILES)
def test_every_frame_is_read_exactly_in_any_order(corpus: Path, name: str) -> None:
    """Random access gives, bit for bit, the frame sequential decoding gives: a frame decoded
    from a keyframe it cannot be decoded from (an open GOP's leading pictures) would differ. A file
    that ends inside a frame (the truncated transport stream) leaves that one frame out, and says so."""
    path = corpus / name
    truth = plain_pyav_numbers(path)  # frame n is the n-th frame FFmpeg's sequential decode presents
    assert len(truth) > 0
    with VideoReader(path) as reader:
        count = reader.info.frame_count
        sequential = list(reader.frames())
        numbers = [frame_number(frame) for frame in sequential]
        if "which is left out" in reader.info.warning:
            assert len(set(truth) - set(numbers)) == 1  # the frame the file ends inside, FFmpeg's part of a picture
            truth = [number for number in truth if number in numbers]
        assert count == len(truth) and numbers == truth
        last_gop = list(range(max(0, count - 12), count))
        rng = random.Random(name)
        orders = [
            [0, 1, 2],
            [0, *last_gop],  # from the start straight to the end
            list(range(count - 1, -1, -1)),  # backwards, every frame
            [rng.randrange(count) for _ in range(12)],
            [count // 2, count // 2 + 1, count // 2 - 1, 0, count - 1],
        ]
        for order in orders:
            for index in order:
                assert np.array_equal(reader.frame(index), sequential[index]), (order, index)
        assert [frame_number(frame) for frame in reader.frames(count // 2)] == truth[count // 2 :]


@pytest.mark.parametrize("name", ["mpeg2.vob", "h264-bframes.mp4", "midgop-mpeg2.ts", "mpeg4-bframes.avi"])
def test_frames_from_the_middle_start_exactly_there(corpus: Path, name: str) -> None:
    truth = plain_pyav_numbers(corpus / name)
    with VideoReader(corpus / name) as reader:
        for start in (1, 13, len(truth) - 1):
            assert [frame_number(frame) for frame in reader.frames(start)] == truth[start:]


# What this checks of PyAV, other tests check on every PyAV .ci/run tries: each file's reading
# (test_every_frame_is_read_exactly_in_any_order) and the default codec's writing, 8- or 10-bit
# 4:2:0 for all of them (test_y4m_pipes_in_and_out, tests/engine/test_export.py).
@pytest.mark.pyav_once
@pytest.mark.parametrize(
    "name",
    ["h264-bframes.mp4", "h264-ntsc.mp4", "mpeg2.ts", "mpeg2.vob", "mpeg4-bframes.avi", "prores.mov", "dv.avi",
     "mjpeg.avi", "hevc.mp4", "midgop-h264.ts"],
)  # fmt: skip
def test_denoise_with_its_defaults_writes_every_frame_in_order(corpus: Path, tmp_path: Path, name: str) -> None:
    output = tmp_path / "out.mkv"
    run = run_cli(
        [*CLI, "denoise", str(corpus / name), str(output), "--quiet", "--backend", "cpu"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr
    assert plain_pyav_numbers(output) == plain_pyav_numbers(corpus / name)


def test_a_partial_export_keeps_sound_in_sync(corpus: Path, tmp_path: Path) -> None:
    """2 s from second 1 of a VOB (MPEG-2 with MP2 sound, starting at 0.54 s on its clock): the
    sound starts with the picture, within one audio frame, and lasts as long."""
    source, output = corpus / "mpeg2.vob", tmp_path / "part.mkv"
    params = NLMParams(h=20, patch_radius=1, search_radius=1, frames_past=0, frames_future=0)
    summary = denoise_file(source, output, params, backend="cpu", codec="ffv1", start=1.0, duration=1.2)
    assert summary.frames == 30  # 25 fps
    assert plain_pyav_numbers(output) == list(range(25, 55))
    with av.open(str(output)) as container:
        audio = container.streams.audio[0]
        packets = [packet for packet in container.demux(audio) if packet.size]
        frame_seconds = packets[0].duration * audio.time_base  # one MP2 frame: 1152 samples, 24 ms
        first = packets[0].pts * audio.time_base
        end = (packets[-1].pts + packets[-1].duration) * audio.time_base
    assert 0 <= first <= frame_seconds
    assert end == pytest.approx(1.2, abs=float(frame_seconds))


@pytest.mark.parametrize(
    ("source", "codec", "rgb", "pixel_format"),
    [
        ("prores.mov", "prores", False, "yuv422p10le"),  # ProRes 422 stays 422, not 4444
        ("prores.mov", "ffv1", False, "yuv422p10le"),  # 10-bit 4:2:2 stays so in FFV1, not 16-bit RGB
        ("prores.mov", "ffv1", True, "gbrp16le"),  # unless RGB is asked for
        ("h264-bframes.mp4", "ffv1", False, "yuv420p"),
        ("dv.avi", "ffv1", False, "yuv411p"),
        ("h264-bframes.mp4", "prores", False, "yuv422p10le"),  # ProRes has no 8-bit 4:2:0
        ("ffv1.mkv", "ffv1", False, "bgr0"),  # RGB stays RGB
    ],
)
def test_lossless_and_mastering_outputs_keep_the_sources_sampling(
    corpus: Path, tmp_path: Path, source: str, codec: str, rgb: bool, pixel_format: str
) -> None:
    output = tmp_path / "out.mkv"
    params = NLMParams(h=10, patch_radius=1, search_radius=1, frames_past=0, frames_future=0)
    denoise_file(corpus / source, output, params, backend="cpu", codec=codec, rgb=rgb, duration=0.2)
    with av.open(str(output)) as container:
        assert container.streams.video[0].codec_context.pix_fmt == pixel_format
    assert plain_pyav_numbers(output)[:3] == plain_pyav_numbers(corpus / source)[:3]


def test_rgb_output_is_refused_for_codecs_that_subsample(corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(VideoError, match=r"RGB output is for the ffv1 codec, got 'h264'"):
        denoise_file(corpus / "mjpeg.avi", tmp_path / "out.mp4", NLMParams(h=10), backend="cpu", rgb=True)


def test_nvenc_encodes_where_the_gpu_has_an_encoder_and_is_refused_clearly_elsewhere(
    corpus: Path, tmp_path: Path
) -> None:
    """This machine has no NVIDIA encoder (an H100 has none either): refused before any work."""
    output = tmp_path / "out.mp4"
    run = run_cli(
        [*CLI, "denoise", str(corpus / "mjpeg.avi"), str(output), "--codec",
         "h265-nvenc", "--noise", "none", "--quiet", "--duration", "0.2"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if run.returncode == 0:
        assert plain_pyav_numbers(output) == list(range(5))
    else:
        assert "h265-nvenc: this machine has no NVIDIA video encoder it can use" in run.stderr
        assert "Traceback" not in run.stderr and not output.exists() and not list(tmp_path.iterdir())


def test_verbose_shows_ffmpegs_warnings(corpus: Path, tmp_path: Path) -> None:
    """FFV1 notes that it codes a 10-bit source with its range coder, and --verbose shows it."""
    command = [*CLI, "denoise", str(corpus / "hevc10.mkv"), str(tmp_path / "out.mkv"),
               "--noise", "none", "--quiet", "--duration", "0.2", "--codec", "ffv1"]  # fmt: skip
    quiet = run_cli(command, capture_output=True, text=True, timeout=120)
    verbose = subprocess.run([*command, "--overwrite", "--verbose"], capture_output=True, text=True, timeout=120)
    assert quiet.returncode == verbose.returncode == 0
    assert "forcing range coder" not in quiet.stderr and "forcing range coder" in verbose.stderr


@pytest.mark.parametrize("extension", [".png", ".tif", ".dpx", ".exr"])
def test_image_sequences_in_and_out(corpus: Path, tmp_path: Path, extension: str) -> None:
    """10-bit ProRes to a 16-bit image sequence (EXR: float), read back as a clip of its own."""
    output = tmp_path / "scans" / f"frame%04d{extension}"
    output.parent.mkdir()
    params = NLMParams(h=10, patch_radius=1, search_radius=1, frames_past=0, frames_future=0)
    denoise_file(corpus / "prores.mov", output, params, backend="cpu", duration=0.4)
    assert sorted(path.name for path in output.parent.iterdir()) == [f"frame{n:04d}{extension}" for n in range(1, 11)]
    with VideoReader(output) as reader:
        assert reader.info.frame_count == 10 and reader.info.dtype == (np.float32 if extension == ".exr" else np.uint16)
        assert [frame_number(frame) for frame in reader.frames()] == list(range(10))
        assert _numbers(reader, [9, 0, 4]) == [9, 0, 4]
    with pytest.raises(VideoError, match=r"images of this sequence exist; pass --overwrite"):
        denoise_file(corpus / "prores.mov", output, params, backend="cpu", duration=0.4)


def test_an_image_sequence_written_by_ffmpeg_is_read_exactly(corpus: Path, tmp_path: Path) -> None:
    with av.open(str(corpus / "h264.mkv")) as source, av.open(str(tmp_path / "%03d.png"), "w", format="image2") as out:
        stream = out.add_stream("png", rate=25)
        stream.width, stream.height, stream.pix_fmt = 192, 128, "rgb24"
        for frame in source.decode(video=0):
            out.mux(stream.encode(frame.reformat(format="rgb24")))
    with VideoReader(tmp_path / "%03d.png") as reader:
        assert reader.info.frame_count == 75
        assert _numbers(reader, [74, 0, 37, 36]) == [74, 0, 37, 36]
    with pytest.raises(VideoError, match=r"%04d.png: no images of this sequence exist"):
        VideoReader(tmp_path / "%04d.png")


def _y4m(source: Path) -> bytes:
    """``source``'s frames as a 10-bit y4m stream, as ``ffmpeg -f yuv4mpegpipe -strict -1`` writes it."""
    buffer = io.BytesIO()
    with av.open(str(source)) as clip, av.open(buffer, "w", format="yuv4mpegpipe", options={"strict": "-1"}) as out:
        stream = out.add_stream("wrapped_avframe", rate=25)
        stream.width, stream.height, stream.pix_fmt = 192, 128, "yuv420p10le"
        for number, frame in enumerate(clip.decode(video=0)):
            frame.pts, frame.time_base = number, Fraction(1, 25)
            out.mux(stream.encode(frame))
    return buffer.getvalue()


def _y4m_numbers(data: bytes) -> tuple[str, list[int]]:
    with av.open(io.BytesIO(data), format="yuv4mpegpipe") as container:
        stream = container.streams.video[0]
        numbers = [frame_number(frame.to_ndarray(format="rgb24")) for frame in container.decode(stream)]
        rate = Fraction(stream.average_rate)  # PyAV 19 gives an AVRational, which prints "25/1"
        return f"{stream.codec_context.pix_fmt} {rate}", numbers


@pytest.mark.parametrize(("source", "target"), [("-", "out.mkv"), ("hevc10.mkv", "-"), ("-", "-")])
def test_y4m_pipes_in_and_out(corpus: Path, tmp_path: Path, source: str, target: str) -> None:
    """In an FFmpeg pipeline: y4m on stdin, on stdout, or both; the noise estimated on the pipe's start."""
    command = [*CLI, "denoise", source if source == "-" else str(corpus / source),
               target if target == "-" else str(tmp_path / target), "--quiet", "--backend", "cpu"]  # fmt: skip
    stdin = _y4m(corpus / "hevc10.mkv") if source == "-" else b""
    run = run_cli(command, input=stdin, capture_output=True, timeout=240)
    assert run.returncode == 0, run.stderr.decode()
    if target == "-":
        assert _y4m_numbers(run.stdout) == ("yuv420p10le 25", list(range(75)))  # 10-bit 4:2:0 kept
    else:
        assert plain_pyav_numbers(tmp_path / target) == list(range(75))


def test_a_pipe_that_is_no_y4m_is_refused(tmp_path: Path) -> None:
    run = run_cli(
        [*CLI, "denoise", "-", str(tmp_path / "out.mkv")],
        input=b"not a video\n" * 100, capture_output=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 1
    assert "standard input: not a y4m (yuv4mpegpipe) stream" in run.stderr.decode()
    assert b"Traceback" not in run.stderr and not list(tmp_path.iterdir())


MASTER_DISPLAY = "G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,50)"  # P3 D65, 1000 nits


@pytest.mark.parametrize(("codec", "name"), [("h265", "out.mkv"), ("h264", "out.mp4")])
def test_hdr10_metadata_is_kept_with_the_bt2020_pq_tags(corpus: Path, tmp_path: Path, codec: str, name: str) -> None:
    hdr10 = "hdr10=1:colorprim=bt2020:transfer=smpte2084:colormatrix=bt2020nc:log-level=error"
    spec = ClipSpec(
        "hdr10.mkv", "libx265", pixel_format="yuv420p10le", frames=10,
        options={"x265-params": f"{hdr10}:master-display={MASTER_DISPLAY}:max-cll=1000,400"},
    )  # fmt: skip
    source = write_clip(tmp_path, spec)
    params = NLMParams(h=10, patch_radius=1, search_radius=1, frames_past=0, frames_future=0)
    denoise_file(source, tmp_path / name, params, backend="cpu", codec=codec, preset="ultrafast")
    with VideoReader(tmp_path / name) as reader:
        assert reader.info.hdr10 == {"master-display": MASTER_DISPLAY, "max-cll": "1000,400"}
        assert reader.info.color == {"primaries": 9, "trc": 16, "colorspace": 9, "range": 1}  # BT.2020, PQ
        assert reader.info.bit_depth == 10
