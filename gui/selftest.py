"""``nlmeans-studio self-test``: does this installation work? One line per check, headless.

It runs where the app was installed (a pip environment or a PyInstaller bundle) and checks what a
broken install breaks: the bundled sample opens, every available backend denoises it like the
CPU does (and the CPU's compiled filter like the NumPy cascade), an export is written and read
back, and the window opens on the sample offscreen and shows a denoised frame. Nothing outside a
temporary folder is written; the user's settings are not touched.
"""

from __future__ import annotations

import functools
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from nlmeans_studio.engine import (
    SAMPLE_CLIP,
    BackendUnavailableError,
    Denoiser,
    NLMParams,
    __version__,
    psnr,
    resolve_backend,
)

TOLERANCE = 2e-4  # float32: every backend is within 1e-4 of the exact filter, so two within 2e-4
PARAMS = NLMParams(h=20, patch_radius=3, search_radius=3, frames_past=1, frames_future=1)
CROP = (slice(200, 296), slice(400, 528))  # 96 x 128 pixels of the sample: quick on any CPU
WINDOW_SECONDS = 180.0  # the first preview compiles the filter where no cache exists yet


class SkippedError(Exception):
    """The check does not apply here (no GPU); not a failure."""


@functools.cache
def _sample_frames() -> np.ndarray:
    """The sample's first three frames, decoded once for every check that needs them."""
    from nlmeans_studio.engine import VideoReader

    with VideoReader(SAMPLE_CLIP) as reader:
        frames = np.stack([reader.frame(index) for index in range(3)])
        info = reader.info
    if (info.frame_count, info.width, info.height) != (132, 1280, 720):
        raise AssertionError(f"the sample is {info.width}x{info.height}, {info.frame_count} frames")
    return frames


def check_sample() -> str:
    frames = _sample_frames()
    return f"{SAMPLE_CLIP.name}: 1280x720, 132 frames, first frames decode ({frames.dtype})"


def check_cpu() -> str:
    clip = _sample_frames()[(slice(None), *CROP)]
    fused = Denoiser(PARAMS, "cpu").denoise_frame(clip, 1)
    cascade = Denoiser(PARAMS, "cpu", method="cascade").denoise_frame(clip, 1)
    difference = float(np.abs(fused - cascade).max())
    if difference > TOLERANCE:
        raise AssertionError(f"the compiled filter differs from the NumPy cascade by {difference:.2e}")
    return f"compiled filter = NumPy cascade within {difference:.1e} (bound {TOLERANCE:.0e})"


def check_gpu() -> str:
    try:
        resolve_backend("gpu")
    except BackendUnavailableError as error:
        raise SkippedError(str(error)) from error
    clip = _sample_frames()[(slice(None), *CROP)]
    gpu = Denoiser(PARAMS, "gpu")
    difference = float(np.abs(gpu.denoise_frame(clip, 1) - Denoiser(PARAMS, "cpu").denoise_frame(clip, 1)).max())
    if difference > TOLERANCE:
        raise AssertionError(f"the GPU result differs from the CPU's by {difference:.2e}")
    return f"{gpu.device_name}: equals the CPU within {difference:.1e} (bound {TOLERANCE:.0e})"


def check_export() -> str:
    from nlmeans_studio.engine import denoise_file, read_frames

    params = NLMParams(h=20, patch_radius=2, search_radius=2)
    with tempfile.TemporaryDirectory(prefix="nlmeans-self-test-") as folder:
        lossless = Path(folder) / "lossless.mkv"
        summary = denoise_file(SAMPLE_CLIP, lossless, params, backend="cpu", codec="ffv1", rgb=True, duration=0.2)
        written = read_frames(lossless)
        around = read_frames(SAMPLE_CLIP, 5 + params.frames_future)  # a part is read with its window's frames after it
        expected = np.stack(list(Denoiser(params, "cpu").export_stream(iter(around)))[:5])
        if not np.array_equal(written, expected):
            raise AssertionError("the FFV1 export differs from the filter's output")
        compressed = Path(folder) / "export.mp4"
        denoise_file(SAMPLE_CLIP, compressed, params, codec="h264", preset="ultrafast", duration=0.2)
        quality = psnr(expected, read_frames(compressed), 255)
        if quality < 35:
            raise AssertionError(f"the H.264 export reads back at {quality:.1f} dB of the filter's output")
    return f"{summary.frames} frames to FFV1 (bit-exact) and H.264 ({quality:.1f} dB), read back"


def check_window() -> str:
    os.environ["QT_QPA_PLATFORM"] = "offscreen"  # headless: the same check with or without a display
    try:
        from PySide6.QtCore import QCoreApplication, QEvent, QSettings, qInstallMessageHandler
        from PySide6.QtWidgets import QApplication

        from .window import MainWindow
    except ImportError as error:  # a library install, without the window's extra
        raise SkippedError(f"the window is not installed ({error}): pip install 'nlmeans-studio[gui]'") from None

    def quiet_offscreen_notice(kind: object, context: object, message: str) -> None:
        if "propagateSizeHints" not in message:  # the offscreen platform's notice, not a problem
            print(message, file=sys.stderr)

    previous_handler = qInstallMessageHandler(quiet_offscreen_notice)
    QApplication.instance() or QApplication(sys.argv[:1])
    with tempfile.TemporaryDirectory(prefix="nlmeans-self-test-") as folder:
        window = MainWindow(QSettings(str(Path(folder) / "settings.ini"), QSettings.Format.IniFormat))
        try:
            window.show()
            window.open_clip(SAMPLE_CLIP)
            deadline = time.monotonic() + WINDOW_SECONDS
            while window.timed is None and not window.banner.isVisibleTo(window):  # the exact frame
                if time.monotonic() > deadline:
                    raise AssertionError(f"no preview within {WINDOW_SECONDS:.0f} s")
                QCoreApplication.processEvents()
                time.sleep(0.01)
            if window.timed is None:
                raise AssertionError(f"the window shows an error: {window.banner.text()}")
            preview = window.timed
        finally:
            window.close()
            window.deleteLater()  # now, not when the interpreter finalizes (PySide6 aborts there)
            QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
            qInstallMessageHandler(previous_handler)
    return (
        f"{QApplication.platformName()} platform: the sample opens and a frame is denoised on the "
        f"{preview.backend} ({preview.engine_ms:.0f} ms)"
    )


CHECKS: list[tuple[str, Callable[[], str]]] = [
    ("sample", check_sample),
    ("cpu", check_cpu),
    ("gpu", check_gpu),
    ("export", check_export),
    ("window", check_window),
]


def main() -> int:
    """Run every check, print a line each, and return 1 if any failed (skipped ones do not)."""
    print(f"nlmeans-studio {__version__}, Python {platform.python_version()}, {platform.platform()}")
    failed = 0
    for name, check in CHECKS:
        started = time.perf_counter()
        try:
            detail = check()
            status = "ok  "
        except SkippedError as reason:
            status, detail = "skip", str(reason)
        except Exception as error:  # a check's failure, reported as its line
            status, detail = "FAIL", f"{type(error).__name__}: {error}"
            failed += 1
        print(f"{status} {name:<7} {detail} [{time.perf_counter() - started:.1f} s]", flush=True)
    print("self-test passed" if not failed else f"self-test FAILED: {failed} check(s)")
    return 1 if failed else 0
