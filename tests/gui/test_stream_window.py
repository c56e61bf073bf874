"""File > Open stream…: a UDP stream shown denoised, with its dropped frames and latency; closing stops it."""

from __future__ import annotations

import subprocess

from udp_ports import free_udp_port, udp_port_bound

from nlmeans_studio.gui.stream_window import StreamWindow

SECONDS = 2  # of testsrc2 at 25 fps, sent at its pace


def test_a_stream_opened_from_the_window_is_shown_denoised_with_its_latency(window, qtbot) -> None:
    window.parameters.search_radius.setValue(1)
    window.parameters.patch_radius.setValue(1)
    assert any(action.text() == "Open stream…" for action in window.file_menu.actions())
    port = free_udp_port()
    stream = window.open_stream(f"udp://127.0.0.1:{port}")
    assert isinstance(stream, StreamWindow) and stream.windowTitle().startswith(f"udp://127.0.0.1:{port}")
    qtbot.waitUntil(lambda: udp_port_bound(port), timeout=30_000)  # it listens: what is sent before is lost
    sender = ["ffmpeg", "-loglevel", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25"]
    with qtbot.waitSignal(stream.worker_thread.worker.finished, timeout=30_000):
        subprocess.run([*sender, "-t", str(SECONDS), "-f", "mpegts", f"udp://127.0.0.1:{port}"], check=True)
    qtbot.waitUntil(lambda: stream.ended, timeout=5_000)  # the window's slot runs after the worker's signal, queued
    assert stream.ended and stream.status.frames > 0.5 * SECONDS * 25
    assert stream.image.image is not None and stream.image.image.shape == (120, 160, 3)
    text = stream.readout.text()
    assert text.startswith(f"ended: {stream.status.frames} frames, {stream.status.dropped} dropped")
    assert "latency median" in text
    stream.close()
    assert stream.worker_thread.thread.isFinished()


def test_a_stream_that_cannot_be_opened_says_why(window, qtbot) -> None:
    stream = window.open_stream("rtmp://127.0.0.1:9/live")
    qtbot.waitUntil(lambda: stream.ended, timeout=30_000)
    assert stream.readout.text().startswith("rtmp://127.0.0.1:9/live: cannot open the live source")
    stream.close()
