"""GPU-only behaviour: odd and large sizes, CPU agreement, the pipeline, memory errors.

The exactness grid runs on the GPU through the ``backend_method`` fixture of the other tests;
these add what only the GPU has. All are marked ``gpu`` and skip cleanly without a device.
"""

import threading

import numpy as np
import pytest
from clips import noisy_clip
from reference import reference_denoise

from nlmeans_studio.engine import Denoiser, NLMParams
from nlmeans_studio.engine.backend import GpuOutOfMemoryError, cupy_module

pytestmark = pytest.mark.gpu
TOLERANCE = 1e-4  # as the exactness grid: float32 rounding is near 1e-6


@pytest.mark.parametrize("method", ["fused", "cascade"])
def test_odd_sizes_match_the_reference(method) -> None:
    params = NLMParams(h=40, patch_radius=2, search_radius=3, frames_past=1, frames_future=1)
    for shape in [(9, 17), (17, 9), (33, 65)]:  # partial tiles of 32 x 16 on every side
        clip = noisy_clip("random", seed=sum(shape), frames=3, shape=shape)
        result = Denoiser(params, "gpu", method=method).denoise_frame(clip, 1)
        np.testing.assert_allclose(result, reference_denoise(clip, 1, params), rtol=0, atol=TOLERANCE)


def test_one_pixel_frames_are_refused() -> None:
    with pytest.raises(ValueError, match="too small"):
        Denoiser(NLMParams(h=10), "gpu").denoise_frame(np.zeros((1, 1, 1, 3), np.float32), 0)


def test_full_hd_plus_one_matches_the_cpu() -> None:
    """1921 x 1081: partial tiles at the right and bottom; the CPU path is itself exact."""
    rng = np.random.default_rng(3)
    base = np.linspace(0, 1, 1921, dtype=np.float32)[None, None, :, None]
    clip = (base + rng.normal(0, 0.05, (3, 1081, 1921, 3))).astype(np.float32)
    params = NLMParams(h=35, patch_radius=3, search_radius=2, frames_past=1, frames_future=1)
    gpu = Denoiser(params, "gpu").denoise_frame(clip, 1)
    cpu = Denoiser(params, "cpu").denoise_frame(clip, 1)
    np.testing.assert_allclose(gpu, cpu, rtol=0, atol=2 * TOLERANCE)  # each within 1e-4 of exact


def test_cpu_and_gpu_agree_on_real_frames_with_every_option() -> None:
    clip = noisy_clip("bigbuckbunny", seed=1, frames=5, shape=(36, 44))
    for weighting in ("bisquare", "exponential"):
        for center in ("one", "max"):
            params = NLMParams(
                h=30, search_radius=5, frames_past=2, frames_future=2, weighting=weighting, center_weight=center
            )
            np.testing.assert_allclose(
                Denoiser(params, "gpu").denoise_frame(clip, 2),
                Denoiser(params, "cpu").denoise_frame(clip, 2),
                rtol=0,
                atol=2 * TOLERANCE,
            )


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_pipeline_streams_integer_frames_like_the_denoiser(dtype) -> None:
    from nlmeans_studio.engine.video.gpu_pipeline import GpuPipeline

    full_scale = np.iinfo(dtype).max
    clip = (noisy_clip("bikes", seed=4, frames=6, shape=(36, 44)).clip(0, 1) * full_scale).round().astype(dtype)
    params = NLMParams(h=40, patch_radius=2, search_radius=2, frames_past=2, frames_future=1)
    outputs = list(GpuPipeline(cupy_module(), params, dtype).run(iter(clip)))
    assert len(outputs) == 6 and all(o.dtype == dtype and o.shape == clip[0].shape for o in outputs)
    denoiser = Denoiser(params, "cpu")
    for index, output in enumerate(outputs):
        expected = np.clip(np.rint(denoiser.denoise_frame(clip, index) * full_scale), 0, full_scale)
        # Rounding of values within 1e-4 of a half step may go either way: at most one level.
        assert np.abs(output.astype(np.int64) - expected.astype(np.int64)).max() <= 1


def test_out_of_memory_becomes_a_clear_error(monkeypatch) -> None:
    cupy = cupy_module()

    def exhausted(*args, **kwargs):
        raise cupy.cuda.memory.OutOfMemoryError(1 << 40, 0)

    denoiser = Denoiser(NLMParams(h=10), "gpu")
    monkeypatch.setattr(cupy, "asarray", exhausted)
    with pytest.raises(GpuOutOfMemoryError, match=r"ran out of memory for frames of shape \(20, 20, 3\).*CPU backend"):
        denoiser.denoise_frame(np.zeros((1, 20, 20, 3), np.float32), 0)


def test_device_name_and_method() -> None:
    denoiser = Denoiser(NLMParams(h=10), "gpu")
    assert (denoiser.backend, denoiser.method) == ("gpu", "fused")
    assert denoiser.device_name


@pytest.mark.parametrize(("shared_limit", "tile_height"), [(None, 32), (100_000, 16), (60_000, 8)])
def test_smaller_tiles_where_shared_memory_is_short(monkeypatch, shared_limit, tile_height) -> None:
    """Where a device has less shared memory per block, shorter tiles take over and stay exact."""
    import nlmeans_studio.engine.video.filters.fused_gpu as fused_gpu
    from nlmeans_studio.engine.video.filters.fused_layout import fused_layout

    cupy = cupy_module()
    limit, per_multiprocessor, multiprocessors = fused_gpu.device_attributes(cupy, cupy.cuda.Device().id)
    if shared_limit is not None:
        limit = shared_limit
        attributes = (shared_limit, per_multiprocessor, multiprocessors)
        monkeypatch.setattr(fused_gpu, "device_attributes", lambda *_: attributes)
    params = NLMParams(h=40, patch_radius=4, search_radius=3, frames_past=1, frames_future=0)
    assert fused_layout(4, 3, 3, False, limit).tile_height == tile_height
    clip = noisy_clip("random", seed=12, frames=2, shape=(37, 50))
    result = Denoiser(params, "gpu").denoise_frame(clip, 1)
    np.testing.assert_allclose(result, reference_denoise(clip, 1, params), rtol=0, atol=TOLERANCE)


def test_largest_radii_match_the_reference() -> None:
    """A = 16, B = 8: the largest window and patch, with the smallest group K."""
    clip = noisy_clip("random", seed=12, frames=2, shape=(26, 27))
    params = NLMParams(h=20, patch_radius=8, search_radius=16, frames_past=1, frames_future=0)
    result = Denoiser(params, "gpu").denoise_frame(clip, 1)
    np.testing.assert_allclose(result, reference_denoise(clip, 1, params), rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize("channels", [1, 3])
def test_8_bit_frames_take_the_packed_path_and_match_the_reference(channels) -> None:
    """8-bit frames without a transform: distances on the packed bytes, in integers."""
    from nlmeans_studio.engine.video.filters.fused_gpu import FusedGpuFilter

    clip = noisy_clip("random", seed=9, frames=3, shape=(45, 70), channels=channels)
    clip8 = (clip.clip(0, 1) * 255).round().astype(np.uint8)
    assert FusedGpuFilter(cupy_module()).frames.upload(clip8[0]).packed is not None
    expected_inputs = clip8 / 255.0
    for params in [
        NLMParams(h=40, patch_radius=4, search_radius=3, frames_past=1, frames_future=1),
        NLMParams(h=25, patch_radius=2, search_radius=5, frames_past=2, weighting="exponential"),
        NLMParams(h=60, patch_radius=8, search_radius=2, frames_future=1, center_weight="max"),
        NLMParams(h=8, patch_radius=1, search_radius=1),  # small h: weights sensitive to the distances
    ]:
        result = Denoiser(params, "gpu").denoise_frame(clip8, 1)
        np.testing.assert_allclose(result, reference_denoise(expected_inputs, 1, params), rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_split_tiles_add_up_to_the_reference(monkeypatch, dtype) -> None:
    """As if the device ran 4 blocks at once: the last tiles of the grid are split by frame."""
    import nlmeans_studio.engine.video.filters.fused_gpu as fused_gpu
    from nlmeans_studio.engine.video.filters.fused_layout import fused_grid, fused_layout

    cupy = cupy_module()
    per_block, per_multiprocessor, _ = fused_gpu.device_attributes(cupy, cupy.cuda.Device().id)
    monkeypatch.setattr(fused_gpu, "device_attributes", lambda *_: (per_block, per_multiprocessor, 4))
    params = NLMParams(h=40, patch_radius=3, search_radius=4, frames_past=1, frames_future=1, center_weight="max")
    clip = noisy_clip("random", seed=22, frames=3, shape=(61, 151))  # 2 x 3 tiles: 2 split
    if dtype == np.uint8:
        clip = np.clip(np.rint(clip * 255), 0, 255).astype(np.uint8)
    layout = fused_layout(3, 4, 3, False, per_block, dtype == np.uint8)
    assert fused_grid(layout, 61, 151, 3, 4).split > 0
    expected = reference_denoise(clip / (255.0 if dtype == np.uint8 else 1.0), 1, params)
    for _ in range(2):  # the arrival counters are back at zero for the next launch
        result = Denoiser(params, "gpu").denoise_frame(clip, 1)
        np.testing.assert_allclose(result, expected, rtol=0, atol=TOLERANCE)


def test_a_pipeline_runs_again_on_its_buffers_after_a_whole_and_an_abandoned_run() -> None:
    """Later runs reuse the buffers and events of the first (nothing is made per frame or per
    run), also after a run left off with work in flight, and give the same frames."""
    from nlmeans_studio.engine.video.gpu_pipeline import GpuPipeline

    clip = (noisy_clip("bikes", seed=7, frames=6, shape=(36, 44)).clip(0, 1) * 255).round().astype(np.uint8)
    params = NLMParams(h=40, patch_radius=2, search_radius=2, frames_past=1, frames_future=2)
    pipeline = GpuPipeline(cupy_module(), params, np.uint8)
    try:
        first = np.stack(list(pipeline.run(iter(clip))))
        buffers = pipeline._buffers
        abandoned = pipeline.run(iter(clip[::-1]))
        next(abandoned)
        abandoned.close()
        again = np.stack(list(pipeline.run(iter(clip))))
    finally:
        pipeline.close()
    assert pipeline._buffers is buffers
    np.testing.assert_array_equal(again, first)
    expected = np.stack(list(Denoiser(params, "gpu").export_stream(iter(clip), np.uint8)))
    np.testing.assert_array_equal(first, expected)


def test_pipeline_views_and_chosen_outputs_equal_the_whole_run() -> None:
    """Pinned views (copied here before the next is asked for) and a range of outputs (the rest read as
    context only, as a chunk of a longer clip) give the frames of a whole run of copies; many frames
    staged at once on a long clip, buffers recycled many times over."""
    from nlmeans_studio.engine.video.gpu_pipeline import GpuPipeline

    clip = (noisy_clip("random", seed=8, frames=24, shape=(36, 44)).clip(0, 1) * 255).round().astype(np.uint8)
    params = NLMParams(h=40, patch_radius=2, search_radius=2, frames_past=2, frames_future=1)
    pipeline = GpuPipeline(cupy_module(), params, np.uint8)
    try:
        whole = np.stack(list(pipeline.run(iter(clip))))
        views = []
        for view in pipeline.run(iter(clip), views=True):
            assert not view.flags.owndata
            views.append(view.copy())
        middle = list(pipeline.run(iter(clip[3:20]), outputs=range(2, 15)))
        with pytest.raises(ValueError, match="consecutive"):
            list(pipeline.run(iter(clip), outputs=range(0, 10, 2)))
    finally:
        pipeline.close()
    np.testing.assert_array_equal(np.stack(views), whole)
    assert len(middle) == 13
    np.testing.assert_array_equal(np.stack(middle), whole[5:18])


def test_pipeline_refuses_bad_frames() -> None:
    from nlmeans_studio.engine.video.gpu_pipeline import GpuPipeline

    pipeline = GpuPipeline(cupy_module(), NLMParams(h=20, patch_radius=1, search_radius=1), np.uint8)
    frames = [np.zeros((12, 12, 3), np.uint8), np.zeros((12, 13, 3), np.uint8)]
    with pytest.raises(ValueError, match=r"one shape, got \(12, 12, 3\) and then \(12, 13, 3\)"):
        list(pipeline.run(frames))
    with pytest.raises(ValueError, match="too small"):
        list(pipeline.run([np.zeros((2, 2, 3), np.uint8)]))


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_export_stream_on_the_gpu_matches_the_cpu(dtype) -> None:
    clip = (noisy_clip("bigbuckbunny", seed=6, frames=5, shape=(33, 41)).clip(0, 1) * 255).round().astype(np.uint8)
    params = NLMParams(h=35, patch_radius=2, search_radius=3, frames_past=1, frames_future=1)
    gpu = np.stack(list(Denoiser(params, "gpu").export_stream(iter(clip), dtype)))
    cpu = np.stack(list(Denoiser(params, "cpu").export_stream(iter(clip), dtype)))
    assert gpu.dtype == cpu.dtype == dtype and gpu.shape == clip.shape
    # float32: each backend within 1e-4 of exact; uint8: a half-step tie may round either way.
    tolerance = 2 * TOLERANCE if dtype == np.float32 else 1
    assert np.abs(gpu.astype(np.float64) - cpu.astype(np.float64)).max() <= tolerance


def test_an_abandoned_export_stream_stops_its_threads() -> None:
    clip = np.zeros((12, 40, 40, 3), np.uint8)
    before = set(threading.enumerate())
    outputs = Denoiser(NLMParams(h=20, search_radius=2), "gpu").export_stream(iter(clip))
    next(outputs)
    outputs.close()
    assert {thread.name for thread in set(threading.enumerate()) - before} == set()


def test_nvdec_decodes_what_the_cpu_decodes() -> None:
    pytest.importorskip("av", reason="PyAV is not installed")
    from nlmeans_studio.engine.media.reader import VideoReader, read_frames
    from nlmeans_studio.engine.video.sample import SAMPLE_CLIP

    with VideoReader(SAMPLE_CLIP, hardware_decoding=True) as reader:
        assert reader.decoder == "NVDEC"
        frames = list(reader.frames())
    # H.264 decoding is bit-exact by the standard, and NVDEC's NV12 is repacked to the source's
    # planar format before the same RGB conversion: the frames are equal.
    software = read_frames(SAMPLE_CLIP)
    difference = np.abs(np.stack(frames).astype(np.int16) - software.astype(np.int16))
    assert difference.max() == 0, f"max {difference.max()}, mean {difference.mean():.4f} levels"
