"""The fused kernel's tile, shared-memory layout and grid, planned in Python (see kernels/nlm.cu).

Pure arithmetic with no GPU: the kernel is compiled for the layout chosen here (its sizes are
template arguments), so the plan and the kernel cannot disagree, and the plan can be tested on
any machine.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ...frames import integer_scale
from ..params import NLMParams

FUSED_THREADS, PASS1_COLUMNS = 256, 64  # as in nlm.cu
SUBGROUPS = FUSED_THREADS // PASS1_COLUMNS  # offset groups of pass 1 at once
TILE_HEIGHTS = (32, 16, 8)  # tried in turn until the shared memory fits
RING_REGISTERS = 40  # most registers pass 1 may hold in running sums: K (2B + 1)
MOST_PARTS = 4  # of a split tile's rounds (A >= 2 has at least 3 rounds; a part may be empty)
PIECE_COST = 0.05  # a piece's own cost (its region loads, partial sums), in whole tiles: an estimate


@dataclass(frozen=True)
class FusedLayout:
    """The fused kernel's tile and shared-memory layout for one (B, A, C, transform); see nlm.cu."""

    group: int  # K: offsets of one qx and consecutive qy per pass-1 group
    tile_height: int
    tile_width: int
    z_stride: int  # row strides, in floats, of the candidate Z and Y regions and the vertical sums
    y_stride: int
    v_stride: int
    shared_bytes: int

    @property
    def template_arguments(self) -> str:
        """The layout as the fused kernel's template arguments: group, tile height and width, strides."""
        return f"{self.group}, {self.tile_height}, {self.tile_width}, {self.z_stride}, {self.y_stride}, {self.v_stride}"

    def partial_floats(self, channels: int) -> int:
        """Floats one block of a split tile may write.

        C numerators, the denominator, the largest weight and, for relative exponential weights, the
        shift, per pixel.
        """
        return self.tile_width * self.tile_height * (channels + 3)


def _bank_spread_stride(columns: int, segments: int, segment: int) -> int:
    """Return a row stride >= ``columns`` for which a pass-2 warp's lanes hit fewest banks more than once.

    The lanes are rows x segments of ``segment`` pixels; they hit as few shared-memory banks more
    than once as possible.
    """
    rows = max(1, 32 // segments)

    def worst_conflict(stride: int) -> int:
        banks = [(row * stride + lane * segment) % 32 for row in range(rows) for lane in range(min(32, segments))]
        return max(banks.count(bank) for bank in set(banks))

    return min(range(columns, columns + 32), key=worst_conflict)


def _group_sizes(patch_radius: int, search_radius: int, planes: int) -> list[int]:
    """Group sizes K, cheapest first: a group costs 2 shared loads per plane of Z and K stores per step of pass 1."""
    largest = min(4, max(1, RING_REGISTERS // (2 * patch_radius + 1)))
    span = 2 * search_radius + 1
    return sorted(range(1, largest + 1), key=lambda k: (-(-span // k) * (2 * planes + k), -k))


@functools.cache
def fused_layout(
    patch_radius: int, search_radius: int, channels: int, transformed: bool, shared_limit: int, packed: bool = False
) -> FusedLayout:
    """Return the layout of the tallest tile, and then the cheapest group, that fits in shared memory.

    Its shared memory fits ``shared_limit`` bytes.

    ``transformed``: Z is not Y itself (a color transform, or a guide clip's frames), so that
    the candidates Y have a region of their own. ``packed``: distances on 8-bit frames' packed
    words (one plane of Z instead of C, two buffers of it so that the next frame's arrives
    meanwhile, and candidates Y in a region of their own, as with a transform).
    """
    radius, search = patch_radius, search_radius
    planes = 1 if packed else channels  # of the Z regions
    own_y = transformed or packed
    for tile_height in TILE_HEIGHTS:
        segments = FUSED_THREADS // tile_height
        segment = (PASS1_COLUMNS - 2 * radius) // segments
        tile_width = segment * segments
        pass1_columns = tile_width + 2 * radius
        for group in _group_sizes(radius, search, planes):
            extra = -(-(2 * search + 1) // group) * group - (2 * search + 1)
            z_columns = tile_width + 2 * (search + radius)
            z_stride = z_columns if own_y else _bank_spread_stride(z_columns, segments, segment)
            y_stride = _bank_spread_stride(tile_width + 2 * search, segments, segment) if own_y else 0
            v_stride = _bank_spread_stride(pass1_columns, segments, segment)
            floats = (
                planes * (tile_height + 2 * radius) * pass1_columns
                + (2 if packed else 1) * planes * (tile_height + 2 * (search + radius) + extra) * z_stride
                + channels * (tile_height + 2 * search) * y_stride
                + SUBGROUPS * group * tile_height * v_stride
            )
            if 4 * floats <= shared_limit:
                return FusedLayout(group, tile_height, tile_width, z_stride, y_stride, v_stride, 4 * floats)
    raise ValueError(
        f"no tile of the fused kernel fits in {shared_limit} bytes of shared memory (A = {search}, B = {radius})"
    )


def split_tiles(tiles: int, frames: int, concurrent: int) -> tuple[int, int]:
    """How many of the last tiles the fused kernel splits into pieces, and into how many parts.

    See nlm.cu. The parts are of its rounds, each frame of them going into that many: (split,
    parts), (0, 1) for none.

    ``concurrent`` blocks run at once, so the grid's last wave holds tiles % concurrent of them,
    each a whole tile while the other multiprocessors wait. As frames x parts pieces, they take
    as many waves as the pieces need, each a piece's share of a tile plus PIECE_COST; the
    fastest choice wins if it beats one whole tile.
    """
    last_wave = tiles % concurrent
    best_time, best = 1.0, (0, 1)
    if last_wave == 0:
        return best
    for parts in range(1, MOST_PARTS + 1):
        pieces = frames * parts
        time = -(-last_wave * pieces // concurrent) * (1 / pieces + PIECE_COST)
        if pieces > 1 and time < best_time:
            best_time, best = time, (last_wave, parts)
    return best


@dataclass(frozen=True)
class FusedGrid:
    """The fused kernel's grid (see nlm.cu).

    Tiles numbered row by row, ``tiles_x`` to a row; the first ``whole_tiles`` run one block each,
    the last ``split`` one block per piece: a frame and one of ``parts`` parts of its rounds.
    """

    tiles_x: int
    whole_tiles: int
    split: int
    frames: int
    parts: int

    @property
    def pieces(self) -> int:
        """Blocks per split tile."""
        return self.frames * self.parts

    @property
    def blocks(self) -> int:
        """Blocks in the grid: one per whole tile and ``pieces`` per split one."""
        return self.whole_tiles + self.split * self.pieces


def fused_grid(layout: FusedLayout, height: int, width: int, frames: int, concurrent: int) -> FusedGrid:
    """Return the grid for (height, width) frames and a window of ``frames``, ``concurrent`` blocks at once."""
    tiles_x = -(-width // layout.tile_width)
    tiles = tiles_x * -(-height // layout.tile_height)
    split, parts = split_tiles(tiles, frames, concurrent)
    return FusedGrid(tiles_x, tiles - split, split, frames, parts)


def patch_scale(params: NLMParams, channels: int, packed: bool) -> float:
    """Return the fused kernel's ``scale`` of patch sums.

    Packed distances are in byte units, 255^2 times those of frames scaled to [0, 1].
    """
    return params.patch_sum_scale(channels) * (integer_scale(np.uint8) ** 2 if packed else 1.0)
