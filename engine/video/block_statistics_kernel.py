"""Per-block statistics of a frame for the noise estimate, compiled with numba (cached on disk after the first run).

One pass over each block's pixels in float64, without the frame-sized float64 copies, gradients
and products NumPy made: on a 1080p clip those took 10 of the estimate's 35 s on two cores.
Blocks are size x size pixels from the top left corner; pixels past the last whole block are left
out. Frames are (H, W, C) float32 in full scale.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, parallel=True, nogil=True)
def gradient_structure(frame: np.ndarray, size: int) -> np.ndarray:
    """Return each block's largest eigenvalue of its summed 2 x 2 gradient covariance, channels summed.

    (rows, cols) float64, the gradients as ``np.gradient`` takes them along both axes of the whole
    frame (at least 2 x 2 pixels).
    """
    height, width, channels = frame.shape
    rows, cols = height // size, width // size
    out = np.empty((rows, cols))
    for block in numba.prange(rows * cols):
        row = block // cols
        col = block - row * cols
        xx = yy = xy = 0.0
        for y in range(row * size, (row + 1) * size):
            above, below = max(y - 1, 0), min(y + 1, height - 1)  # one-sided at the edges, as np.gradient
            for x in range(col * size, (col + 1) * size):
                left, right = max(x - 1, 0), min(x + 1, width - 1)
                for c in range(channels):
                    gx = (np.float64(frame[y, right, c]) - frame[y, left, c]) / (right - left)
                    gy = (np.float64(frame[below, x, c]) - frame[above, x, c]) / (below - above)
                    xx += gx * gx
                    yy += gy * gy
                    xy += gx * gy
        out[row, col] = (xx + yy) / 2 + np.sqrt(((xx - yy) / 2) ** 2 + xy**2)
    return out


@numba.njit(cache=True, parallel=True, nogil=True)
def plane_covariances(frame: np.ndarray, size: int, fit: np.ndarray) -> np.ndarray:
    """Return each block's (C, C) covariance of its pixels around its least-squares plane.

    ``fit``: (3, size * size) float64, the pseudo-inverse of the plane's design (1, x, y per pixel
    in row order). (rows * cols, C, C) float64, divided by size * size - 3.
    """
    height, width, channels = frame.shape
    rows, cols = height // size, width // size
    pixels = size * size
    out = np.zeros((rows * cols, channels, channels))
    for block in numba.prange(rows * cols):
        top = block // cols * size
        left = (block - block // cols * cols) * size
        planes = np.zeros((channels, 3))
        for p in range(pixels):
            y = p // size
            x = p - y * size
            for c in range(channels):
                value = np.float64(frame[top + y, left + x, c])
                for k in range(3):
                    planes[c, k] += fit[k, p] * value
        residual = np.empty(channels)
        for p in range(pixels):
            y = p // size
            x = p - y * size
            for c in range(channels):
                residual[c] = frame[top + y, left + x, c] - (planes[c, 0] + planes[c, 1] * x + planes[c, 2] * y)
            for i in range(channels):
                for j in range(channels):
                    out[block, i, j] += residual[i] * residual[j]
        out[block] /= pixels - 3
    return out


@numba.njit(cache=True, parallel=True, nogil=True)
def residual_covariances(frame: np.ndarray, size: int) -> np.ndarray:
    """Return each block's (C, C) covariance about 0 of the frame's high-pass residuals, its outer ring left out.

    The residuals are ``noise_estimate._residuals``'s (the 3 x 3 kernel [1 -2 1; -2 4 -2; 1 -2 1] / 6)
    in float32 in its order, at each pixel of a block but those on its edge (where a block's
    residuals mix its neighbours'). (rows * cols, C, C) float64, divided by (size - 2)^2.
    """
    height, width, channels = frame.shape
    rows, cols = height // size, width // size
    two, four, six = np.float32(2), np.float32(4), np.float32(6)
    out = np.zeros((rows * cols, channels, channels))
    for block in numba.prange(rows * cols):
        top = block // cols * size
        left = (block - block // cols * cols) * size
        residual = np.empty(channels)
        for y in range(top + 1, top + size - 1):
            for x in range(left + 1, left + size - 1):
                for c in range(channels):
                    f = frame[y - 1 : y + 2, x - 1 : x + 2, c]
                    r = f[0, 0] - two * f[0, 1] + f[0, 2] - two * f[1, 0] + four * f[1, 1] - two * f[1, 2]
                    residual[c] = (r + f[2, 0] - two * f[2, 1] + f[2, 2]) / six
                for i in range(channels):
                    for j in range(channels):
                        out[block, i, j] += residual[i] * residual[j]
        out[block] /= (size - 2) ** 2
    return out
