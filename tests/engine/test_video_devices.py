"""A clip dealt over several GPUs in chunks (engine/video/several_gpus.py) equals one GPU's export
stream; the chunking itself is checked on the CPU, with CPU filters in the devices' place."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from clips import CLI

from nlmeans_studio.engine import Denoiser, NLMParams
from nlmeans_studio.engine.backend import gpu_unavailable_reason
from nlmeans_studio.engine.video.several_gpus import chunk_frames, filter_in_chunks

WINDOWS = [(0, 0), (1, 1), (2, 0), (0, 2), (3, 1)]


def _cpu_chunk_filter(params: NLMParams, calls: list[int], wanted: list[range] | None = None):
    denoiser = Denoiser(params, backend="cpu")

    def run(window: list[np.ndarray], outputs: range) -> list[np.ndarray]:
        calls.append(len(window))
        if wanted is not None:
            wanted.append(outputs)
        return list(denoiser.export_stream(window))[outputs.start : outputs.stop]

    return run


@pytest.mark.parametrize(("past", "future"), WINDOWS)
@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 11])
def test_chunks_dealt_over_devices_equal_one_pass(past, future, chunk) -> None:
    """Every chunk size (smaller than the window's overlap, equal to the clip, larger), every window."""
    frames = list(np.random.default_rng(past * 10 + future).integers(0, 256, (10, 12, 14, 3), dtype=np.uint8))
    params = NLMParams(h=30.0, patch_radius=1, search_radius=2, frames_past=past, frames_future=future)
    one = list(Denoiser(params, backend="cpu").export_stream(frames))
    calls: list[int] = []
    wanted: list[range] = []
    filters = [_cpu_chunk_filter(params, calls, wanted) for _ in range(3)]
    several = list(filter_in_chunks(iter(frames), params, filters, chunk))
    assert len(several) == len(frames)
    np.testing.assert_array_equal(np.array(several), np.array(one))
    assert len(calls) == -(-len(frames) // chunk)
    assert max(calls) <= chunk + past + future  # a chunk reads its own frames and the overlap only
    assert sorted(len(outputs) for outputs in wanted)[-1] <= chunk  # and asks for its own outputs alone
    assert sum(len(outputs) for outputs in wanted) == len(frames)


def test_the_frames_held_stay_bounded() -> None:
    """A long clip is not held in memory: reading runs at most a few chunks ahead of the output."""
    params = NLMParams(h=30.0, patch_radius=1, search_radius=1, frames_past=1, frames_future=1)
    read = []

    def source():
        for index in itertools.count():
            if index == 200:
                return
            read.append(index)
            yield np.full((8, 8, 3), index % 256, dtype=np.uint8)

    filters = [_cpu_chunk_filter(params, []) for _ in range(2)]
    for written, _ in enumerate(filter_in_chunks(source(), params, filters, 4)):
        assert len(read) - written <= (len(filters) + 2) * 4 + 2


def test_a_device_error_reaches_the_caller() -> None:
    params = NLMParams(h=30.0, patch_radius=1, search_radius=1)

    def broken(window: list[np.ndarray], outputs: range) -> list[np.ndarray]:
        raise MemoryError("out of GPU memory on device 1")

    frames = [np.zeros((8, 8, 3), np.uint8)] * 20
    with pytest.raises(MemoryError, match="device 1"):
        list(filter_in_chunks(iter(frames), params, [_cpu_chunk_filter(params, []), broken], 3))


def test_chunk_size_follows_the_frame_size() -> None:
    params = NLMParams(frames_past=2, frames_future=2)
    assert chunk_frames(3840 * 2160 * 3, params) == 16  # 256 MiB of 4K uint8 frames is 10; at least 4 (Dp + Df)
    assert chunk_frames(1920 * 1080 * 3, params) == 43  # 256 MiB of 1080p uint8 frames
    assert chunk_frames(1 << 30, params) == 16  # the context at most a fifth of the uploads


def test_the_cli_refuses_devices_with_another_mode_or_without_a_gpu(tmp_path) -> None:
    """Before any file is read (the input here does not exist)."""
    import subprocess

    source = str(tmp_path / "missing.mp4")
    cases = [(["--guide", "prefilter"], "plain filter only"), (["--luma-chroma", "4,8"], "plain filter only")]
    cases.append((["--backend", "cpu"], "--devices spreads the clip over GPUs: not with --backend cpu"))
    if gpu_unavailable_reason() is not None:
        cases.append(([], "the GPU backend is unavailable"))
    for extra, message in cases:
        result = subprocess.run(
            [*CLI, "denoise", source, str(tmp_path / "out.mkv"), "--devices", "0", "--noise", "none", *extra],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode != 0 and message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.gpu
@pytest.mark.parametrize(("past", "future", "chunk"), [(1, 1, 3), (2, 0, 4), (2, 2, None)])
def test_every_gpu_equals_one(past, future, chunk) -> None:
    if gpu_unavailable_reason() is not None:
        pytest.skip(gpu_unavailable_reason())
    from nlmeans_studio.engine.video.several_gpus import DevicesDenoiser

    frames = list(np.random.default_rng(5).integers(0, 256, (13, 40, 48, 3), dtype=np.uint8))
    params = NLMParams(h=30.0, patch_radius=2, search_radius=3, frames_past=past, frames_future=future)
    one = list(Denoiser(params, backend="gpu", method="fused").export_stream(frames))
    several = list(DevicesDenoiser(params, "all", chunk=chunk).export_stream(frames))
    assert len(several) == len(frames)
    np.testing.assert_array_equal(np.array(several), np.array(one))
