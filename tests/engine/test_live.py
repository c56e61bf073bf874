"""``denoise --live``: a UDP stream denoised as it arrives, frames dropped when too slow, Ctrl-C, errors.

The stream is FFmpeg's testsrc2 sent at its pace (``-re``) as MPEG-TS over UDP to a ``denoise
--live`` listener started first, as CI's scenario; on the CPU, 2 cores, a small window keeps up.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import queue
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import av
import numpy as np
import pytest
from clips import CLI, default_signals
from udp_ports import free_udp_port, udp_port_bound

from nlmeans_studio.engine.cli import main
from nlmeans_studio.engine.media.live import LiveReader
from nlmeans_studio.engine.media.pipe import LOOKAHEAD, PipeReader
from nlmeans_studio.engine.media.reader import TimedFrame
from nlmeans_studio.engine.video import live
from nlmeans_studio.engine.video.live import HANDOFF_FRAMES, LIVE_QUEUE_FRAMES, LatencyMeter

RATE = 25  # frames a second the sender sends
SIZE = (320, 240)
SLOW_SIZE = (640, 480)  # frames of 0.9 MB, through a window too slow for them
SMALL_WINDOW = ["--backend", "cpu", "--patch-radius", "1", "--search-radius", "1", "--h", "20", "--noise", "none"]
SUMMARY = re.compile(
    r"denoised (\d+) frames live in [\d.]+ s \([\d.]+ fps\), (\d+) dropped; latency median (\d+) ms, p95 (\d+) ms"
)


def _testsrc2(seconds: float, size: tuple[int, int] = SIZE) -> list[str]:
    return ["-f", "lavfi", "-i", f"testsrc2=size={size[0]}x{size[1]}:rate={RATE}", "-t", str(seconds)]


class _Listener:
    """``denoise URL OUTPUT --live ...`` as a subprocess, its stderr collected line by line on a thread."""

    def __init__(self, url: str, output: Path | str, *options: str, stdin: int | None = None) -> None:
        command = [*CLI, "denoise", url, str(output), "--live", *options]
        self.child = subprocess.Popen(
            command, stdin=stdin, stderr=subprocess.PIPE, text=True, preexec_fn=default_signals
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.err = ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.child.stderr:
            self.lines.put(line)

    def wait_for(self, text: str, seconds: float = 60) -> None:
        """Wait until a line of stderr holds ``text``."""
        deadline = time.monotonic() + seconds
        while text not in self.err:
            self.err += self.lines.get(timeout=max(0.01, deadline - time.monotonic()))

    def finish(self, seconds: float = 30) -> tuple[int, str, float]:
        """Return the exit status, all of stderr and the monotonic time it ended at."""
        status = self.child.wait(timeout=seconds)
        ended = time.monotonic()
        self._reader.join(5)
        self.child.stderr.close()
        while not self.lines.empty():
            self.err += self.lines.get()
        return status, self.err, ended


def _send(port: int, seconds: float, size: tuple[int, int] = SIZE) -> subprocess.Popen:
    """Start FFmpeg sending testsrc2 at its pace as MPEG-TS to 127.0.0.1:``port``."""
    command = ["ffmpeg", "-loglevel", "error", "-re", *_testsrc2(seconds, size), "-f", "mpegts"]
    return subprocess.Popen([*command, f"udp://127.0.0.1:{port}"], preexec_fn=default_signals)


def _wait_until_bound(port: int, seconds: float = 60) -> None:
    """Wait until a listener has bound UDP ``port``: what is sent before is lost."""
    deadline = time.monotonic() + seconds
    while not udp_port_bound(port):
        assert time.monotonic() < deadline, f"nothing bound UDP port {port} in {seconds:g} s"
        time.sleep(0.01)


def _listen_and_send(output: Path, seconds: float, *options: str, size: tuple[int, int] = SIZE):
    """Start the listener, then (once it has bound its port) the sender; return both."""
    port = free_udp_port()
    listener = _Listener(f"udp://127.0.0.1:{port}", output, *options)
    _wait_until_bound(port)
    return listener, _send(port, seconds, size)


def _frames(path: Path) -> np.ndarray:
    with av.open(str(path)) as container:
        return np.array([frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)])


def _reference(seconds: float) -> np.ndarray:
    """testsrc2's frames as the sender makes them, RGB."""
    raw = subprocess.run(
        ["ffmpeg", "-loglevel", "error", *_testsrc2(seconds), "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
        capture_output=True,
        check=True,
    ).stdout
    return np.frombuffer(raw, np.uint8).reshape(-1, SIZE[1], SIZE[0], 3)


def _matched(frames: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """For each frame, the reference frame it is nearest to (mean absolute difference, 4x4 subsampled)."""
    ours, theirs = frames[:, ::4, ::4].astype(np.float32), reference[:, ::4, ::4].astype(np.float32)
    return np.array([np.abs(theirs - frame).mean(axis=(1, 2, 3)).argmin() for frame in ours])


def test_a_udp_stream_is_denoised_live_in_order_and_ends_with_it(tmp_path) -> None:
    """CI's scenario: at least 95 % of the frames, each once and in order, the run ending within 2 s of the stream."""
    seconds, output = 6, tmp_path / "out.mkv"  # CI's 8 s, shortened: 150 frames
    listener, sender = _listen_and_send(output, seconds, *SMALL_WINDOW, "--live-timeout", "0.75")
    sender.wait(timeout=seconds + 30)
    sent_end = time.monotonic()
    status, err, ended = listener.finish()
    assert status == 0, err
    assert ended - sent_end < 2.0, err  # 0.75 s without data ends it, the file is finished, Python exits (0.3 s)
    written, dropped, median, p95 = map(int, SUMMARY.search(err).groups())
    frames = _frames(output)
    assert len(frames) == written >= 0.95 * seconds * RATE, err
    matched = _matched(frames, _reference(seconds))
    assert (np.diff(matched) > 0).all(), matched  # in order, none repeated
    assert written + dropped <= seconds * RATE + 1, err  # +1: FFmpeg's -t may round up a frame
    assert 0 < median <= p95 < 1000, err  # a small window on 320x240: milliseconds, not seconds
    assert re.search(r"\d+ frames, \d+ dropped .* latency \d+ ms \(p95 \d+\)", err)  # the progress line
    assert b"subme=2" in output.read_bytes()  # x264's settings in the stream: veryfast, live's preset (medium: 7)


def test_a_window_too_slow_for_real_time_drops_frames_in_flat_memory(tmp_path) -> None:
    """Search radius 12 at 640x480 takes longer than a frame's 40 ms: frames are dropped, counted, memory flat."""
    seconds, output = 6, tmp_path / "out.mkv"  # 3 s: on a loaded machine the first frame came after the stream
    slow = ["--backend", "cpu", "--patch-radius", "2", "--search-radius", "12", "--h", "20", "--noise", "none"]
    listener, sender = _listen_and_send(output, seconds, *slow, "--live-timeout", "1", size=SLOW_SIZE)
    status_file = Path(f"/proc/{listener.child.pid}/status")
    listener.wait_for(" dropped ")  # the first frame is written: the filter and its buffers are there
    resident = []  # kB, every 0.2 s while the stream comes
    while sender.poll() is None:
        with contextlib.suppress(OSError):
            resident += [int(line.split()[1]) for line in status_file.read_text().splitlines() if "VmRSS" in line]
        time.sleep(0.2)
    status, err, _ = listener.finish()
    assert status == 0, err
    written, dropped, _, _ = map(int, SUMMARY.search(err).groups())
    assert dropped > seconds * RATE / 2 and written + dropped <= seconds * RATE + 1, err
    assert len(_frames(output)) == written
    # Queued, the frames dropped would have added their bytes (0.9 MB each, about 80 MB); bounded,
    # the resident size moves by the allocators' steps alone (25-35 MB measured, most at the start).
    frame_kb = SLOW_SIZE[0] * SLOW_SIZE[1] * 3 / 1024
    assert max(resident) - resident[0] < 0.5 * dropped * frame_kb, (resident, dropped)


def test_ctrl_c_mid_stream_keeps_a_playable_file(tmp_path) -> None:
    output = tmp_path / "out.mkv"
    listener, sender = _listen_and_send(output, 30, *SMALL_WINDOW)
    try:
        listener.wait_for(" dropped ")  # a progress line: frames are written
        time.sleep(1.5)
        listener.child.send_signal(signal.SIGINT)
        status, err, _ = listener.finish()
    finally:
        sender.kill()
        sender.wait()
    assert status == 130, err
    assert f"stopped; {output} holds the" in err and "Traceback" not in err
    written = int(SUMMARY.search(err).group(1))
    assert len(_frames(output)) == written > RATE  # finalised: every frame written decodes
    assert not list(tmp_path.glob(".*"))  # no temporary file left beside it


def test_ctrl_c_while_waiting_for_the_sender_stops_at_once(tmp_path) -> None:
    """FFmpeg's open waits in C for up to 30 s; Ctrl-C there was ignored until then, and the run ended with 1."""
    port = free_udp_port()
    listener = _Listener(f"udp://127.0.0.1:{port}", tmp_path / "out.mkv", *SMALL_WINDOW)
    listener.wait_for("live: opening")
    _wait_until_bound(port)
    listener.child.send_signal(signal.SIGINT)
    asked = time.monotonic()
    status, err, ended = listener.finish()
    assert status == 130 and ended - asked < 3, err
    assert "Traceback" not in err and not list(tmp_path.iterdir())


def test_an_h264_stream_joined_between_keyframes_keeps_its_own_timing(tmp_path) -> None:
    """A broadcast-like H.264 stream (noisy, 2.5 Mbit/s, a keyframe every 12 frames): probed briefly,
    FFmpeg guessed 50 fps for its 25 and the output played twice as fast; a listener started after
    the sender stopped on the packets before the first keyframe ("no pixel format"). Now the run
    starts at the first keyframe, at the stream's rate, each frame at its own time."""
    port, output, seconds = free_udp_port(), tmp_path / "out.mkv", 6
    encoded = ["-vf", "noise=alls=25:allf=t", "-c:v", "libx264", "-g", "12", "-b:v", "2500k", "-f", "mpegts"]
    sender = subprocess.Popen(
        ["ffmpeg", "-loglevel", "error", "-re", *_testsrc2(seconds), *encoded, f"udp://127.0.0.1:{port}"],
        preexec_fn=default_signals,
    )
    time.sleep(0.5)  # the listener starts after the sender: it joins the stream in the middle
    listener = _Listener(f"udp://127.0.0.1:{port}", output, *SMALL_WINDOW, "--live-timeout", "1")
    sender.wait(timeout=seconds + 30)
    status, err, _ = listener.finish()
    assert status == 0, err
    written, dropped = map(int, SUMMARY.search(err).groups()[:2])
    with av.open(str(output)) as container:
        rate = container.streams.video[0].average_rate
        times = np.array([frame.time for frame in container.decode(video=0)])
    assert rate == RATE and len(times) == written >= RATE, err
    steps = np.diff(times) * RATE  # frame times: 1, or more where frames were dropped
    assert steps.min() > 0.99 and np.allclose(steps, np.round(steps), atol=0.01), steps
    assert np.round(steps).sum() <= written + dropped  # no frame stamped later than its place


def test_frames_that_never_arrive_are_counted_and_their_gap_kept(tmp_path) -> None:
    """Frames lost before they reach the listener (UDP loses packets) were neither counted nor said:
    the stream's timestamps show the gap, the output keeps it and the run says how many."""
    port, output = free_udp_port(), tmp_path / "out.mkv"
    listener = _Listener(f"udp://127.0.0.1:{port}", output, *SMALL_WINDOW, "--live-timeout", "1")
    _wait_until_bound(port)
    gap = ["-vf", "select='not(between(n,30,39))'", "-fps_mode", "passthrough"]  # frames 30..39 never sent
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-re", *_testsrc2(3), *gap, "-c:v", "libx264", "-g", "12", "-f", "mpegts",
         f"udp://127.0.0.1:{port}"],
        check=True, timeout=60, preexec_fn=default_signals,
    )  # fmt: skip
    status, err, _ = listener.finish()
    assert status == 0, err
    assert f"warning: 10 frames of udp://127.0.0.1:{port} never arrived (gaps in its timestamps" in err, err
    with av.open(str(output)) as container:
        times = np.array([frame.time for frame in container.decode(video=0)])
    assert np.round(np.diff(times) * RATE).max() >= 11  # frame 29, then frame 40 (or later, if dropped): the gap kept


def test_stdin_y4m_is_read_live_and_sent_as_a_udp_stream() -> None:
    """``-`` as y4m on standard input at its sender's pace, out as MPEG-TS over UDP to a receiver."""
    seconds, port = 2, free_udp_port()
    received: list[int] = []

    def receive() -> None:
        with LiveReader(f"udp://127.0.0.1:{port}", timeout=1) as stream:
            received.extend(frame.number for frame in stream.timed_frames())

    receiver = threading.Thread(target=receive)
    receiver.start()
    _wait_until_bound(port)
    listener = _Listener("-", f"udp://127.0.0.1:{port}", *SMALL_WINDOW, stdin=subprocess.PIPE)
    listener.wait_for("live: opening")  # started first: FFmpeg would send the frames it held back in a burst
    feed = ["ffmpeg", "-loglevel", "error", "-re", *_testsrc2(seconds), "-f", "yuv4mpegpipe", "-"]
    subprocess.run(feed, stdout=listener.child.stdin, check=True, timeout=60)
    listener.child.stdin.close()
    status, err, _ = listener.finish()
    receiver.join(30)
    assert status == 0, err
    written = int(SUMMARY.search(err).group(1))
    assert written >= 0.8 * seconds * RATE, err  # most, on 2 cores busy with the sender and the receiver too
    assert len(received) == written  # every frame sent reached the receiver: a stream of H.264 in MPEG-TS


def test_stdin_y4m_frames_come_when_their_bytes_do_not_when_a_read_is_filled() -> None:
    """A paced y4m sender's frames are read once they came, while it holds the pipe open for the next.

    Frames of 64x48 (4.6 KB): the reads waited for whole buffers, and the 11 frames sent came only
    when the sender closed the pipe, 7 s later in a script (a latency the live run did not see: it
    counts from the frame's decoding).
    """
    width, height, count, held = 64, 48, LOOKAHEAD + 3, 20.0
    read_end, write_end = os.pipe()
    closing = threading.Event()

    def send() -> None:
        with os.fdopen(write_end, "wb", buffering=0) as sink:
            sink.write(f"YUV4MPEG2 W{width} H{height} F25:1 Ip A1:1 C420jpeg\n".encode())
            for _ in range(count):
                sink.write(b"FRAME\n" + bytes(width * height * 3 // 2))
            closing.wait(held)  # the sender's next frame is not due yet

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    started = time.perf_counter()
    try:
        with os.fdopen(read_end, "rb") as stream:
            reader = PipeReader(stream)
            numbers = [frame.number for frame in itertools.islice(reader.timed_frames(), count)]
            seconds = time.perf_counter() - started
            reader.close()
    finally:
        closing.set()
        sender.join(5)
    assert numbers == list(range(count))
    assert seconds < held / 2, f"the frames came after {seconds:.1f} s: the reader waited for the pipe's end"


def test_a_source_that_fails_mid_stream_leaves_the_frames_denoised_before(tmp_path) -> None:
    """A y4m stream cut in a frame: one line saying so, status 1, and a playable file of what came before."""
    y4m = subprocess.run(
        ["ffmpeg", "-loglevel", "error", *_testsrc2(0.4), "-f", "yuv4mpegpipe", "-"], capture_output=True, check=True
    ).stdout
    output = tmp_path / "out.mkv"
    result = subprocess.run(
        [*CLI, "denoise", "-", str(output), "--live", *SMALL_WINDOW],
        input=y4m[:-1000],
        capture_output=True,
        timeout=60,
    )
    err = result.stderr.decode()
    assert result.returncode == 1, err
    assert "nlmeans-studio: error: standard input: the y4m stream ends in the middle of frame 10" in err, err
    assert f"{output} holds the" in err and "Traceback" not in err
    kept = int(re.search(r"holds the (\d+) frames", err).group(1))
    assert len(_frames(output)) == kept > 0  # finished: every frame it holds decodes


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["udp://127.0.0.1:9", "out.mkv"], "udp://127.0.0.1:9: a live stream; add --live to denoise it as it arrives"),
        (["udp://127.0.0.1:9", "out.mkv", "--live", "--start", "5"], "leave out --start and --duration"),
        (["udp://127.0.0.1:9", "out.mkv", "--live", "--duration", "5"], "leave out --start and --duration"),
        (["udp://127.0.0.1:9", "out.mkv", "--live", "--devices", "all"], "leave out --devices and --guide"),
        (["udp://127.0.0.1:99999", "out.mkv", "--live"], "its port is not a number in 1..65535"),
        (["udp://127.0.0.1:9", "udp://127.0.0.1:9", "--live"], "OUTPUT is INPUT; send the denoised stream to another"),
        (["in.mkv", "out.mkv", "--live-timeout", "3"], "--format and --live-timeout are for live sources: add --live"),
        (["udp://127.0.0.1:9", "out.mkv", "--live", "--crf", "60"], "--crf must be an integer in 0..51"),
        (["udp://127.0.0.1:9", "out.webm", "--live"], "out.webm"),  # a file name: checked before the source is opened
        (
            ["udp://127.0.0.1:9", "udp://127.0.0.1:10", "--live", "--codec", "ffv1"],
            "a udp stream carries h264, h265, h264-nvenc, h265-nvenc, not ffv1: choose --codec h264",
        ),
        (["udp://127.0.0.1:9", "http://127.0.0.1:10/x", "--live"], "streams are written over udp, srt, tcp, rtp, rtmp"),
        (
            ["rtmp://127.0.0.1:9/live", "out.mkv", "--live", "--backend", "cpu"],
            "rtmp://127.0.0.1:9/live: cannot open the live source (",
        ),
        (
            ["/dev/no-such-camera", "out.mkv", "--live", "--format", "no-such-format", "--backend", "cpu"],
            "/dev/no-such-camera: cannot open the live source (",
        ),
    ],
)
def test_what_cannot_run_live_is_one_line(capsys, monkeypatch, tmp_path, arguments, message) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["denoise", *arguments]) == 1
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if not line.startswith("live: opening ")]
    assert len(errors) == 1 and errors[0].startswith("nlmeans-studio: error: ") and message in errors[0], err
    assert not (tmp_path / "out.mkv").exists()


def test_a_file_is_refused_live(capsys, tmp_path) -> None:
    clip = tmp_path / "clip.mkv"
    subprocess.run(["ffmpeg", "-loglevel", "error", *_testsrc2(0.2), str(clip)], check=True)
    assert main(["denoise", str(clip), str(tmp_path / "out.mkv"), "--live"]) == 1
    assert f"{clip}: a file, read whole without --live" in capsys.readouterr().err


class _Flood:
    """A reader whose frames come as fast as they are made: the filter (sleeping) always behind."""

    def __init__(self, count: int) -> None:
        self.count = count

    def timed_frames(self):
        for number in range(self.count):
            yield TimedFrame(number, number, np.zeros((2, 2, 3), np.uint8))


def test_frames_the_filter_has_no_time_for_are_dropped_the_newest_kept(monkeypatch) -> None:
    """The queue never holds more than LIVE_QUEUE_FRAMES: a newer frame replaces the oldest, which is counted."""
    waiting = []
    with live._Arrivals(_Flood(200), threading.Event(), max_wait=60) as arrivals:
        time.sleep(0.2)  # the capture thread has met the full queue
        taken = []
        for _, frame in arrivals:
            waiting.append(len(arrivals.waiting))
            taken.append(frame.number)
            time.sleep(0.001)
    assert max(waiting) < LIVE_QUEUE_FRAMES
    assert taken[-1] == 199 and (np.diff(taken) > 0).all()
    assert arrivals.dropped == 200 - len(taken) > 0


def test_a_frame_that_waited_too_long_gives_way_to_the_newest() -> None:
    """Behind the source, the filter takes the frame that just came, not the oldest of those waiting."""
    with live._Arrivals(_Flood(LIVE_QUEUE_FRAMES), threading.Event(), max_wait=0.05) as arrivals:
        time.sleep(0.2)  # all have waited longer than max_wait
        taken = [frame.number for _, frame in arrivals]
    assert taken == [LIVE_QUEUE_FRAMES - 1] and arrivals.dropped == LIVE_QUEUE_FRAMES - 1


def test_frames_the_encoder_has_no_time_for_are_dropped_the_newest_kept() -> None:
    """A slow encoder: at most HANDOFF_FRAMES wait for it, the oldest dropped and counted, the rest in order."""
    consumed, waiting = [], []

    def encode(arrived: float, frame: TimedFrame) -> None:
        waiting.append(len(handoff.waiting))
        consumed.append(frame.number)
        time.sleep(0.02)

    with live._Handoff(encode) as handoff:
        for number in range(50):
            handoff.give(time.perf_counter(), TimedFrame(number, number, np.zeros((2, 2, 3), np.uint8)))
            time.sleep(0.001)
        handoff.finish()
    assert max(waiting) <= HANDOFF_FRAMES
    assert consumed[-1] == 49 and (np.diff(consumed) > 0).all()
    assert handoff.dropped == 50 - len(consumed) > 0


def test_what_the_encoder_raised_comes_back_to_the_filter() -> None:
    def encode(arrived: float, frame: TimedFrame) -> None:
        raise OSError("disk full")

    frame = TimedFrame(0, 0, np.zeros((2, 2, 3), np.uint8))
    with live._Handoff(encode) as handoff:
        handoff.give(0.0, frame)
        with pytest.raises(OSError, match="disk full"):
            handoff.finish()


@pytest.mark.parametrize(
    ("codec", "size", "rate", "preset"),
    [
        ("h264", (1920, 1080), 60, "ultrafast"),  # veryfast took two thirds of a 60 fps frame's time on 16 cores
        ("h265", (3840, 2160), 25, "ultrafast"),
        ("h264", (1920, 1080), 30, "veryfast"),
        ("h264", (320, 240), 25, "veryfast"),
        ("ffv1", (1920, 1080), 60, "medium"),  # not an x264 / x265 preset: the writer's default
    ],
)
def test_a_live_encoders_preset_keeps_up_with_the_streams_pixel_rate(codec, size, rate, preset) -> None:
    from nlmeans_studio.engine.media.formats import encoder_preset

    assert encoder_preset(codec, live=True, pixel_rate=size[0] * size[1] * rate) == preset
    assert encoder_preset(codec, live=False, pixel_rate=size[0] * size[1] * rate) == "medium"


def test_latency_percentiles_in_milliseconds() -> None:
    meter = LatencyMeter()
    for milliseconds in range(1, 101):
        meter.record(milliseconds / 1000)
    assert meter.percentile(50) == 50 and meter.percentile(95) == 95
    assert meter.recent() == pytest.approx(75.5)  # the last RECENT_FRAMES: 51..100
    assert LatencyMeter().percentile(50) == 0
