"""Y'CbCr converted on the GPU: the kernels, the pipeline and the export equal the CPU's conversions.

tests/engine/test_yuv_kernel_on_cpu.py runs the same kernels on the CPU where there is no GPU.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from nlmeans_studio.engine import Denoiser, NLMParams
from nlmeans_studio.engine.backend import cupy_module
from nlmeans_studio.engine.frames import yuv_plane_shapes
from nlmeans_studio.engine.gpu.yuv import planes_to_rgb as gpu_planes_to_rgb
from nlmeans_studio.engine.gpu.yuv import rgb_to_planes as gpu_rgb_to_planes
from nlmeans_studio.engine.media.reader import VideoReader
from nlmeans_studio.engine.media.yuv import (
    YuvFrame,
    planes_to_rgb,
    planes_to_ycbcr,
    rgb_to_planes,
    ycbcr_to_planes,
    yuv_layout,
)
from nlmeans_studio.engine.video.export import denoise_file
from nlmeans_studio.engine.video.luma_chroma import LumaChromaDenoiser

pytestmark = pytest.mark.gpu

CASES = [  # pixel format, color tags, height, width, RGB dtype
    ("yuv420p", {"colorspace": 1}, 1080, 1920, np.uint8),
    ("yuv420p", {}, 37, 51, np.uint8),
    ("yuv422p10le", {"colorspace": 1, "range": 2}, 64, 99, np.uint16),
    ("yuv444p", {"colorspace": 5}, 40, 41, np.uint8),
    ("yuv420p12le", {"colorspace": 9}, 33, 20, np.uint16),
    ("yuv411p", {"colorspace": 6}, 480, 720, np.uint8),  # DV
    ("yuv411p", {"colorspace": 1, "range": 2}, 13, 3, np.uint16),  # a last column of its own
]


@pytest.mark.parametrize(("pixel_format", "color", "height", "width", "dtype"), CASES)
def test_the_kernels_convert_as_the_cpu_does(pixel_format, color, height, width, dtype) -> None:
    cupy = cupy_module()
    layout = yuv_layout(pixel_format, color, height)
    rng = np.random.default_rng(width)
    top = 2**layout.bits - 1
    planes = [
        rng.integers(0, top + 1, shape).astype(layout.sample_dtype)
        for shape in yuv_plane_shapes(height, width, layout.chroma_shift)
    ]
    flat = cupy.asarray(np.concatenate([plane.ravel() for plane in planes]))
    coefficients = cupy.asarray(layout.coefficients())
    rgb = cupy.empty((height, width, 3), dtype)
    gpu_planes_to_rgb(cupy, flat, layout.chroma_shift, coefficients, rgb)
    np.testing.assert_array_equal(rgb.get(), planes_to_rgb(planes, layout, np.dtype(dtype)))
    given = rng.integers(0, np.iinfo(dtype).max + 1, (height, width, 3)).astype(dtype)
    out = cupy.empty(flat.shape, layout.sample_dtype)
    differences = cupy.empty((2, height, width), np.float32)
    gpu_rgb_to_planes(cupy, cupy.asarray(given), layout.chroma_shift, coefficients, out, differences)
    np.testing.assert_array_equal(out.get(), np.concatenate([plane.ravel() for plane in rgb_to_planes(given, layout)]))


EXPORT_CASES = [("libx264", "yuv420p"), ("ffv1", "yuv422p10le"), ("ffv1", "yuv411p")]


def noisy_clip_file(path: Path, codec: str = "libx264", pixel_format: str = "yuv420p") -> Path:
    """Twelve frames of a moving picture with noise at 29.97 fps: H.264 with B-frames unless told.

    Written with PyAV (the GPU machine has no ffmpeg tool); tests/engine/test_yuv_frames.py reads
    the ffmpeg tool's files.
    """
    import av

    rng = np.random.default_rng(5)
    base = np.indices((240, 320)).sum(0).astype(np.float64)
    with av.open(str(path), "w") as container:
        stream = container.add_stream(
            codec, rate=Fraction(30000, 1001), options={"bf": "2"} if codec == "libx264" else {}
        )
        stream.width, stream.height, stream.pix_fmt = 320, 240, pixel_format
        for index in range(12):
            picture = (np.roll(base, 3 * index, axis=1) % 256)[..., None] * (0.9, 0.6, 0.3)
            noisy = np.clip(picture + rng.normal(0, 20, picture.shape), 0, 255).astype(np.uint8)
            container.mux(stream.encode(av.VideoFrame.from_ndarray(noisy, format="rgb24")))
        container.mux(stream.encode(None))
    return path


@pytest.mark.parametrize(("codec", "pixel_format"), EXPORT_CASES)
def test_export_yuv_equals_the_cpus_conversions_around_export_stream(tmp_path, codec, pixel_format) -> None:
    params = NLMParams(h=25, search_radius=3, frames_past=1, frames_future=1)
    with VideoReader(noisy_clip_file(tmp_path / "clip.mkv", codec, pixel_format)) as reader:
        layout, dtype = reader.yuv_layout, reader.info.dtype
        frames = list(reader.frames())
        planes = [timed.array for timed in reader.timed_frames(0, yuv=True)]
    denoiser = Denoiser(params, "gpu", bit_depth=16)
    assert denoiser.converts_yuv
    expected = [rgb_to_planes(frame, layout) for frame in denoiser.export_stream(frames, dtype)]
    outputs = list(denoiser.export_yuv(planes, dtype, layout))
    assert len(outputs) == len(expected) == 12
    for output, wanted in zip(outputs, expected, strict=True):
        assert isinstance(output, YuvFrame) and output.layout == layout
        for ours, theirs in zip(output.planes, wanted, strict=True):
            np.testing.assert_array_equal(ours, theirs)


def test_a_gpu_export_writes_the_planes_the_cpus_conversions_give(tmp_path) -> None:
    """H.264 with B-frames in, FFV1 out (lossless): the output's planes, frame by frame, and its times."""
    source = noisy_clip_file(tmp_path / "clip.mp4")
    params = NLMParams(h=25, search_radius=3, frames_past=1, frames_future=1)
    summary = denoise_file(source, tmp_path / "out.mkv", params, codec="ffv1", backend="gpu", start=0.1)
    with VideoReader(source) as reader:
        first = reader.frame_at(0.1)
        frames = list(reader.frames())
        times = reader.frame_times[first:] - reader.frame_times[first]
        layout = reader.yuv_layout
    # the whole clip's frames from the first written: a part is read with its window's frames around it
    expected = list(Denoiser(params, "gpu", bit_depth=16).export_stream(frames, np.uint8))[first:]
    frames = frames[first:]
    with VideoReader(tmp_path / "out.mkv") as written:
        assert summary.frames == written.info.frame_count == len(frames)
        np.testing.assert_allclose(written.frame_times, times, atol=1e-3)
        for timed, wanted in zip(written.timed_frames(0, yuv=True), expected, strict=True):
            for ours, theirs in zip(timed.array.planes, rgb_to_planes(wanted, layout), strict=True):
                np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize(("codec", "pixel_format"), EXPORT_CASES)
def test_the_luma_chroma_modes_export_yuv_equals_the_cpus_conversions(tmp_path, codec, pixel_format) -> None:
    """The planes' own Y' and chroma through the mode's two passes on the GPU: converted there as the CPU converts."""
    cupy = cupy_module()
    params = NLMParams(h=1, search_radius=3, frames_past=1, frames_future=0, weighting="exponential")
    with VideoReader(noisy_clip_file(tmp_path / "clip.mkv", codec, pixel_format)) as reader:
        layout, dtype = reader.yuv_layout, reader.info.dtype
        planes = [timed.array for timed in reader.timed_frames(0, yuv=True)]
    denoiser = LumaChromaDenoiser(params, 9.0, 7.0, "bt601", "gpu", bit_depth=16)
    assert denoiser.converts_yuv
    pairs = [planes_to_ycbcr(frame.planes, frame.layout) for frame in planes]
    lumas = denoiser.luma.stream_on_device(cupy.asarray(luma) for luma, _ in pairs)
    chromas = denoiser.chroma.stream_on_device(cupy.asarray(chroma) for _, chroma in pairs)
    expected = [
        ycbcr_to_planes(luma.get().reshape(*luma.shape[:2], 1), chroma.get(), layout)
        for luma, chroma in zip(lumas, chromas, strict=True)
    ]
    outputs = list(denoiser.export_yuv(planes, dtype, layout))
    assert len(outputs) == len(expected) == 12
    for output, wanted in zip(outputs, expected, strict=True):
        for ours, theirs in zip(output.planes, wanted, strict=True):
            np.testing.assert_array_equal(ours, theirs)
