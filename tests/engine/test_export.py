"""Denoising whole files: `denoise_file` and `nlmeans-studio denoise`."""

import json
import resource
import signal
import subprocess
import sys
import threading
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from clips import CLI, ffmpeg_pattern, run_cli, stopped_under_way
from media_corpus import ClipSpec, plain_pyav_numbers, write_clip
from test_video import make_clip

from nlmeans_studio.engine import NLMParams, psnr
from nlmeans_studio.engine.cli import main
from nlmeans_studio.engine.media.ffmpeg import VideoError
from nlmeans_studio.engine.media.reader import VideoReader, read_frames
from nlmeans_studio.engine.media.writer import VideoWriter
from nlmeans_studio.engine.video.export import ExportCancelledError, denoise_file
from nlmeans_studio.engine.video.sample import noisy_frames

PARAMS = NLMParams(h=45, patch_radius=2, search_radius=2)


@pytest.fixture
def noisy_clip_file(tmp_path):
    """A lossless clip of noisy gradients (sigma 20 levels) and its clean frames."""
    clean = make_clip(tmp_path / "clean.mkv", frames=10, size=(40, 48))
    with (
        VideoReader(tmp_path / "clean.mkv") as reader,
        VideoWriter(tmp_path / "noisy.mkv", reader.info, codec="ffv1") as writer,
    ):
        for index, frame in enumerate(clean):
            noisy = noisy_frames(frame.astype(np.float32) / 255, 20, seed=index)
            writer.write(np.clip(np.rint(noisy * 255), 0, 255).astype(np.uint8))
    return tmp_path / "noisy.mkv", clean


def test_denoised_file_is_closer_to_the_clean_clip(noisy_clip_file, tmp_path) -> None:
    noisy_path, clean = noisy_clip_file
    calls = []
    summary = denoise_file(
        noisy_path, tmp_path / "out.mkv", PARAMS, backend="cpu", codec="ffv1", progress=lambda *a: calls.append(a)
    )
    denoised, noisy = read_frames(tmp_path / "out.mkv"), read_frames(noisy_path)
    assert summary.frames == len(denoised) == len(clean) == 10 and summary.backend == "cpu"
    assert [c[:2] for c in calls] == [(i, 10) for i in range(1, 11)]
    assert psnr(clean, denoised, 255) > psnr(clean, noisy, 255) + 3  # sigma 20: a clear gain


def test_start_and_duration_choose_the_frames(noisy_clip_file, tmp_path) -> None:
    noisy_path, _ = noisy_clip_file
    summary = denoise_file(
        noisy_path, tmp_path / "part.mkv", PARAMS, backend="cpu", codec="ffv1", start=0.12, duration=0.2
    )
    assert summary.frames == 5 and len(read_frames(tmp_path / "part.mkv")) == 5  # 25 fps: frames 3..7
    with pytest.raises(ValueError, match=r"no frames between 9 s and the end"):
        denoise_file(noisy_path, tmp_path / "none.mkv", PARAMS, backend="cpu", start=9.0)


def test_frames_choose_the_frames_by_number(noisy_clip_file, tmp_path) -> None:
    noisy_path, _ = noisy_clip_file
    summary = denoise_file(noisy_path, tmp_path / "frames.mkv", PARAMS, backend="cpu", codec="ffv1", frames=range(3, 8))
    denoise_file(noisy_path, tmp_path / "seconds.mkv", PARAMS, backend="cpu", codec="ffv1", start=0.12, duration=0.2)
    assert summary.frames == 5  # 25 fps: frames 3..7 are those shown from 0.12 s for 0.2 s
    np.testing.assert_array_equal(read_frames(tmp_path / "frames.mkv"), read_frames(tmp_path / "seconds.mkv"))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"frames": range(8, 3)},
            r"frames must be range\(first, stop\) with 0 <= first < stop <= 10, got range\(8, 3\)",
        ),
        ({"frames": range(5, 11)}, r"0 <= first < stop <= 10, got range\(5, 11\)"),
        ({"frames": range(0, 10, 2)}, r"got range\(0, 10, 2\)"),
        ({"frames": range(3, 8), "start": 0.12}, r"give frames, or start and duration, not both"),
    ],
)
def test_frames_outside_the_clip_are_refused(noisy_clip_file, tmp_path, options, message) -> None:
    with pytest.raises(ValueError, match=message):
        denoise_file(noisy_clip_file[0], tmp_path / "out.mkv", PARAMS, backend="cpu", **options)
    assert not (tmp_path / "out.mkv").exists()


@pytest.mark.parametrize(
    ("start", "duration", "first"),
    [("0.3336", "1.7017", 10), ("0.334", "1.702", 11)],  # frame 10 begins at 0.33367 s
)
def test_cli_start_and_duration_at_an_ntsc_rate_pick_the_frames_ffmpeg_does(tmp_path, start, duration, first) -> None:
    """--start takes the first frame shown at or after it, and --duration the frames shown before
    start + duration, by the frames' own times (as ffmpeg -ss and -t do): at 29.97 fps, 51 frames."""
    spec = ClipSpec("ntsc.mp4", "libx264", size=(32, 128), rate=Fraction(30000, 1001), frames=70, gop=30)
    source, output = write_clip(tmp_path, spec), tmp_path / "part.mkv"
    run = run_cli(
        [*CLI, "denoise", str(source), str(output), "--start", start, "--duration", duration, "--codec", "ffv1",
         "--noise", "none", "--h", "1", "--patch-radius", "1", "--search-radius", "1", "--backend", "cpu", "--quiet"],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert plain_pyav_numbers(output) == list(range(first, first + 51))


def test_cancel_leaves_no_output(noisy_clip_file, tmp_path) -> None:
    noisy_path, _ = noisy_clip_file
    cancel = threading.Event()
    with pytest.raises(ExportCancelledError, match="cancelled after 3 of 10 frames"):
        denoise_file(
            noisy_path, tmp_path / "out.mkv", PARAMS, backend="cpu", codec="ffv1",
            progress=lambda done, *_: done == 3 and cancel.set(), cancel=cancel,
        )  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clean.mkv", "noisy.mkv"]
    # Cancelled after the last frame, while the encoder finishes (the window's "Stop and close"
    # promises no file): nothing is kept either.
    cancel.clear()
    with pytest.raises(ExportCancelledError, match="cancelled after all 10 frames"):
        denoise_file(
            noisy_path, tmp_path / "out.mkv", PARAMS, backend="cpu", codec="ffv1",
            progress=lambda done, total, _: done == total and cancel.set(), cancel=cancel,
        )  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clean.mkv", "noisy.mkv"]


def test_cli_denoise_prints_a_summary_and_refuses_bad_outputs(noisy_clip_file, tmp_path, capsys) -> None:
    noisy_path, _ = noisy_clip_file
    out = tmp_path / "out.mp4"
    arguments = [
        "denoise",
        str(noisy_path),
        str(out),
        "--backend",
        "cpu",
        "--preset",
        "ultrafast",
        "--search-radius",
        "1",
    ]
    assert main(arguments) == 0
    printed = capsys.readouterr().err
    assert "denoised 10 frames in" in printed and len(read_frames(out)) == 10
    assert "\r" not in printed and "1/10 frames (10 %)  starting" in printed  # a log's lines, not redraws
    for extra, message in [
        ([], "exists; pass --overwrite"),
        (["--h", "-1", "--overwrite"], "h must be a finite number > 0"),
        (["--crf", "60", "--overwrite"], "crf must be an integer in 0..51, got 60"),
    ]:
        assert main([*arguments, *extra]) == 1
        error = capsys.readouterr().err
        last = error.splitlines()[-1]  # after the noise estimate's report, if it ran
        assert last.startswith("nlmeans-studio: error: ") and message in last and "Traceback" not in error
    assert main(["denoise", str(noisy_path), str(noisy_path), "--overwrite"]) == 1
    assert "must not be the input" in capsys.readouterr().err


def test_cli_denoise_sets_h_and_the_color_transform_from_the_noise(noisy_clip_file, tmp_path, capsys) -> None:
    noisy_path, _ = noisy_clip_file
    arguments = ["denoise", str(noisy_path), str(tmp_path / "out.mkv"), "--backend", "cpu", "--codec", "ffv1"]
    arguments += ["--search-radius", "1", "--overwrite"]
    assert main(arguments) == 0
    report = capsys.readouterr().err.splitlines()[0]
    # "noise: sigma R, G, B levels (method), confidence C%; luma/chroma (bt601) exponential/max, h_Y = .., h_UV = .."
    sigmas = [float(s) for s in report.split("sigma ")[1].split(" levels")[0].split(", ")]
    np.testing.assert_allclose(sigmas, 20, rtol=0.15)  # 6 small blocks a frame: a coarse estimate
    assert "luma/chroma (bt601) exponential/max, h_Y = " in report  # the default for colour
    assert 5 < float(report.split("h_Y = ")[1].split(",")[0]) < 40  # exponential: about 0.5-1 sigma
    assert main([*arguments, "--luma-chroma", "off"]) == 0
    report = capsys.readouterr().err.splitlines()[0]
    # "...; exponential/max, h = H, color decorrelation on|off"
    assert report.endswith(("color decorrelation on", "color decorrelation off"))
    assert 5 < float(report.split("h = ")[1].split(",")[0].split(" ")[0]) < 40
    assert main([*arguments, "--h", "33"]) == 0
    assert "h = 33.0 (yours; the noise suggests " in capsys.readouterr().err
    assert main([*arguments, "--noise", "0,0,16,16"]) == 0
    assert "(region)" in capsys.readouterr().err
    assert main([*arguments, "--noise", "none"]) == 0
    assert "noise:" not in capsys.readouterr().err
    assert main([*arguments, "--noise", "0,0,8,8"]) == 1
    assert "the region is 8x8 pixels; an estimate needs at least 16x16" in capsys.readouterr().err


def test_a_clip_without_frames_is_refused(tmp_path) -> None:
    import av

    with av.open(str(tmp_path / "empty.mkv"), "w") as container:
        stream = container.add_stream("ffv1", rate=25)
        stream.width, stream.height, stream.pix_fmt = 32, 32, "bgr0"
        container.start_encoding()  # a header and no frame: FFmpeg reads it as a file ending early
    with pytest.raises(VideoError, match=r"empty.mkv: not a video file FFmpeg can read .*End of file"):
        denoise_file(tmp_path / "empty.mkv", tmp_path / "out.mkv", PARAMS, backend="cpu")
    assert not (tmp_path / "out.mkv").exists()


def test_bench_pipeline_reports_every_stage(noisy_clip_file, capsys) -> None:
    noisy_path, _ = noisy_clip_file
    assert main(["bench", "--pipeline", str(noisy_path), "--backend", "cpu", "--frames", "6"]) == 0
    output = capsys.readouterr().out
    rows = [line.split(" | ") for line in output.splitlines() if " | " in line and not line.startswith("stage")]
    stages = {name: (float(fps), [float(value) for value in rounds.split(", ")]) for name, fps, rounds, _ in rows}
    assert all(float(cpu) > 0 for name, *_, cpu in rows if name != "end to end, steady")
    assert set(stages) == {"decode", "denoise", "encode", "end to end", "end to end, steady"}
    for fps, rounds in stages.values():
        assert len(rounds) == 3 and fps == pytest.approx(sorted(rounds)[1], abs=0.05) and fps > 0  # the median
    assert "# slowest stage: " in output


def _denoise_command(source: Path, target: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "nlmeans_studio.engine", "denoise", str(source), str(target), "--backend", "cpu",
            "--codec", "ffv1", "--noise", "none", *extra]  # fmt: skip


def _file_size_limit() -> None:
    """In the child: files may not grow past 30 kB, as on a full disk (EFBIG instead of ENOSPC)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails instead of the process dying
    resource.setrlimit(resource.RLIMIT_FSIZE, (30_000, 30_000))


def test_a_full_disk_ends_with_one_line_and_no_file(tmp_path) -> None:
    make_clip(tmp_path / "clip.mkv", frames=60, size=(96, 128))  # about 1 MB of FFV1
    before = (tmp_path / "clip.mkv").read_bytes()
    command = _denoise_command(tmp_path / "clip.mkv", tmp_path / "out.mkv", "--search-radius", "1", "--quiet")
    run = subprocess.run(command, preexec_fn=_file_size_limit, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1
    assert run.stderr.strip() == f"nlmeans-studio: error: {tmp_path / 'out.mkv'}: writing failed: File too large"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clip.mkv"]
    assert (tmp_path / "clip.mkv").read_bytes() == before


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_run_leaves_no_file(tmp_path, stop) -> None:
    make_clip(tmp_path / "clip.mkv", frames=400, size=(64, 96))
    before = (tmp_path / "clip.mkv").read_bytes()
    command = _denoise_command(tmp_path / "clip.mkv", tmp_path / "out.mkv", "--search-radius", "5")
    status, error = stopped_under_way(command, "frames (", stop)  # the progress bar: the run is under way
    assert status == 130
    assert error.splitlines()[-1].startswith("nlmeans-studio: cancelled") and "Traceback" not in error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clip.mkv"]
    assert (tmp_path / "clip.mkv").read_bytes() == before


@pytest.mark.parametrize(
    ("source_name", "sound", "suffix"),
    [
        ("phone.mp4", "aac", ".mp4"),
        ("phone.mp4", "aac", ".mov"),
        ("web.webm", "libopus", ".mkv"),
        ("web.webm", "libvorbis", ".mkv"),
    ],
)
def test_a_sound_decodes_as_the_source_does(tmp_path, source_name, sound, suffix) -> None:
    """The archivist's phone clip came back with its sound's first 10 ms silent: AAC's priming
    packet (timed before the first frame) was left out. A web video's Opus lost its first 20 ms in
    Matroska the same way, and its Vorbis 13 ms (a 2 ms packet 3 ms before the picture, which the
    next one's decoding needs). MP4 and MOV hold times before 0, Matroska Opus's priming, and keep
    them, as FFmpeg's own copy does: the decoded sound is the source's, sample for sample (FFmpeg's
    md5 of it)."""
    source = tmp_path / source_name
    video = ["-c:v", "libvpx-vp9", "-deadline", "realtime"] if source.suffix == ".webm" else ["-c:v", "libx264"]
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=30", "-f", "lavfi",
         "-i", "sine=frequency=440:sample_rate=48000", "-t", "0.5", *video, "-c:a", sound, "-shortest",
         str(source)],
        check=True, timeout=60,
    )  # fmt: skip
    output = tmp_path / f"out{suffix}"
    denoise_file(source, output, NLMParams(h=5.0, search_radius=1, patch_radius=1), backend="cpu")

    def sound_md5(path: Path) -> str:
        command = ["ffmpeg", "-loglevel", "error", "-i", str(path), "-map", "0:a", "-f", "md5", "-"]
        return subprocess.run(command, capture_output=True, text=True, check=True, timeout=60).stdout

    assert sound_md5(output) == sound_md5(source)
    assert len(read_frames(output)) == len(read_frames(source))


@pytest.mark.parametrize("suffix", [".mkv", ".mp4", ".mxf"])
def test_the_same_run_writes_the_same_bytes(noisy_clip_file, tmp_path, suffix) -> None:
    """An archive checks its files by checksum: Matroska's random segment ID and date made each rerun differ."""
    source, _ = noisy_clip_file
    outputs = [tmp_path / f"run{n}{suffix}" for n in (1, 2)]
    for output in outputs:
        assert main(["denoise", str(source), str(output), "--h", "20", "--codec", "ffv1", "--quiet"]) == 0
    assert outputs[0].read_bytes() == outputs[1].read_bytes()


def late_picture(folder: Path, name: str = "late.mp4") -> Path:
    """3 s of H.264 (a keyframe every 0.48 s) muxed 0.5 s after 3.5 s of AAC, as ``-itsoffset`` makes it."""
    video, sound, muxed = folder / "v.mp4", folder / "a.m4a", folder / name
    mux = ["-itsoffset", "0.5", "-i", str(video), "-i", str(sound), "-map", "0:v", "-map", "1:a", "-c", "copy"]
    for command in (
        ["-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-t", "3", "-c:v", "libx264", "-g", "12", str(video)],
        ["-f", "lavfi", "-i", "sine=r=48000:beep_factor=4", "-t", "3.5", "-c:a", "aac", str(sound)],
        [*mux, str(muxed)],
    ):
        subprocess.run(["ffmpeg", "-loglevel", "error", *command], check=True, timeout=60)
    return muxed


def stream_starts(path: Path) -> dict[str, float]:
    """Each stream's start time, and the file's duration, in seconds, as ffprobe reads them."""
    probe = ["ffprobe", "-v", "error", "-show_entries", "stream=codec_type,start_time:format=duration", "-of", "json"]
    found = json.loads(subprocess.run([*probe, str(path)], capture_output=True, text=True, check=True).stdout)
    starts = {stream["codec_type"]: float(stream["start_time"]) for stream in found["streams"]}
    return {**starts, "duration": float(found["format"]["duration"])}


@pytest.mark.parametrize("suffix", [".mp4", ".mkv"])
def test_sound_before_the_first_picture_is_kept_with_the_picture_as_late(tmp_path, suffix) -> None:
    """A recorder's file whose picture starts 0.5 s after its sound lost that half second of sound, and
    every time moved 0.5 s earlier. A whole export keeps the sound and starts the picture as late, as
    FFmpeg's own copy does; an export from --start starts both there."""
    source = late_picture(tmp_path)
    output = tmp_path / f"out{suffix}"
    filtered = ["--noise", "none", "--h", "5", "--search-radius", "1", "--codec", "ffv1", "--backend", "cpu"]
    run = run_cli([*CLI, "denoise", source, output, *filtered], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert stream_starts(source) == {"video": 0.5, "audio": 0.0, "duration": 3.5}
    starts = stream_starts(output)
    assert starts["video"] == pytest.approx(0.5, abs=0.002) and starts["audio"] == pytest.approx(0, abs=0.025)
    assert starts["duration"] == pytest.approx(3.5, abs=0.03)  # the sound whole
    with VideoReader(source) as before, VideoReader(output) as after:
        assert len(after) == len(before) == 75
        np.testing.assert_allclose(after.frame_times, before.frame_times, atol=0.002)  # from frame 0: unchanged
    cut = tmp_path / f"cut{suffix}"
    run = run_cli([*CLI, "denoise", source, cut, *filtered, "--start", "1"], capture_output=True, text=True)
    assert run.returncode == 0 and stream_starts(cut)["video"] == pytest.approx(0, abs=0.002), run.stderr


def test_an_mxf_that_would_lose_frames_to_its_short_sound_is_not_written(tmp_path) -> None:
    """A tape capture whose sound was 0.5 s shorter than its picture came out of MXF with 38 of its 50
    frames, the run saying "denoised 50 frames": FFmpeg's MXF muxer ends the picture with the sound."""
    source = tmp_path / "capture.mov"
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-f", "lavfi", "-i",
         "sine=r=48000", "-t", "2", "-map", "0:v", "-map", "1:a", "-c:v", "ffv1", "-c:a", "pcm_s24le", "-af",
         "atrim=0:1.5", str(source)],
        check=True, timeout=60,
    )  # fmt: skip
    filtered = ["--noise", "none", "--h", "5", "--search-radius", "1", "--codec", "prores", "--backend", "cpu"]
    run = run_cli([*CLI, "denoise", source, tmp_path / "out.mxf", *filtered], capture_output=True, text=True)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert "FFmpeg's MXF muxer kept 38 of the 50 frames" in run.stderr.splitlines()[-1]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["capture.mov"]  # nothing left behind
    run = run_cli([*CLI, "denoise", source, tmp_path / "out.mov", *filtered], capture_output=True, text=True)
    assert run.returncode == 0 and len(read_frames(tmp_path / "out.mov")) == 50, run.stderr


@pytest.mark.parametrize("part", [range(4, 10), range(0, 3), range(12, 15)])
def test_a_part_of_a_file_equals_the_whole_files_frames(tmp_path, part) -> None:
    """A chapter (marks in the window, --start and --duration) is read with its window's frames around it:
    its first and last frames differed from the whole file's by 1.2 levels on average (a VHS archivist's
    chapters would not join without a seam). Made by the ffmpeg tool, at NTSC's rate."""
    source = ffmpeg_pattern(
        tmp_path / "tape.mkv", "testsrc2=size=96x64:rate=30000/1001:duration=0.5", "-vf", "noise=alls=15:allf=t",
        "-c:v", "ffv1",
    )  # fmt: skip
    params = NLMParams(h=20, search_radius=2, patch_radius=1, frames_past=1, frames_future=2)
    denoise_file(source, tmp_path / "whole.mkv", params, codec="ffv1", backend="cpu")
    denoise_file(source, tmp_path / "part.mkv", params, codec="ffv1", backend="cpu", frames=part)
    whole, written = read_frames(tmp_path / "whole.mkv"), read_frames(tmp_path / "part.mkv")
    assert len(whole) == 15 and len(written) == len(part)
    np.testing.assert_array_equal(written, whole[part.start : part.stop])
