"""``nlmeans-studio batch`` cutting a long file into segments (issue 35): each a task, read with
the window's context, joined by stream copy with the sound once; equal to one ``denoise`` of the
whole file, and a killed batch's rerun redoes only the segments not done.

The clip is what a user brings: written by the ffmpeg tool (not PyAV), H.264 with B-frames at
NTSC's 30000/1001, with AAC sound, a keyframe every 12 frames; segments are forced short
(--segment-seconds 1: five segments of its 6 s) and the frames tiny, so that the batches stay fast.
"""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

import av
import numpy as np
import pytest
from clips import CLI
from test_batch import _batch, _manifest, _read_until, _start
from test_export import late_picture, stream_starts

from nlmeans_studio.engine import read_frames
from nlmeans_studio.engine.cli.batch.plan import segment_frames
from nlmeans_studio.engine.media.ffmpeg import VideoError
from nlmeans_studio.engine.media.join import join_segments
from nlmeans_studio.engine.media.reader import VideoReader
from nlmeans_studio.engine.video.export import denoise_file
from nlmeans_studio.engine.video.params import NLMParams

# An asymmetric window (Dp = 2, Df = 1): a segment's context before and after differ.
FILTER = ["--noise", "none", "--h", "10", "--search-radius", "1", "--patch-radius", "1", "--backend", "cpu",
          "--frames-past", "2", "--frames-future", "1"]  # fmt: skip
SEGMENTS = ["--segment-seconds", "1"]
CUTS = [(0, 36), (36, 72), (72, 108), (108, 144), (144, 180)]  # the first keyframe 1 s or more after each cut


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """6 s of H.264 with B-frames at 30000/1001 fps (180 frames) and AAC sound, from the ffmpeg tool."""
    path = tmp_path_factory.mktemp("in") / "long.mp4"
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=30000/1001", "-f", "lavfi",
         "-i", "sine=frequency=440:sample_rate=48000", "-t", "6", "-c:v", "libx264", "-bf", "3", "-g", "12",
         "-pix_fmt", "yuv420p", "-c:a", "aac", str(path)],
        check=True, timeout=60,
    )  # fmt: skip
    return path


def _denoised_whole(clip: Path, folder: Path, codec: str) -> Path:
    """The clip through one ``denoise``, the reference (and numba's cache filled for the workers)."""
    output = folder / f"whole-{codec}.mp4"
    subprocess.run([*CLI, "denoise", str(clip), str(output), *FILTER, "--codec", codec, "--quiet"], check=True)
    return output


@pytest.fixture(scope="module")
def whole_ffv1(clip: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _denoised_whole(clip, tmp_path_factory.mktemp("whole"), "ffv1")


def _times(path: Path) -> tuple[list[int], list[tuple[int, int]], int]:
    """The video frames' timestamps as decoded, the audio packets' (pts, size), and the audio streams."""
    with av.open(str(path)) as container:
        video = [frame.pts for frame in container.decode(video=0)]
    with av.open(str(path)) as container:
        audio = [(packet.pts, packet.size) for packet in container.demux(audio=0) if packet.size]
        return video, audio, len(container.streams.audio)


def _same_timing(joined: Path, whole: Path) -> None:
    """Frame count and timestamps as one ``denoise``'s, and its sound once, the same packets at the same times."""
    video, audio, streams = _times(joined)
    expected_video, expected_audio, _ = _times(whole)
    assert len(video) == 180 and video == expected_video
    assert streams == 1 and audio == expected_audio and len(audio) > 250  # 6 s of 1024-sample AAC frames at 48 kHz


def _segments(out: Path) -> list[str]:
    return [segment["state"] for segment in _manifest(out)["long.mp4"]["segments"]]


def test_segments_joined_equal_one_denoise_of_the_whole_lossless(clip, whole_ffv1, tmp_path) -> None:
    out = tmp_path / "out"
    run = _batch(str(clip), "--out", str(out), "--jobs", "2", *FILTER, *SEGMENTS, "--codec", "ffv1")
    assert run.returncode == 0, run.stderr
    assert "long.mp4: 5 segments" in run.stderr
    assert re.search(r"^long\.mp4\s+180\s+[\d.]+\s+done$", run.stdout, re.MULTILINE), run.stdout
    joined, whole = read_frames(out / "long.mp4"), read_frames(whole_ffv1)
    assert joined.shape == whole.shape == (180, 48, 64, 3)
    for number, (frame, expected) in enumerate(zip(joined, whole, strict=True)):
        assert np.array_equal(frame, expected), f"frame {number}"  # lossless: exactly, at every cut too
    _same_timing(out / "long.mp4", whole_ffv1)
    entry = _manifest(out)["long.mp4"]
    assert entry["state"] == "done" and entry["frames"] == 180 and "segments" not in entry  # done: the plan goes
    assert not (out / ".nlmeans-segments").exists() and not list(out.rglob(".*.part*"))  # parts cleaned up
    assert len(list((out / ".nlmeans-logs").glob("long.mp4.segment*.log"))) == 5


def test_segments_keep_frame_count_timestamps_and_sound_with_a_lossy_codec(clip, whole_ffv1, tmp_path) -> None:
    """H.264 segments start with their own keyframe: other pictures than one encode's, the same timing."""
    whole = _denoised_whole(clip, tmp_path, "h264")
    out = tmp_path / "out"
    run = _batch(str(clip), "--out", str(out), "--jobs", "2", *FILTER, *SEGMENTS, "--codec", "h264")
    assert run.returncode == 0, run.stderr
    _same_timing(out / "long.mp4", whole)
    with av.open(str(out / "long.mp4")) as container:
        keyframes = {number for number, frame in enumerate(container.decode(video=0)) if frame.key_frame}
    assert {first for first, _ in CUTS} <= keyframes  # each segment's encode starts with one


def test_a_killed_batch_rerun_redoes_only_the_segments_not_done(clip, whole_ffv1, tmp_path, started_processes) -> None:
    out = tmp_path / "out"
    arguments = [str(clip), "--out", str(out), "--jobs", "1", *FILTER, *SEGMENTS, "--codec", "ffv1"]
    batch = _start(started_processes, [*CLI, "batch", *arguments], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    _read_until(batch, r"^long\.mp4: segment \d done")
    batch.send_signal(signal.SIGKILL)  # as a lost machine: nothing is said, the manifest is as last saved
    assert batch.wait(timeout=60) == -signal.SIGKILL
    states = _segments(out)
    done = [index for index, state in enumerate(states) if state == "done"]
    assert 1 <= len(done) < len(CUTS), states
    rerun = _batch(*arguments)
    assert rerun.returncode == 0, rerun.stderr
    assert f"long.mp4: 5 segments, {len(done)} done before" in rerun.stderr
    redone = sorted(int(index) - 1 for index in re.findall(r"^long\.mp4: segment (\d) done", rerun.stderr, re.M))
    assert redone == [index for index in range(len(CUTS)) if index not in done]
    assert np.array_equal(read_frames(out / "long.mp4"), read_frames(whole_ffv1))
    _same_timing(out / "long.mp4", whole_ffv1)
    assert not (out / ".nlmeans-segments").exists()


def test_a_failed_segment_fails_its_file_with_its_reason_and_the_others_complete(clip, tmp_path) -> None:
    """Segment 3's file cannot be written (a folder is in its place): the file fails, naming it; the short
    file beside it is done. (The rerun of a file whose segments are part done: the kill's test.)"""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "long.mp4").symlink_to(clip)
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10", "-t", "1", "-c:v", "ffv1",
         str(tmp_path / "in" / "short.mkv")],
        check=True, timeout=60,
    )  # fmt: skip
    out = tmp_path / "out"
    blocker = out / ".nlmeans-segments" / "long.mp4" / "00002.mp4"
    blocker.mkdir(parents=True)
    run = _batch(str(tmp_path / "in"), "--out", str(out), "--jobs", "2", *FILTER, *SEGMENTS, "--codec", "ffv1")
    assert run.returncode == 1
    reason = r"segment 3 \(frames 72\.\.107\): .*00002\.mp4: is not a regular file"
    assert re.search(rf"^long\.mp4\s+failed: {reason}", run.stdout, re.MULTILINE), run.stdout
    assert re.search(r"^short\.mkv\s+10\s+[\d.]+\s+done$", run.stdout, re.MULTILINE), run.stdout
    assert _segments(out) == ["done", "done", "failed", "done", "done"] and not (out / "long.mp4").exists()


def test_a_file_is_cut_at_keyframes_into_segments_of_at_least_the_seconds_given(clip) -> None:
    with VideoReader(clip) as reader:
        assert segment_frames(reader, range(180), 1.0) == CUTS  # keyframes every 12 frames (0.4 s)
        assert segment_frames(reader, range(180), 2.5) == [(0, 84), (84, 180)]  # 2.8 s, then 3.2 s
        assert segment_frames(reader, range(180), 3.1) == [(0, 180)]  # shorter than two segments: whole
        assert segment_frames(reader, range(180), 0.0) == [(0, 180)]  # 0: never cut
        assert segment_frames(reader, range(30, 150), 1.0) == [(30, 60), (60, 96), (96, 150)]  # --start, --duration


@pytest.mark.parametrize(
    ("frames", "whole", "message"),
    [
        (None, range(0, 180), "segment_of is the range of a file that frames are a segment of"),
        (range(30, 60), range(40, 180), r"segment_of must be a range\(first, stop\) of the clip holding"),
        (range(30, 60), range(0, 200), r"segment_of must be a range\(first, stop\) of the clip holding"),
    ],
)
def test_a_segment_outside_its_whole_is_refused(clip, tmp_path, frames, whole, message) -> None:
    with pytest.raises(ValueError, match=message):
        denoise_file(clip, tmp_path / "part.mkv", NLMParams(), backend="cpu", frames=frames, segment_of=whole)
    assert not list(tmp_path.iterdir())


def test_segments_that_miss_frames_are_not_joined(clip, tmp_path) -> None:
    params = NLMParams(h=10, search_radius=1, patch_radius=1)
    parts = [tmp_path / f"{first}.mkv" for first in (0, 36)]
    for part, frames in zip(parts, (range(0, 36), range(36, 72)), strict=True):
        denoise_file(clip, part, params, backend="cpu", codec="ffv1", frames=frames, segment_of=range(180))
    with VideoReader(clip) as reader:
        starts = [reader.timestamp(36 * index) - reader.timestamp(0) for index in range(2)]
        with pytest.raises(VideoError, match=r"joined\.mkv: its segments hold 72 of its 180 frames; denoise them"):
            join_segments(parts, starts, tmp_path / "joined.mkv", reader.info, codec="ffv1", frames=180)
        assert not [path for path in tmp_path.iterdir() if "joined" in path.name or ".part" in path.name]
        assert join_segments(parts, starts, tmp_path / "joined.mkv", reader.info, codec="ffv1", frames=72) == 72
    with av.open(str(tmp_path / "joined.mkv")) as container:
        assert len(container.streams.audio) == 1  # the source's sound, copied once


def test_a_joined_file_keeps_the_timecode_of_its_first_frame(tmp_path) -> None:
    """A ProRes master's timecode track was lost when its segments were joined: the output's is the first
    segment's, as a single `denoise` writes it."""
    (tmp_path / "in").mkdir()
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=24", "-t", "2", "-c:v",
         "prores_ks", "-timecode", "01:00:00:00", str(tmp_path / "in" / "master.mov")],
        check=True, timeout=60,
    )  # fmt: skip
    out = tmp_path / "out"
    run = _batch(str(tmp_path / "in"), "--out", str(out), *FILTER, "--codec", "prores", "--segment-seconds", "0.5")
    assert run.returncode == 0 and "cut into 4 segments" in (out / ".nlmeans-logs" / "master.mov.log").read_text()
    with av.open(str(out / "master.mov")) as joined:
        assert joined.streams.video[0].metadata.get("timecode") == "01:00:00:00"
        assert [stream.metadata.get("timecode") for stream in joined.streams.data] == ["01:00:00:00"]  # tmcd


def test_a_joined_file_keeps_the_sound_before_its_first_picture_as_denoise_does(tmp_path) -> None:
    """Segments joined put the picture as late after the sound as a single `denoise` of the file does."""
    (tmp_path / "in").mkdir()
    source = late_picture(tmp_path / "in")
    alone = tmp_path / "alone.mkv"
    subprocess.run([*CLI, "denoise", str(source), str(alone), *FILTER, "--codec", "ffv1", "--quiet"], check=True)
    out = tmp_path / "out"
    run = _batch(str(source), "--out", str(out), *FILTER, "--codec", "ffv1", "--segment-seconds", "0.9")
    assert run.returncode == 0 and "segments" in (out / ".nlmeans-logs" / "late.mp4.log").read_text(), run.stderr
    joined, single = stream_starts(out / "late.mp4"), stream_starts(alone)
    assert joined == pytest.approx(single, abs=0.002) and joined["video"] == pytest.approx(0.5, abs=0.002)
    assert np.array_equal(read_frames(out / "late.mp4"), read_frames(alone))
