"""Masks: the voxels of a volume that ``denoise_volume`` changes, and the boxes it filters to change them.

A brain or a cell is often a small part of its volume; the filter's cost grows with the voxels
filtered, so only boxes around the mask's voxels are filtered. Planes with mask voxels form
runs along z, a run ending where the next mask voxel is more than 2 (Az + Bz) + 1 planes away
(closer, the two runs' halos would overlap and be filtered twice); each run is boxed in y and x
around its mask voxels. A box is filtered with a halo of A + B voxels on each side inside the
volume (mirrored only at the volume's own ends, as in one pass), so every voxel in it sees what
the whole volume's filter would show it (engine/volume/slabs.py makes the same argument for slabs).
On the CPU the halo is context only (read, not filtered): runs are then cut into thin boxes
(MASK_BOX_PLANES in engine/volume/denoise.py), each boxed on its own, which follow a round
brain or cell closer than one box around it; on the GPU each box is filtered whole, halo
included (its slab pipeline pads whole planes).
"""

from __future__ import annotations

import numpy as np

Box = tuple[slice, slice, slice]  # (z, y, x) voxels of the volume


def checked_mask(mask: object, shape: tuple[int, int, int]) -> np.ndarray:
    """Return ``mask`` as a bool (Z, Y, X) array: True where it is not 0.

    ValueError unless it is of ``shape`` (the volume's (Z, Y, X): a mask holds no channels) and
    binary: bool, 0/1, or integers of 0 outside and one value inside (255 as Fiji's Convert to Mask
    writes).
    """
    array = np.asarray(mask)
    if array.shape != tuple(shape):
        raise ValueError(
            f"mask must have the volume's shape (z, y, x) {tuple(shape)}, got {array.shape}; a mask is one "
            "boolean or 0/1 value a voxel, without channels"
        )
    if array.dtype == bool:
        return array
    if array.dtype.kind not in "biuf":
        raise ValueError(f"mask must be boolean or hold 0 and 1, got dtype {array.dtype}")
    inside = array != 0
    values = array[inside]
    kept = values[0] if values.size and array.dtype.kind in "biu" else 1  # integers: any one value inside
    stray = values[values != kept]
    if stray.size:
        raise ValueError(
            f"mask must be boolean, 0/1, or integers of 0 outside and one value inside (Fiji's 0/255), got "
            f"{stray.size} voxels of other values such as {stray.flat[0].item()!r}; make it binary first (Fiji: "
            "Process > Binary > Convert to Mask; NumPy: mask > threshold)"
        )
    return inside


def mask_boxes(inside: np.ndarray, pad: tuple[int, int, int], thickest: int | None = None) -> list[Box]:
    """Return the boxes that hold every True voxel of ``inside``, in z order (module docstring).

    ``pad``: A + B per axis (z, y, x), voxels; an empty mask has no box. ``thickest``: runs are
    cut into boxes of at most this many planes, each boxed in y and x on its own, which follow a
    round object closer (for boxes filtered with their surroundings as context, which cost only
    their own voxels).
    """
    planes = np.flatnonzero(inside.any(axis=(1, 2)))
    if planes.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(planes) > 2 * pad[0] + 1) + 1
    boxes = []
    for run in np.split(planes, breaks):
        step = thickest or run[-1] + 1 - run[0]
        for first in range(run[0], run[-1] + 1, step):
            part = inside[first : min(first + step, run[-1] + 1)]
            rows = np.flatnonzero(part.any(axis=(0, 2)))
            if rows.size == 0:  # planes between two of the mask's, none of them in it
                continue
            columns = np.flatnonzero(part.any(axis=(0, 1)))
            stored = np.flatnonzero(part.any(axis=(1, 2))) + first
            ends = [(stored[0], stored[-1]), (rows[0], rows[-1]), (columns[0], columns[-1])]
            boxes.append(tuple(slice(int(start), int(last) + 1) for start, last in ends))
    return boxes


def with_halo(box: Box, pad: tuple[int, int, int], shape: tuple[int, int, int]) -> Box:
    """Return ``box`` grown by ``pad`` voxels on each side, inside a volume of ``shape`` (z, y, x)."""
    return tuple(
        slice(max(0, part.start - width), min(size, part.stop + width))
        for part, width, size in zip(box, pad, shape, strict=True)
    )
