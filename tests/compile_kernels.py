"""Fill numba's on-disk cache with one group of the engine's CPU kernels: ``python compile_kernels.py GROUP``.

The test controller (conftest.py) runs every group at once, each in a process of its own, before
pytest-xdist's workers start: in a fresh clone each worker otherwise compiled each group itself
when a test first needed it (15-32 s of one core a group). The calls are the smallest that make
numba build every signature the tests use: RGB and Y'CbCr samples of 8 and 16 bits, planes cut
from a padded frame (non-contiguous) and whole.
"""

from __future__ import annotations

import sys

import numpy as np


def _filter() -> None:
    from nlmeans_studio.engine import compile_cpu_filter

    compile_cpu_filter()


def _volume() -> None:
    from nlmeans_studio.engine import denoise_volume

    denoise_volume(np.zeros((8, 8, 8), np.float32), h=1.0, search_radius=1, backend="cpu")


def _estimate() -> None:
    from nlmeans_studio.engine import estimate_noise

    estimate_noise(np.random.default_rng(0).random((4, 96, 96, 3), dtype=np.float32))


def _yuv() -> None:
    from nlmeans_studio.engine.media.yuv import planes_to_rgb, rgb_to_planes, yuv_layout

    for pixel_format in ("yuv420p", "yuv420p10le"):
        layout = yuv_layout(pixel_format, {}, 16)
        for depth in (np.uint8, np.uint16):
            planes = rgb_to_planes(np.zeros((16, 16, 3), depth), layout)
            planes_to_rgb(planes, layout, np.dtype(depth))
        padded = [np.pad(plane, ((0, 0), (0, 8))) for plane in planes]  # a decoded frame's rows
        planes_to_rgb([plane[:, :-8] for plane in padded], layout, np.dtype(layout.sample_dtype))


GROUPS = {  # the longest first
    "estimate": _estimate,
    "filter": _filter,
    "yuv": _yuv,
    "volume": _volume,
}

if __name__ == "__main__":
    GROUPS[sys.argv[1]]()
