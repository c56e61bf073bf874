"""Export: a dialog for the output's settings, and a queue of exports that a worker runs with ``denoise_file``.

The worker is every window's thread model (``worker.Worker``): the queue submits one numbered export
at a time and hears of it by signals carrying that number."""

from __future__ import annotations

import itertools
import os
import traceback
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
from PySide6.QtCore import QStandardPaths, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from nlmeans_studio.engine import (
    CODECS,
    SAMPLE_CLIP,
    BackendUnavailableError,
    CodecNotHeldError,
    ExportCancelledError,
    GpuOutOfMemoryError,
    LumaChroma,
    NLMParams,
    VideoError,
    VideoInfo,
    aspect_ratio_lost,
    check_encoder,
    check_output_path,
    chroma_halved,
    default_codec,
    denoise_file,
    is_image_sequence,
    misread_streams,
    output_format,
    sequence_files,
)

from .worker import Worker, WorkerThread

CANCELLED = "Export cancelled; no file was written."
SEQUENCE_RATES = (23.976, 24.0, 25.0, 29.97, 30.0, 48.0, 50.0, 59.94, 60.0)  # frames a second a sequence is read at
FAILED = "Export failed"  # how a failed export's message begins
# The extension an output's name is given when its container cannot hold the codec chosen
SUFFIXES = {
    "h264": ".mp4",
    "h265": ".mp4",
    "ffv1": ".mkv",
    "prores": ".mov",
    "h264-nvenc": ".mp4",
    "h265-nvenc": ".mp4",
}


@dataclass(frozen=True)
class ExportSettings:
    """What the export dialog asks for: the frames by number (``range(first, stop)``: seconds
    would round, and lose or add a frame at 29.97 fps), CRF for H.264 / H.265."""

    target: Path
    codec: str
    crf: int
    frames: range
    frame_rate: float | None = None  # an image sequence's frames a second (its images carry none); None: 25


@dataclass(frozen=True)
class ExportRequest:
    """One export as the window queues it: the clip, the dialog's settings and the filter then."""

    source: Path
    settings: ExportSettings
    params: NLMParams
    backend: str
    luma_chroma: LumaChroma | None = None  # (h_luma, h_chroma, matrix): filtered in Y'CbCr


def _output_folder(source: Path) -> Path:
    """Where an export of ``source`` is proposed: beside it, unless it is the bundled sample (in the
    application's own folder) or its folder cannot be written; then the user's videos folder."""
    if source.resolve() != SAMPLE_CLIP.resolve() and os.access(source.parent, os.W_OK):
        return source.parent
    videos = Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.MoviesLocation))
    return videos if videos.is_dir() and os.access(videos, os.W_OK) else Path.home()


def _suffix(source: Path, info: VideoInfo, codec: str) -> str:
    """The codec's usual container (``SUFFIXES``: .mp4 for H.264, .mov for ProRes, .mkv for FFV1),
    unless it would keep the source's audio in a form older readers misread (PCM in MP4): then the
    source's own container where it holds ``codec`` and those streams, else .mkv. An image
    sequence's own image format (a sequence of DPX scans is proposed as DPX), else TIFF."""
    if is_image_sequence(source):
        own = source.suffix.lower()
        return own if _holds(Path(f"out%06d{own}"), codec, info) else ".tif"
    for suffix in (SUFFIXES[codec], source.suffix.lower()):
        if _holds(Path(f"out{suffix}"), codec, info) and not misread_streams(Path(f"out{suffix}"), info):
            return suffix
    return ".mkv"


def _free_name(source: Path, info: VideoInfo, codec: str, queued: Collection[Path]) -> Path:
    """NAME-denoised.mp4 (or ``_suffix``'s container) in ``_output_folder``, or NAME-denoised-2.mp4,
    -3, .. where that exists or an export in the queue (``queued``, resolved paths) will write it: a
    second export does not replace the first unless the user names it."""
    folder, suffix = _output_folder(source), _suffix(source, info, codec)
    names = (f"{source.stem}-denoised{'' if n == 1 else f'-{n}'}{suffix}" for n in itertools.count(1))
    return next(path for path in map(folder.joinpath, names) if not _taken(path) and path.resolve() not in queued)


def _taken(path: Path) -> bool:
    """Whether an output named ``path`` exists: the file, or images of the sequence it names."""
    return bool(sequence_files(path)) if is_image_sequence(path) else path.exists()


def _holds(path: Path, codec: str, like: VideoInfo | None = None) -> bool:
    """Whether an output named ``path`` can hold ``codec`` and ``like``'s copied streams (an image
    sequence holds any: it has none)."""
    try:
        output_format(path, codec, like)
    except VideoError:
        return False
    return True


def stop_exports_asked(parent: QWidget, count: int) -> bool:
    """Ask, before a window closes, whether to stop its ``count`` unfinished exports: True to stop
    them and close, False (the default) to keep the window open."""
    what, them = ("1 export is", "it; it writes") if count == 1 else (f"{count} exports are", "them; they write")
    box = QMessageBox(QMessageBox.Icon.Warning, "Exports are running", f"{what} not finished.", parent=parent)
    box.setInformativeText(f"Closing the window stops {them} no file.")
    stop = box.addButton("Stop and close", QMessageBox.ButtonRole.DestructiveRole)
    box.setDefaultButton(box.addButton("Keep the window open", QMessageBox.ButtonRole.RejectRole))
    box.exec()
    return box.clickedButton() is stop


def _rate_box(chosen: object) -> QComboBox:
    """The frame rates an image sequence is offered at, ``chosen`` (the last export's, as settings
    keep it: a number or its text) or 25 first."""
    box = QComboBox()
    for rate in SEQUENCE_RATES:
        box.addItem(f"{rate:g} fps" + (" (NTSC's 24000/1001)" if rate == 23.976 else ""), rate)
    try:
        rate = float(chosen)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        rate = 25.0
    box.setCurrentIndex(box.findData(rate if rate in SEQUENCE_RATES else 25.0))
    box.setToolTip("Images carry no frame rate: a film scan's is 24; FFmpeg reads them at 25")
    return box


def _codec_box(chosen: str | None) -> QComboBox:
    """The codecs, those this machine cannot encode greyed with the reason as their tooltip (NVENC
    without an NVIDIA video encoder); ``chosen`` selected where it can be (the last export's)."""
    box = QComboBox()
    model = box.model()
    for row, name in enumerate(CODECS):
        box.addItem(name, name)
        try:
            check_encoder(name)
        except VideoError as error:
            item = model.item(row)
            item.setEnabled(False)
            item.setToolTip(str(error))
    usable = [row for row in range(box.count()) if model.item(row).isEnabled()]
    row = box.findData(chosen)
    box.setCurrentIndex(row if row in usable else usable[0])
    return box


class ExportDialog(QDialog):
    """Output path, codec, quality and range: ``frames`` (from the in and out marks), shown as
    the window numbers frames (from 1) with their times (``frame_times``: each frame's, in seconds
    from frame 0); audio and subtitles are copied, except into an image sequence. The Export
    button adds the export to the queue; ``codec`` is the one offered first (the last export's; by
    default the source's kind, ``default_codec``: ProRes for a ProRes master).
    The name proposed is one that neither exists nor is an output of the queue (``queued``,
    resolved paths); a file that exists is named in the dialog and replaced, an output of the
    queue is refused."""

    def __init__(
        self,
        parent: QWidget | None,
        source: Path,
        info: VideoInfo,
        frame_times: np.ndarray,
        frames: range,
        queued: Collection[Path] = (),
        codec: str | None = None,
        frame_rate: object = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Export denoised clip")
        self.setMinimumWidth(560)  # room for the output's path
        self._info, self._source, self._frame_times = info, source, frame_times
        self._queued = frozenset(queued)
        self.codec = _codec_box(codec or default_codec(Path(f"out{source.suffix}"), info))
        self._codec_given = codec is not None  # else it follows the name's container, until one is chosen
        self.codec.currentIndexChanged.connect(self._codec_chosen)
        self.path = QLineEdit(str(_free_name(source, info, self.codec.currentData(), self._queued)))
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        self.codec.currentIndexChanged.connect(self._codec_changed)
        self.crf = QSpinBox()
        self.crf.setRange(0, 51)
        self.crf.setValue(18)
        self.crf.setToolTip("Constant rate factor: lower is better quality and a bigger file (H.264 / H.265)")
        self.first, self.last = QSpinBox(), QSpinBox()
        for box, value in ((self.first, frames.start + 1), (self.last, frames.stop)):
            box.setRange(1, info.frame_count)
            box.setValue(value)
            box.valueChanged.connect(self._range_changed)
        self.frame_rate = _rate_box(frame_rate)  # an image sequence's: shown for one alone
        self.frame_rate.currentIndexChanged.connect(self._range_changed)
        self.span = QLabel()
        self.replaces = QLabel()
        self.replaces.setWordWrap(True)
        self.renamed = QLabel()  # why the dialog changed the name's extension, until the name is edited
        self.renamed.hide()
        self.path.textChanged.connect(self._path_changed)
        self.path.textEdited.connect(self.renamed.hide)
        path_row = QHBoxLayout()
        path_row.addWidget(self.path, 1)
        path_row.addWidget(browse)
        form = QFormLayout()
        form.addRow("Output", path_row)
        form.addRow("", self.replaces)
        form.addRow("", self.renamed)
        self.codec_unused = QLabel("not used: an image sequence is written as its images' format")
        codec_row = QHBoxLayout()
        codec_row.addWidget(self.codec)
        codec_row.addWidget(self.codec_unused, 1)
        form.addRow("Codec", codec_row)
        form.addRow("Quality (CRF)", self.crf)
        form.addRow("First frame", self.first)
        form.addRow("Last frame", self.last)
        if is_image_sequence(source):  # images carry no rate: a film scan's is 24, FFmpeg reads 25
            form.addRow("Frame rate", self.frame_rate)
        else:
            self.frame_rate.hide()
        form.addRow("", self.span)
        self.streams = QLabel()
        self.streams.setWordWrap(True)
        form.addRow("", self.streams)
        self.chroma = QLabel()  # a 4:2:2 master written 4:2:0, said
        self.chroma.setWordWrap(True)
        form.addRow("", self.chroma)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.export_button = buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.export_button.setText("Export")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(buttons)
        self._path_changed()
        self._range_changed()

    def _path_changed(self) -> None:
        """Say what the output's name means: a file it replaces, or a name no container fits for
        the codec, the input itself, a folder missing or read-only (then Export waits for a better
        name, and the dialog stays with its settings)."""
        path = Path(self.path.text()).expanduser()
        if not self._codec_given:
            self._follow_the_container(path)
        container = ""
        try:
            container = output_format(path, self.codec.currentData(), self._info)  # its streams too: MXF's PCM
            check_output_path(path, self._source, overwrite=True)  # a file that exists is said below
        except CodecNotHeldError as error:
            problem = error.worded("another codec").removeprefix(f"{path}: ")
        except VideoError as error:
            problem = str(error).removeprefix(f"{path}: ")
        else:
            problem = ""
        if not problem and path.resolve() in self._queued:
            problem = "An export in the queue writes this file; choose another name."
        exists = path.exists()
        self.replaces.setText(problem or ("This file exists and will be replaced." if exists else ""))
        self.replaces.setStyleSheet("color: #b00020" if problem else "")
        self.replaces.setVisible(bool(problem) or exists)
        self._path_problem = problem
        self._allow_export()
        self._show_what_is_written(path, images=container == "image2")
        self.adjustSize()  # a wrapped message of several lines gets its height

    def _codec_chosen(self) -> None:
        """A codec picked in the box stays, whatever the name's container."""
        self._codec_given = True

    def _follow_the_container(self, path: Path) -> None:
        """Offer the codec an output named ``path`` gets by default (``default_codec``): a scan's FFV1 in .mkv,
        H.264 in .mp4."""
        row = self.codec.findData(default_codec(path, self._info))
        if row >= 0 and self.codec.model().item(row).isEnabled() and row != self.codec.currentIndex():
            self.codec.blockSignals(True)  # the name stays: the default is one its container holds
            self.codec.setCurrentIndex(row)
            self.codec.blockSignals(False)

    def _browse(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export to", self.path.text())
        if path:
            self.path.setText(path)

    def _codec_changed(self) -> None:
        """Keep the output's name where it can hold the new codec; else give it the codec's usual
        extension where that can, and say so."""
        codec = self.codec.currentData()
        current = Path(self.path.text())
        renamed = current.with_suffix(SUFFIXES[codec])
        if not _holds(current, codec) and _holds(renamed, codec):
            self.path.setText(str(renamed))
            self.renamed.setText(f"Renamed from {current.name}: a {current.suffix} file does not hold {codec}.")
            self.renamed.show()
        self._path_changed()  # the same name may not fit the new codec

    def _show_what_is_written(self, path: Path, images: bool) -> None:
        """The codec and quality in use, what the codec does to a 4:2:2 master's chroma and the container
        ``path`` names to anamorphic pixels, and the streams copied, with what that container does to
        them; an image sequence has neither a codec nor sound."""
        self.codec.setEnabled(not images)
        self.codec_unused.setVisible(images)
        codec = self.codec.currentData()
        losses = () if images else (chroma_halved(codec, self._info), aspect_ratio_lost(path, codec, self._info))
        lost = " ".join(f"{sentence}." for sentence in losses if sentence)
        self.chroma.setText(lost)
        self.chroma.setVisible(bool(lost))
        self.crf.setEnabled(not images and self.codec.currentData() in ("h264", "h265"))
        count = self._info.other_streams
        if images:
            left_out = f": the clip's {count} audio / subtitle stream(s) are left out" if count else ""
            self.streams.setText(f"an image sequence carries no audio or subtitles{left_out}")
        else:
            misread = misread_streams(path, self._info)
            copied = f"{count} audio / subtitle stream(s) copied " + (
                f"as they are, but {misread}" if misread else "unchanged"
            )
            self.streams.setText(copied if count else "no audio or subtitle streams to copy")

    def _range_changed(self) -> None:
        """Say the range's length and times, or that the last frame is before the first (then
        Export waits for a range)."""
        frames = self._frames()
        self.span.setText(
            f"{len(frames)} frame{'' if len(frames) == 1 else 's'}, {self._seconds()}"
            if frames
            else "The last frame must not be before the first."
        )
        self.span.setStyleSheet("" if frames else "color: #b00020")
        self._allow_export()

    def _allow_export(self) -> None:
        """Export is for a name the output can have and a range of frames."""
        self.export_button.setEnabled(not self._path_problem and bool(self._frames()))

    def _frames(self) -> range:
        return range(self.first.value() - 1, self.last.value())

    def _seconds(self) -> str:
        """When the range begins and ends (where its last frame ends), in seconds from frame 0."""
        frames = self._frames()
        if (rate := self._frame_rate()) is not None:  # a sequence at the rate chosen
            return f"{frames.start / rate:.3f} s to {frames.stop / rate:.3f} s"
        start = self._frame_times[frames.start]
        end = self._frame_times[frames.stop] if frames.stop < len(self._frame_times) else self._info.duration
        return f"{start:.3f} s to {end:.3f} s"

    def _frame_rate(self) -> float | None:
        """The rate chosen for an image sequence; None for a clip, which has its own."""
        return self.frame_rate.currentData() if is_image_sequence(self._source) else None

    def settings(self) -> ExportSettings:
        return ExportSettings(
            target=Path(self.path.text()).expanduser(),
            codec=self.codec.currentData(),
            crf=self.crf.value(),
            frames=self._frames(),
            frame_rate=self._frame_rate(),
        )

    def describe(self) -> str:
        """The range and codec in words, for the queue's rows."""
        frames = self._frames()
        written = self.codec.currentData() if self.codec.isEnabled() else "images"
        return f"frames {frames.start + 1} to {frames.stop} ({self._seconds()}), {written}"


class ExportWorker(Worker):
    """Runs exports, one at a time, on the thread it was moved to; ``cancel(number)`` stops one,
    leaving no output."""

    KINDS: ClassVar[dict[type, str]] = {ExportRequest: "export"}
    ORDER: ClassVar[tuple[str, ...]] = ("export",)

    progressed = Signal(int, int, int, float)  # request number, frames done, frames in all, seconds elapsed
    exported = Signal(int, str, str)  # request number, a summary line, what to know of the source ("" or a warning)
    failed = Signal(int, str)  # request number, what went wrong in plain words
    cancelled = Signal(int)  # request number: stopped by the user, nothing written

    def _handle(self, number: int, request: ExportRequest) -> None:
        settings = request.settings
        try:
            summary = denoise_file(
                request.source,
                settings.target,
                request.params,
                backend=request.backend,
                codec=settings.codec,
                crf=settings.crf,
                overwrite=True,
                frames=settings.frames,
                progress=lambda done, total, seconds: self.progressed.emit(number, done, total, seconds),
                cancel=self.cancel_event(number),
                luma_chroma=request.luma_chroma,
                frame_rate=settings.frame_rate,
            )
        except ExportCancelledError:
            self.cancelled.emit(number)
        except (VideoError, OSError, ValueError, MemoryError, GpuOutOfMemoryError, BackendUnavailableError) as error:
            self.failed.emit(number, f"{FAILED}: {error}")
        except Exception as error:  # a bug must still end the export, or the queue would wait on it forever
            traceback.print_exc()
            self.failed.emit(number, f"{FAILED}: {type(error).__name__}: {error}")
        else:
            damaged = len(summary.damaged_frames)
            note = f"; {damaged} frame{'s' * (damaged > 1)} damaged in the source" if damaged else ""
            self.exported.emit(
                number,
                f"Exported {summary.frames} frames to {settings.target.name} in {summary.seconds:.1f} s "
                f"({summary.fps:.1f} fps, {summary.backend}){note}",
                summary.damage_warning or "",
            )


class ExportRow(QWidget):
    """One export in the queue: its file and range, a progress bar with fps and ETA, and Cancel."""

    def __init__(self, request: ExportRequest, range_text: str, number: int):
        super().__init__()
        self.request, self.number = request, number  # the number the queue submits it as
        target = request.settings.target
        self.name = QLabel(f"{target.name} ({range_text})")
        self.name.setToolTip(str(target))
        self.name.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.bar = QProgressBar()
        self.status = QLabel("waiting")
        self.cancel = QPushButton("Cancel")
        self.cancel.setToolTip("Stop this export (no file is left) or take it off the queue")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.name, 2)
        layout.addWidget(self.bar, 3)
        layout.addWidget(self.status, 2)
        layout.addWidget(self.cancel)

    def show_progress(self, done: int, total: int, seconds: float) -> None:
        self.bar.setRange(0, total)
        self.bar.setValue(done)
        fps = done / seconds if seconds > 0 else 0.0
        eta = f"{(total - done) / fps:.0f} s" if fps > 0 else "…"
        self.status.setText(f"{done}/{total} frames, {fps:.1f} fps, ETA {eta}")


class ExportQueue(QWidget):
    """Exports run one after another in the background, each shown as a row until it ends.

    ``started`` says one began, ``finished`` carries a finished export's summary, ``failed`` why one
    did not finish, ``cancelled`` that the user stopped one. ``stop`` ends the queue's worker (the
    window is closing).
    """

    started = Signal()  # an export began: what the window says of the last one is out of date
    finished = Signal(str, str)  # the summary line, and what to know of the source ("" or a warning)
    failed = Signal(str)
    cancelled = Signal(str)  # what was (not) written, in plain words: the user's own doing, not an error

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[ExportRow] = []
        self.running: ExportRow | None = None
        self._numbers = itertools.count(1)
        self.worker_thread = WorkerThread(ExportWorker(), "nlmeans-export")
        self.worker_thread.worker.progressed.connect(self._progressed)
        self.worker_thread.worker.exported.connect(self._exported)
        self.worker_thread.worker.failed.connect(self._failed)
        self.worker_thread.worker.cancelled.connect(self._cancelled)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self.title = QLabel()
        self._layout.addWidget(self.title)
        self.hide()

    def targets(self) -> frozenset[Path]:
        """The files the exports in the queue (running or waiting) write, resolved."""
        return frozenset(row.request.settings.target.resolve() for row in self.rows)

    def add(self, request: ExportRequest, range_text: str) -> None:
        """Queue an export; it starts once the ones before it have ended."""
        row = ExportRow(request, range_text, next(self._numbers))
        row.cancel.clicked.connect(lambda: self.cancel(row))
        self.rows.append(row)
        self._layout.addWidget(row)
        self._start_next()

    def cancel(self, row: ExportRow) -> None:
        """Stop ``row``'s export if it runs (its partial file is removed), else take it off the queue."""
        if row is self.running:
            self.worker_thread.worker.cancel(row.number)
        elif row in self.rows:
            self._remove(row)

    def stop(self) -> None:
        """Empty the queue, stop the running export and join the worker's thread (the window is closing)."""
        for row in [row for row in self.rows if row is not self.running]:
            self._remove(row)
        self.worker_thread.stop()
        if self.running is not None:
            self._remove(self.running)
            self.running = None

    def _start_next(self) -> None:
        if self.running is None and self.rows:
            self.running = self.rows[0]
            self.running.status.setText("starting…")
            self.running.bar.setRange(0, 0)  # busy until the first frame
            self.worker_thread.worker.submit(self.running.number, self.running.request)
            self.started.emit()
        self._refresh()

    def _progressed(self, number: int, done: int, total: int, seconds: float) -> None:
        if self.running is not None and self.running.number == number:
            self.running.show_progress(done, total, seconds)

    def _exported(self, number: int, summary: str, warning: str) -> None:
        if self._ended(number):
            self.finished.emit(summary, warning)

    def _failed(self, number: int, message: str) -> None:
        if self._ended(number):
            self.failed.emit(message)

    def _cancelled(self, number: int) -> None:
        if self._ended(number):
            self.cancelled.emit(CANCELLED)

    def _ended(self, number: int) -> bool:
        """Export ``number`` ended: its row goes and the next starts; whether it was the one running
        (not one the closing window stopped)."""
        if self.running is None or self.running.number != number:
            return False
        row, self.running = self.running, None
        self._remove(row)
        self._start_next()
        return True

    def _remove(self, row: ExportRow) -> None:
        self.rows.remove(row)
        self._layout.removeWidget(row)
        row.deleteLater()
        self._refresh()

    def _refresh(self) -> None:
        self.title.setText(f"Exports: {len(self.rows)} in the queue, one at a time" if len(self.rows) > 1 else "Export")
        self.setVisible(bool(self.rows))
