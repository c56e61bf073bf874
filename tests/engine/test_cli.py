"""The command line: the benchmark table, and clear errors on bad arguments."""

import json
import logging
import os
import subprocess
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from clips import CLI, anamorphic_clip, ffmpeg_pattern, run_cli
from test_video import make_clip

from nlmeans_studio.engine import COMPILING, Denoiser, NLMParams, __version__, denoise_volume, estimate_noise
from nlmeans_studio.engine.cli import denoise as denoise_command
from nlmeans_studio.engine.cli import main
from nlmeans_studio.engine.cpu import compiled
from nlmeans_studio.engine.media.ffmpeg import VideoError
from nlmeans_studio.engine.media.timecode import timecode_after
from nlmeans_studio.engine.media.writer import check_encoder
from nlmeans_studio.engine.video import denoiser as denoiser_module
from nlmeans_studio.engine.video.sample import SAMPLE_CLIP, load_clean_frames, resize_bilinear

TINY_BENCH = ["bench", "--backend", "cpu", "--size", "48x40", "--frames", "1", "--search-radii", "1"]


def test_bench_prints_a_row_per_case(capsys, tmp_path) -> None:
    frames = (load_clean_frames(None, 4, 40, 48) * 255).round().astype(np.uint8)
    np.save(tmp_path / "frames.npy", frames)
    assert main([*TINY_BENCH, "--temporal", "0:0,1:1", "--input", str(tmp_path / "frames.npy")]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[2].split(" | ")
    assert header[:4] == ["A", "Dp", "Df", "window"] and "fused ms" in header and "cascade dB" in header
    rows = [dict(zip(header, line.split(" | "), strict=True)) for line in lines[3:]]
    assert [(r["A"], r["Dp"], r["Df"], r["window"]) for r in rows] == [("1", "0", "0", "9"), ("1", "1", "1", "27")]
    input_psnr = float(lines[1].rsplit("input PSNR ", 1)[1].split()[0])
    for row in rows:
        assert float(row["fused dB"]) > input_psnr + 0.5  # sigma 25, h = 50, 9 or 27 offsets: 0.9 dB or more
        assert row["fused dB"] == row["cascade dB"]  # the same filter, to the printed 0.01 dB


def test_bench_on_the_bundled_sample(capsys) -> None:
    """The README's first command without its size: the sample clip decodes and denoises."""
    assert SAMPLE_CLIP.is_file()
    assert main([*TINY_BENCH, "--temporal", "0:0", "--methods", "fused", "--peers"]) == 0
    output = capsys.readouterr().out
    assert "720" not in output.splitlines()[0] and "48x40 RGB" in output


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["bench", "--size", "big"], "size must be WIDTHxHEIGHT, like 720x480, got 'big'"),
        (["bench", "--temporal", "1"], "expected PAST:FUTURE pairs like 0:0,1:1, got '1'"),
        (["bench", "--search-radii", "a"], "expected comma-separated integers, got 'a'"),
        (["bench", "--backend", "tpu"], "invalid choice: 'tpu'"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(capsys, arguments, message) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(arguments)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--input", "/nonexistent/clip.mp4"], "/nonexistent/clip.mp4: no such file"),
        (["--search-radii", "17"], "search_radius must be an integer in 0..16, got 17"),
        (["--size", "8x8", "--search-radii", "5"], "too small for search_radius 5"),
    ],
)
def test_bad_values_exit_1_with_one_line(capsys, arguments, message) -> None:
    assert main([*TINY_BENCH, "--temporal", "0:0", "--methods", "fused", *arguments]) == 1
    error = capsys.readouterr().err
    assert error.startswith("nlmeans-studio: error: ") and message in error and "Traceback" not in error


def _save(path, make) -> str:
    make(path)
    return str(path)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda path: np.save(path, np.zeros((8, 8, 8), np.float32)), "holds float32 of shape (8, 8, 8); bench --input "
         "takes a .npy of uint8 RGB frames (T, H, W, 3)"),
        (lambda path: np.savez(path, np.zeros((2, 8, 8, 3), np.uint8)) or Path(f"{path}.npz").rename(path),
         "a NumPy .npz archive (several arrays), named .npy; bench --input takes"),
        (lambda path: path.write_bytes(b"\x93NUMPY\x01\x00v\x00" + b"{'descr': '|u1', 'fortran_order': False, "
         b"'shape': (10000000, 1000, 1000, 3), }".ljust(117) + b"\n"), "frames.npy: not a .npy file that can be read"),
    ],
)  # fmt: skip
def test_bench_refuses_a_npy_that_holds_no_frames_saying_what_it_takes(capsys, tmp_path, make, message) -> None:
    """numpy's texts came through: "operands could not be broadcast", "unhashable type: 'slice'"."""
    frames = _save(tmp_path / "frames.npy", make)
    assert main([*TINY_BENCH, "--temporal", "0:0", "--methods", "fused", "--input", frames]) == 1
    error = capsys.readouterr().err
    assert error.startswith("nlmeans-studio: error: ") and message in error and "Traceback" not in error


@pytest.mark.pyav_once  # nothing of PyAV
def test_version_and_module_entry_point() -> None:
    result = run_cli([*CLI, "--version"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == f"nlmeans-studio {__version__}"


@pytest.mark.pyav_once  # nothing of PyAV
def test_resize_bilinear_keeps_constants_and_interpolates() -> None:
    constant = np.full((1, 7, 9, 3), 0.25, np.float32)
    assert np.array_equal(resize_bilinear(constant, 4, 5), np.full((1, 4, 5, 3), 0.25, np.float32))
    ramp = np.arange(4, dtype=np.float32)[None, None, :, None].repeat(2, axis=1)
    # Doubling a ramp 0..3 with aligned centres: samples at -0.25, 0.25, ..., 3.25, clamped.
    np.testing.assert_allclose(resize_bilinear(ramp, 2, 8)[0, 0, :, 0], [0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3])


@pytest.mark.pyav_once  # nothing of PyAV
def test_resized_frames_are_c_contiguous() -> None:
    """Strided frames would make every copy to a device or a pinned buffer slow."""
    assert resize_bilinear(np.zeros((2, 9, 11, 3), np.float32), 6, 7).flags["C_CONTIGUOUS"]
    assert load_clean_frames(None, 1, 30, 40).flags["C_CONTIGUOUS"]


@pytest.mark.pyav_once  # numba's cache, not PyAV
@pytest.mark.parametrize("command", ["denoise", "denoise-volume", "estimate-noise"])
def test_the_compile_is_announced_only_when_the_filter_compiles(tmp_path, command) -> None:
    """'a first run compiles the filter' was printed on every run, numba's cache warm or cold; the
    noise estimate's kernels (18-28 s cold on two cores) compiled silently."""
    if command == "denoise":
        make_clip(tmp_path / "in.mkv", frames=3, size=(16, 24))
        arguments = [command, str(tmp_path / "in.mkv"), str(tmp_path / "out.mkv"), "--noise", "none"]
        Denoiser(NLMParams(h=10), "cpu").warm_up(16, 24)  # compiled into numba's cache, if it was not
    elif command == "estimate-noise":
        make_clip(tmp_path / "in.mkv", frames=3, size=(48, 64))
        arguments = [command, str(tmp_path / "in.mkv")]
        estimate_noise(np.random.default_rng(3).random((2, 48, 64, 3)))  # its kernels into numba's cache
    else:
        np.save(tmp_path / "in.npy", np.random.default_rng(3).random((8, 8, 8), dtype=np.float32))
        arguments = [command, str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--h", "0.2", "--search-radius", "1"]
        denoise_volume(np.load(tmp_path / "in.npy"), h=0.2, search_radius=1, backend="cpu")
    writes = command != "estimate-noise"  # which has no backend and writes nothing
    command_line = [*CLI, *arguments, *(["--backend", "cpu"] if writes else [])]
    warm = run_cli(command_line, capture_output=True, text=True, timeout=120)
    assert warm.returncode == 0 and "compiles the filter" not in warm.stderr and COMPILING not in warm.stderr
    # An empty cache: said before the wait, as the first line. No need to sit through the compile.
    cold = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "empty cache")}
    again = [*command_line, *(["--overwrite"] if writes else [])]
    with subprocess.Popen(again, stderr=subprocess.PIPE, text=True, env=cold) as child:
        first = child.stderr.readline()
        child.kill()
    assert first == COMPILING + "\n"


@pytest.mark.pyav_once  # numba's cache, not PyAV
@pytest.mark.parametrize("quiet", [False, True])
def test_a_first_compile_is_said_once_and_not_with_quiet(tmp_path, monkeypatch, caplog, quiet) -> None:
    # The Denoisers say it too (the Python API): the command said it twice, and with --quiet once.
    make_clip(tmp_path / "in.mkv", frames=3, size=(16, 24))
    monkeypatch.setattr(compiled, "_ANNOUNCED", type(compiled._ANNOUNCED)())  # a fresh process's
    for module in (denoise_command, denoiser_module):
        monkeypatch.setattr(module, "cpu_filter_compiles", lambda: True)  # numba's cache cold
    arguments = ["denoise", str(tmp_path / "in.mkv"), str(tmp_path / "out.mkv"), "--backend", "cpu"]
    with caplog.at_level(logging.WARNING, logger="nlmeans_studio.engine"):
        assert main([*arguments, "--noise", "none", *(["--quiet"] if quiet else [])]) == 0
    assert caplog.messages == ([] if quiet else [COMPILING])


@pytest.mark.pyav_once  # nothing of PyAV
def test_a_run_with_numba_jit_disabled_says_nothing_of_a_compile(tmp_path) -> None:
    # NUMBA_DISABLE_JIT=1 (numba's switch for debugging) leaves plain functions: the compile
    # check ended the run in an AttributeError traceback.
    np.save(tmp_path / "in.npy", np.random.default_rng(3).random((8, 8, 8), dtype=np.float32))
    command = [*CLI, "denoise-volume", str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--h", "0.2",
               "--search-radius", "1", "--backend", "cpu"]  # fmt: skip
    run = run_cli(command, capture_output=True, text=True, timeout=120, env={**os.environ, "NUMBA_DISABLE_JIT": "1"})
    assert run.returncode == 0 and COMPILING not in run.stderr, run.stderr


def test_an_image_sequence_output_is_said_to_leave_the_sound_out(capsys, tmp_path) -> None:
    make_clip(tmp_path / "in.mkv", frames=2, size=(16, 24), audio=True)
    output = str(tmp_path / "f%06d.png")
    assert main(["denoise", str(tmp_path / "in.mkv"), output, "--noise", "none", "--backend", "cpu"]) == 0
    assert f"warning: {output}: an image sequence carries no audio or subtitles" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        # The reader's probe (headers, first frame and index: one demuxer); its random access, for
        # the noise's pairs and SURE's sample (an FFV1 clip: every frame an entry point, so one
        # demuxer seeks to each); the export's sequential decode and the writer's copy of the
        # sound, each a pass from the file's start with a demuxer of its own; and the check, once, that
        # the output's container holds the sound, before any work. The clip is too small for a sure
        # reading of the noise: its pairs are read again unclipped, frame 0 by a demuxer of its own.
        pytest.param([], 6, id="default"),
        pytest.param(["--noise", "none"], 4, id="noise-none"),  # no random access
    ],
)
def test_denoise_opens_its_source_once_and_hands_it_on(tmp_path, monkeypatch, options, expected) -> None:
    """A default denoise opened the source 16 times: a reader each for the file's facts, the noise,
    SURE's sample and the export, each probing it three times, and the writer once more for the sound."""
    import av

    make_clip(tmp_path / "in.mkv", frames=6, size=(16, 24), audio=True)
    source, opened = str(tmp_path / "in.mkv"), []
    real_open = av.open

    def counting_open(file, *arguments, **options):
        if str(file) == source:
            opened.append(file)
        return real_open(file, *arguments, **options)

    monkeypatch.setattr(av, "open", counting_open)
    arguments = ["denoise", source, str(tmp_path / "out.mkv"), "--backend", "cpu", "--quiet", *options]
    assert main(arguments) == 0
    assert len(opened) == expected


def nvenc_runs_here() -> bool:
    """Whether this machine has an NVIDIA video encoder (an H100 has none)."""
    try:
        check_encoder("h264-nvenc")
    except VideoError:
        return False
    return True


@pytest.mark.parametrize("command", ["denoise", "tune"])
def test_nvenc_without_an_nvidia_encoder_is_refused_before_the_clip_is_read(tmp_path, command) -> None:
    """A laptop without NVENC was refused h264-nvenc only after the noise estimate (seconds to minutes)."""
    if nvenc_runs_here():
        pytest.skip("this machine has an NVIDIA video encoder")
    make_clip(tmp_path / "in.mkv", frames=3, size=(16, 24))
    output = [str(tmp_path / "out.mp4")] if command == "denoise" else ["--fps", "5"]
    run = run_cli(
        [*CLI, command, str(tmp_path / "in.mkv"), *output, "--codec", "h264-nvenc", "--backend", "cpu"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 1 and run.stderr == (  # one line: no noise measured, no window timed
        "nlmeans-studio: error: h264-nvenc: this machine has no NVIDIA video encoder it can use (no NVIDIA driver, "
        "or a GPU without NVENC, such as the H100 or A100); choose h264 or h265\n"
    )


def test_a_codec_this_ffmpeg_lacks_is_refused_before_the_clip_is_read(tmp_path, monkeypatch, capsys) -> None:
    make_clip(tmp_path / "in.mkv", frames=3, size=(16, 24))
    av = pytest.importorskip("av")
    monkeypatch.setattr(av, "codecs_available", av.codecs_available - {"libx265"})

    def read(*args, **kwargs):
        raise AssertionError("the clip was read")

    monkeypatch.setattr(denoise_command.VideoReader, "__init__", read)
    assert main(["denoise", str(tmp_path / "in.mkv"), str(tmp_path / "out.mkv"), "--codec", "h265"]) == 1
    assert capsys.readouterr().err == (
        "nlmeans-studio: error: this FFmpeg build has no libx265 encoder; choose another codec\n"
    )


@pytest.mark.parametrize(
    ("encoder", "pixel_format", "codec", "halved"),
    [
        ("prores_ks", "yuv422p10le", "h264", True),
        ("prores_ks", "yuv422p10le", "ffv1", False),
        ("ffv1", "yuv420p", "h264", False),
    ],
)
def test_a_422_master_written_420_is_said(tmp_path, encoder, pixel_format, codec, halved) -> None:
    """An archivist's 10-bit 4:2:2 ProRes came back H.264 4:2:0 without a word (FFmpeg's own command keeps 4:2:2)."""
    source = tmp_path / "master.mov"
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-t", "0.16",
         "-c:v", encoder, "-pix_fmt", pixel_format, str(source)],
        check=True, timeout=60,
    )  # fmt: skip
    output = tmp_path / f"out.{'mp4' if codec == 'h264' else 'mkv'}"
    run = run_cli(
        [*CLI, "denoise", str(source), str(output), "--codec", codec, "--h", "5", "--search-radius", "1",
         "--backend", "cpu"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    said = f"warning: {output}: H.264 is written 4:2:0, with half the source's chroma rows (4:2:2, yuv422p10le)"
    assert (said in run.stderr) == halved, run.stderr


@pytest.mark.parametrize(
    ("encoder", "pixel_format", "output", "written", "said"),
    [
        ("prores_ks", "yuv422p10le", "out.mov", ("prores", "yuv422p10le"), "out.mov (prores, the source's kind "
         "(prores); --codec h264 for a smaller file)"),
        ("dnxhd", "yuv422p10le", "out.mkv", ("prores", "yuv422p10le"), "out.mkv (prores, the source's kind (dnxhd)"),
        ("ffv1", "yuv444p", "out.mkv", ("ffv1", "yuv444p"), "out.mkv (ffv1, the source's kind (ffv1)"),
        ("prores_ks", "yuv422p10le", "out.mp4", ("h264", "yuv420p10le"), "H.264 is written 4:2:0"),  # a delivery
        ("libx264", "yuv420p", "out.mkv", ("h264", "yuv420p"), None),
        ("dvvideo", "yuv411p", "out.mkv", ("ffv1", "yuv411p"), "out.mkv (ffv1, the source's kind (dvvideo)"),
        ("libx264", "yuv420p", "out.avi", ("ffv1", "yuv420p"), None),  # refused before: AVI holds no H.264
    ],
)  # fmt: skip
def test_a_master_stays_a_master_where_no_codec_is_asked_for(
    tmp_path, encoder, pixel_format, output, written, said
) -> None:
    """An editor's ProRes 4:2:2 10-bit master, denoised to .mov with no options, came back H.264 4:2:0:
    the archive's master replaced by a delivery file. A master keeps its kind in a master's container
    (DNxHR, which has no encoder here, as ProRes), a lossless source stays lossless; .mp4 is a delivery."""
    source = tmp_path / "master.mov"
    profile = ["-profile:v", "dnxhr_hqx"] if encoder == "dnxhd" else []
    picture = {"dnxhd": "256x144:rate=25", "dvvideo": "720x480:rate=30000/1001"}.get(encoder, "64x48:rate=25")
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", f"testsrc2=size={picture}", "-t", "0.16",
         "-c:v", encoder, *profile, "-pix_fmt", pixel_format, str(source)],
        check=True, timeout=60,
    )  # fmt: skip
    run = run_cli(
        [*CLI, "denoise", source, tmp_path / output, "--h", "5", "--search-radius", "1", "--backend", "cpu"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    probe = ["ffprobe", "-v", "error", "-show_entries", "stream=codec_name,pix_fmt", "-of", "csv=p=0"]
    found = subprocess.run([*probe, str(tmp_path / output)], capture_output=True, text=True, check=True).stdout
    assert tuple(found.strip().split(",")) == written
    assert ("the source's kind" in run.stderr) == (said is not None and "the source's kind" in said), run.stderr
    assert said is None or said in run.stderr, run.stderr


def test_a_y4m_stream_says_where_its_chroma_is_and_that_its_pixel_shape_is_not_carried(tmp_path) -> None:
    """A DVD restorer's pipe: the y4m stream said C420jpeg (chroma centred) where the frames have it at
    MPEG-2's sites, a half-pixel shift for the next tool, and A0:0 for the DVD's 10:11 pixels without a
    word. The header says C420mpeg2; the pixel shape, which it cannot carry here, is said with the way on."""
    source = anamorphic_clip(tmp_path / "dvd.mp4")
    command = [*CLI, "denoise", source, "-", "--noise", "none", "--h", "5", "--search-radius", "1", "--backend", "cpu"]
    run = run_cli(command, capture_output=True, timeout=300)
    assert run.returncode == 0, run.stderr
    header = run.stdout.split(b"\n", 1)[0].decode()
    assert header.startswith("YUV4MPEG2 W64 H48 F30000:1001 Ip A0:0 C420mpeg2 "), header
    said = "the y4m stream does not carry the source's pixel aspect ratio (10:11, shown 40:33): its header says "
    assert said in run.stderr.decode() and "-vf setsar=10/11" in run.stderr.decode()


@pytest.mark.parametrize("output", ["out.mov", "out.mp4", "out.mkv"])
def test_a_raw_dv_capture_is_written_at_its_frame_rate(tmp_path, output) -> None:
    """PyAV reads raw DV's average rate as its time base's 60000: the output was written at 60000 fps,
    which MOV and MP4 refused after the whole run (a hidden part file left behind), and Matroska
    tagged 30000 fps. A VHS archivist's capture card writes such files."""
    source = tmp_path / "tape.dv"
    made = subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=720x576:rate=25:duration=0.24",
         "-c:v", "dvvideo", "-pix_fmt", "yuv420p", "-f", "dv", str(source)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    command = [*CLI, "denoise", str(source), str(tmp_path / output), "--noise", "none", "--h", "5"]
    run = run_cli([*command, "--search-radius", "1", "--backend", "cpu", "--codec", "h264"], capture_output=True)
    assert run.returncode == 0, run.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted([output, "tape.dv"])
    probed = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_frames", "-show_entries",
         "stream=avg_frame_rate,r_frame_rate,nb_read_frames", "-of", "csv=p=0", str(tmp_path / output)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert probed.stdout.split() == ["25/1,25/1,6"], probed.stdout


def test_a_y4m_stream_of_a_four_two_two_source_is_not_said_halved(tmp_path) -> None:
    """y4m on standard output keeps the source's sampling (C422p10): the warning "H.264 is written 4:2:0"
    came from the default codec, which a pipe does not use."""
    source = ffmpeg_pattern(
        tmp_path / "master.mkv", "testsrc2=size=64x48:rate=25:duration=0.2", "-pix_fmt", "yuv422p10le", "-c:v", "ffv1"
    )
    command = [*CLI, "denoise", str(source), "-", "--noise", "none", "--h", "5", "--search-radius", "1"]
    run = run_cli([*command, "--backend", "cpu"], capture_output=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert b" C422p10 " in run.stdout.split(b"\n", 1)[0] and b"4:2:0" not in run.stderr, run.stderr


@pytest.mark.parametrize(
    ("name", "codec", "warned", "kept"),
    [("out.mkv", "ffv1", True, "N/A"), ("out.avi", "ffv1", True, "N/A"), ("out.mxf", "ffv1", False, "10:11"),
     ("out.mkv", "h264", False, "10:11")],
)  # fmt: skip
def test_anamorphic_pixels_written_square_are_said(tmp_path, name, codec, warned, kept) -> None:
    """An archivist's NTSC DV (10:11 pixels) written FFV1 into .avi played 3:2 instead of 15:11, though
    the README said the pixel aspect ratio is kept: FFmpeg's .mkv and .avi muxers take it from the
    stream, which PyAV cannot set, and FFV1's bitstream has none. The output is checked by ffprobe."""
    source = anamorphic_clip(tmp_path / "tape.mkv")
    output = tmp_path / name
    run = run_cli(
        [*CLI, "denoise", str(source), str(output), "--codec", codec, "--h", "5", "--search-radius", "1",
         "--patch-radius", "1", "--noise", "none", "--backend", "cpu"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    said = f"warning: {output}: FFV1 in {output.suffix} does not carry the source's pixel aspect ratio (10:11, "
    assert (said in run.stderr) == warned, run.stderr
    if warned:  # the command runs where the user is: the output's path as given
        assert f"ffmpeg -i {output} -c copy -aspect 40:33 {output.with_name('fixed' + output.suffix)}" in run.stderr
    probe = ["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "stream=sample_aspect_ratio", "-of",
             "csv=p=0", str(output)]  # fmt: skip
    assert subprocess.run(probe, capture_output=True, text=True, timeout=60).stdout.strip() == kept


@pytest.mark.parametrize(
    ("rate", "timecode", "start", "suffix", "expected"),
    [
        ("24", "01:00:00:00", "0.5", ".mov", "01:00:00:12"),
        ("30000/1001", "00:59:59;28", "1", ".mov", "01:00:00;28"),  # drop-frame: the minute's ;00 and ;01 kept at 60
        ("30000/1001", "00:00:59;28", "0.1", ".mxf", "00:01:00;03"),  # ;00 and ;01 skipped at minute 1
        ("25", "10:00:00:00", "0", ".mkv", "10:00:00:00"),
    ],
)
def test_a_masters_timecode_and_its_tracks_languages_are_kept(
    tmp_path, rate, timecode, start, suffix, expected
) -> None:
    """An editor's DNxHR master (timecode track, a French second track): the output had no timecode (MOV), or
    00:00:00:00 (MXF), and its tracks' languages were "und". An export from --start is that many frames later."""
    source = tmp_path / "master.mov"
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", f"smptehdbars=size=64x48:rate={rate}", "-f", "lavfi",
         "-i", "sine=r=48000", "-t", "1.5", "-map", "0", "-map", "1", "-map", "1", "-c:v", "prores_ks", "-pix_fmt",
         "yuv422p10le", "-c:a", "pcm_s16le", "-timecode", timecode, "-metadata:s:a:0",
         "language=eng", "-metadata:s:a:1", "language=fra", str(source)],
        check=True, timeout=60,
    )  # fmt: skip
    output, again = tmp_path / f"out{suffix}", tmp_path / f"again{suffix}"  # again: the output's own read back
    for given, written, first in [(source, output, start), (output, again, "0")]:
        command = [*CLI, "denoise", given, written, "--codec", "prores", "--start", first, "--noise", "none"]
        run = run_cli(
            [*command, "--h", "5", "--search-radius", "1", "--backend", "cpu"], capture_output=True, text=True
        )
        assert run.returncode == 0, run.stderr
        languages = set() if suffix == ".mxf" else {"eng", "fra"}  # FFmpeg's MXF muxer keeps no track language
        assert _timecodes_and_languages(written) == ({expected}, languages), written


def _lightly_denoised(source: Path, output: Path) -> Path:
    """``output``: ``source`` through the command line's denoise at a light h on the CPU, checked to succeed."""
    command = [*CLI, "denoise", source, output, "--noise", "none", "--h", "5", "--search-radius", "1"]
    run = run_cli([*command, "--backend", "cpu"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return output


@pytest.mark.parametrize("suffix", [".mkv", ".mov", ".mp4"])
def test_the_files_title_comment_and_date_and_the_pictures_language_are_kept(tmp_path, suffix) -> None:
    """A tape archivist's capture, titled and dated by the ffmpeg tool: the output had none of its tags."""
    source = tmp_path / "tape.mp4"
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-f", "lavfi", "-i",
         "sine", "-t", "0.5", "-c:v", "libx264", "-c:a", "aac", "-metadata", "title=Wedding 1994", "-metadata",
         "comment=Tape 3 of 7", "-metadata", "date=1994", "-metadata:s:v:0", "language=swe", str(source)],
        check=True, timeout=60,
    )  # fmt: skip
    output = _lightly_denoised(source, tmp_path / f"out{suffix}")
    probe = ["ffprobe", "-v", "error", "-show_entries", "format_tags:stream_tags=language", "-select_streams", "v",
             "-of", "json", str(output)]  # fmt: skip
    found = json.loads(subprocess.run(probe, capture_output=True, text=True, check=True).stdout)
    tags = {name.lower(): value for name, value in found["format"]["tags"].items()}
    assert {name: tags.get(name) for name in ("title", "comment", "date")} == {
        "title": "Wedding 1994",
        "comment": "Tape 3 of 7",
        "date": "1994",
    }
    if suffix != ".mov":  # FFmpeg's MOV muxer writes Swedish as a Macintosh code it does not read back
        assert found["streams"][0]["tags"]["language"] == "swe"


@pytest.mark.parametrize("suffix", [".mkv", ".mp4"])
def test_which_track_a_player_picks_is_kept(tmp_path, suffix) -> None:
    """A web video's .mkv output marked no track default (Matroska writes the flag as FFmpeg's disposition
    says, and none was set): a player may pick none. Each track keeps the source's marks, as FFmpeg's
    own command keeps them: the picture and the first sound default, the commentary not."""
    source = tmp_path / "film.mkv"
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-f", "lavfi", "-i",
         "sine", "-t", "0.5", "-map", "0", "-map", "1", "-map", "1", "-c:v", "libx264", "-c:a", "aac",
         "-disposition:v:0", "default", "-disposition:a:0", "default", "-disposition:a:1", "0", str(source)],
        check=True, timeout=60,
    )  # fmt: skip
    output = _lightly_denoised(source, tmp_path / f"out{suffix}")

    def marks(path: Path) -> list[int]:
        probe = ["ffprobe", "-v", "error", "-show_entries", "stream_disposition=default", "-of", "json", str(path)]
        found = json.loads(subprocess.run(probe, capture_output=True, text=True, check=True).stdout)
        return [stream["disposition"]["default"] for stream in found["streams"]]

    assert marks(source) == [1, 1, 0]
    assert marks(output) == [1, 1, 0]


def _timecodes_and_languages(path: Path) -> tuple[set[str], set[str]]:
    """The timecodes a file's tags give (its own, its streams'), and its audio tracks' languages (ffprobe's)."""
    probe = ["ffprobe", "-v", "error", "-show_entries", "stream=codec_type:stream_tags=timecode,language:"
             "format_tags=timecode", "-of", "json", str(path)]  # fmt: skip
    found = json.loads(subprocess.run(probe, capture_output=True, text=True, check=True).stdout)
    holders = [found["format"], *found["streams"]]
    timecodes = {
        value for holder in holders for tag, value in holder.get("tags", {}).items() if tag.lower() == "timecode"
    }
    audio = [stream.get("tags", {}) for stream in found["streams"] if stream["codec_type"] == "audio"]
    return timecodes, {tags["language"] for tags in audio if "language" in tags}


@pytest.mark.parametrize(
    ("timecode", "rate", "frames", "expected"),
    [
        ("00:00:59;29", Fraction(30000, 1001), 1, "00:01:00;02"),
        ("00:09:59;29", Fraction(30000, 1001), 1, "00:10:00;00"),
        ("00:00:00;00", Fraction(30000, 1001), 17982, "00:10:00;00"),  # ten minutes of drop-frame
        ("00:00:00;00", Fraction(30000, 1001), 107892, "01:00:00;00"),  # an hour: 107,892 frames
        ("00:00:59;59", Fraction(60000, 1001), 1, "00:01:00;04"),
        ("23:59:59:23", Fraction(24000, 1001), 2, "00:00:00:01"),  # 23.976 counts 24 a second, no drop
        ("01:02:03:04", Fraction(25), 0, "01:02:03:04"),
    ],
)
def test_timecodes_count_as_smpte_does(timecode, rate, frames, expected) -> None:
    assert timecode_after(timecode, rate, frames) == expected


def test_a_drop_frame_mark_at_a_rate_without_drop_frame_counts_every_frame() -> None:
    """A muxer's slip (";" at 25 fps) does not stop an export: SMPTE defines drop-frame at 29.97 and 59.94 only."""
    assert timecode_after("00:00:59;24", Fraction(25), 1) == "00:01:00;00"
    with pytest.raises(ValueError, match="is not a timecode HH:MM:SS:FF"):
        timecode_after("1:00", Fraction(25), 1)
