"""The GPU backend on CuPy: frame upload, the fused kernel of ``kernels/nlm.cu`` and the pass
cascade of ``kernels/cascade.cu``.

A frame on the GPU is a ``DeviceFrame``: planar float32, plus its bytes packed one word per
pixel when it came as 8-bit. With those, and no color transform, the fused kernel measures
distances on the packed bytes, exactly in integers and with fewer instructions.

CuPy is imported by the caller (``backend.cupy_module``) and handed in, so importing this
module costs nothing where there is no GPU. Kernels compile once per (device, B, A, C,
weighting, centre weight, output type), with those values in the kernel's name, and are kept.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import cascade
from .backend import GpuOutOfMemoryError
from .frames import check_frame_shape, checked_frame, integer_scale
from .params import NLMParams

KERNELS = Path(__file__).with_name("kernels")
FUSED_THREADS, PASS1_COLUMNS = 256, 64  # as in nlm.cu
SUBGROUPS = FUSED_THREADS // PASS1_COLUMNS  # offset groups of pass 1 at once
TILE_HEIGHTS = (32, 16, 8)  # tried in turn until the shared memory fits
RING_REGISTERS = 40  # most registers pass 1 may hold in running sums: K (2B + 1)
MOST_PARTS = 4  # of a split tile's rounds (A >= 2 has at least 3 rounds; a part may be empty)
PIECE_COST = 0.05  # a piece's own cost (its region loads, partial sums), in whole tiles: an estimate
BLOCK = 256  # threads per block of the element-wise kernels
STAGED_FRAMES = 4  # pinned input buffers of a pipeline: frames read and staged ahead of the GPU
OUTPUT_BUFFERS = 3  # device and pinned output buffers of a pipeline: outputs in flight
CUDA_TYPES = {np.dtype(np.uint8): "unsigned char", np.dtype(np.uint16): "unsigned short", np.dtype(np.float32): "float"}


@functools.cache
def _module(cupy: Any, device: int, folder: Path, source: str, name_expressions: tuple[str, ...]) -> Any:
    """Compile ``folder/source`` for these template instances on ``device`` (cached per process)."""
    code = (folder / source).read_text()
    options = ("-std=c++17", f"-I{folder}")  # for common.cuh
    return cupy.RawModule(code=code, options=options, name_expressions=name_expressions)


def _function(cupy: Any, name_expression: str, source: str = "nlm.cu") -> Any:
    """A kernel from the sources in KERNELS (scripts/kernel_ab.py points it at other versions)."""
    module = _module(cupy, cupy.cuda.Device().id, KERNELS, source, (name_expression,))
    return module.get_function(name_expression)


@dataclass(frozen=True)
class DeviceFrame:
    """A frame on the GPU: ``planar`` float32 (C, H, W) in [0, 1], and for 8-bit frames
    ``packed``, (H, W) uint32 words holding each pixel's C bytes (channel c in byte c)."""

    planar: Any
    packed: Any = None

    @property
    def shape(self) -> tuple[int, int, int]:
        """(C, H, W)."""
        return self.planar.shape


def empty_device_frame(cupy: Any, shape: tuple[int, int, int], dtype: Any) -> DeviceFrame:
    """An empty DeviceFrame for (H, W, C) host frames of ``dtype``: with packed words for 8-bit ones."""
    height, width, channels = shape
    packed = cupy.empty((height, width), dtype=cupy.uint32) if np.dtype(dtype) == np.uint8 else None
    return DeviceFrame(cupy.empty((channels, height, width), dtype=cupy.float32), packed)


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
        return f"{self.group}, {self.tile_height}, {self.tile_width}, {self.z_stride}, {self.y_stride}, {self.v_stride}"

    def partial_floats(self, channels: int) -> int:
        """Floats one block of a split tile may write: C numerators, the denominator, the largest
        weight and, for relative exponential weights, the shift, per pixel."""
        return self.tile_width * self.tile_height * (channels + 3)


def _bank_spread_stride(columns: int, segments: int, segment: int) -> int:
    """A row stride >= ``columns`` for which a pass-2 warp's lanes (rows x segments of ``segment``
    pixels) hit as few shared-memory banks more than once as possible."""
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
    """The layout of the tallest tile, and then the cheapest group, whose shared memory fits ``shared_limit`` bytes.

    ``packed``: distances on 8-bit frames' packed words (one plane of Z instead of C, two
    buffers of it so that the next frame's arrives meanwhile, and candidates Y in a region of
    their own, as with a transform).
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
    """How many of the last tiles the fused kernel splits into pieces (see nlm.cu), and into how
    many parts of its rounds each frame of them goes: (split, parts), (0, 1) for none.

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
    """The fused kernel's grid (see nlm.cu): tiles numbered row by row, ``tiles_x`` to a row; the
    first ``whole_tiles`` run one block each, the last ``split`` one block per piece: a frame
    and one of ``parts`` parts of its rounds."""

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
        return self.whole_tiles + self.split * self.pieces


def fused_grid(layout: FusedLayout, height: int, width: int, frames: int, concurrent: int) -> FusedGrid:
    """The grid for (height, width) frames and a window of ``frames``, ``concurrent`` blocks at once."""
    tiles_x = -(-width // layout.tile_width)
    tiles = tiles_x * -(-height // layout.tile_height)
    split, parts = split_tiles(tiles, frames, concurrent)
    return FusedGrid(tiles_x, tiles - split, split, frames, parts)


def patch_scale(params: NLMParams, channels: int, packed: bool) -> float:
    """The fused kernel's ``scale`` of patch sums: packed distances are in byte units, 255^2 times
    those of frames scaled to [0, 1]."""
    return params.patch_sum_scale(channels) * (integer_scale(np.uint8) ** 2 if packed else 1.0)


@functools.cache
def _device_attributes(cupy: Any, device: int) -> tuple[int, int, int]:
    """Shared memory per block (opt-in) and per multiprocessor, in bytes, and the multiprocessors."""
    attributes = cupy.cuda.Device(device).attributes
    return (
        attributes["MaxSharedMemoryPerBlockOptin"],
        attributes["MaxSharedMemoryPerMultiprocessor"],
        attributes["MultiProcessorCount"],
    )


class GpuFrames:
    """Uploads host frames and filters windows of device frames with the fused kernel."""

    def __init__(self, cupy: Any) -> None:
        self.cupy = cupy
        self._pointer_arrays: dict[tuple[int, ...], Any] = {}
        self._transform_arrays: dict[bytes, Any] = {}
        self._split_buffers: tuple[Any, Any] | None = None  # (partials, arrivals)

    @contextlib.contextmanager
    def out_of_memory_as_error(self, shape: tuple[int, ...]) -> Iterator[None]:
        """Turn CuPy's out-of-memory error into GpuOutOfMemoryError with advice."""
        try:
            yield
        except self.cupy.cuda.memory.OutOfMemoryError as error:
            raise GpuOutOfMemoryError(
                f"the GPU ran out of memory for frames of shape {shape} ({error}); close other GPU programs, "
                "use a smaller temporal window or smaller frames, or switch to the CPU backend"
            ) from error

    def upload(self, frame: np.ndarray) -> DeviceFrame:
        """A checked (H, W, C) uint8 / uint16 / float32 host frame -> a DeviceFrame.

        The frame crosses the bus in its own dtype and is converted on the GPU.
        """
        with self.out_of_memory_as_error(frame.shape):
            device_frame = empty_device_frame(self.cupy, frame.shape, frame.dtype)
            self.convert(self.cupy.asarray(frame), device_frame)
            return device_frame

    def convert(self, frame: Any, out: DeviceFrame) -> None:
        """An interleaved (H, W, C) device frame -> ``out``: planar float32, integers scaled to [0, 1],
        and the packed words if ``out`` has them."""
        height, width, channels = frame.shape
        kernel = _function(self.cupy, f"frame_to_planar<{CUDA_TYPES[np.dtype(frame.dtype)]}>")
        pixels = height * width
        packed = out.packed if out.packed is not None else np.uint64(0)
        kernel(
            ((pixels + BLOCK - 1) // BLOCK,),
            (BLOCK,),
            (frame, out.planar, packed, np.int32(pixels), np.int32(channels), np.float32(integer_scale(frame.dtype))),
        )

    def _pointers(self, arrays: list[Any]) -> Any:
        """The arrays' device addresses as a device array, kept per window (a ring repeats them)."""
        key = tuple(array.data.ptr for array in arrays)
        pointers = self._pointer_arrays.get(key)
        if pointers is None:
            if len(self._pointer_arrays) > 256:
                self._pointer_arrays.clear()
            pointers = self._pointer_arrays[key] = self.cupy.asarray(np.array(key, dtype=np.uint64))
        return pointers

    def transform(self, matrix: np.ndarray) -> Any:
        """The color transform as float32 on the GPU, kept while it stays the same."""
        key = matrix.tobytes()
        if key not in self._transform_arrays:
            self._transform_arrays = {key: self.cupy.asarray(matrix, dtype=self.cupy.float32)}
        return self._transform_arrays[key]

    def _split_buffers_for(self, floats: int, counters: int) -> tuple[Any, Any]:
        """Partial sums and arrival counters for split tiles, kept from launch to launch: the kernel
        sets the counters back to zero, and launches on one stream never overlap."""
        buffers = self._split_buffers
        if buffers is None or buffers[0].size < floats or buffers[1].size < counters:
            buffers = self._split_buffers = (
                self.cupy.empty(floats, dtype=self.cupy.float32),
                self.cupy.zeros(counters, dtype=self.cupy.int32),
            )
        return buffers

    def filter_window(
        self,
        frames: list[DeviceFrame],
        center: int,
        params: NLMParams,
        out_dtype: Any = np.float32,
        *,
        out: Any = None,
    ) -> Any:
        """Denoise ``frames[center]`` searching ``frames``.

        Returns the output as interleaved (H, W, C) on the GPU, of ``out_dtype`` (or ``out``'s
        dtype): float32, or uint8 / uint16 scaled to their full range, rounded and clamped.
        """
        cupy = self.cupy
        channels, height, width = frames[center].shape
        out_dtype = np.dtype(out.dtype if out is not None else out_dtype)
        radius, search = params.patch_radius, params.search_radius
        transformed = params.color_transform is not None
        packed = not transformed and all(frame.packed is not None for frame in frames)
        per_block, per_multiprocessor, multiprocessors = _device_attributes(cupy, cupy.cuda.Device().id)
        layout = fused_layout(radius, search, channels, transformed, per_block, packed)
        min_blocks = 2 if 2 * layout.shared_bytes <= per_multiprocessor else 1
        options = (transformed, packed, params.weighting == "exponential", params.center_weight == "max")
        name = (
            f"nlm_fused<{radius}, {search}, {channels}, {layout.template_arguments}, "
            f"{', '.join(str(option).lower() for option in options)}, {CUDA_TYPES[out_dtype]}, {min_blocks}>"
        )
        kernel = _function(cupy, name)
        kernel.max_dynamic_shared_size_bytes = layout.shared_bytes
        with self.out_of_memory_as_error(frames[center].shape):
            transform = np.uint64(0) if params.color_transform is None else self.transform(params.color_transform)
            if out is None:
                out = cupy.empty((height, width, channels), dtype=out_dtype)
            grid = fused_grid(layout, height, width, len(frames), min_blocks * multiprocessors)
            partials, arrivals = np.uint64(0), np.uint64(0)
            if grid.split:
                partials, arrivals = self._split_buffers_for(
                    grid.split * grid.pieces * layout.partial_floats(channels), grid.split
                )
            kernel(
                (grid.blocks,),
                (FUSED_THREADS,),
                (
                    self._pointers([frame.planar for frame in frames]),
                    self._pointers([frame.packed for frame in frames]) if packed else np.uint64(0),
                    np.int32(len(frames)),
                    np.int32(center),
                    np.int32(height),
                    np.int32(width),
                    transform,
                    np.float32(patch_scale(params, channels, packed)),
                    out,
                    np.float32(1.0 / integer_scale(out_dtype)),
                    np.int32(grid.tiles_x),
                    np.int32(grid.whole_tiles),
                    np.int32(grid.parts),
                    partials,
                    arrivals,
                ),
                shared_mem=layout.shared_bytes,
            )
        return out


class GpuCascade:
    """The paper's pass cascade (DESIGN.md §2) on the GPU: one kernel of ``kernels/cascade.cu``
    per pass and search offset, intermediates in device memory. The baseline the fused kernel is
    measured against, computing the same filter; ``__call__`` matches ``GpuFrames.filter_window``
    for float32 output.
    """

    BLOCK_2D = (32, 8)

    def __init__(self, cupy: Any) -> None:
        self.cupy = cupy
        self.frames = GpuFrames(cupy)

    def _kernel(self, name: str) -> Any:
        return _function(self.cupy, name, "cascade.cu")

    def _launch(self, kernel: Any, shape: tuple[int, int], *arguments: Any) -> None:
        """Run ``kernel`` over a (rows, cols) grid of threads, one per element."""
        rows, cols = shape
        block_x, block_y = self.BLOCK_2D
        grid = ((cols + block_x - 1) // block_x, (rows + block_y - 1) // block_y)
        kernel(grid, self.BLOCK_2D, arguments)

    def _distance_space(self, frame: Any, params: NLMParams) -> Any:
        """Z = G Y of a planar frame (the frame itself when G is None)."""
        if params.color_transform is None:
            return frame
        channels, height, width = frame.shape
        z = self.cupy.empty_like(frame)
        pixels = height * width
        self._kernel(f"transform_colors<{channels}>")(
            ((pixels + BLOCK - 1) // BLOCK,),
            (BLOCK,),
            (frame, self.frames.transform(params.color_transform), z, np.int32(pixels)),
        )
        return z

    def __call__(self, window: list[DeviceFrame], center: int, params: NLMParams) -> Any:
        """Denoise ``window[center]`` searching ``window``.

        Returns the output as interleaved (H, W, C) float32 on the GPU.
        """
        cupy = self.cupy
        frames = [frame.planar for frame in window]
        channels, height, width = frames[center].shape
        radius, search = params.patch_radius, params.search_radius
        margin = search + radius  # of the squared differences; the weights have A
        with self.frames.out_of_memory_as_error(frames[center].shape):
            z = [self._distance_space(frame, params) for frame in frames]
            difference = cupy.empty((height + 2 * margin, width + 2 * margin), cupy.float32)
            horizontal = cupy.empty((height + 2 * margin, width + 2 * search), cupy.float32)
            weights = cupy.empty((height + 2 * search, width + 2 * search), cupy.float32)
            numerator = cupy.zeros((channels, height, width), cupy.float32)
            denominator = cupy.zeros((height, width), cupy.float32)
            relative = cascade.relative_weights(params)
            # The largest weight, or for relative weights the smallest u so far (none: the largest float).
            largest = cupy.full((height, width), np.finfo(np.float32).max if relative else 0, cupy.float32)
            output = cupy.empty((height, width, channels), cupy.float32)
        size = (np.int32(height), np.int32(width))
        scale = np.float32(params.patch_sum_scale(channels))
        # The passes' kernels, looked up once per window rather than once per launch.
        difference_pass = self._kernel(f"squared_difference<{channels}>")
        horizontal_pass = self._kernel(f"horizontal_box_sum<{radius}>")
        vertical_pass = self._kernel(
            f"vertical_box_sum_weight<{radius}, {str(params.weighting == 'exponential').lower()}, "
            f"{str(relative).lower()}>"
        )
        accumulate_pass = {
            same: self._kernel(f"accumulate<{channels}, {str(same).lower()}, {str(relative).lower()}>")
            for same in (False, True)
        }
        for index, frame in enumerate(frames):
            same_frame = index == center
            for qy, qx in cascade.spatial_offsets(search, same_frame=same_frame):
                offset = (np.int32(qy), np.int32(qx))
                self._launch(
                    difference_pass,
                    difference.shape,
                    z[center],
                    z[index],
                    difference,
                    *size,
                    np.int32(margin),
                    *offset,
                )
                self._launch(
                    horizontal_pass,
                    horizontal.shape,
                    difference,
                    horizontal,
                    np.int32(horizontal.shape[0]),
                    np.int32(horizontal.shape[1]),
                )
                self._launch(
                    vertical_pass,
                    weights.shape,
                    horizontal,
                    weights,
                    np.int32(weights.shape[0]),
                    np.int32(weights.shape[1]),
                    scale,
                )
                self._launch(
                    accumulate_pass[same_frame],
                    (height, width),
                    weights,
                    frame,
                    numerator,
                    denominator,
                    largest,
                    *size,
                    np.int32(search),
                    *offset,
                )
        pixels = height * width
        center_max = params.center_weight == "max" and not relative  # relative weights' largest is 1
        self._kernel(f"normalise<{channels}, {str(center_max).lower()}>")(
            ((pixels + BLOCK - 1) // BLOCK,),
            (BLOCK,),
            (numerator, denominator, largest, frames[center], output, np.int32(pixels)),
        )
        return output


class GpuPipeline:
    """Host frames in, host frames out, with uploads, filtering and downloads overlapped.

    Each input frame crosses the bus once, in its own dtype (uint8 / uint16 / float32), from a
    pinned staging buffer (filled by a helper thread, frames ahead) on the upload stream, and
    is converted into a slot of a ring of Dp + Df + 2 device frames that every output needing
    it reads. Outputs are filtered on the compute stream straight into ``out_dtype`` and come
    back on the download stream through pinned buffers, copied into the returned arrays by a
    second helper thread. Buffers are made once, for the first frame's shape; nothing is
    allocated per frame after that but the returned host arrays. ``close`` stops the threads.
    """

    def __init__(self, cupy: Any, params: NLMParams, out_dtype: Any = np.uint8) -> None:
        self.cupy = cupy
        self.params = params
        self.out_dtype = np.dtype(out_dtype)
        self.frames = GpuFrames(cupy)
        self.upload_stream = cupy.cuda.Stream(non_blocking=True)
        self.compute_stream = cupy.cuda.Stream(non_blocking=True)
        self.download_stream = cupy.cuda.Stream(non_blocking=True)
        self._buffers: _PipelineBuffers | None = None
        self._helper = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="nlmeans-staging")
        self._collector = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="nlmeans-collect")

    def close(self) -> None:
        """Wait for the GPU work and the helper threads of an unfinished run, then stop the threads."""
        for stream in (self.upload_stream, self.compute_stream, self.download_stream):
            stream.synchronize()
        self._helper.shutdown(wait=True)
        self._collector.shutdown(wait=True)

    def _buffers_for(self, frame: np.ndarray, ring_size: int) -> _PipelineBuffers:
        """The buffers of the last run when they fit this frame and window (pinned memory is slow to make)."""
        buffers = self._buffers
        if buffers is None or buffers.key != (frame.shape, frame.dtype, self.out_dtype, ring_size):
            buffers = self._buffers = _PipelineBuffers(self.cupy, frame.shape, frame.dtype, self.out_dtype, ring_size)
        else:
            buffers.reset()
        return buffers

    def run(self, host_frames: Iterable[np.ndarray]) -> Iterator[np.ndarray]:
        """Yield the denoised frames in order; frame t once frame t + Df has been read."""
        params = self.params
        ring_size = params.frames_past + params.frames_future + 2
        buffers: _PipelineBuffers | None = None
        arrived = 0
        filtered = 0

        def filter_next(available: int) -> None:
            nonlocal filtered
            index, slot = filtered, filtered % OUTPUT_BUFFERS
            first = max(0, index - params.frames_past)
            last = min(available - 1, index + params.frames_future)
            stream = self.compute_stream
            for position in range(first, last + 1):
                stream.wait_event(buffers.uploaded[position % ring_size])
            if buffers.downloaded[slot] is not None:
                stream.wait_event(buffers.downloaded[slot])  # device_out[slot] was read
            with stream:
                window = [buffers.ring[position % ring_size] for position in range(first, last + 1)]
                self.frames.filter_window(window, index - first, params, out=buffers.device_out[slot])
                buffers.computed[index % ring_size] = stream.record()
            self.download_stream.wait_event(buffers.computed[index % ring_size])
            buffers.device_out[slot].get(stream=self.download_stream, out=buffers.pinned_out[slot])
            buffers.downloaded[slot] = self.download_stream.record()
            filtered += 1

        def collect(index: int) -> np.ndarray:
            """Output ``index`` as a new host array (on the second helper thread)."""
            buffers.downloaded[index % OUTPUT_BUFFERS].synchronize()
            return buffers.pinned_out[index % OUTPUT_BUFFERS].copy()

        collecting: collections.deque[concurrent.futures.Future] = collections.deque()

        def filter_and_collect() -> Iterator[np.ndarray]:
            """Filter the next output, and yield the oldest once OUTPUT_BUFFERS - 1 are in flight.

            An output's pinned buffer is rewritten by the download of output index + OUTPUT_BUFFERS,
            which is issued only after that output was yielded, its copy complete.
            """
            filter_next(arrived)
            collecting.append(self._collector.submit(collect, filtered - 1))
            if len(collecting) >= OUTPUT_BUFFERS - 1:
                yield collecting.popleft().result()

        def stage(frame: np.ndarray, index: int) -> None:
            """Copy frame ``index`` into its pinned buffer (on the helper thread)."""
            staging = index % STAGED_FRAMES
            if buffers.staged[staging] is not None:
                buffers.staged[staging].synchronize()  # its previous frame went to the device
            np.copyto(buffers.pinned_in[staging], frame)

        def next_frame() -> np.ndarray | None:
            frame = next(source, None)
            if frame is None:
                return None
            frame = checked_frame(frame)
            if buffers is not None and frame.shape != buffers.key[0]:
                raise ValueError(
                    f"all frames of a clip must have one shape, got {buffers.key[0]} and then {frame.shape}"
                )
            return frame

        source = iter(host_frames)
        staging_queue: collections.deque[concurrent.futures.Future] = collections.deque()
        read = 0

        def read_ahead() -> None:
            """Keep STAGED_FRAMES - 1 frames being staged ahead of the one uploading."""
            nonlocal buffers, read
            while len(staging_queue) < STAGED_FRAMES - 1:
                frame = next_frame()
                if frame is None:
                    return
                if buffers is None:
                    check_frame_shape(frame.shape, params)
                    buffers = self._buffers_for(frame, ring_size)
                staging_queue.append(self._helper.submit(stage, frame, read))
                read += 1

        read_ahead()
        while staging_queue:
            staging_queue.popleft().result()
            slot, staging = arrived % ring_size, arrived % STAGED_FRAMES
            # The slot's previous frame, arrived - ring_size, is last read by output
            # arrived - ring_size + Dp, which was filtered before: wait for it on the GPU.
            previous = buffers.computed[(arrived - ring_size + params.frames_past) % ring_size]
            if arrived >= ring_size and previous is not None:
                self.upload_stream.wait_event(previous)
            with self.upload_stream:
                buffers.device_in.set(buffers.pinned_in[staging], stream=self.upload_stream)
                buffers.staged[staging] = self.upload_stream.record()
                self.frames.convert(buffers.device_in, buffers.ring[slot])
                buffers.uploaded[slot] = self.upload_stream.record()
            arrived += 1
            # Later frames are staged on one helper thread while this one filters and earlier
            # outputs are copied out on another: numpy's copies release the GIL.
            read_ahead()
            while filtered + params.frames_future < arrived:
                yield from filter_and_collect()
        while filtered < arrived:
            yield from filter_and_collect()
        while collecting:
            yield collecting.popleft().result()


class _PipelineBuffers:
    """The device ring, the pinned and device staging buffers and the events of a pipeline."""

    def __init__(self, cupy: Any, shape: tuple[int, ...], in_dtype: Any, out_dtype: Any, ring_size: int) -> None:
        self.key = (shape, np.dtype(in_dtype), np.dtype(out_dtype), ring_size)
        self.ring = [empty_device_frame(cupy, shape, in_dtype) for _ in range(ring_size)]
        self.pinned_in = [_pinned(cupy, shape, in_dtype) for _ in range(STAGED_FRAMES)]
        self.device_in = cupy.empty(shape, in_dtype)  # the upload stream converts it before the next copy
        self.pinned_out = [_pinned(cupy, shape, out_dtype) for _ in range(OUTPUT_BUFFERS)]
        self.device_out = [cupy.empty(shape, out_dtype) for _ in range(OUTPUT_BUFFERS)]
        self.reset()

    def reset(self) -> None:
        """Forget the events of a previous run (its work has finished: the run collected it all)."""
        ring_size = len(self.ring)
        self.uploaded: list[Any] = [None] * ring_size  # slot -> event: frame converted
        self.computed: list[Any] = [None] * ring_size  # output index mod ring_size -> event: filtered
        self.staged: list[Any] = [None] * STAGED_FRAMES  # event: pinned_in copied to the device
        self.downloaded: list[Any] = [None] * OUTPUT_BUFFERS  # event: device_out copied to pinned_out


def _pinned(cupy: Any, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """A page-locked host array, so that copies to and from the GPU run asynchronously."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    memory = cupy.cuda.alloc_pinned_memory(count * dtype.itemsize)
    return np.frombuffer(memory, dtype=dtype, count=count).reshape(shape)
