"""The block search's inner loop, compiled with numba (cached on disk after the first run).

Each window is compared with its region at every shift without the (N, h, w, C) array of squared
differences that NumPy makes per shift: the noise estimate's motion search (``motion_noise``) tries
289 coarse and 50 fine shifts for 600 blocks a frame pair, and spent most of its 18 s on a 10 s
720 x 486 clip writing and reading those arrays.
"""

from __future__ import annotations

import numba
import numpy as np

from ..cpu.fastmath import FASTMATH


@numba.njit(cache=True, parallel=True, nogil=True, fastmath=FASTMATH)
def tile_mean_squares(
    template: np.ndarray, region: np.ndarray, radius: int, tile_height: int, tile_width: int
) -> np.ndarray:
    """Return the mean squared difference of each template and its region, per shift and per tile.

    ``template`` (N, h, w, C) and ``region`` (N, h + 2 r, w + 2 r, C), float32; tiles of
    tile_height x tile_width pixels from the top left corner (pixels past the last whole tile are
    left out). Returns (N, 2 r + 1, 2 r + 1, tiles) float64: at [n, dy, dx] the template against
    the region's window at (dy, dx), tiles in row order. A row of a tile is summed in float32 in
    order (``cpu.fastmath``: the same sums on every run), the rows in float64.
    """
    count, height, width, channels = template.shape
    rows, cols = height // tile_height, width // tile_width
    span = 2 * radius + 1
    run = tile_width * channels  # a tile's row, contiguous
    template_rows = template.reshape(count, height, width * channels)
    region_rows = region.reshape(count, height + 2 * radius, (width + 2 * radius) * channels)
    out = np.zeros((count, span, span, rows * cols))
    scale = 1.0 / (tile_height * tile_width * channels)
    for n in numba.prange(count):
        for dy in range(span):
            for dx in range(span):
                for y in range(rows * tile_height):
                    first_tile = (y // tile_height) * cols
                    template_row = template_rows[n, y]
                    region_row = region_rows[n, y + dy, dx * channels :]
                    for column in range(cols):
                        template_run = template_row[column * run : (column + 1) * run]
                        region_run = region_row[column * run : (column + 1) * run]
                        total = np.float32(0.0)
                        for k in range(run):
                            difference = template_run[k] - region_run[k]
                            total += difference * difference
                        out[n, dy, dx, first_tile + column] += total
        out[n] *= scale
    return out
