"""VideoReader and VideoWriter: round trips on generated and real clips, and bad input."""

import dataclasses
import shlex
import struct
import subprocess
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from nlmeans_studio.engine import Denoiser, NLMParams, psnr
from nlmeans_studio.engine.media.ffmpeg import VideoError
from nlmeans_studio.engine.media.reader import VideoReader, read_frames
from nlmeans_studio.engine.media.writer import VideoWriter
from nlmeans_studio.engine.video.export import denoise_file
from nlmeans_studio.engine.video.sample import SAMPLE_CLIP

av = pytest.importorskip("av", reason="PyAV is not installed (the GPU machine has none)")

from clips import cut_short_dv  # noqa: E402

PARAMS = NLMParams(
    h=45, patch_radius=2, search_radius=2, weighting="bisquare", center_weight="one"
)  # the paper's filter


def make_clip(
    path: Path,
    *,
    frames: int = 12,
    size: tuple[int, int] = (48, 64),
    deep: bool = False,
    audio: bool = False,
    subtitles: bool = False,
    times: list[int] | None = None,
):
    """An FFV1 clip of moving gradients (RGB; 16-bit when ``deep``), optionally with a sine audio
    track, two subtitles, and frames at ``times`` (milliseconds) instead of every 40 ms."""
    height, width = size
    dtype, full = (np.uint16, 65535) if deep else (np.uint8, 255)
    rows, cols = np.mgrid[0:height, 0:width]
    clip = np.stack(
        [
            np.stack([(rows * 3 + t * 5) % 256, (cols * 2 + t) % 256, (rows + cols + 7 * t) % 256], axis=-1)
            for t in range(frames)
        ]
    )
    clip = (clip.astype(np.float64) / 255 * full).astype(dtype)
    times = times or [40 * index for index in range(frames)]
    with av.open(str(path), "w") as container:
        stream = container.add_stream("ffv1", rate=25)
        stream.width, stream.height = width, height
        stream.pix_fmt = "gbrp16le" if deep else "bgr0"
        stream.codec_context.time_base = Fraction(1, 1000)
        audio_stream = container.add_stream("pcm_s16le", rate=8000) if audio else None
        if subtitles:
            _add_subtitles(container, path.with_suffix(".srt"))
        for time, frame in zip(times, clip, strict=True):
            video_frame = av.VideoFrame.from_ndarray(frame, format="rgb48le" if deep else "rgb24")
            video_frame.pts, video_frame.time_base = time, Fraction(1, 1000)
            container.mux(stream.encode(video_frame))
        container.mux(stream.encode(None))
        if audio_stream is not None:
            seconds = frames / 25
            samples = (np.sin(np.arange(int(8000 * seconds)) / 5) * 10000).astype(np.int16)[None]
            audio_frame = av.AudioFrame.from_ndarray(samples, format="s16", layout="mono")
            audio_frame.sample_rate, audio_frame.pts = 8000, 0
            container.mux(audio_stream.encode(audio_frame))
            container.mux(audio_stream.encode(None))
    return clip


SUBTITLES = [b"Hello", b"World"]


def _add_subtitles(container, srt: Path) -> None:
    """Copy an SRT file of SUBTITLES into ``container`` (PyAV cannot encode subtitles)."""
    srt.write_text("1\n00:00:00,000 --> 00:00:00,200\nHello\n\n2\n00:00:00,240 --> 00:00:00,400\nWorld\n")
    source = av.open(str(srt))
    output = container.add_stream_from_template(source.streams.subtitles[0])
    container.start_encoding()
    for packet in source.demux(source.streams.subtitles[0]):
        if packet.dts is not None:
            packet.stream = output
            container.mux(packet)
    source.close()


def _subtitles(path: Path) -> list[bytes]:
    with av.open(str(path)) as container:
        return [bytes(packet) for packet in container.demux(container.streams.subtitles[0]) if packet.size]


def test_reader_reports_the_clip_and_decodes_it_exactly(tmp_path) -> None:
    clip = make_clip(tmp_path / "clip.mkv", audio=True)
    with VideoReader(tmp_path / "clip.mkv") as reader:
        info = reader.info
        assert (info.width, info.height, info.channels, info.dtype, info.frame_rate) == (64, 48, 3, np.uint8, 25)
        assert info.frame_count == len(reader) == 12 and info.other_streams == 1
        frames = np.stack(list(reader.frames()))
    assert np.array_equal(frames, clip)  # FFV1 with RGB kept as RGB is lossless


def test_random_access_equals_sequential_decoding_on_the_real_clip() -> None:
    with VideoReader(SAMPLE_CLIP) as reader:
        sequential = list(reader.frames())
        assert len(sequential) == reader.info.frame_count == 132
        for index in [0, 1, 37, 131, 64, 63, 64]:  # across keyframes, backwards, cached
            assert np.array_equal(reader.frame(index), sequential[index])
        with pytest.raises(IndexError, match=r"frame index must be in 0..131, got 132"):
            reader.frame(132)


def test_ffv1_round_trip_of_the_identity_filter_is_bit_exact(tmp_path) -> None:
    clip = make_clip(tmp_path / "clip.mkv")
    with (
        VideoReader(tmp_path / "clip.mkv") as reader,
        VideoWriter(tmp_path / "out.mkv", reader.info, codec="ffv1") as writer,
    ):
        denoiser = Denoiser(NLMParams(h=1e-3, patch_radius=1, search_radius=1, weighting="bisquare"), "cpu")
        for frame in denoiser.stream(reader.frames()):
            writer.write(np.rint(frame * 255).astype(np.uint8))
    assert np.array_equal(read_frames(tmp_path / "out.mkv"), clip)


def test_high_bit_depth_stays_high(tmp_path) -> None:
    clip = make_clip(tmp_path / "deep.mkv", deep=True)
    with VideoReader(tmp_path / "deep.mkv") as reader:
        assert reader.info.bit_depth == 16 and reader.info.dtype == np.uint16
        with VideoWriter(tmp_path / "out.mkv", reader.info, codec="ffv1") as writer:
            for frame in reader.frames():
                writer.write(frame)
    back = read_frames(tmp_path / "out.mkv")
    assert back.dtype == np.uint16 and np.array_equal(back, clip)


def test_h264_keeps_rate_duration_count_and_audio(tmp_path) -> None:
    with (
        VideoReader(SAMPLE_CLIP) as reader,
        VideoWriter(tmp_path / "out.mp4", reader.info, preset="ultrafast") as writer,
    ):
        for frame in reader.frames():
            writer.write(frame)
        source = reader.info
    with VideoReader(tmp_path / "out.mp4") as copy:
        assert (copy.info.frame_count, copy.info.frame_rate, copy.info.other_streams) == (132, 25, 1)
        assert copy.info.duration == pytest.approx(source.duration, abs=1 / 25)
    with av.open(str(tmp_path / "out.mp4")) as container:
        assert [stream.type for stream in container.streams] == ["video", "audio"]
    assert not list(tmp_path.glob(".*part*"))


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda folder: folder / "missing.mp4", "missing.mp4: no such file"),
        (lambda folder: _text_file(folder), "not a video file FFmpeg can read"),
    ],
)
def test_reader_refuses_bad_files(tmp_path, make, message) -> None:
    with pytest.raises(VideoError, match=message):
        VideoReader(make(tmp_path))


def _text_file(folder: Path) -> Path:
    path = folder / "notes.mp4"
    path.write_text("not a video\n" * 100)
    return path


def test_truncated_stream_decodes_what_it_can(tmp_path) -> None:
    make_clip(tmp_path / "clip.mkv", frames=30, size=(96, 128))
    data = (tmp_path / "clip.mkv").read_bytes()
    (tmp_path / "cut.mkv").write_bytes(data[: len(data) // 2])
    decoded = 0
    try:
        with VideoReader(tmp_path / "cut.mkv") as reader:
            for _ in reader.frames():
                decoded += 1
    except VideoError as error:
        assert "decoding stopped at frame" in str(error)
    assert 0 < decoded < 30


@pytest.mark.parametrize("suffix", [".avi", ".dv"])
def test_a_capture_cut_inside_a_frame_holds_the_whole_frames_before_it(tmp_path, suffix) -> None:
    """A DV capture cut inside its sixth frame (a full disk): its five whole frames, equal to the
    whole file's in any order, and the cut frame left out and said to be. Decoded, it failed and
    lost the frames before it (AVI: "decoding stopped at frame 5"), or gave a part of a picture
    that differed between two decodes (raw DV)."""
    cut, whole = cut_short_dv(tmp_path, suffix)
    with VideoReader(cut) as reader, VideoReader(whole) as source:
        assert reader.info.frame_count == 5
        assert "ends inside the frame at 0.167 s, which is left out" in reader.info.warning
        frames = [frame.copy() for frame in reader.frames()]
        assert len(frames) == 5
        for number in (4, 0, 3, 1, 2):
            assert np.array_equal(reader.frame(number), frames[number])
            assert np.array_equal(frames[number], source.frame(number))


@pytest.fixture(scope="module")
def broadcast_ts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 s of noisy H.264 with B-frames in MPEG-TS, as a DVB recorder keeps it."""
    path = tmp_path_factory.mktemp("broadcast") / "whole.ts"
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=4", "-vf",
         "noise=alls=10:allf=t", "-c:v", "libx264", "-bf", "2", "-g", "25", str(path)],
        check=True, timeout=60,
    )  # fmt: skip
    return path


@pytest.mark.parametrize(("share", "inside"), [(0.30, False), (0.37, True), (0.45, True), (0.71, True)])
def test_a_transport_stream_cut_inside_a_frame_reads_the_same_in_any_order(
    broadcast_ts, tmp_path, share, inside
) -> None:
    """A recording cut short (a full disk) ended in part of a frame: decoded by index it differed from
    the sequential decode (up to 37 % of its samples), the rest of its picture taken from whatever the
    decoder held. That frame is left out and said to be; every other is the whole file's frame of
    the same time, in any order. Cut at 30 %, the file ends in the table FFmpeg writes before a
    frame: the frame before it is whole, and kept."""
    data = broadcast_ts.read_bytes()
    cut = tmp_path / "cut.ts"
    cut.write_bytes(data[: int(len(data) * share)])
    with VideoReader(broadcast_ts) as whole:
        times = list(np.round(whole.frame_times, 6))
        source = [frame.copy() for frame in whole.frames()]
    with VideoReader(cut) as reader:
        assert ("which is left out (only part of its picture is there)" in reader.info.warning) == inside
        frames = [frame.copy() for frame in reader.frames()]
        kept = list(np.round(reader.frame_times, 6))
        assert 0 < len(frames) == len(kept) < len(times) - 1
        for number in reversed(range(len(frames))):
            assert np.array_equal(reader.frame(number), frames[number]), number
            assert np.array_equal(frames[number], source[times.index(kept[number])]), number


def test_a_transport_stream_cut_as_a_frame_begins_keeps_the_frame_before(broadcast_ts, tmp_path) -> None:
    """Cut 100 bytes into the transport packet that starts a frame's packet: the frame before ended
    whole, and is kept (FFmpeg's count, nothing said)."""
    data = broadcast_ts.read_bytes()
    video = 0x100  # FFmpeg's muxer's first PID
    starts = [
        at for at in range(0, len(data) - 188, 188)
        if (data[at + 1] & 0x1F) << 8 | data[at + 2] == video and data[at + 1] & 0x40  # a packet's start
    ]  # fmt: skip
    cut = tmp_path / "cut.ts"
    cut.write_bytes(data[: starts[len(starts) // 2] + 100])
    counted = subprocess.run(
        ["ffprobe", "-v", "quiet", "-count_frames", "-select_streams", "v", "-show_entries",
         "stream=nb_read_frames", "-of", "csv=p=0", str(cut)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    with VideoReader(cut) as reader:
        assert reader.info.warning == "" and reader.info.frame_count == int(counted.split()[0])


def test_a_matroska_file_cut_short_is_said_to_be_so(tmp_path) -> None:
    """A capture cut by a full disk in .mkv read without a word: its video track's DURATION tag,
    near the file's start, still says where it ended. A track that starts at 10 s ends at 12."""
    for name, offset in (("whole.mkv", "0"), ("late.mkv", "10")):
        subprocess.run(
            ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=96x64:rate=25", "-t", "2", "-c:v",
             "libx264", "-output_ts_offset", offset, str(tmp_path / name)],
            check=True, timeout=60,
        )  # fmt: skip
        with VideoReader(tmp_path / name) as reader:
            assert reader.info.warning == ""
    data = (tmp_path / "whole.mkv").read_bytes()
    (tmp_path / "cut.mkv").write_bytes(data[: len(data) * 4 // 10])
    with VideoReader(tmp_path / "cut.mkv") as reader:
        ends = reader.info.duration
        assert 0 < ends < 1.5
        said = f"the file says its video ends at 2.000 s but its frames end at {ends:.3f} s: it is truncated or damaged"
        assert reader.info.warning == said


def test_a_webm_with_vp9_alpha_is_said_to_lose_it(tmp_path) -> None:
    """A web creator's WebM with transparency: VP9 keeps its alpha beside the picture, which FFmpeg's
    decoder leaves out, and the output was opaque without a word."""
    for name, pixel_format in (("alpha.webm", "yuva420p"), ("opaque.webm", "yuv420p")):
        subprocess.run(
            ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-frames:v", "3",
             "-c:v", "libvpx-vp9", "-pix_fmt", pixel_format, str(tmp_path / name)],
            check=True, timeout=60,
        )  # fmt: skip
    with VideoReader(tmp_path / "alpha.webm") as reader:
        assert reader.info.warning.startswith("the video has an alpha channel (VP9's, beside the picture): only its")
    with VideoReader(tmp_path / "opaque.webm") as reader:
        assert reader.info.warning == ""


def test_a_gifs_transparency_is_said_to_be_lost_and_the_command_said_puts_it_back(tmp_path) -> None:
    """A web creator's opaque GIF was said to lose an alpha channel (FFmpeg decodes every GIF with one),
    and a transparent one was told to merge its alpha back with no command to do it. The opaque one
    says nothing; the transparent one names FFmpeg's command, which puts the alpha back exactly."""
    palette = "split[a][b];[a]palettegen=reserve_transparent=1[p];[b][p]paletteuse=alpha_threshold=128"
    for name, colour in (("opaque.gif", "red"), ("clear.gif", "red@0.0")):
        subprocess.run(
            ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", f"color=c={colour}:s=64x48:r=10:d=0.5,format=rgba,"
             "drawbox=x=10:y=10:w=20:h=20:color=blue@1:t=fill", "-filter_complex", palette, str(tmp_path / name)],
            check=True, timeout=60,
        )  # fmt: skip
    with VideoReader(tmp_path / "opaque.gif") as reader:
        assert reader.info.warning == ""
    with VideoReader(tmp_path / "clear.gif") as reader:
        said = reader.info.warning
    assert said.startswith("the video has an alpha channel (bgra): only its picture is denoised and written, opaque")
    denoise_file(tmp_path / "clear.gif", tmp_path / "out.mkv", NLMParams(h=5.0, search_radius=1), backend="cpu")
    names = {"IN": tmp_path / "clear.gif", "OUT": tmp_path / "out.mkv", "MERGED.mkv": tmp_path / "merged.mkv"}
    command = [str(names.get(word, word)) for word in shlex.split(said[said.index("(ffmpeg ") + 1 : -1])]
    subprocess.run([command[0], "-loglevel", "error", *command[1:]], check=True, timeout=60)

    def alpha(path: Path) -> np.ndarray:
        with av.open(str(path)) as container:
            return np.stack([frame.to_ndarray(format="rgba")[..., 3] for frame in container.decode(video=0)])

    np.testing.assert_array_equal(alpha(tmp_path / "merged.mkv"), alpha(tmp_path / "clear.gif"))
    assert alpha(tmp_path / "clear.gif").min() == 0


def test_an_mp4_cut_before_its_index_is_said_to_be_so(tmp_path) -> None:
    """An archivist's cut-short MP4 got the same words as random bytes: "not a video file FFmpeg can read"."""
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=96x64:rate=25", "-t", "2", "-c:v",
         "libx264", "-pix_fmt", "yuv420p", str(tmp_path / "whole.mp4")],
        check=True, timeout=60,
    )  # fmt: skip
    (tmp_path / "cut.mp4").write_bytes((tmp_path / "whole.mp4").read_bytes()[:4000])  # the index is written last
    with pytest.raises(VideoError, match=r"cut\.mp4: an MP4 / MOV file without its index \(the moov box\): the record"):
        VideoReader(tmp_path / "cut.mp4")
    (tmp_path / "noise.mp4").write_bytes(np.random.default_rng(0).bytes(4000))
    with pytest.raises(VideoError, match=r"noise\.mp4: not a video file FFmpeg can read"):
        VideoReader(tmp_path / "noise.mp4")


def test_writer_refuses_bad_outputs(tmp_path) -> None:
    make_clip(tmp_path / "clip.mkv")
    info = VideoReader(tmp_path / "clip.mkv").info
    (tmp_path / "exists.mkv").write_bytes(b"keep me")
    cases = [
        (tmp_path / "clip.mkv", "must not be the input"),
        (tmp_path / "exists.mkv", "exists; pass --overwrite"),
        (tmp_path / "no" / "out.mkv", "the folder .*no does not exist: create it, or choose a folder that does"),
    ]
    for path, message in cases:
        with pytest.raises(VideoError, match=message):
            VideoWriter(path, info, codec="ffv1")
    assert (tmp_path / "exists.mkv").read_bytes() == b"keep me"
    with pytest.raises(
        VideoError, match="codec must be one of h264, h265, ffv1, prores, h264-nvenc, h265-nvenc, got 'divx'"
    ):
        VideoWriter(tmp_path / "out.mkv", info, codec="divx")
    # sysfs: no file can be created there, by root either (whom os.access lets write anywhere)
    with pytest.raises(VideoError, match=r"the folder /sys is not writable \(Permission denied\)"):
        VideoWriter(Path("/sys/out.mkv"), info, codec="ffv1")


def test_an_aborted_write_leaves_nothing_and_the_target_untouched(tmp_path) -> None:
    make_clip(tmp_path / "clip.mkv")
    (tmp_path / "out.mkv").write_bytes(b"previous export")
    with (
        VideoReader(tmp_path / "clip.mkv") as reader,
        pytest.raises(RuntimeError, match="cancelled"),
        VideoWriter(tmp_path / "out.mkv", reader.info, codec="ffv1", overwrite=True) as writer,
    ):
        writer.write(reader.frame(0))
        raise RuntimeError("cancelled")
    assert (tmp_path / "out.mkv").read_bytes() == b"previous export"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clip.mkv", "out.mkv"]


def test_subtitles_are_copied_untouched(tmp_path) -> None:
    make_clip(tmp_path / "clip.mkv", subtitles=True, audio=True)
    summary = denoise_file(tmp_path / "clip.mkv", tmp_path / "out.mkv", PARAMS, backend="cpu", codec="ffv1")
    assert summary.frames == 12 and _subtitles(tmp_path / "out.mkv") == SUBTITLES
    with av.open(str(tmp_path / "out.mkv")) as container:
        assert [stream.type for stream in container.streams] == ["video", "audio", "subtitle"]


@pytest.mark.parametrize(
    ("codec", "name", "pixel_format", "bits", "least_db"),
    [
        # 4:2:0 chroma of steep color gradients at CRF 4: about 36 dB.
        ("h265", "out.mp4", "yuv420p10le", 10, 33),
        # ProRes 4444 (written from 10-bit 4:4:4, which FFmpeg's decoder gives as 12-bit): far closer.
        ("prores", "out.mov", "yuv444p12le", 12, 45),
    ],
)
def test_deep_sources_stay_deep(tmp_path, codec, name, pixel_format, bits, least_db) -> None:
    clip = make_clip(tmp_path / "deep.mkv", deep=True, size=(64, 96))
    with (
        VideoReader(tmp_path / "deep.mkv") as reader,
        VideoWriter(tmp_path / name, reader.info, codec=codec, crf=4, preset="ultrafast") as writer,
    ):
        for frame in reader.frames():
            writer.write(frame)
    with VideoReader(tmp_path / name) as copy:
        assert (copy.info.pixel_format, copy.info.bit_depth, copy.info.dtype) == (pixel_format, bits, np.uint16)
        assert copy.info.frame_count == len(clip)
        back = np.stack(list(copy.frames()))
    assert back.shape == clip.shape
    assert psnr(clip.astype(np.float64), back.astype(np.float64), 65535) > least_db


def test_variable_frame_rate_timestamps_are_kept(tmp_path) -> None:
    times = [0, 40, 100, 120, 200, 210, 290, 330, 400, 480]  # milliseconds, irregular
    make_clip(tmp_path / "vfr.mkv", frames=len(times), times=times)
    with VideoReader(tmp_path / "vfr.mkv") as reader:
        timed = list(reader.timed_frames())
        assert [frame.timestamp for frame in timed] == times  # Matroska's time base is 1 ms
        assert [frame.number for frame in timed] == list(range(len(times)))
        for index in [7, 2, 9, 0, 5]:
            assert np.array_equal(reader.frame(index), timed[index].array)
    for name, codec in [("out.mkv", "ffv1"), ("out.mp4", "h264")]:
        denoise_file(tmp_path / "vfr.mkv", tmp_path / name, PARAMS, backend="cpu", codec=codec)
        with VideoReader(tmp_path / name) as copy:
            seconds = [float(frame.timestamp * copy.info.time_base) for frame in copy.timed_frames()]
        np.testing.assert_allclose(seconds, np.array(times) / 1000, rtol=0, atol=1e-3)  # to a millisecond
    with VideoReader(tmp_path / "vfr.mkv") as reader:
        reader.frame(4)  # random access reads every packet's timestamp first
        first_part = [(frame.number, frame.timestamp) for frame in reader.timed_frames(4)]
    assert first_part == list(enumerate(times))[4:]


def _rotated_mov(path: Path, image: np.ndarray) -> None:
    """A lossless (PNG) MOV of ``image`` whose display matrix turns it 90 degrees clockwise, as
    a phone held upright writes; PyAV cannot set the matrix, so the track header is patched."""
    with av.open(str(path), "w") as container:
        stream = container.add_stream("png", rate=25)
        stream.width, stream.height, stream.pix_fmt = image.shape[1], image.shape[0], "rgb24"
        for index in range(3):
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts, frame.time_base = index, Fraction(1, 25)
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    data = bytearray(path.read_bytes())
    header = data.index(b"tkhd") + 4  # version 0: 4 + 20 + 8 + 8 bytes before the matrix
    assert data[header] == 0
    struct.pack_into(">9i", data, header + 40, 0, 0x10000, 0, -0x10000, 0, 0, 0, 0, 0x40000000)
    path.write_bytes(bytes(data))


def test_rotated_video_comes_upright(tmp_path) -> None:
    image = np.zeros((48, 64, 3), np.uint8)
    image[:8, :8] = 255  # a mark in the top left corner
    _rotated_mov(tmp_path / "phone.mov", image)
    upright = np.rot90(image, -1)  # turned clockwise: the mark at the top right
    with VideoReader(tmp_path / "phone.mov") as reader:
        assert (reader.info.rotation, reader.info.width, reader.info.height) == (270, 48, 64)
        assert np.array_equal(reader.frame(1), upright) and np.array_equal(next(reader.frames()), upright)
    denoise_file(tmp_path / "phone.mov", tmp_path / "out.mkv", PARAMS, backend="cpu", codec="ffv1")
    with VideoReader(tmp_path / "out.mkv") as copy:
        assert copy.info.rotation == 0 and np.array_equal(next(copy.frames()), upright)


def test_a_stream_without_a_pixel_format_is_refused(tmp_path) -> None:
    with av.open(str(tmp_path / "odd.mkv"), "w") as container:
        stream = container.add_stream("libx264", rate=25)
        stream.width, stream.height = 64, 48
        packet = av.Packet(bytes(100))  # not H.264: FFmpeg cannot tell the pixel format
        packet.stream, packet.pts, packet.dts, packet.time_base = stream, 0, 0, Fraction(1, 25)
        container.mux(packet)
    with pytest.raises(VideoError, match=r"odd.mkv: the video stream has no pixel format FFmpeg can decode"):
        VideoReader(tmp_path / "odd.mkv")


@pytest.mark.parametrize(
    "color",
    [
        {"primaries": 1, "trc": 1, "colorspace": 1, "range": 1},  # BT.709, HD video
        {"primaries": 2, "trc": 2, "colorspace": 2, "range": 0},  # untagged
        {"primaries": 9, "trc": 14, "colorspace": 9, "range": 1},  # BT.2020
        {"primaries": 1, "trc": 1, "colorspace": 1, "range": 2},  # BT.709, full range
    ],
)
def test_colors_survive_a_round_trip_through_yuv(tmp_path, color) -> None:
    image = np.zeros((64, 64, 3), np.uint8)
    swatches = [(200, 30, 30), (30, 200, 30), (30, 30, 200), (128, 128, 128)]
    for column, swatch in enumerate(swatches):
        image[:, 16 * column : 16 * column + 16] = swatch
    make_clip(tmp_path / "clip.mkv", size=(64, 64))
    info = dataclasses.replace(VideoReader(tmp_path / "clip.mkv").info, color=color)
    with VideoWriter(tmp_path / "out.mp4", info, crf=0) as writer:
        for _ in range(3):
            writer.write(image)
    with VideoReader(tmp_path / "out.mp4") as copy:
        assert copy.info.color == color
        back = next(copy.frames())
    centres = np.array([back[32, 16 * column + 8] for column in range(4)], dtype=int)
    # Lossless YUV: what remains is 8-bit rounding of the matrix both ways, and 4:2:0 chroma.
    assert np.abs(centres - np.array(swatches)).max() <= 3


def test_hardware_decoding_gives_the_same_frames_or_falls_back(tmp_path) -> None:
    """On NVDEC where there is one (the GPU machine), else on the CPU: the same frames either way."""
    with VideoReader(SAMPLE_CLIP, hardware_decoding=True) as reader:
        assert reader.decoder in ("NVDEC", "CPU")
        hardware = list(reader.frames())
    assert len(hardware) == 132
    # H.264 decoding is bit-exact by the standard; the RGB conversion is the same code.
    assert all(np.array_equal(a, b) for a, b in zip(hardware, read_frames(SAMPLE_CLIP), strict=True))


@pytest.mark.parametrize(("name", "codec"), [("out.mkv", "h264"), ("out.mp4", "h264"), ("out.mov", "prores")])
def test_anamorphic_video_keeps_its_sample_aspect_ratio(tmp_path, name, codec) -> None:
    """A DVD's 16:9 MPEG-2 (720x480 pixels of 32:27) came out with no sample aspect ratio: squeezed."""
    with av.open(str(tmp_path / "dvd.mpg"), "w") as container:
        stream = container.add_stream("mpeg2video", rate=25)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        stream.codec_context.sample_aspect_ratio = Fraction(4, 3)  # 64x48 shown 16:9
        for index in range(3):
            image = np.random.default_rng(index).integers(0, 256, (48, 64, 3), dtype=np.uint8)
            container.mux(stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")))
        container.mux(stream.encode(None))
    assert VideoReader(tmp_path / "dvd.mpg").info.sample_aspect_ratio == Fraction(4, 3)
    denoise_file(tmp_path / "dvd.mpg", tmp_path / name, PARAMS, backend="cpu", codec=codec)
    with av.open(str(tmp_path / name)) as output:
        assert output.streams.video[0].sample_aspect_ratio == Fraction(4, 3)


@pytest.mark.parametrize(("name", "codec"), [("out.mov", "prores"), ("out.mp4", "h264"), ("out.mkv", "ffv1")])
def test_every_color_tag_of_the_source_reaches_the_stream(tmp_path, name, codec) -> None:
    """ProRes wrote BT.709 primaries and transfer as unknown (it writes each frame's tags, and the
    frames carried the matrix and range only)."""
    bt709 = {"color_primaries": 1, "color_trc": 1, "colorspace": 1, "color_range": 1}  # HD video, limited range
    with av.open(str(tmp_path / "hd.mkv"), "w") as container:
        stream = container.add_stream("ffv1", rate=25)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        for tag, value in bt709.items():
            setattr(stream.codec_context, tag, value)
        for index in range(3):
            image = np.random.default_rng(index).integers(0, 256, (48, 64, 3), dtype=np.uint8)
            container.mux(stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24").reformat(format="yuv420p")))
        container.mux(stream.encode(None))
    denoise_file(tmp_path / "hd.mkv", tmp_path / name, PARAMS, backend="cpu", codec=codec)
    with av.open(str(tmp_path / name)) as output:
        frame = next(output.decode(video=0))
        assert {tag: int(getattr(frame, tag)) for tag in bt709} == bt709


def test_a_source_tagged_with_its_range_alone_keeps_it_in_h264(tmp_path) -> None:
    """A ProRes source tagged only "tv" came out of the default H.264 export with an unknown range:
    x264 writes the range only beside a matrix, which the output now names (the one it was
    converted with: BT.601 below 720 lines)."""
    with av.open(str(tmp_path / "master.mov"), "w") as container:
        stream = container.add_stream("prores_ks", rate=25)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv422p10le"
        stream.codec_context.color_range = 1  # limited ("tv"), and nothing else
        for index in range(3):
            image = np.random.default_rng(index).integers(0, 256, (48, 64, 3), dtype=np.uint8)
            frame = av.VideoFrame.from_ndarray(image, format="rgb24").reformat(format="yuv422p10le")
            frame.color_range = 1
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    assert VideoReader(tmp_path / "master.mov").info.color == {"primaries": 2, "trc": 2, "colorspace": 2, "range": 1}
    denoise_file(tmp_path / "master.mov", tmp_path / "out.mp4", PARAMS, backend="cpu")
    assert VideoReader(tmp_path / "out.mp4").info.color == {"primaries": 2, "trc": 2, "colorspace": 5, "range": 1}
