"""The noise estimate's compiled per-block statistics against float64 NumPy written from their definitions."""

import numpy as np
import pytest
from clips import DATA

from nlmeans_studio.engine.video.block_statistics_kernel import (
    gradient_structure,
    plane_covariances,
    residual_covariances,
)


def _blocks(values: np.ndarray, size: int) -> np.ndarray:
    """(blocks, size, size, C) in row order, whole blocks from the top left corner."""
    rows, cols = values.shape[0] // size, values.shape[1] // size
    cropped = values[: rows * size, : cols * size]
    return cropped.reshape(rows, size, cols, size, -1).transpose(0, 2, 1, 3, 4).reshape(-1, size, size, values.shape[2])


def _gradient_structure(frame: np.ndarray, size: int) -> np.ndarray:
    """The largest eigenvalue of each block's summed [[gx gx, gx gy], [gx gy, gy gy]], by eigvalsh."""
    gy, gx = np.gradient(frame.astype(np.float64), axis=(0, 1))
    products = np.stack([gx * gx, gx * gy, gy * gy], axis=-1).sum(axis=2)  # channels summed
    sums = _blocks(products, size).sum(axis=(1, 2))
    tensors = np.stack([sums[:, [0, 1]], sums[:, [1, 2]]], axis=1)
    rows, cols = frame.shape[0] // size, frame.shape[1] // size
    return np.linalg.eigvalsh(tensors)[:, -1].reshape(rows, cols)


def _plane_covariances(frame: np.ndarray, size: int) -> np.ndarray:
    """Each block's residual covariance after a least-squares plane per channel (lstsq)."""
    y, x = np.mgrid[:size, :size]
    design = np.stack([np.ones(size * size), x.ravel(), y.ravel()], axis=1)
    blocks = _blocks(frame.astype(np.float64), size).reshape(-1, size * size, frame.shape[2])
    residuals = [block - design @ np.linalg.lstsq(design, block, rcond=None)[0] for block in blocks]
    return np.array([r.T @ r for r in residuals]) / (size * size - 3)


def _residual_covariances(frame: np.ndarray, size: int) -> np.ndarray:
    """Each block's covariance of the 3 x 3 high-pass [1 -2 1; -2 4 -2; 1 -2 1] / 6, its edge pixels left out."""
    kernel = np.outer([1, -2, 1], [1, -2, 1]) / 6
    f = frame.astype(np.float64)
    high = np.zeros_like(f)
    for dy in range(3):
        for dx in range(3):
            high[1:-1, 1:-1] += kernel[dy, dx] * f[dy : dy + f.shape[0] - 2, dx : dx + f.shape[1] - 2]
    inner = _blocks(high, size)[:, 1:-1, 1:-1].reshape(-1, (size - 2) ** 2, frame.shape[2])
    return np.einsum("bpi,bpj->bij", inner, inner) / (size - 2) ** 2


def _frames() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    with np.load(DATA / "bikes_frames.npz") as archive:
        real = archive["frames"][0][:70, :90].astype(np.float32) / 255
    return [real, rng.random((37, 50, 1), dtype=np.float32), rng.random((35, 33, 3), dtype=np.float32)]


@pytest.mark.parametrize("size", [16, 17, 5])
@pytest.mark.parametrize("index", [0, 1, 2], ids=["bikes", "gray", "odd-colour"])
def test_each_statistic_equals_float64_numpy(size, index) -> None:
    # The kernels sum in float64 in their own order (the residuals in float32, as the estimate's
    # NumPy did): within 1e-6 relative, the residuals' float32 rounding.
    frame = _frames()[index]
    np.testing.assert_allclose(gradient_structure(frame, size), _gradient_structure(frame, size), rtol=1e-9)
    y, x = np.mgrid[:size, :size]
    fit = np.linalg.pinv(np.stack([np.ones(size * size), x.ravel(), y.ravel()], axis=1))
    np.testing.assert_allclose(
        plane_covariances(frame, size, fit), _plane_covariances(frame, size), rtol=1e-9, atol=1e-15
    )
    np.testing.assert_allclose(
        residual_covariances(frame, size), _residual_covariances(frame, size), rtol=1e-5, atol=1e-12
    )
