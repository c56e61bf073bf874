"""The volume window's worker: a plane's preview and the whole volume's export, off the GUI thread.

The thread model is every window's (``worker.Worker``): the window submits numbered requests and
returns at once; the worker runs the latest of each kind and answers with signals carrying the
request's number, which the window compares with its latest to drop stale answers. The worker
reads the volume it was made with and never touches a widget.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
from PySide6.QtCore import Signal

from nlmeans_studio.engine import (
    BackendUnavailableError,
    ExportCancelledError,
    GpuOutOfMemoryError,
    VolumeFile,
    denoise_volume,
    denoise_volume_slice,
    filter_compiles,
    write_volume,
)

from .volume_planes import PlaneLayout
from .worker import Worker

ENGINE_ERRORS = (ValueError, OSError, MemoryError, BackendUnavailableError, GpuOutOfMemoryError)


@dataclass(frozen=True)
class PlanePreviewRequest:
    """Filter the slab around plane ``index`` normal to ``axis`` with ``settings`` (as
    ``denoise_volume`` takes them) and draw ``channels`` of it as ``layout`` draws planes."""

    axis: int
    index: int
    channels: tuple[int, ...]
    settings: dict
    layout: PlaneLayout


@dataclass(frozen=True)
class VolumeExportRequest:
    """Filter the whole volume with ``settings`` and write it to ``target`` in the format,
    type and grid of ``file`` (the volume's own file)."""

    target: Path
    settings: dict
    file: VolumeFile


class VolumeWorker(Worker):
    """Previews and exports of ``data`` (Z, Y, X, C) float32, on the thread it was moved to."""

    KINDS: ClassVar[dict[type, str]] = {PlanePreviewRequest: "preview", VolumeExportRequest: "export"}
    ORDER: ClassVar[tuple[str, ...]] = ("preview", "export")  # a waiting preview before a long export

    compiling = Signal(int)  # request number: its preview waits for the CPU filter's compile
    rendered = Signal(int, object, float)  # request number, the plane as drawn (float32), seconds
    preview_failed = Signal(int, str)  # request number, why
    export_progressed = Signal(int, int, int)  # request number, slabs done, slabs in all
    exported = Signal(int, str)  # request number, the written path
    export_failed = Signal(int, str)  # request number, why
    export_cancelled = Signal(int)  # request number: nothing was written

    def __init__(self, data: np.ndarray) -> None:
        super().__init__()
        self._data = data

    @property
    def _volume(self) -> np.ndarray:
        """The volume as the engine takes it: (Z, Y, X) for one channel, as the file holds it (its
        messages spoke of a fourth axis of 1, and of time series)."""
        return self._data if self._data.shape[3] > 1 else self._data[..., 0]

    def _handle(self, number: int, request: object) -> None:
        if isinstance(request, PlanePreviewRequest):
            self._preview(number, request)
        else:
            self._export(number, request)

    def _preview(self, number: int, request: PlanePreviewRequest) -> None:
        started = time.perf_counter()
        axis, settings, channels = request.axis, dict(request.settings), list(request.channels)
        try:
            if filter_compiles(settings["backend"], volume=True):
                self.compiling.emit(number)
            if settings["channels"] == "separately":  # only the shown channels, each on its own
                strengths = settings.pop("h")
                planes = [
                    denoise_volume_slice(self._data[..., c], request.index, axis=axis, h=strengths[c], **settings)
                    for c in channels
                ]
                plane = np.stack(planes, axis=-1)
            else:
                plane = denoise_volume_slice(self._volume, request.index, axis=axis, **settings)
                plane = (plane if plane.ndim == 3 else plane[..., np.newaxis])[..., channels]
        except ENGINE_ERRORS as error:
            self.preview_failed.emit(number, str(error))
            return
        except Exception as error:  # a kernel or driver failure must not end the worker, nor go unsaid
            traceback.print_exception(error)
            self.preview_failed.emit(number, f"{type(error).__name__}: {error}")
            return
        plane = request.layout.shown(plane)
        plane = plane[..., 0] if len(channels) == 1 else plane
        self.rendered.emit(number, plane, time.perf_counter() - started)

    def _export(self, number: int, request: VolumeExportRequest) -> None:
        cancel = self.cancel_event(number)

        def progress(done: int, total: int) -> None:
            if cancel.is_set():
                raise ExportCancelledError("cancelled")  # out of denoise_volume, from its slab loop
            self.export_progressed.emit(number, done, total)

        try:
            channel_axis = 3 if self._volume.ndim == 4 else None  # the window's 4D volumes are channels
            result = denoise_volume(self._volume, progress=progress, channel_axis=channel_axis, **request.settings)
            if cancel.is_set():  # cancelled after the last slab: nothing is written
                raise ExportCancelledError("cancelled")
            write_volume(request.target, result, request.file, overwrite=True)  # the dialog asked about replacing it
        except ExportCancelledError:
            self.export_cancelled.emit(number)
        except (*ENGINE_ERRORS, FileExistsError) as error:
            self.export_failed.emit(number, str(error))
        except Exception as error:  # a bug must still end the export, or the window would wait on it forever
            traceback.print_exception(error)
            self.export_failed.emit(number, f"{type(error).__name__}: {error}")
        else:
            self.exported.emit(number, str(request.target))
