"""Video decoding through PyAV (imported lazily: the engine runs without it)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def read_frames(path: str | Path, count: int | None = None, *, start: int = 0) -> np.ndarray:
    """Decode frames ``start`` .. ``start + count - 1`` of a video file as RGB uint8 (T, H, W, 3).

    Raises
    ------
    ImportError
        PyAV is not installed.
    FileNotFoundError
        No file at ``path``.
    ValueError
        The file holds no video stream, or fewer frames than asked for.
    """
    import av

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no video file at {path}")
    frames = []
    with av.open(str(path)) as container:
        if not container.streams.video:
            raise ValueError(f"{path} holds no video stream")
        for index, frame in enumerate(container.decode(video=0)):
            if index < start:
                continue
            frames.append(frame.to_ndarray(format="rgb24"))
            if count is not None and len(frames) == count:
                break
    if not frames or (count is not None and len(frames) < count):
        raise ValueError(f"{path} has {start + len(frames)} frames, fewer than the {start + (count or 1)} asked for")
    return np.stack(frames)
