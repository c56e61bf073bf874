"""``nlmeans-studio batch``: many files on a Dask cluster, each output as ``denoise`` writes it, a
manifest that lets a rerun skip what is done, and failures (a corrupt file, a killed batch or
worker) that cost only their own files.

Clips are tiny (64 x 48, 16 frames) and the filter the smallest (radii 1, no noise estimate):
what is tested is the batch's plumbing, and the whole file must stay within about 90 s.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import av
import numpy as np
import pytest
from clips import CLI, damaged_dvd

from nlmeans_studio.engine import command_line, read_frames
from nlmeans_studio.engine.cli.batch.jobs import find_jobs

FILTER = ["--noise", "none", "--h", "10", "--search-radius", "1", "--patch-radius", "1", "--backend", "cpu"]
OPTIONS = [*FILTER, "--codec", "ffv1"]
# Input -> output, relative: the .mov becomes .mkv (a MOV holds no FFV1); the volume keeps its name.
OUTPUTS = {
    "a/one.mkv": "a/one.mkv",
    "a/b/two.mp4": "a/b/two.mp4",
    "c/three.mov": "c/three.mkv",
    "v/volume.npy": "v/volume.npy",
}
CLIPS = {  # ffmpeg's arguments for each clip: three containers, each with its sound
    "a/one.mkv": ["testsrc2", "-c:v", "ffv1", "-c:a", "flac"],
    "a/b/two.mp4": ["testsrc", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac"],
    "c/three.mov": ["mandelbrot", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "pcm_s16le"],
}
SCHEDULER_LINE = re.compile(r"scheduler (tcp://[\d.]+:\d+)")


def _make_inputs(folder: Path) -> Path:
    """Three 16-frame clips with sound in nested folders, and a small volume."""
    for name, (source, *codecs) in CLIPS.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", f"{source}=size=64x48:rate=10", "-f", "lavfi",
             "-i", "sine=frequency=440:sample_rate=16000", "-t", "1.6", *codecs, str(folder / name)],
            check=True, timeout=60,
        )  # fmt: skip
    (folder / "v").mkdir()
    z, y, x = np.mgrid[0:6, 0:10, 0:12]
    volume = 100 + 40 * np.sin(z + y / 3 + x / 4) + np.random.default_rng(5).normal(0, 8, z.shape)
    np.save(folder / "v" / "volume.npy", volume.astype(np.float32))
    return folder


def _batch(*arguments: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "batch", *arguments], capture_output=True, text=True, timeout=timeout)


def _manifest(out: Path) -> dict:
    return json.loads((out / ".nlmeans-batch.json").read_text())["jobs"]


def _states(out: Path) -> dict[str, str]:
    return {name: entry["state"] for name, entry in _manifest(out).items()}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The inputs, and numba's cache filled for their filters first: on a cold cache every worker
    compiled them at once (a minute or more on two cores), past the tests' timeouts."""
    folder = _make_inputs(tmp_path_factory.mktemp("inputs"))
    warm = tmp_path_factory.mktemp("warm")
    for command, name in (("denoise", "a/one.mkv"), ("denoise-volume", "v/volume.npy")):
        options = OPTIONS if command == "denoise" else FILTER[2:]  # a volume has no --noise none
        arguments = [*CLI, command, str(folder / name), str(warm / Path(name).name), *options, "--quiet"]
        subprocess.run(arguments, check=True, capture_output=True, timeout=600)
    return folder


@pytest.fixture(scope="module")
def first_batch(inputs: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    """The inputs' folder denoised by a batch of two workers."""
    out = tmp_path_factory.mktemp("batch") / "out"
    return out, _batch(str(inputs), "--out", str(out), "--jobs", "2", *OPTIONS, timeout=240)


def _same_outputs(out: Path, expected: Path) -> None:
    """Every output of ``out`` equals ``expected``'s: frame for frame, or voxel for voxel."""
    for name in OUTPUTS.values():
        if name.endswith(".npy"):
            assert np.array_equal(np.load(out / name), np.load(expected / name)), name
        else:
            assert np.array_equal(read_frames(out / name), read_frames(expected / name)), name


def _start(started: list, command: list[str], **options) -> subprocess.Popen:
    process = subprocess.Popen(command, start_new_session=True, text=True, **options)
    started.append(process)
    return process


def _read_until(process: subprocess.Popen, pattern: str) -> tuple[str, re.Match]:
    """Standard error up to the first line that matches ``pattern``, and the match."""
    seen = ""
    for line in process.stderr:
        seen += line
        if found := re.search(pattern, line):
            return seen, found
    raise AssertionError(f"the batch ended without {pattern!r}: {seen}")


def test_a_batch_writes_what_denoise_writes_for_each_file(inputs, first_batch, tmp_path) -> None:
    out, run = first_batch
    assert run.returncode == 0, run.stderr
    assert sorted(_states(out).items()) == sorted((name, "done") for name in OUTPUTS.values())
    for source, name in OUTPUTS.items():
        alone = tmp_path / Path(name).name
        command = ["denoise-volume", *FILTER[2:]] if name.endswith(".npy") else ["denoise", *OPTIONS]
        assert command_line([command[0], str(inputs / source), str(alone), *command[1:], "--quiet"]) == 0
        if name.endswith(".npy"):
            assert np.array_equal(np.load(out / name), np.load(alone))
            assert _manifest(out)[name]["frames"] == 6  # a volume's slices
            continue
        assert np.array_equal(read_frames(out / name), read_frames(alone)), name
        with av.open(str(out / name)) as container:
            assert len(container.streams.audio) == 1, name
        assert _manifest(out)[name]["frames"] == 16
        assert (out / ".nlmeans-logs" / f"{name}.log").read_text().startswith(str(inputs / source))
    assert re.search(r"^a/b/two\.mp4\s+16\s+[\d.]+\s+done$", run.stdout, re.MULTILINE), run.stdout  # the table
    assert "4/4 files" in run.stderr and "dashboard http://" in run.stderr


def test_the_summary_counts_the_warnings_each_files_log_holds(tmp_path) -> None:
    """An archivist's interlaced captures were written progressive, said only in each file's log; the
    notes beside them were skipped without a word."""
    (tmp_path / "tapes").mkdir()
    (tmp_path / "tapes" / "notes.txt").write_text("tape 1: side A")
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-frames:v", "6",
         "-c:v", "ffv1", "-field_order", "tt", str(tmp_path / "tapes" / "interlaced.mkv")],
        check=True, timeout=60,
    )  # fmt: skip
    out = tmp_path / "out"
    run = _batch(str(tmp_path / "tapes"), "--out", str(out), *OPTIONS)
    assert run.returncode == 0, run.stderr
    assert re.search(r"^interlaced\.mkv\s+6\s+[\d.]+\s+done, 1 warning \(its log says them\)$", run.stdout, re.M)
    said = "\nwarnings:\n  interlaced.mkv: the video is interlaced: each frame's two fields are filtered as one picture"
    assert said in run.stdout  # under the table: what it is, not only a count
    assert "the video is interlaced" in (out / ".nlmeans-logs" / "interlaced.mkv.log").read_text()
    assert _manifest(out)["interlaced.mkv"]["warnings"] == 1
    notes = tmp_path / "tapes" / "notes.txt"
    assert f"skipped 1 file not named as videos or volumes: {notes} (give a file by its own name" in run.stderr
    assert list(_manifest(out)) == ["interlaced.mkv"]


def test_image_sequences_are_files_of_the_batch_written_as_denoise_writes_them(tmp_path) -> None:
    """A restorer's reels of scans in an archive folder: each TIFF frame failed as a 2D "volume", the
    DPX ones were skipped. Now each reel is one file, its output a sequence of the same name, format
    and numbers, the frames those of ``denoise`` on the reel; a rerun redoes a reel whose image was
    rescanned or whose output lost an image, and a reel given as a pattern is taken too."""
    reels = {"reel1/%06d.tif": "testsrc2", "reel2/r_%07d.dpx": "mandelbrot"}
    for scans, source in reels.items():
        (tmp_path / "scans" / scans).parent.mkdir(parents=True)
        subprocess.run(
            ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", f"{source}=size=64x48:rate=25", "-vf",
             "noise=alls=20:allf=t", "-frames:v", "4", "-start_number", "86400", str(tmp_path / "scans" / scans)],
            check=True, timeout=60,
        )  # fmt: skip
    out = tmp_path / "out"
    run = _batch(str(tmp_path / "scans"), "--out", str(out), "--jobs", "1", *OPTIONS, "--frame-rate", "24")
    assert run.returncode == 0, run.stderr
    assert "2 files (2 of them image sequences): 0 done before, 2 to denoise" in run.stderr
    for scans in reels:
        assert re.search(rf"^{re.escape(scans)}\s+4\s+[\d.]+\s+done$", run.stdout, re.MULTILINE), run.stdout
        alone = tmp_path / "alone" / scans
        alone.parent.mkdir(parents=True)
        command_line(["denoise", str(tmp_path / "scans" / scans), str(alone), *OPTIONS, "--frame-rate", "24"])
        written = sorted(path.name for path in (out / scans).parent.iterdir())
        assert written == sorted(path.name for path in alone.parent.iterdir()), written
        assert written[0].endswith("086400" + Path(scans).suffix) and len(written) == 4
        assert np.array_equal(read_frames(out / scans), read_frames(alone)), scans
    again = _batch(str(tmp_path / "scans"), "--out", str(out), "--jobs", "1", *OPTIONS, "--frame-rate", "24")
    assert again.returncode == 0 and "0 done before" not in again.stderr and "2 done before" in again.stderr
    rescanned = tmp_path / "scans" / "reel1" / "086401.tif"
    os.utime(rescanned, ns=(rescanned.stat().st_atime_ns, rescanned.stat().st_mtime_ns + 10**9))
    (out / "reel2" / "r_0086403.dpx").unlink()
    redone = _batch(str(tmp_path / "scans"), "--out", str(out), "--jobs", "1", *OPTIONS, "--frame-rate", "24")
    assert redone.returncode == 0 and "0 done before, 2 to denoise" in redone.stderr, redone.stderr
    assert len(list((out / "reel2").iterdir())) == 4
    pattern = tmp_path / "scans" / "reel2" / "r_%07d.dpx"  # given alone: named by its own name, as a file is
    alone = _batch(str(pattern), "--out", str(tmp_path / "one"), "--jobs", "1", *OPTIONS, "--frame-rate", "24")
    assert alone.returncode == 0 and len(list((tmp_path / "one").glob("r_*.dpx"))) == 4, alone.stderr


def test_the_summary_counts_the_damaged_frames_of_each_file(inputs, tmp_path) -> None:
    """A tape capture with a hole in it is denoised in segments, and the table says how many of its
    frames the decoder filled in, its segments' summed (its logs name them, and hold FFmpeg's own
    lines). A file denoised whole returns its export's count the same way (``run_logged``)."""
    source, flagged = damaged_dvd(tmp_path, "holed")
    out = tmp_path / "out"
    run = _batch(str(source), "--out", str(out), "--jobs", "2", *OPTIONS, "--segment-seconds", "0.6", timeout=240)
    assert run.returncode == 0, run.stderr
    count = len(flagged)
    assert f"done, {count} frame{'s' * (count > 1)} damaged in the source (its log names them)" in run.stdout
    assert "segments" in run.stderr
    logs = "".join(log.read_text() for log in out.rglob("*.log"))
    assert f"{count} frame{'s' * (count > 1)} of the source" in logs
    assert "[mpeg2video @" in logs and "[mpeg2video @" not in run.stderr  # FFmpeg's own lines: in the file's log
    assert _manifest(out)["holed.mkv"]["damaged"] == count


def test_a_rerun_skips_every_file_done(inputs, first_batch, tmp_path) -> None:
    out, _ = first_batch
    written = {name: (out / name).stat().st_mtime_ns for name in OUTPUTS.values()}
    started = time.perf_counter()
    rerun = _batch(str(inputs), "--out", str(out), "--jobs", "2", *OPTIONS)
    assert rerun.returncode == 0, rerun.stderr
    assert time.perf_counter() - started < 20  # no cluster is started: the command's imports alone
    assert "4 files: 4 done before, 0 to denoise" in rerun.stderr and "scheduler" not in rerun.stderr
    assert rerun.stdout.count("done earlier") == 4
    assert {name: (out / name).stat().st_mtime_ns for name in OUTPUTS.values()} == written
    # Another h makes other outputs: with --overwrite (refused without), everything is done again.
    shutil.copytree(out, tmp_path / "out")
    changed = _batch(str(inputs), "--out", str(tmp_path / "out"), "--jobs", "1", *OPTIONS, "--h", "12", "--overwrite")
    assert changed.returncode == 0 and "4 files: 0 done before, 4 to denoise" in changed.stderr
    assert not np.array_equal(read_frames(tmp_path / "out" / "a/one.mkv"), read_frames(out / "a/one.mkv"))


def test_a_corrupt_file_fails_with_its_reason_and_the_others_complete(inputs, tmp_path) -> None:
    (tmp_path / "in").mkdir()
    shutil.copy(inputs / "a" / "one.mkv", tmp_path / "in" / "good.mkv")
    (tmp_path / "in" / "broken.mp4").write_bytes(np.random.default_rng(1).bytes(3000))
    run = _batch(str(tmp_path / "in"), "--out", str(tmp_path / "out"), "--jobs", "1", *OPTIONS)
    assert run.returncode == 1
    reason = "broken.mp4: not a video file FFmpeg can read"
    assert re.search(rf"^broken\.mp4\s+[\d.]+\s+failed: .*{reason}", run.stdout, re.MULTILINE), run.stdout
    assert re.search(r"^good\.mkv\s+16\s+[\d.]+\s+done$", run.stdout, re.MULTILINE), run.stdout
    entry = _manifest(tmp_path / "out")["broken.mp4"]
    assert entry["state"] == "failed" and reason in entry["reason"] and "Traceback" not in run.stderr
    assert (tmp_path / "out" / "good.mkv").is_file() and not (tmp_path / "out" / "broken.mp4").exists()


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_killed_batch_rerun_finishes_only_what_was_missing(
    inputs, first_batch, tmp_path, started_processes, stop
) -> None:
    out = tmp_path / "out"
    command = [*CLI, "batch", str(inputs), "--out", str(out), "--jobs", "1", *OPTIONS]
    batch = _start(started_processes, command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    _read_until(batch, r"^1/4 files")
    signalled = time.time_ns()
    batch.send_signal(stop)  # the command alone: its workers must go with it
    assert batch.wait(timeout=60) == (-signal.SIGKILL if stop == signal.SIGKILL else 130)
    if stop == signal.SIGTERM:
        assert "cancelled; the files done are recorded in" in batch.stderr.read()
    deadline = time.monotonic() + 20
    while _alive(batch.pid) and time.monotonic() < deadline:  # the workers go with the batch
        time.sleep(0.2)
    assert not _alive(batch.pid)
    done = {name for name, state in _states(out).items() if state == "done"}
    assert 1 <= len(done) < len(OUTPUTS), _states(out)
    if stop == signal.SIGTERM:  # stopped, not killed: its workers with it, and what they were writing
        # None written after: a file a worker finished as the signal came (its result not heard yet) is
        # complete, not recorded, and done again by the rerun.
        published = {name for name in OUTPUTS.values() if (out / name).exists()}
        assert all((out / name).stat().st_mtime_ns < signalled for name in published - done), published - done
        assert not [path for path in out.rglob(".*.part*")]
    written = {name: (out / name).stat().st_mtime_ns for name in done}
    rerun = _batch(str(inputs), "--out", str(out), "--jobs", "1", *OPTIONS)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{len(done)} done before, {len(OUTPUTS) - len(done)} to denoise" in rerun.stderr
    assert {name: (out / name).stat().st_mtime_ns for name in done} == written
    assert set(_states(out).values()) == {"done"}
    _same_outputs(out, first_batch[0])
    assert not [path for path in out.rglob(".*.part*")]  # no half-written file is left


def _alive(group: int) -> bool:
    """Whether any process of the session ``group`` still runs."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def _client(address: str):
    """A Dask client of ``address``, in this process (Dask's own warnings are not this test's).

    Its connection may wait 60 s: with the suite on every core, 10 s timed out while the batch's
    workers were still importing."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from distributed import Client

        return Client(address, timeout=60)


SLOW = [*OPTIONS, "--search-radius", "4", "--frames-past", "2", "--frames-future", "2"]  # 405 offsets a pixel


def _long_clip(folder: Path) -> Path:
    """A clip long enough (600 frames) that its worker is still at it when a test acts: seconds of work at SLOW.

    The small clips and window of the other tests were all done, and the cluster gone, before a
    client connected (300 and then 600 frames at A 1 were too few, the second once the suite ran
    faster).
    """
    clip = folder / "in" / "long.mkv"
    clip.parent.mkdir()
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10", "-t", "60", "-c:v",
         "ffv1", str(clip)],
        check=True, timeout=60,
    )  # fmt: skip
    return clip


def _busy_workers(client, seconds: float = 120) -> list[str]:
    """The workers of ``client``'s cluster running a task, once one is."""
    deadline = time.monotonic() + seconds
    while not (busy := [worker for worker, keys in client.processing().items() if keys]):
        assert time.monotonic() < deadline, "no worker took a file"
        time.sleep(0.05)
    return busy


def test_a_worker_killed_midway_leaves_the_batch_complete_and_the_same(tmp_path, started_processes) -> None:
    options = SLOW
    clip = _long_clip(tmp_path)
    expected = tmp_path / "expected.mkv"
    subprocess.run([*CLI, "denoise", str(clip), str(expected), *options, "--quiet"], check=True, timeout=300)
    out = tmp_path / "out"
    command = [*CLI, "batch", str(clip.parent), "--out", str(out), "--jobs", "2", *options]
    batch = _start(started_processes, command, stderr=subprocess.PIPE, stdout=subprocess.PIPE)
    said, found = _read_until(batch, SCHEDULER_LINE.pattern)
    with _client(found[1]) as client:
        busy = _busy_workers(client)
        pid = client.run(os.getpid, workers=busy[:1])[busy[0]]
        os.kill(pid, signal.SIGKILL)
    stdout, stderr = batch.communicate(timeout=300)
    assert batch.returncode == 0, said + stderr
    assert stdout.count(" done\n") == 1, stdout
    assert np.array_equal(read_frames(out / "long.mkv"), read_frames(expected))


@pytest.fixture
def dask_cluster(tmp_path, started_processes) -> str:
    """A scheduler and two one-thread workers on 127.0.0.1, started as separate processes; its address."""
    scheduler_file = tmp_path / "scheduler.json"
    dask = (sys.executable, "-m", "distributed.cli")
    _start(
        started_processes,
        [*dask[:2], f"{dask[2]}.dask_scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
         "--scheduler-file", str(scheduler_file)],
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    for name in ("first", "second"):
        _start(
            started_processes,
            [*dask[:2], f"{dask[2]}.dask_worker", "--scheduler-file", str(scheduler_file), "--nthreads", "1",
             "--no-dashboard", "--name", name, "--host", "127.0.0.1"],
            stderr=subprocess.DEVNULL, env={**os.environ, "NUMBA_NUM_THREADS": "1"},
        )  # fmt: skip
    deadline = time.monotonic() + 60
    while True:
        try:
            address = json.loads(scheduler_file.read_text())["address"]
            break
        except (FileNotFoundError, json.JSONDecodeError):  # not written yet, or half (CI read it empty once)
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.1)
    with _client(address) as client:
        client.wait_for_workers(2, timeout=60)
    return address


def test_a_batch_runs_on_a_scheduler_started_apart(inputs, first_batch, tmp_path, dask_cluster) -> None:
    out = tmp_path / "out"
    run = _batch(str(inputs), "--out", str(out), "--scheduler", dask_cluster, *OPTIONS)
    assert run.returncode == 0, run.stderr
    assert f"scheduler {dask_cluster} with 2 worker(s)" in run.stderr
    assert set(_states(out).values()) == {"done"}
    _same_outputs(out, first_batch[0])


def test_a_batch_on_a_scheduler_started_apart_stops_its_running_files_when_cancelled(
    tmp_path, dask_cluster, started_processes
) -> None:
    """The workers are the user's, not the batch's to kill: its cancel reaches the running export,
    which stops and removes what it wrote; nothing is published after the batch said it stopped."""
    clip = _long_clip(tmp_path)
    out = tmp_path / "out"
    command = [*CLI, "batch", str(clip.parent), "--out", str(out), "--scheduler", dask_cluster, *SLOW]
    batch = _start(started_processes, command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    with _client(dask_cluster) as client:
        _busy_workers(client)
        batch.send_signal(signal.SIGTERM)
        assert batch.wait(timeout=60) == 130
        assert "cancelled; the files done are recorded in" in batch.stderr.read()
        assert not [path for path in out.rglob(".*.part*")]  # the export stopped and removed its file
        deadline = time.monotonic() + 30
        while any(client.processing().values()):  # the worker is free again: its file stopped, not finished
            assert time.monotonic() < deadline, client.processing()
            time.sleep(0.1)
    assert not (out / "long.mkv").exists() and _states(out) == {"long.mkv": "pending"}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["{missing}", "--out", "{tmp}/out"], "missing: no such file or folder, and not a glob"),
        (["{tmp}/*.mkv", "--out", "{tmp}/out"], "no video, volume or image sequence in "),
        (["{inputs}", "--out", "{inputs}/a/one.mkv"], "is a file: give a folder"),
        (["{inputs}", "--out", "{tmp}/out", "--scheduler", "tcp://127.0.0.1:9"], "cannot reach the Dask scheduler at "
         "tcp://127.0.0.1:9 (Timed out"),
        (["{inputs}", "--out", "{tmp}/out", "--scheduler", "tcp://127.0.0.1:9", "--jobs", "2"], "--jobs sizes the "
         "cluster on this machine"),
        (["{inputs}", "--out", "{tmp}/out", "--devices", "0"], "--devices spreads one file over GPUs"),
    ],
)  # fmt: skip
def test_bad_arguments_say_what_is_wrong_in_one_line(capsys, inputs, tmp_path, arguments, message) -> None:
    filled = [part.format(missing=tmp_path / "missing", tmp=tmp_path, inputs=inputs) for part in arguments]
    assert command_line(["batch", *filled, *OPTIONS]) == 1
    error = capsys.readouterr().err.splitlines()[-1]
    assert error.startswith("nlmeans-studio: error: ") and message in error, error
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--h", "-4"], "h must be a finite number > 0"),
        (["--crf", "99"], "crf must be an integer in 0..51, got 99"),
        (["--out", "/proc/nope"], "--out /proc/nope: the folder /proc is not writable"),
        (["--out", "{inputs}/a/one.mkv/x"], "one.mkv is a file, not a folder"),
        (["--frame-rate", "nan"], "an image sequence's frame rate must be a number of frames a second in 1..1000"),
    ],
)
def test_what_no_file_could_run_with_is_said_before_a_cluster_starts(
    capsys, inputs, tmp_path, arguments, message
) -> None:
    filled = [part.format(inputs=inputs) for part in arguments]
    assert command_line(["batch", str(inputs), "--out", str(tmp_path / "out"), *OPTIONS, *filled]) == 1
    error = capsys.readouterr().err.splitlines()[-1]
    assert error.startswith("nlmeans-studio: error: ") and message in error, error
    assert not (tmp_path / "out").exists()


def test_a_batch_s_output_folder_is_not_an_input(first_batch, tmp_path) -> None:
    out, _ = first_batch
    with pytest.raises(ValueError, match=r"is a batch's output folder \(its \.nlmeans-batch\.json\)"):
        find_jobs([str(out)], tmp_path / "again", codec="ffv1")


def test_two_inputs_that_would_share_an_output_are_refused(inputs, tmp_path) -> None:
    shutil.copy(inputs / "a" / "one.mkv", tmp_path / "one.mkv")
    with pytest.raises(ValueError, match=r"one\.mkv and .*one\.mkv would both be written to .*: give the folder"):
        find_jobs([str(inputs / "a" / "one.mkv"), str(tmp_path / "one.mkv")], tmp_path / "out", codec="ffv1")
    shutil.copy(inputs / "c" / "three.mov", tmp_path / "one.mov")  # beside one.mkv: FFV1 makes both one.mkv
    with pytest.raises(ValueError, match=r"would both be written to .*one\.mkv: rename one of them, or run them"):
        find_jobs([str(tmp_path)], tmp_path / "out", codec="ffv1")


def test_outputs_keep_their_path_under_the_folder_or_the_glob_root(inputs, tmp_path) -> None:
    out = tmp_path / "out"
    names = [job.name for job in find_jobs([str(inputs / "a" / "**" / "*.mp4"), str(inputs / "c")], out, codec="h264")]
    assert names == ["b/two.mp4", "three.mov"]  # h264 fits a MOV: its name is kept
    assert [job.name for job in find_jobs([str(inputs / "c" / "three.mov")], out, codec="ffv1")] == ["three.mkv"]
    # No codec asked for: each file's own default, which its own container holds (a ProRes .mov stays .mov)
    assert [job.name for job in find_jobs([str(inputs / "c" / "three.mov")], out, codec=None)] == ["three.mov"]


def test_the_other_commands_do_not_import_dask() -> None:
    """Dask and its dashboard take a second or two to import: only a batch pays for them."""
    code = "import sys; import nlmeans_studio.engine.cli; print('distributed' in sys.modules or 'dask' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout == "False\n"


@pytest.mark.parametrize(
    ("gpus", "jobs", "cores", "expected"),
    [
        ([0, 1, 2, 3], None, 64, [("0", "16"), ("1", "16"), ("2", "16"), ("3", "16")]),
        ([0, 1, 2, 3], 2, 64, [("0", "32"), ("1", "32")]),
        ([], None, 4, [(None, "1")] * 4),
        ([], 2, 8, [(None, "4")] * 2),
        ([], 3, 2, [(None, "1")] * 3),
    ],
)
def test_local_workers_share_the_cores_out_for_numba(gpus, jobs, cores, expected) -> None:
    """Four GPU workers each converting frames on every core exported a third slower than with a quarter each."""
    from nlmeans_studio.engine.cli.batch.cluster import worker_environments

    environments = worker_environments(gpus, jobs, cores)
    assert [(env.get("CUDA_VISIBLE_DEVICES"), env["NUMBA_NUM_THREADS"]) for env in environments] == expected


def test_local_workers_start_without_dasks_malloc_trim_threshold(monkeypatch) -> None:
    """Set, it made every frame-sized array fresh pages in each worker; Dask's other variables stay."""
    import os

    from nlmeans_studio.engine.cli.batch.cluster import batch_client

    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    with batch_client(None, jobs=1, backend="cpu") as client:
        seen = client.submit(
            lambda: {name: os.environ.get(name) for name in ("MALLOC_TRIM_THRESHOLD_", "OMP_NUM_THREADS")}
        )
        assert seen.result(timeout=60) == {"MALLOC_TRIM_THRESHOLD_": None, "OMP_NUM_THREADS": "1"}


def test_a_rerun_with_other_options_replaces_outputs_only_with_overwrite(inputs, tmp_path) -> None:
    """An archivist's rerun at another --crf began replacing a finished batch without a word."""
    out = tmp_path / "out"
    clip = str(inputs / "a" / "one.mkv")
    assert _batch(clip, "--out", str(out), "--jobs", "1", *OPTIONS).returncode == 0
    written = (out / "one.mkv").read_bytes()
    run = _batch(clip, "--out", str(out), "--jobs", "1", *FILTER, "--codec", "ffv1", "--search-radius", "2")
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1] == (
        f"nlmeans-studio: error: 1 file was denoised into {out} with other options (--search-radius: one.mkv): "
        "pass --overwrite to denoise again with these, or give another --out"
    )
    assert (out / "one.mkv").read_bytes() == written and _states(out) == {"one.mkv": "done"}
    # With --overwrite it is done again: test_a_rerun_skips_every_file_done.


def test_outputs_are_never_inputs_whatever_the_folders(inputs, tmp_path) -> None:
    """An --out that holds the inputs named no file ("no video, volume or image sequence in ..."); another
    batch's output folder inside an input folder was denoised again as inputs."""
    tapes = tmp_path / "tapes"
    shutil.copytree(inputs / "a", tapes)
    run = _batch(str(tapes), "--out", str(tmp_path), *OPTIONS)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert f"{tapes} is in --out {tmp_path}, where the outputs go" in run.stderr.strip().splitlines()[-1]
    first = tapes / "denoised"  # as a first batch leaves it: its outputs and its record
    shutil.copytree(inputs / "c", first)
    (first / ".nlmeans-batch.json").write_text('{"version": 1, "jobs": {}}')
    second = _batch(str(tapes), "--out", str(tmp_path / "again"), "--jobs", "2", *OPTIONS)
    assert second.returncode == 0, second.stderr
    assert f"left out {first}: another batch's outputs (its .nlmeans-batch.json)" in second.stderr
    assert sorted(_states(tmp_path / "again")) == ["b/two.mp4", "one.mkv"]


def test_a_dashboard_port_taken_is_not_a_python_warning(inputs, tmp_path) -> None:
    """With 8787 taken, the batch printed Dask's raw UserWarning (file, line, warnings.warn(...))."""
    import socket

    with socket.socket() as taken:
        try:
            taken.bind(("127.0.0.1", 8787))
            taken.listen()
        except OSError:
            pass  # taken already: the case itself
        run = _batch(str(inputs / "a" / "one.mkv"), "--out", str(tmp_path / "out"), "--jobs", "1", *OPTIONS)
    assert run.returncode == 0, run.stderr
    assert "UserWarning" not in run.stderr and "warnings.warn" not in run.stderr
    assert "1 file: 0 done before, 1 to denoise" in run.stderr
    assert re.search(r"dashboard http://127\.0\.0\.1:\d+/status", run.stderr)
