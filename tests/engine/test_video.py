"""VideoReader and VideoWriter: round trips on generated and real clips, and bad input."""

import os
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from engine import Denoiser, NLMParams
from engine.sample import SAMPLE_CLIP
from engine.video import VideoError, VideoReader, VideoWriter, read_frames

av = pytest.importorskip("av", reason="PyAV is not installed (the GPU machine has none)")


def make_clip(
    path: Path, *, frames: int = 12, size: tuple[int, int] = (48, 64), deep: bool = False, audio: bool = False
):
    """An FFV1 clip of moving gradients (RGB; 16-bit when ``deep``), optionally with a sine audio track."""
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
    with av.open(str(path), "w") as container:
        stream = container.add_stream("ffv1", rate=25)
        stream.width, stream.height = width, height
        stream.pix_fmt = "gbrp16le" if deep else "bgr0"
        audio_stream = container.add_stream("pcm_s16le", rate=8000) if audio else None
        for index, frame in enumerate(clip):
            video_frame = av.VideoFrame.from_ndarray(frame, format="rgb48le" if deep else "rgb24")
            video_frame.pts = index
            video_frame.time_base = Fraction(1, 25)
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
        denoiser = Denoiser(NLMParams(h=1e-3, patch_radius=1, search_radius=1), "cpu")
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


def test_writer_refuses_bad_outputs(tmp_path, monkeypatch) -> None:
    make_clip(tmp_path / "clip.mkv")
    info = VideoReader(tmp_path / "clip.mkv").info
    (tmp_path / "exists.mkv").write_bytes(b"keep me")
    cases = [
        (tmp_path / "clip.mkv", "must not be the input"),
        (tmp_path / "exists.mkv", "exists; pass --overwrite"),
        (tmp_path / "no" / "out.mkv", "does not exist"),
    ]
    for path, message in cases:
        with pytest.raises(VideoError, match=message):
            VideoWriter(path, info, codec="ffv1")
    assert (tmp_path / "exists.mkv").read_bytes() == b"keep me"
    with pytest.raises(VideoError, match="codec must be one of h264, h265, ffv1, prores, got 'divx'"):
        VideoWriter(tmp_path / "out.mkv", info, codec="divx")
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(VideoError, match="is not writable"):
        VideoWriter(tmp_path / "out.mkv", info, codec="ffv1")


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
