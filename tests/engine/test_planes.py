"""PlaneTransfers' layout and rounding on NumPy: CuPy's few calls it makes, with NumPy arrays as the device's.

What runs only on a GPU (the copies' CUDA calls themselves, streams) is checked by the GPU tests of
tests/engine/test_vapoursynth.py; here the planes' pitches, the interleaving, the scaling and the
rounding back are checked against the host's arithmetic.
"""

import contextlib
from types import SimpleNamespace

import numpy as np
import pytest

from nlmeans_studio.engine.frames import integer_scale
from nlmeans_studio.engine.gpu.device import DeviceFrame
from nlmeans_studio.engine.gpu.planes import HostPlanes, PlaneTransfers


class DeviceArray(np.ndarray):
    """A NumPy array with CuPy's copies from and to the host."""

    def set(self, host, stream=None) -> None:
        assert host.shape == self.shape and host.dtype == self.dtype and host.flags.c_contiguous
        self[...] = host

    def get(self, stream=None, out=None):
        assert out.shape == self.shape and out.dtype == self.dtype and out.flags.c_contiguous
        out[...] = self
        return out


STREAM = SimpleNamespace(ptr=0, synchronize=lambda: None)
FAKE_CUPY = SimpleNamespace(
    empty=lambda shape, dtype: np.empty(shape, dtype).view(DeviceArray),
    copyto=np.copyto,
    divide=np.divide,
    multiply=np.multiply,
    rint=np.rint,
    clip=np.clip,
    cuda=SimpleNamespace(
        alloc_pinned_memory=bytearray,
        get_current_stream=lambda: STREAM,
    ),
)


class NumpyDeviceFrames:
    """``DeviceFrames``' methods PlaneTransfers uses, frame_to_planar's arithmetic in NumPy."""

    cupy = FAKE_CUPY

    def empty(self, shape, dtype) -> DeviceFrame:
        height, width, channels = shape
        packed = np.empty((height, width), np.uint32) if np.dtype(dtype) == np.uint8 else None
        return DeviceFrame(np.empty((channels, height, width), np.float32), packed)

    def convert(self, frame, out: DeviceFrame) -> None:
        out.planar[...] = np.moveaxis(frame.astype(np.float32) * np.float32(integer_scale(frame.dtype)), -1, 0)
        if out.packed is not None:
            out.packed[...] = sum(frame[..., c].astype(np.uint32) << (8 * c) for c in range(frame.shape[-1]))

    @contextlib.contextmanager
    def out_of_memory_as_error(self, shape):
        yield


def padded(array: np.ndarray, columns: int = 7) -> np.ndarray:
    """``array`` as a view of a wider buffer: rows further apart than their samples, as VapourSynth's may be."""
    buffer = np.zeros((array.shape[0], array.shape[1] + columns), array.dtype)
    buffer[:, : array.shape[1]] = array
    return buffer[:, : array.shape[1]]


def test_planes_go_up_as_they_lie_and_are_interleaved_and_packed_there() -> None:
    rng = np.random.default_rng(0)
    planes = [padded(rng.integers(0, 256, (5, 9), dtype=np.uint8)) for _ in range(3)]
    transfers = PlaneTransfers(NumpyDeviceFrames())
    frame = HostPlanes(planes, 3)
    out = transfers.empty(frame.shape, frame.dtype)
    transfers.upload_into(frame, out)
    np.testing.assert_array_equal(out.planar, np.stack(planes) * np.float32(1 / 255))
    words = [plane.astype(np.uint32) << (8 * channel) for channel, plane in enumerate(planes)]
    np.testing.assert_array_equal(out.packed, words[0] | words[1] | words[2])


def test_two_planes_go_up_with_a_zero_third_and_samples_of_a_peak_are_divided_by_it() -> None:
    rng = np.random.default_rng(1)
    planes = [padded(rng.integers(0, 1024, (4, 6), dtype=np.uint16)) for _ in range(2)]
    transfers = PlaneTransfers(NumpyDeviceFrames())
    frame = HostPlanes(planes, 3, peak=1023)
    out = transfers.empty(frame.shape, frame.dtype)
    transfers.upload_into(frame, out)
    expected = [plane.astype(np.float32) / np.float32(1023) for plane in planes]  # as the CPU path divides
    np.testing.assert_array_equal(out.planar, np.stack([*expected, np.zeros_like(expected[0])]))
    assert out.packed is None


@pytest.mark.parametrize(
    ("dtype", "peak"), [(np.uint8, None), (np.uint16, 1023), (np.float16, None), (np.float32, None)]
)
def test_outputs_come_back_plane_by_plane_rounded_as_the_host_rounds(dtype, peak) -> None:
    rng = np.random.default_rng(2)
    output = rng.uniform(-0.01, 1.01, (4, 6, 3)).astype(np.float32)
    if dtype == np.uint8:  # the fused kernel's own integer output: as it is
        output = rng.integers(0, 256, (4, 6, 3), dtype=np.uint8)
    planes = [padded(np.zeros((4, 6), dtype)) for _ in range(2)]  # U and V of a (U, V, 0) output
    PlaneTransfers(NumpyDeviceFrames()).download_into(output.view(DeviceArray), planes, peak)
    for index, plane in enumerate(planes):
        values = output[:, :, index]
        expected = np.clip(np.rint(values * peak), 0, peak) if peak else values  # NLMeans's CPU path
        np.testing.assert_array_equal(plane, expected.astype(dtype))


def test_a_plane_of_another_shape_or_dtype_is_refused() -> None:
    transfers = PlaneTransfers(NumpyDeviceFrames())
    frame = HostPlanes([np.zeros((4, 6), np.uint8), np.zeros((4, 5), np.uint8)], 3)
    with pytest.raises(ValueError, match=r"a plane must be \(H, W\) = \(4, 6\) of uint8, got \(4, 5\) of uint8"):
        transfers.upload_into(frame, transfers.empty(frame.shape, frame.dtype))
