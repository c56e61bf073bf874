"""The About box: the app's and its libraries' versions, and where denoising runs."""

from __future__ import annotations

import platform

import numpy as np
from PySide6.QtWidgets import QMessageBox, QWidget

from nlmeans_studio import engine
from nlmeans_studio.engine import Preview


def about_text(preview: Preview | None) -> str:
    """Versions of the app and its libraries, and the device the last preview ran on."""
    import pyqtgraph
    import PySide6

    lines = [
        f"<b>NLMeans Studio {engine.__version__}</b>",
        "Non-Local Means video denoising on an NVIDIA GPU or the CPU.",
        f"Python {platform.python_version()}, NumPy {np.__version__}, PySide6 {PySide6.__version__}, "
        f"pyqtgraph {pyqtgraph.__version__}",
    ]
    try:
        import av

        lines.append(f"PyAV {av.__version__} (FFmpeg {av.ffmpeg_version_info})")
    except ImportError:
        lines.append("PyAV is not installed: no video files")
    if preview is not None:
        lines.append(f"Denoising on the {preview.backend.upper()}: {preview.device_name}")
    reason = engine.gpu_unavailable_reason()
    if reason:
        lines.append(f"GPU unavailable: {reason}")
    lines.append("Sample clip: Big Buck Bunny, © Blender Foundation, CC-BY 3.0.")
    return "<br>".join(lines)


def show_about(parent: QWidget, preview: Preview | None) -> None:
    """The About box over ``parent`` (modal, as About boxes are)."""
    QMessageBox.about(parent, "About NLMeans Studio", about_text(preview))
