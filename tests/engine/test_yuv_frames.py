"""Frames as Y'CbCr planes through the reader and the writer (the GPU's export converts them itself).

The files come from the ffmpeg tool: 4:2:0 H.264, 10-bit 4:2:2 and 4:4:4 FFV1, a rotated phone
clip, a gray one. tests/engine/test_gpu_yuv.py checks the GPU's side.
"""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import numpy as np
import pytest

from nlmeans_studio.engine.media.pipe import PipeReader
from nlmeans_studio.engine.media.reader import VideoReader
from nlmeans_studio.engine.media.writer import VideoWriter
from nlmeans_studio.engine.media.yuv import YuvFrame, planes_to_rgb, rgb_to_planes, yuv_layout


def ffmpeg_clip(path: Path, *options: str, size: str = "48x36") -> Path:
    """Five frames of FFmpeg's moving test picture, encoded with ``options``."""
    source = f"testsrc2=size={size}:rate=30000/1001"
    command = ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", source, "-frames:v", "5", *options, str(path)]
    subprocess.run(command, check=True, timeout=60)
    return path


CLIPS = {
    "h264 4:2:0": ("clip.mp4", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-bf", "2"),
    "ffv1 10-bit 4:2:2": ("clip.mkv", "-c:v", "ffv1", "-pix_fmt", "yuv422p10le"),
    "ffv1 4:4:4 full range": ("clip.mkv", "-c:v", "ffv1", "-pix_fmt", "yuvj444p"),
    "h264 odd size": ("clip.mkv", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-vf", "crop=47:35:0:0"),
}


@pytest.mark.parametrize("kind", CLIPS)
def test_the_planes_read_convert_to_the_frames_read(tmp_path, kind) -> None:
    name, *options = CLIPS[kind]
    with VideoReader(ffmpeg_clip(tmp_path / name, *options)) as reader:
        layout = reader.yuv_layout
        assert layout is not None and layout.pixel_format == reader.info.pixel_format
        frames = list(reader.timed_frames(1))
        planes = list(reader.timed_frames(1, yuv=True))
    assert [(f.number, f.timestamp) for f in planes] == [(f.number, f.timestamp) for f in frames]
    for frame, planar in zip(frames, planes, strict=True):
        assert isinstance(planar.array, YuvFrame) and planar.array.shape == frame.array.shape
        np.testing.assert_array_equal(planes_to_rgb(planar.array.planes, layout, frame.array.dtype), frame.array)


def test_rotated_and_gray_clips_come_as_arrays(tmp_path) -> None:
    upright = ffmpeg_clip(tmp_path / "upright.mp4", "-c:v", "libx264", "-pix_fmt", "yuv420p")
    rotated = tmp_path / "rotated.mp4"
    command = ["ffmpeg", "-loglevel", "error", "-i", str(upright), "-c", "copy", "-metadata:s:v:0", "rotate=90"]
    subprocess.run([*command, str(rotated)], check=True, timeout=60)
    gray = ffmpeg_clip(tmp_path / "gray.mkv", "-c:v", "ffv1", "-pix_fmt", "gray")
    for path in (rotated, gray):
        with VideoReader(path) as reader:
            assert reader.yuv_layout is None
            assert isinstance(next(reader.timed_frames(0, yuv=True)).array, np.ndarray)


@pytest.mark.parametrize("pixel_format", ["yuv420p", "yuv422p10le"])
def test_writing_planes_equals_writing_the_frames_they_convert_from(tmp_path, pixel_format) -> None:
    source = ffmpeg_clip(tmp_path / "source.mkv", "-c:v", "ffv1", "-pix_fmt", pixel_format)
    with VideoReader(source) as reader:
        frames = list(reader.frames())
        for name, planar in (("arrays.mkv", False), ("planes.mkv", True)):
            with VideoWriter(tmp_path / name, reader, codec="ffv1") as writer:
                for frame in frames[::-1]:  # not the source's own frames: each conversion has work to do
                    writer.write(
                        YuvFrame(rgb_to_planes(frame, writer.yuv_layout), writer.yuv_layout) if planar else frame
                    )
    with VideoReader(tmp_path / "arrays.mkv") as arrays, VideoReader(tmp_path / "planes.mkv") as planes:
        assert arrays.info.pixel_format == planes.info.pixel_format == pixel_format
        for ours, theirs in zip(arrays.timed_frames(0, yuv=True), planes.timed_frames(0, yuv=True), strict=True):
            for a, b in zip(ours.array.planes, theirs.array.planes, strict=True):
                np.testing.assert_array_equal(a, b)


def test_the_writer_refuses_planes_of_another_layout(tmp_path) -> None:
    source = ffmpeg_clip(tmp_path / "source.mkv", "-c:v", "ffv1", "-pix_fmt", "yuv420p")
    with VideoReader(source) as reader, VideoWriter(tmp_path / "out.mkv", reader, codec="ffv1") as writer:
        other = yuv_layout("yuv444p", {}, 36)
        planes = rgb_to_planes(reader.frame(0), other)
        with pytest.raises(ValueError, match="Y'CbCr frames must be"):
            writer.write(YuvFrame(planes, other))
        writer.write(reader.frame(0))


def test_a_y4m_pipes_planes_convert_to_its_frames(tmp_path) -> None:
    """A pipe's first frames are held for the noise estimate (``frame``) and come again in its one pass."""
    clip = ffmpeg_clip(tmp_path / "clip.y4m", "-pix_fmt", "yuv422p")
    frames = [PipeReader(io.BytesIO(clip.read_bytes())).frame(i) for i in range(3)]
    with PipeReader(io.BytesIO(clip.read_bytes())) as reader:
        assert reader.yuv_layout.chroma_shift == (1, 0)
        np.testing.assert_array_equal(reader.frame(1), frames[1])  # converted from the frame held
        planes = list(reader.timed_frames(0, yuv=True))
    assert [timed.number for timed in planes] == [0, 1, 2, 3, 4]
    for timed, frame in zip(planes, frames, strict=False):
        np.testing.assert_array_equal(planes_to_rgb(timed.array.planes, reader.yuv_layout, np.dtype(np.uint8)), frame)


@pytest.mark.parametrize("kind", CLIPS)
def test_frames_read_unclipped_round_to_the_frames_and_keep_what_lies_past_rgb(tmp_path, kind) -> None:
    """``unclipped_frame``, what the noise estimate reads: the planes' RGB unrounded, in 0..1 where the
    frame is in range, past it where the planes are (testsrc2's saturated bars, coded by the encoder
    a little past RGB's range). Before or after ``frame`` converted the same frame, in any order."""
    name, *options = CLIPS[kind]
    with VideoReader(ffmpeg_clip(tmp_path / name, *options)) as reader:
        layout = reader.yuv_layout
        planes = {timed.number: timed.array.planes for timed in reader.timed_frames(0, yuv=True)}
        first = reader.unclipped_frame(3)
        frame = reader.frame(3)
        again = reader.unclipped_frame(3)  # its planes decoded again: frame(3) converted the cached one
        earlier = reader.unclipped_frame(1)
    top = np.iinfo(frame.dtype).max
    for unclipped, number in ((first, 3), (again, 3), (earlier, 1)):
        assert unclipped.dtype == np.float32 and unclipped.shape == frame.shape
        np.testing.assert_array_equal(unclipped, planes_to_rgb(planes[number], layout, np.dtype(np.float32)))
    np.testing.assert_array_equal(np.rint(np.clip(first, 0, 1) * top), frame)
    assert first.min() < 0 or first.max() > 1


def test_a_pipes_frames_read_unclipped_equal_the_files(tmp_path) -> None:
    clip = ffmpeg_clip(tmp_path / "clip.y4m", "-pix_fmt", "yuv420p")
    with PipeReader(io.BytesIO(clip.read_bytes())) as pipe, VideoReader(clip) as reader:
        for index in (2, 0):
            np.testing.assert_array_equal(pipe.unclipped_frame(index), reader.unclipped_frame(index))


def test_a_gray_clip_reads_unclipped_as_its_frames_scaled(tmp_path) -> None:
    gray = ffmpeg_clip(tmp_path / "gray.mkv", "-c:v", "ffv1", "-pix_fmt", "gray16le")
    with VideoReader(gray) as reader:
        np.testing.assert_array_equal(reader.unclipped_frame(2), reader.frame(2) * np.float32(1 / 65535))
