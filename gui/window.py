"""The main window: it makes the picture and the panels (``window_layout`` places them and makes
the actions of the toolbar and the menus), and wires them to the background worker and to each
other. Each panel owns its widgets and state; the window calls their small public methods and
connects to their signals."""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QFileDialog,
    QInputDialog,
    QLabel,
    QMainWindow,
    QProgressBar,
    QStyle,
)

from nlmeans_studio.engine import (
    COMPILING,
    SAMPLE_CLIP,
    STAGES,
    VIDEO_SUFFIXES,
    VOLUME_SUFFIXES,
    FilterChoice,
    LumaChroma,
    NLMParams,
    NoiseEstimate,
    OneImageError,
    PresetError,
    Preview,
    TuneResult,
    VideoInfo,
    load_preset,
    matrix_for,
    names_a_volume,
    save_preset,
    timecode_after,
)

from .banner import ErrorBanner
from .controls import ParameterPanel, Timeline
from .export import FAILED as EXPORT_FAILED
from .export import ExportDialog, ExportQueue, ExportRequest, stop_exports_asked
from .noise_following import NoiseFollower
from .panels import NoisePanel, Readouts
from .player import Player
from .saved_settings import ClipSettings, load_clip_settings, params_from_json, params_to_json, save_clip_settings
from .spin_box_keys import SpinBoxKeys
from .stream_window import StreamWindow
from .tune import FpsTuner, TuneRequest
from .views import ComparisonView
from .volume_window import VolumeWindow
from .window_layout import build_actions, lay_out
from .worker import EstimateRequest, OpenRequest, PlayRequest, PreviewRequest, PreviewWorker, WorkerThread

DEBOUNCE_MS = 40  # a slider's movements within this time make one request
# How the banner's messages on an export begin ("Exported: 2 frames of the source are damaged ...", a failure)
EXPORT_MESSAGES = ("Exported:", EXPORT_FAILED)
EXPORT_CODEC = "export/codec"  # the setting that keeps the codec of the last export
EXPORT_RATE = "export/sequence_rate"  # and the frame rate an image sequence was last exported at
UNFILTERED, QUICK, SHOWN, EXACT = STAGES  # the passes of a still, in the order they come
STAGE_NOTES = {  # what the after half says of the pass it shows (nothing for the exact frame)
    UNFILTERED: "not filtered yet",
    QUICK: "quick pass at half size, the exact frame follows",
    SHOWN: "exact on screen, the rest of the frame follows",
    EXACT: "",
}
VIDEO_PATTERNS = " ".join(f"*{suffix}" for suffix in VIDEO_SUFFIXES)
VOLUME_PATTERNS = " ".join(f"*{suffix}" for suffix in VOLUME_SUFFIXES)
VIDEO_FILTER = f"Videos ({VIDEO_PATTERNS});;All files (*)"
OPEN_FILTER = (
    f"Videos and volumes ({VIDEO_PATTERNS} {VOLUME_PATTERNS});;Videos ({VIDEO_PATTERNS});;"
    f"Volumes ({VOLUME_PATTERNS});;All files (*)"
)


def timecode(index: int, info: VideoInfo, frame_times: np.ndarray, uneven: bool) -> str:
    """Frame ``index`` as HH:MM:SS:FF: the source's own timecode (a master's 01:00:00:00, drop-frame
    where it is) advanced by ``index`` frames, else counted from 00:00:00:00 at its rate. A clip
    whose frames are not evenly timed (``uneven``: a phone's variable rate) shows the frame's own
    time, HH:MM:SS.mmm from frame 0: frames counted at the average rate would name another moment."""
    if info.timecode is None and uneven:
        seconds = float(frame_times[index])
        return f"{int(seconds // 3600):02d}:{int(seconds // 60 % 60):02d}:{seconds % 60:06.3f}"
    return timecode_after(info.timecode or "00:00:00:00", info.frame_rate, index)


def _uneven(frame_times: np.ndarray, frame_rate: Fraction) -> bool:
    """Whether a frame is shown half a frame or more off its number over ``frame_rate``: a variable rate."""
    even = np.arange(len(frame_times)) / float(frame_rate)
    return bool(len(frame_times)) and float(np.max(np.abs(frame_times - even))) >= 0.5 / float(frame_rate)


def _estimated(psnr: float | None) -> str:
    """The tune's estimate in words: "estimated 31.2 dB", or that SURE read no error on this clip."""
    return "SURE read no error on this clip" if psnr is None else f"estimated {psnr:.1f} dB"


class MainWindow(QMainWindow):
    """NLMeans Studio's window. ``settings`` defaults to the user's QSettings."""

    def __init__(self, settings: QSettings | None = None) -> None:
        super().__init__()
        self.settings = settings or QSettings()
        self.setWindowTitle("NLMeans Studio")
        self.setAcceptDrops(True)
        self.path: Path | None = None
        self._fresh: ClipSettings | None = None  # set as the first clip opens: what each new clip starts from
        self._opening: Path | None = None
        self._adding_reference = False  # the clip open is being opened again beside its clean reference
        self.info: VideoInfo | None = None
        self.frame_times = np.zeros(0)  # seconds from frame 0 of each frame of the clip
        self.unevenly_timed = False  # a variable frame rate: the readout gives the frames' own times
        self.preview: Preview | None = None  # the preview shown, of any pass
        self.timed: Preview | None = None  # the last exact one, whose time and device the readouts show
        self._regions_frame: int | None = None  # the frame the noise estimate's boxes were found on
        self._busy_since: float | None = None
        self._requests = 0
        self._clip = 0  # the number of the open request whose clip is shown: requests are asked of it
        self._shown = 0
        self._pending_preview = 0
        self.worker_thread = WorkerThread(PreviewWorker(), "nlmeans-preview")
        worker = self.worker_thread.worker
        worker.opened.connect(self._opened)
        worker.rendered.connect(self._rendered)
        worker.estimated.connect(self._estimated)
        worker.failed.connect(self._failed)
        worker.busy_changed.connect(self._busy_changed)
        worker.compiling.connect(self._compiling)
        self.player = Player(worker, self._submit, self)
        self.player.frame_due.connect(self._show_played)
        self.player.started.connect(self._show_play_state)
        self.player.stopped.connect(self._playback_stopped)

        self.view = ComparisonView()
        self.view.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.parameters = ParameterPanel()
        self.noise = NoisePanel()
        self.readouts = Readouts()
        self.noise_follower = NoiseFollower(self.parameters, self.noise, self)
        self.frame_slider = Timeline()
        self.frame_label = QLabel("no clip")
        self.banner = ErrorBanner()
        self.exports = ExportQueue()
        self.tuner = FpsTuner(self)
        self.tuner.tuned.connect(self.apply_tuned)
        self.tuner.failed.connect(self.show_error)
        self.busy = QProgressBar()
        self.busy.setRange(0, 0)  # an indicator that moves while the engine works
        self.busy.setMaximumWidth(120)
        self.busy.setToolTip("The engine is working")
        self.busy.hide()
        lay_out(self)
        build_actions(self)
        keys = SpinBoxKeys(self.view)
        for spin_box in self.findChildren(QAbstractSpinBox):
            spin_box.installEventFilter(keys)

        self.debounce = QTimer(self, singleShot=True, interval=DEBOUNCE_MS)
        self.debounce.timeout.connect(self._parameters_settled)
        self.speed_timer = QTimer(self, interval=1000)
        self.speed_timer.timeout.connect(self._show_speed)
        self.speed_timer.start()
        self.parameters.changed.connect(self.debounce.start)
        self.parameters.reset_requested.connect(self.noise_follower.reset_to_suggested)
        self.noise_follower.parameters_changed.connect(self.debounce.start)
        self.noise_follower.estimate_needed.connect(lambda: self.request_estimate(None))
        self.noise.synthetic_changed.connect(self._synthetic_changed)
        self.noise.estimate_requested.connect(lambda: self.request_estimate(None))
        self.noise.draw_region_requested.connect(self._draw_region)
        self.noise.region_requested.connect(lambda: self.request_estimate(self.view.roi_box()))
        self.noise.reference_requested.connect(self._choose_reference)
        self.view.region_drawn.connect(self._region_drawn)
        self.frame_slider.valueChanged.connect(self._frame_changed)
        self.frame_slider.marks_changed.connect(self._show_position)
        self.exports.started.connect(self._export_started)
        self.exports.finished.connect(self._export_finished)
        self.exports.failed.connect(self.show_error)
        self.exports.cancelled.connect(self.last_export.setText)
        self._restore_settings()

    @property
    def playing(self) -> bool:
        """Whether playback runs."""
        return self.player.playing

    @property
    def estimate(self) -> NoiseEstimate | None:
        """The clip's latest noise estimate (None until one arrives)."""
        return self.noise_follower.estimate

    def _type_h(self) -> None:
        """The strength's box takes the keys, its value selected: type a number and Enter. In the
        luma/chroma mode (a colour clip's default) the luma strength's, else h's."""
        strength = self.parameters.h_luma if self.current_luma_chroma() is not None else self.parameters.h
        strength.spin.setFocus(Qt.FocusReason.ShortcutFocusReason)
        strength.spin.selectAll()

    # Opening clips and volumes

    def open_file(self, path: str | Path) -> None:
        """Open a video here, or a volume (NIfTI, TIFF stack, .npy) in a volume window of its own."""
        if names_a_volume(path):
            self.open_volume(path)
        else:
            self.open_clip(path)

    def open_volume(self, path: str | Path) -> VolumeWindow | None:
        """A volume window on ``path``, on this window's backend; errors show in the banner."""
        try:
            volume = VolumeWindow(path, backend=self.parameters.backend_name(), parent=self)
        except (ValueError, OSError, MemoryError) as error:
            if isinstance(error, OneImageError) and str(path).lower().endswith((".tif", ".tiff")):
                self.open_clip(path)  # a picture: the video reader reads it, a clip of one frame
                return None
            self.show()
            self.show_error(f"Cannot open the volume: {error}")
            return None
        volume.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)  # this window owns it until then
        volume.open_requested.connect(self._choose_file)
        self.recent_menu.remember(Path(path))
        volume.show()
        return volume

    def open_clip(self, path: str | Path, reference: str | Path | None = None) -> None:
        """Open a video (the worker decodes it); errors show in the window, which shows itself
        (a session started on a volume has only the volume's window until then)."""
        self.show()
        self.stop_playback()
        self._submit(OpenRequest(Path(path), Path(reference) if reference else None))
        self._opening = Path(path)
        self._adding_reference = reference is not None and self._opening == self.path

    def _choose_file(self, folder: Path | None = None) -> None:
        """The open dialog, in ``folder`` (a volume window's), else the clip's, else home."""
        folder = folder or (self.path.parent if self.path else Path.home())
        path, _ = QFileDialog.getOpenFileName(self, "Open a video or a volume", str(folder), OPEN_FILTER)
        if path:
            self.open_file(path)

    def _choose_stream(self) -> None:
        """File > Open stream…: ask for a stream's URL or a device, and open it."""
        url, chosen = QInputDialog.getText(
            self, "Open stream", "A live stream's URL or a capture device (udp://127.0.0.1:5000, /dev/video0):"
        )
        if chosen and url.strip():
            try:
                self.open_stream(url.strip())
            except ValueError as error:  # the filter's settings as typed
                self.show_error(str(error))

    def open_stream(self, url: str) -> StreamWindow:
        """Show the live source ``url`` denoised with the filter as set here, without future frames (no delay)."""
        params = dataclasses.replace(self.current_params(), frames_future=0)
        stream = StreamWindow(url, params, self.parameters.backend_name(), self)
        stream.show()
        return stream

    def _choose_reference(self) -> None:
        if self.path is None:
            return self.show_error("Open a clip first.")
        folder = str(self.path.parent)
        path, _ = QFileDialog.getOpenFileName(self, "Open the clean reference clip", folder, VIDEO_FILTER)
        if path:
            self.open_clip(self.path, path)

    def _opened(self, number: int, info: VideoInfo, frame_times: np.ndarray) -> None:
        """A clip is open: nothing of the clip before stays (its settings are kept for it); the
        same clip opened again (with a reference) stays at its frame, and beside its reference
        keeps its noise estimate (measured again, seconds on a long clip, it read the same)."""
        self.stop_playback()  # a play asked of the clip before, as this one opened, never started
        self._clip = number
        if self.path is None:
            self._fresh = self._clip_settings()  # what a clip opened for the first time starts from
        else:
            self._save_clip_settings()
        index = self.frame_slider.value() if self._opening == self.path else 0
        self.path, self.info, self.frame_times = self._opening, info, frame_times
        self.unevenly_timed = _uneven(frame_times, info.frame_rate)  # once: the readout follows every frame
        if not self._adding_reference:
            self.noise_follower.new_clip(matrix_for(info.color.get("colorspace", 2), info.height))
        self._regions_frame = None
        self.view.show_regions([])
        self.view.clear_roi()
        self.noise.allow_region(False)
        self.readouts.new_clip()
        self.setWindowTitle(f"NLMeans Studio — {self.path.name}")
        self.frame_slider.set_frame_count(info.frame_count, index)
        self.player.set_frame_rate(info.frame_rate)
        self.recent_menu.remember(self.path)
        if info.warning:  # a truncated file, interlaced video: before a person relies on the result
            self.show_error(f"{self.path.name}: {info.warning}")
        else:
            self.banner.hide()
        self._restore_clip_settings()
        self._show_position()
        self.request_preview()

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 (Qt's naming)
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 (Qt's naming)
        urls = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if urls:
            self.open_file(urls[0])

    # Settings per clip

    def _clip_settings(self) -> ClipSettings:
        """The parameters, noise and marks shown."""
        return ClipSettings(
            self.parameters.params(),
            self.noise.settings(),
            self.noise_follower.strength,
            self.parameters.luma_chroma_text(),
            self.frame_slider.mark_in,
            self.frame_slider.mark_out,
        )

    def _save_clip_settings(self) -> None:
        if self.path is not None:
            save_clip_settings(self.settings, self.path, self._clip_settings())

    def _restore_clip_settings(self) -> None:
        """The clip's own parameters, noise and marks as it was left. A clip opened for the first
        time starts from the settings shown before the session's first clip, whatever clip was
        open before it, and gets its noise estimated (h follows it); the bundled sample, which is
        clean, gets synthetic noise instead, so that the filter has work to do."""
        try:
            saved = load_clip_settings(self.settings, self.path)
        except ValueError:
            saved = None
            self.show_error("This clip's saved settings were not valid; those of a new clip are used.")
        synthetic = self.path.resolve() == SAMPLE_CLIP.resolve()
        clip = saved or dataclasses.replace(self._fresh, noise={**self._fresh.noise, "on": synthetic})
        self.frame_slider.set_marks(clip.mark_in, clip.mark_out)
        if (self.frame_slider.mark_in, self.frame_slider.mark_out) != (clip.mark_in, clip.mark_out):
            self.statusBar().showMessage(
                f"Marks kept for this clip past its last frame are cleared: it has {self.info.frame_count} frames "
                "now (the file was made shorter since).",
                10000,
            )
        self.noise_follower.restore_clip(clip, keep_h=saved is not None)

    # Requests to the worker and their answers

    def _submit(self, request: object) -> int:
        self._requests += 1
        self.worker_thread.worker.submit(self._requests, request, self._clip)
        return self._requests

    def current_params(self) -> NLMParams:
        """The filter's parameters as shown, with the color transform while decorrelation is on."""
        return self.parameters.params()

    def current_luma_chroma(self) -> LumaChroma | None:
        """(h_luma, h_chroma, matrix) when the clip is filtered in Y'CbCr (the luma/chroma mode on,
        and under auto where it was chosen for the noise), in the clip's matrix."""
        gray = self.info is None or self.info.channels != 3  # filtered as it is: no chroma
        if not self.parameters.filters_in_ycbcr() or self.noise_follower.matrix is None or gray:
            return None
        return *self.parameters.luma_chroma_h(), self.noise_follower.matrix

    def _parameters_settled(self) -> None:
        """The controls stopped moving: a new preview, or playback again from here with them."""
        if self.playing:
            self._start_playback(self.player.next_index)
        else:
            self.request_preview()

    def request_preview(self) -> None:
        """Ask for the current frame with the current parameters (the latest request wins)."""
        self.debounce.stop()
        if self.info is None:
            return
        try:
            params, noise = self.current_params(), self.noise.noise()
        except ValueError as error:
            return self.show_error(str(error))
        self._say_if_h_weighs_nothing(params)
        request = PreviewRequest(
            self.frame_slider.value(),
            params,
            noise,
            self.parameters.backend_name(),
            self.current_luma_chroma(),
            self.view.shown_box(),
        )
        self._pending_preview = self._submit(request)

    def _say_if_h_weighs_nothing(self, params: NLMParams) -> None:
        """Bisquare weights are 0 from a patch distance of h^2 on, and two noisy patches of the
        same picture differ by about 2 sigma^2: under sqrt(2) sigma, nearly every other patch
        weighs 0 and the picture stays as it was (a first-time user saw no change, and no why)."""
        noise = self.noise_follower.noise_in_use
        if noise is None or params.weighting != "bisquare" or params.color_transform is not None:
            return
        floor = math.sqrt(2) * noise.average_sigma
        if params.h < floor and self.current_luma_chroma() is None:
            self.statusBar().showMessage(
                f"Bisquare weights with h {params.h:.1f} under {floor:.1f} (1.4 x the noise): nearly every other "
                "patch weighs 0, and the picture stays almost as it was. Raise h or use exponential weights.",
                30000,
            )
        elif self.statusBar().currentMessage().startswith("Bisquare weights with h"):
            self.statusBar().clearMessage()

    def request_estimate(self, roi: tuple[int, int, int, int] | None) -> None:
        """Estimate the noise: automatically over the clip, as ``denoise --noise auto`` does, or in
        ``roi`` on the current frame (and the next)."""
        if self.info is None:
            return self.show_error("Open a clip first.")
        matrix = self.noise_follower.matrix or "bt709"
        luma_chroma = self.parameters.luma_chroma_mode() is not None and self.info.channels == 3
        request = EstimateRequest(
            self.frame_slider.value(),
            roi,
            self.noise.noise(),
            self.current_params(),
            luma_chroma,
            matrix,
            self.parameters.backend_name(),
            self.noise_follower.pinned_center or "auto",
        )
        self._submit(request)

    def _compiling(self) -> None:
        self.statusBar().showMessage(COMPILING)  # until a frame comes

    def _rendered(self, number: int, preview: Preview) -> None:
        """A pass of still ``number`` came (each better than the last): shown unless a newer still's is."""
        if preview.stage not in (UNFILTERED, QUICK) and self.statusBar().currentMessage() == COMPILING:
            self.statusBar().clearMessage()  # the compiled filter's: a quick pass comes during the compile too
        if number < self._shown:
            return  # older than what is on screen
        self._shown = number
        if not self.playing:
            self._show(preview)

    def _show(self, preview: Preview) -> None:
        self.preview = preview
        if preview.stage == EXACT:
            self.timed = preview
        self.view.set_images(preview.before, preview.after, STAGE_NOTES[preview.stage])
        self._tie_regions_to_frame()
        self.readouts.show_psnr(preview)

    def _tie_regions_to_frame(self) -> None:
        """The estimate's boxes show over the frame they were found on only."""
        self.view.set_regions_on_frame(self.preview is not None and self.preview.index == self._regions_frame)

    def _estimated(self, number: int, first: int, estimate: NoiseEstimate, choice: FilterChoice) -> None:
        """The estimate arrived: its flat blocks are drawn over frame ``first``, where they were
        found (the status bar says which where another frame is shown), the filter ``choice`` made
        for it is followed (its strengths and centre weight; under auto its mode)."""
        if estimate.method != "region":
            self._regions_frame = first
            self.view.show_regions(estimate.regions)
            self._tie_regions_to_frame()
            if self.frame_slider.value() != first:
                self._say_where_the_boxes_are("Noise measured over the clip, as denoise does; the boxes are its")
        self.readouts.show_sigma(estimate)
        self.noise_follower.estimated(estimate, choice)

    def _synthetic_changed(self) -> None:
        """The synthetic noise changed: its sigma is the readout's, h follows the noise."""
        self.noise_follower.synthetic_changed()
        synthetic = self.noise.noise()
        if synthetic is not None:
            self.readouts.show_sigma(synthetic.estimate())
        self.debounce.start()

    def _failed(self, number: int, kind: str, message: str) -> None:
        if number == self.player.number and self.playing:
            self.stop_playback()
        if kind == "backend" and self.parameters.backend_name() == "gpu":
            self.show_error(f"The GPU could not denoise this frame: {message}", "Use the CPU", self.use_cpu)
        elif kind == "open":
            opens = f". The window opens videos FFmpeg reads and volumes ({', '.join(VOLUME_SUFFIXES)})."
            self.show_error(f"Could not open the video: {message}{opens if 'not a video file' in message else ''}")
        elif kind == "estimate":
            self.noise.show_failure(message)
            self.show_error(f"Could not estimate the noise: {message}")
        else:
            if number >= self._shown:  # the frame asked for is not shown: no other frame's picture under its number
                self.view.clear_images()
            self.show_error(message)

    def _busy_changed(self, busy: bool) -> None:
        self._busy_since = time.perf_counter() if busy else None
        self.busy.setVisible(busy)
        self._show_speed()

    def use_cpu(self) -> None:
        """Denoise on the CPU from now on (the banner's action after a GPU failure)."""
        self.parameters.set_backend("cpu")
        self.banner.hide()

    def _export_started(self) -> None:
        """An export began: a message on the last one (failed, or what to know of its source) goes."""
        if self.banner.isVisible() and self.banner.text().startswith(EXPORT_MESSAGES):
            self.banner.hide()

    def _export_finished(self, summary: str, warning: str) -> None:
        """The last export's line in the status bar; what to know of its source, where anything, above the views."""
        self.last_export.setText(summary)
        if warning:
            self.show_error(f"{EXPORT_MESSAGES[0]} {warning}.")

    def show_error(
        self, message: str, action_text: str | None = None, action: Callable[[], None] | None = None
    ) -> None:
        """A message above the views (never a dialog that blocks), with an optional action button."""
        self.banner.show_error(message, action_text, action)

    # Frames, marks and playback

    def _frame_changed(self) -> None:
        self.stop_playback()
        self._show_position()
        self.request_preview()

    def _show_position(self) -> None:
        if self.info is None:
            return
        index = self.frame_slider.value()
        at = functools.partial(timecode, info=self.info, frame_times=self.frame_times, uneven=self.unevenly_timed)
        parts = [at(index), f"frame {index + 1} / {self.info.frame_count}"]
        marked = self.frame_slider.marked
        if marked is not None:
            parts.append(f"in {at(marked[0])} out {at(marked[1])}")
        self.frame_label.setText(" · ".join(parts))

    def step(self, frames: int) -> None:
        """Show the frame ``frames`` after (before, if negative) the current one."""
        self.frame_slider.setValue(self.frame_slider.value() + frames)

    def go_to(self, index: int | None) -> None:
        """Show frame ``index`` (None: the last)."""
        self.frame_slider.setValue(self.frame_slider.maximum() if index is None else index)

    def set_mark(self, which: str) -> None:
        """Mark the current frame as the first ("in") or last ("out") of the range played and exported."""
        if self.info is not None:
            self.frame_slider.set_mark(which)

    def clear_marks(self) -> None:
        """Play and export the whole clip again."""
        self.frame_slider.set_marks(None, None)

    def toggle_play(self) -> None:
        """Play every denoised frame from the next one to the out mark (from the in mark when at
        the end), at the clip's rate where the engine keeps up; pause."""
        if self.playing or self.info is None:
            return self.stop_playback()
        first, stop = self.frame_slider.play_range()
        current = self.frame_slider.value()
        self._start_playback(current + 1 if first <= current < stop - 1 else first)

    def _start_playback(self, start: int) -> None:
        stop = self.frame_slider.play_range()[1]
        try:
            params, noise = self.current_params(), self.noise.noise()
        except ValueError as error:
            return self.show_error(str(error))
        request = PlayRequest(start, stop, params, noise, self.parameters.backend_name(), self.current_luma_chroma())
        self.player.play(request)

    def stop_playback(self) -> None:
        """Pause; the frame shown is rendered again as a still (with its PSNR)."""
        self.player.stop()

    def _playback_stopped(self) -> None:
        self._show_play_state()
        self.request_preview()

    def _show_play_state(self) -> None:
        self.play_action.setText("Pause" if self.playing else "Play")
        pixmap = QStyle.StandardPixmap.SP_MediaPause if self.playing else QStyle.StandardPixmap.SP_MediaPlay
        self.play_action.setIcon(self.style().standardIcon(pixmap))

    def _show_played(self, preview: Preview) -> None:
        """A frame playback shows: the picture, and the timeline and position follow it."""
        self._show(preview)
        self.frame_slider.show_frame(preview.index)
        self._show_position()

    def _show_speed(self) -> None:
        if self.playing:
            return self.readouts.show_playback(*self.player.speed())
        engine_ms = self.timed.engine_ms if self.timed is not None else None
        device = f"{self.timed.backend.upper()}: {self.timed.device_name}" if self.timed else ""
        rendering = None if self._busy_since is None else time.perf_counter() - self._busy_since
        self.readouts.show_still(engine_ms, device, rendering)

    # Views

    def _show_regions_changed(self) -> None:
        """R: show or hide the boxes; shown over another frame than theirs, the status bar says which."""
        self.view.set_regions_visible(self.regions_action.isChecked())
        if self.regions_action.isChecked() and self.view.region_items and not self.view.regions_on_frame:
            self._say_where_the_boxes_are("No boxes on this frame: they are the noise estimate's")

    def _say_where_the_boxes_are(self, lead: str) -> None:
        """Name the frame the estimate's boxes were found on, after ``lead``, in the status bar."""
        self.statusBar().showMessage(
            f"{lead} flat blocks on frame {self._regions_frame + 1}, drawn over that frame.", 10000
        )

    # Noise regions and presets

    def _draw_region(self) -> None:
        if self.info is None:
            return self.show_error("Open a clip first.")
        self.regions_action.setChecked(True)
        self._show_regions_changed()
        self.view.start_drawing_region()
        self.statusBar().showMessage("Drag a rectangle over a flat area of the picture.", 10000)

    def _region_drawn(self, box: tuple[int, int, int, int]) -> None:
        self.noise.allow_region(True)
        self.statusBar().showMessage(f"Region {box[2]} x {box[3]} at ({box[0]}, {box[1]}): Use this region.", 10000)

    def load_preset(self, path: str | Path) -> None:
        """Take a preset's parameters; its strength sets h from the noise (measured first if unknown)."""
        try:
            preset = load_preset(Path(path))
        except PresetError as error:
            return self.show_error(str(error))
        self.noise_follower.apply_preset(preset)

    def save_preset(self, path: str | Path) -> None:
        """Save the parameters shown as a preset: h as a strength relative to the noise when it is known."""
        params = self.current_params()
        try:
            save_preset(
                Path(path), params, self.noise_follower.relative_strength(params), self.parameters.luma_chroma_text()
            )
        except OSError as error:
            self.show_error(f"Could not save the preset: {error}")

    # Export

    def export_dialog(self) -> None:
        """Ask for an export's settings (the range from the marks); Export adds it to the queue."""
        if self.path is None or self.info is None:
            return self.show_error("Open a clip first.")
        frames = range(*self.frame_slider.play_range())
        last_codec, last_rate = self.settings.value(EXPORT_CODEC), self.settings.value(EXPORT_RATE)
        dialog = ExportDialog(
            self,
            self.path,
            self.info,
            self.frame_times,
            frames,
            queued=self.exports.targets(),
            codec=last_codec,
            frame_rate=last_rate,
        )
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        source, params, backend = self.path, self.current_params(), self.parameters.backend_name()
        luma_chroma = self.current_luma_chroma()

        def export() -> None:
            settings = dialog.settings()
            self.settings.setValue(EXPORT_CODEC, settings.codec)  # offered first next time
            if settings.frame_rate is not None:
                self.settings.setValue(EXPORT_RATE, settings.frame_rate)
            self.exports.add(ExportRequest(source, settings, params, backend, luma_chroma), dialog.describe())

        dialog.accepted.connect(export)
        dialog.open()

    # Tuning for a frame rate

    def tune_for_fps(self) -> None:
        """Ask for a frame rate (the clip's by default) and tune the window for it in the background:
        each search window timed exporting or playing this clip here (as asked), the best-estimated one
        that reaches the rate applied to the sliders when it is found."""
        if self.path is None or self.info is None:
            return self.show_error("Open a clip first.")
        if self.tuner.running:
            return self.show_error("A tune is running: wait for it, or cancel it, first.")
        asked = self.tuner.ask_fps(float(self.info.frame_rate))
        if asked is not None:
            fps, playback = asked
            backend = self.parameters.backend_name()
            self.tuner.start(TuneRequest(self.path, fps, self.current_params(), backend, playback))

    def apply_tuned(self, result: TuneResult) -> None:
        """Show the tune's choice: its radii and frames, its centre weight and its strengths (the two of
        the luma/chroma mode for a colour clip, as given ones)."""
        chosen = result.chosen
        window, choice = chosen.window, chosen.choice
        radii = ("patch_radius", "search_radius", "frames_past", "frames_future")
        params = dataclasses.replace(
            self.parameters.params(),
            h=choice.params.h,
            center_weight=choice.params.center_weight,
            **{name: getattr(window, name) for name in radii},
        )
        self.parameters.set_params(params)
        self.parameters.set_luma_chroma_mode(None if choice.luma_chroma is None else choice.luma_chroma[:2])
        self.statusBar().showMessage(
            f"Tuned for {result.target_fps:g} fps: {chosen.describe()} runs at {chosen.fps:.1f} fps here, "
            f"{_estimated(chosen.estimated_psnr)} ({len(result.candidates)} windows timed)",
            30000,
        )

    # Settings, closing

    def _restore_settings(self) -> None:
        geometry = self.settings.value("geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        splitter = self.settings.value("splitter")
        if splitter is not None:
            self.splitter.restoreState(splitter)
        mode = self.settings.value("view-mode", "split")
        self.view_actions.set_mode(mode if mode in self.view_actions.modes else "split")
        saved = self.settings.value("params")
        if saved:
            try:
                self.parameters.set_params(params_from_json(saved))
            except (ValueError, TypeError):
                self.show_error("The saved parameters were not valid; the defaults are used.")

    def _save_settings(self) -> None:
        self.settings.setValue("geometry", self.saveGeometry())
        self.settings.setValue("splitter", self.splitter.saveState())
        self.settings.setValue("view-mode", self.view.mode)
        fresh = self.parameters.params() if self._fresh is None else self._fresh.params  # not the last clip's
        self.settings.setValue("params", params_to_json(fresh))
        self._save_clip_settings()
        self.settings.sync()

    def _exports_may_stop(self) -> bool:
        """Whether closing may stop the exports in the queue: the user is asked where any runs
        or waits (closing stops them, and leaves no file of theirs)."""
        return not self.exports.rows or stop_exports_asked(self, len(self.exports.rows))

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt's naming)
        windows = [*self.findChildren(VolumeWindow), *self.findChildren(StreamWindow)]
        if not self._exports_may_stop() or not all(window.close() for window in windows):
            event.ignore()  # the user keeps the window, and its exports run on
            return
        self._save_settings()
        self.stop_playback()
        self.speed_timer.stop()
        self.debounce.stop()
        self.exports.stop()
        self.tuner.stop()
        self.worker_thread.stop()
        super().closeEvent(event)
