"""The bundled sample clip and the synthetic noisy frames the benchmarks and tests use."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..resources import SAMPLE_CLIP
from .synthetic_noise import add_noise


def resize_bilinear(frames: np.ndarray, height: int, width: int) -> np.ndarray:
    """Resize (T, H, W, C) frames to (T, height, width, C) float32 by bilinear interpolation.

    Pixel centres are aligned (as OpenCV's INTER_LINEAR); values keep their scale.
    """
    frames = np.asarray(frames, dtype=np.float32)
    source_height, source_width = frames.shape[1:3]

    def axis(target: int, source: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        position = np.clip((np.arange(target) + 0.5) * source / target - 0.5, 0, source - 1)
        low = np.floor(position).astype(np.intp)
        high = np.minimum(low + 1, source - 1)
        return low, high, (position - low).astype(np.float32)

    top, bottom, row_fraction = axis(height, source_height)
    left, right, col_fraction = axis(width, source_width)
    rows = frames[:, top] * (1 - row_fraction)[:, None, None] + frames[:, bottom] * row_fraction[:, None, None]
    # Fancy indexing leaves the columns outermost in memory: return C order, as frames are used.
    return np.ascontiguousarray(
        rows[:, :, left] * (1 - col_fraction)[:, None] + rows[:, :, right] * col_fraction[:, None]
    )


def noisy_frames(clean: np.ndarray, sigma: float, seed: int) -> np.ndarray:
    """``clean`` float frames in [0, 1] plus white Gaussian noise of ``sigma`` 8-bit levels (float32).

    Independent between channels: ``noise.add_noise`` with a diagonal covariance.
    """
    channels = np.shape(clean)[-1]
    return add_noise(clean, np.eye(channels) * (sigma / 255) ** 2, seed)


def load_clean_frames(source: str | Path | None, count: int, height: int, width: int) -> np.ndarray:
    """``count`` clean float32 RGB frames in [0, 1] at height x width.

    ``source`` is a video file (decoded with PyAV), a .npy file of uint8 (T, H, W, 3) frames
    (for machines without PyAV), or None for the bundled sample clip.
    """
    path = Path(source) if source is not None else SAMPLE_CLIP
    if path.suffix == ".npy":
        decoded = _npy_frames(path)[:count]
        if len(decoded) < count:
            raise ValueError(f"{path} holds {len(decoded)} frames, fewer than the {count} asked for")
    else:
        from ..media.reader import read_frames

        decoded = read_frames(path, count)
    frames = decoded.astype(np.float32) / 255
    if frames.shape[1:3] != (height, width):
        frames = resize_bilinear(frames, height, width)
    return frames


def _npy_frames(path: Path) -> np.ndarray:
    """Return the uint8 (T, H, W, 3) frames of a .npy file, mapped, not read.

    Refused with what it holds instead (numpy's broadcasting errors, or "Unable to allocate
    3.55 PiB" for a damaged header).
    """
    wanted = "bench --input takes a .npy of uint8 RGB frames (T, H, W, 3)"
    try:
        frames = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as error:  # a header larger than the file, pickled objects, not .npy
        raise ValueError(f"{path}: not a .npy file that can be read ({error}); {wanted}") from error
    if not isinstance(frames, np.ndarray):
        frames.close()
        raise ValueError(f"{path}: a NumPy .npz archive (several arrays), named .npy; {wanted}")
    if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[3] != 3 or not frames.size:
        raise ValueError(f"{path}: holds {frames.dtype} of shape {frames.shape}; {wanted}")
    return frames
