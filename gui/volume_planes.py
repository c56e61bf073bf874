"""How the volume window draws a plane: which array axis runs down the picture, which across,
and which way each runs.

A NIfTI file says where each axis points in the body (``VolumeFile.directions``), so its planes
are drawn as radiologists read them (the convention of FSLeyes, ITK-SNAP and 3D Slicer):
superior up, else anterior up; the patient's right on the screen's left (radiological); in a
sagittal plane the face to the left. Other volumes (TIFF, .npy) say nothing of the body: a z
plane is drawn as an image, row 0 at the top, and planes along y and x with z growing upwards.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ARRAY_AXES = ("z", "y", "x")  # the axes of a (Z, Y, X) volume, 0, 1, 2
PLANE_NAMES = {"S": "axial", "I": "axial", "A": "coronal", "P": "coronal", "R": "sagittal", "L": "sagittal"}
WORDS = {
    "S": "superior",
    "I": "inferior",
    "A": "anterior",
    "P": "posterior",
    "R": "the patient's right",
    "L": "the patient's left",
}
OPPOSITE = {"S": "I", "I": "S", "A": "P", "P": "A", "R": "L", "L": "R"}
UP = (("SI", "S"), ("AP", "A"))  # the first of these axes in the plane runs down the picture, this end up
LEFT = {"R": "R", "L": "R", "A": "A", "P": "A"}  # the end of the axis across drawn on the left


@dataclass(frozen=True)
class PlaneLayout:
    """The planes normal to ``axis`` drawn with array axis ``rows`` down the picture and ``columns``
    across, each reversed where ``flip_rows`` / ``flip_columns``; ``edges`` names the body's
    directions at the top, bottom, left and right edges ("" each where the file does not say)."""

    axis: int
    rows: int
    columns: int
    flip_rows: bool
    flip_columns: bool
    name: str
    edges: tuple[str, str, str, str] = ("", "", "", "")

    def shown(self, plane: np.ndarray) -> np.ndarray:
        """A plane of the volume (the two other axes in array order, then any channels) as drawn."""
        if self.rows > self.columns:
            plane = np.swapaxes(plane, 0, 1)
        return plane[:: -1 if self.flip_rows else 1, :: -1 if self.flip_columns else 1]

    def of(self, volume: np.ndarray, index: int) -> np.ndarray:
        """Plane ``index`` normal to ``axis`` of a (Z, Y, X[, C]) volume, as drawn."""
        return self.shown(np.take(volume, index, axis=self.axis))

    def region(
        self, box: tuple[int, int, int, int], index: int, shape: tuple[int, ...], depth: int
    ) -> tuple[tuple[int, int], ...]:
        """The voxel ranges ((z0, z1), (y0, y1), (x0, x1)), ends excluded, under a box (x, y, width,
        height) drawn on plane ``index``, and ``depth`` planes either side of it inside the volume."""
        x, y, width, height = box
        ranges = [(0, 0)] * 3
        ranges[self.axis] = (max(0, index - depth), min(shape[self.axis], index + depth + 1))
        ranges[self.rows] = _as_stored(y, height, shape[self.rows], self.flip_rows)
        ranges[self.columns] = _as_stored(x, width, shape[self.columns], self.flip_columns)
        return tuple(ranges)

    def pixel_aspect(self, spacing: tuple[float, float, float]) -> float:
        """Width over height of a drawn voxel from the (z, y, x) voxel size (1 where one is not
        positive)."""
        width, height = spacing[self.columns], spacing[self.rows]
        return width / height if width > 0 and height > 0 else 1.0

    @property
    def description(self) -> str:
        """The directions at the edges in words, e.g. "anterior up, the patient's right on the left"."""
        top, _, left, _ = self.edges
        return f"{WORDS[top]} up, {WORDS[left]} on the left" if top else ""


def _as_stored(start: int, length: int, size: int, flipped: bool) -> tuple[int, int]:
    """The index range of ``length`` drawn rows (or columns) from ``start`` along an axis of ``size``."""
    return (size - start - length, size - start) if flipped else (start, start + length)


def plane_layout(axis: int, directions: tuple[str, str, str] | None) -> PlaneLayout:
    """How the planes normal to array ``axis`` (0, 1, 2 of (Z, Y, X)) are drawn, from the direction
    each array axis's index grows towards (``VolumeFile.directions``; None: not known)."""
    first, second = (a for a in range(3) if a != axis)
    if directions is None:
        return PlaneLayout(axis, first, second, flip_rows=axis != 0, flip_columns=False, name=ARRAY_AXES[axis])
    rows, top = next((a, top) for pair, top in UP for a in (first, second) if directions[a] in pair)
    columns = second if rows == first else first
    left = LEFT[directions[columns]]
    return PlaneLayout(
        axis,
        rows,
        columns,
        flip_rows=directions[rows] == top,  # the index grows upwards: its last row is drawn first
        flip_columns=directions[columns] == left,
        name=f"{ARRAY_AXES[axis]} ({PLANE_NAMES[directions[axis]]})",
        edges=(top, OPPOSITE[top], left, OPPOSITE[left]),
    )
