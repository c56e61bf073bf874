"""NLMeans Studio: Non-Local Means denoising of images, video and volumes, on the CPU or an NVIDIA GPU.

``from nlmeans_studio import denoise`` denoises an image or a clip held in an array in one call
(``nlmeans_studio.engine.denoise``); the engine's whole public face is ``nlmeans_studio.engine``,
the window is ``nlmeans_studio.gui``. The engine is imported when ``denoise`` is first asked for,
so that importing the window's launcher or the resources does not load it.

This folder is the package itself; pyproject.toml maps engine/, gui/ and resources/ into it, and
its links of those names point to them, so that tools that walk a package's folder rather than
import it (import-linter) find its subpackages in an editable install as in a wheel. It is not
named nlmeans_studio in the repository: Python started in the repository's root would find that
folder before an installed wheel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import denoise

__all__ = ["denoise"]


def __getattr__(name: str) -> Any:
    if name == "denoise":
        from .engine import denoise

        return denoise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
