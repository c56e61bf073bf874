"""The two-pass guide: a first pass makes the guide, the second takes its distances from it (issue 19)."""

import subprocess
from fractions import Fraction

import numpy as np
import pytest
from clips import CLI, noisy_clip

from nlmeans_studio.engine import Denoiser, NLMParams
from nlmeans_studio.engine.frames import from_float32
from nlmeans_studio.engine.video.filters import window_filter
from nlmeans_studio.engine.video.guided import GuidedDenoiser


def two_passes(clip: np.ndarray, params: NLMParams, prefilter_h: float | None = None) -> list[np.ndarray]:
    """The definition: the whole first pass, then each frame guided by it."""
    first = Denoiser(NLMParams(**{**vars(params), "h": prefilter_h or params.h}), "cpu")
    guide = np.stack([first.denoise_frame(clip, i) for i in range(len(clip))])
    return [Denoiser(params, "cpu").denoise_frame(clip, i, guide=guide) for i in range(len(clip))]


@pytest.mark.parametrize(("past", "future", "prefilter_h"), [(1, 1, None), (0, 2, 45.0), (2, 0, None)])
def test_streamed_and_random_access_equal_the_two_passes(past, future, prefilter_h) -> None:
    clip = np.clip(noisy_clip("random", seed=5, frames=5, shape=(20, 24)), 0, 1)
    params = NLMParams(h=30, patch_radius=1, search_radius=2, frames_past=past, frames_future=future)
    expected = two_passes(clip, params, prefilter_h)
    guided = GuidedDenoiser(params, "cpu", prefilter_h)
    streamed = list(guided.export_stream(iter(clip), np.float32))
    assert len(streamed) == len(clip)
    for index, frame in enumerate(expected):
        np.testing.assert_array_equal(streamed[index], frame)  # the same calls on the same frames
        np.testing.assert_array_equal(guided.denoise_frame(clip, index), frame)
    assert not np.array_equal(expected[2], Denoiser(params, "cpu").denoise_frame(clip, 2))


@pytest.mark.gpu
@pytest.mark.parametrize("prefilter_h", [None, 45.0])
def test_gpu_streamed_and_random_access_equal_the_cpu_two_passes(prefilter_h) -> None:
    clip = noisy_clip("bikes", seed=7, frames=5, shape=(36, 44))
    clip8 = (np.clip(clip, 0, 1) * 255).round().astype(np.uint8)  # as a video is read
    params = NLMParams(h=30, patch_radius=2, search_radius=3, frames_past=1, frames_future=1, center_weight="max")
    expected = two_passes(clip8, params, prefilter_h)
    guided = GuidedDenoiser(params, "gpu", prefilter_h)
    assert guided.backend == "gpu"
    frames = [guided.denoise_frame(clip8, index) for index in range(len(clip8))]
    for frame, cpu in zip(frames, expected, strict=True):
        # Each pass within 1e-4 of exact on both backends; the guide's own difference moves the
        # second pass's weights by about as much again.
        np.testing.assert_allclose(frame, cpu, rtol=0, atol=4e-4)
    streamed = list(guided.export_stream(iter(clip8), np.float32))
    for got, frame in zip(streamed, frames, strict=True):
        np.testing.assert_array_equal(got, frame)  # the same calls on the same frames
    streamed8 = list(guided.export_stream(iter(clip8), np.uint8))
    assert all(frame.dtype == np.uint8 for frame in streamed8)
    np.testing.assert_array_equal(np.stack(streamed8), from_float32(np.stack(frames), np.uint8))


def test_outputs_kept_as_frames_filter_as_uploaded_ones(backend_method) -> None:
    """export_stream keeps the first pass's outputs on the filter's device (``as_frame``)."""
    chosen = window_filter(*backend_method)
    clip = noisy_clip("random", seed=8, frames=3, shape=(20, 24))
    params = NLMParams(h=30, patch_radius=1, search_radius=2)
    frames = [chosen.upload(frame) for frame in clip]
    outputs = [chosen(frames, index, params) for index in range(3)]
    kept = chosen.download(chosen(frames, 1, params, [chosen.as_frame(output) for output in outputs]))
    uploaded = [chosen.upload(chosen.download(output)) for output in outputs]
    np.testing.assert_array_equal(kept, chosen.download(chosen(frames, 1, params, uploaded)))


def test_export_stream_refuses_frames_of_another_shape() -> None:
    clip = noisy_clip("random", seed=9, frames=2, shape=(20, 24))
    stream = GuidedDenoiser(NLMParams(h=30, patch_radius=1, search_radius=1), "cpu").export_stream(
        iter([clip[0], clip[1, :, :-1]]), np.float32
    )
    with pytest.raises(ValueError, match="all frames of a clip must have one shape"):
        list(stream)


def test_the_guide_is_refused_with_luma_chroma_and_unknown_names(tmp_path) -> None:
    from nlmeans_studio.engine.video.export import denoise_file

    params = NLMParams(h=20, patch_radius=1, search_radius=1)
    with pytest.raises(ValueError, match="guide must be 'prefilter' or None, got 'twice'"):
        denoise_file(tmp_path / "in.mkv", tmp_path / "out.mkv", params, guide="twice")
    with pytest.raises(ValueError, match="the two-pass guide and the luma/chroma mode do not combine yet"):
        denoise_file(tmp_path / "in.mkv", tmp_path / "out.mkv", params, guide="prefilter", luma_chroma=(4, 9, "bt709"))


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_cli_guide_prefilter_writes_the_two_passes(tmp_path, backend) -> None:
    av = pytest.importorskip("av", reason="the CLI reads and writes videos with PyAV")
    from nlmeans_studio.engine.media.reader import read_frames

    noisy = (np.clip(noisy_clip("random", seed=6, frames=4, shape=(32, 40)), 0, 1) * 255).round().astype(np.uint8)
    with av.open(str(tmp_path / "noisy.mkv"), "w") as container:  # lossless RGB, as the filter sees it
        stream = container.add_stream("ffv1", rate=25)
        stream.height, stream.width, stream.pix_fmt = 32, 40, "bgr0"
        for index, frame in enumerate(noisy):
            video_frame = av.VideoFrame.from_ndarray(frame, format="rgb24")
            video_frame.pts, video_frame.time_base = index, Fraction(1, 25)
            container.mux(stream.encode(video_frame))
        container.mux(stream.encode(None))
    window = ["--h", "30", "--patch-radius", "1", "--search-radius", "2", "--frames-past", "1", "--frames-future", "1"]
    command = [*CLI, "denoise", str(tmp_path / "noisy.mkv"), str(tmp_path / "out.mkv")]
    options = ["--codec", "ffv1", "--rgb", "--noise", "none", "--quiet", "--guide", "prefilter", *window]
    result = subprocess.run([*command, *options, "--backend", backend], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    params = NLMParams(h=30, patch_radius=1, search_radius=2, frames_past=1, frames_future=1)
    # uint8 rounding of the float32 result; on the GPU also the two passes' 4e-4 from the CPU's.
    tolerance = 0.5 + (1e-3 if backend == "cpu" else 4e-4 * 255)
    for written, expected in zip(read_frames(tmp_path / "out.mkv"), two_passes(noisy, params), strict=True):
        np.testing.assert_allclose(written, expected * 255, atol=tolerance)
