"""Denoiser semantics: streaming, invariants, input checks and backend selection."""

import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from clips import noisy_clip

from nlmeans_studio.engine import (
    COMPILING,
    BackendUnavailableError,
    Denoiser,
    LumaChromaDenoiser,
    NLMParams,
    resolve_backend,
)
from nlmeans_studio.engine import backend as backend_module
from nlmeans_studio.engine.cpu import compiled
from nlmeans_studio.engine.video import denoiser as denoiser_module


@pytest.mark.parametrize(("past", "future"), [(0, 0), (2, 1), (1, 3)])
def test_stream_equals_random_access(backend_method, past, future) -> None:
    clip = noisy_clip("bikes", seed=2, frames=6, shape=(20, 24))
    backend, method = backend_method
    denoiser = Denoiser(NLMParams(h=40, patch_radius=2, frames_past=past, frames_future=future), backend, method=method)
    streamed = list(denoiser.stream(iter(clip)))
    assert len(streamed) == len(clip)
    for index, frame in enumerate(streamed):
        # The same frames go through the same code: equal to float32 rounding of the order.
        np.testing.assert_allclose(frame, denoiser.denoise_frame(clip, index), rtol=0, atol=1e-6)


def test_stream_yields_each_frame_once_its_future_has_arrived() -> None:
    clip = noisy_clip("random", seed=4, frames=5, shape=(12, 12))
    arrived = []

    def source():
        for index, frame in enumerate(clip):
            arrived.append(index)
            yield frame

    denoiser = Denoiser(NLMParams(h=30, patch_radius=1, search_radius=1, frames_past=1, frames_future=2), "cpu")
    outputs = denoiser.stream(source())
    for index in range(5):
        next(outputs)
        assert arrived[-1] == min(index + 2, 4)
    assert next(outputs, None) is None


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_export_stream_rounds_the_stream_to_integers(dtype) -> None:
    clip = noisy_clip("bikes", seed=3, frames=4, shape=(18, 22))
    denoiser = Denoiser(NLMParams(h=40, patch_radius=2, frames_past=1, frames_future=1), "cpu")
    full_scale = np.iinfo(dtype).max
    for exported, streamed in zip(denoiser.export_stream(iter(clip), dtype), denoiser.stream(iter(clip)), strict=True):
        assert exported.dtype == dtype
        # Rounded to the nearest level and clamped to [0, full scale]; where the float32 product
        # sits within its rounding of a half step (0.2 % of uint16 values here) either level is right.
        difference = exported - np.clip(np.round(streamed.astype(np.float64) * full_scale), 0, full_scale)
        assert np.abs(difference).max() <= 1 and np.mean(difference != 0) < 0.01


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_a_frame_comes_back_rounded_to_integers_where_asked(backend_method, dtype) -> None:
    """On every backend and method, as the float32 frame rounded (either level on a half step's
    float32 rounding); gray frames keep their shape; other dtypes are refused."""
    clip = noisy_clip("bigbuckbunny", seed=5, frames=3, shape=(19, 23))
    backend, method = backend_method
    denoiser = Denoiser(NLMParams(h=40, patch_radius=2, frames_past=1, frames_future=1), backend, method=method)
    full_scale = np.iinfo(dtype).max
    rounded = denoiser.denoise_frame(clip, 1, dtype=dtype)
    expected = np.clip(np.round(denoiser.denoise_frame(clip, 1).astype(np.float64) * full_scale), 0, full_scale)
    assert rounded.dtype == dtype and rounded.shape == clip[1].shape
    difference = rounded - expected
    assert np.abs(difference).max() <= 1 and np.mean(difference != 0) < 0.01
    assert denoiser.denoise_frame(clip[:, :, :, 0], 1, dtype=dtype).shape == clip[1].shape[:2]
    with pytest.raises(ValueError, match="dtype must be float32, uint8 or uint16, got float64"):
        denoiser.denoise_frame(clip, 1, dtype=np.float64)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, bool, "text"])
@pytest.mark.parametrize("kind", ["plain", "luma/chroma"])
def test_an_export_into_another_dtype_is_refused_saying_how_to_convert(kind, dtype) -> None:
    clip = noisy_clip("random", seed=4, frames=2, shape=(20, 20))
    params = NLMParams(h=10, patch_radius=1, search_radius=1)
    denoiser = Denoiser(params, "cpu") if kind == "plain" else LumaChromaDenoiser(params, 8.0, 6.0, backend="cpu")
    with pytest.raises(ValueError, match=r"output dtype must be float32, uint8 or uint16, got .*astype"):
        next(denoiser.export_stream(iter(clip), dtype))


def test_params_replaced_between_frames() -> None:
    clip = noisy_clip("random", seed=8, frames=4, shape=(14, 14))
    first, second = NLMParams(h=30, frames_past=1, frames_future=0), NLMParams(h=60, frames_past=1, frames_future=0)
    denoiser = Denoiser(first, "cpu")
    outputs = denoiser.stream(clip)
    np.testing.assert_array_equal(next(outputs), Denoiser(first, "cpu").denoise_frame(clip, 0))
    denoiser.params = second
    np.testing.assert_array_equal(next(outputs), Denoiser(second, "cpu").denoise_frame(clip, 1))
    with pytest.raises(TypeError, match="params must be an NLMParams, got dict"):
        denoiser.params = {"h": 3}


def test_constant_clip_is_unchanged(backend_method) -> None:
    clip = np.full((3, 15, 17, 3), [0.2, 0.5, 0.9], dtype=np.float32)
    backend, method = backend_method
    for weighting in ("bisquare", "exponential"):
        denoiser = Denoiser(NLMParams(h=10, weighting=weighting), backend, method=method)
        # Every weight multiplies the same value: only float32 rounding of the average remains.
        np.testing.assert_allclose(denoiser.denoise_frame(clip, 1), clip[1], rtol=0, atol=1e-6)


def test_tiny_h_returns_the_input(backend_method) -> None:
    clip = noisy_clip("bigbuckbunny", seed=9, frames=3, shape=(20, 20))
    backend, method = backend_method
    for center in ("one", "max"):
        denoiser = Denoiser(NLMParams(h=1e-3, weighting="bisquare", center_weight=center), backend, method=method)
        # Noisy patches are ~0.06 apart, 15 levels: every other bisquare weight is exactly 0.
        np.testing.assert_array_equal(denoiser.denoise_frame(clip, 1), clip[1])


def test_frames_too_small_are_refused() -> None:
    params = NLMParams(h=10, patch_radius=4, search_radius=3)
    denoiser = Denoiser(params, "cpu")
    message = r"frames of 20x7 pixels are too small for search_radius 3 and patch_radius 4: .* at least .* = 8 pixels"
    with pytest.raises(ValueError, match=message):
        denoiser.denoise_frame(np.zeros((2, 7, 20, 3), np.float32), 0)
    with pytest.raises(ValueError, match="too small"):
        list(denoiser.stream([np.zeros((1, 1, 3), np.float32)]))


@pytest.mark.parametrize(
    ("clip", "message"),
    [
        (
            np.zeros((2, 12, 12, 4), np.float32),
            r"\(H, W\) gray or \(H, W, C\) with C = 1 or 3, got shape \(12, 12, 4\)",
        ),
        (np.zeros((2, 12, 12, 3), np.int32), "uint8, uint16 or floating point, got dtype int32"),
        (np.full((2, 12, 12, 3), np.nan, np.float32), "finite, got NaN or infinity"),
        ([np.zeros((12, 12, 3)), np.zeros((12, 13, 3))], r"one shape, got \(12, 12, 3\) and then \(12, 13, 3\)"),
    ],
)
def test_bad_frames_are_refused(clip, message) -> None:
    with pytest.raises(ValueError, match=message):
        Denoiser(NLMParams(h=10, patch_radius=1, search_radius=1), "cpu").denoise_frame(clip, 0)


FLOAT_SCALE_MESSAGE = (
    r"float frames are read with 0..1 as full scale, but this frame's values average 128 \(from .* to .*\): "
    r"divide 8-bit values by 255"
)


def test_float_frames_on_the_8_bit_scale_are_refused() -> None:
    """A float clip in 0..255 was returned unchanged (h = 20 levels is 20/255 of full scale there)."""
    clip = (128 + np.random.default_rng(0).normal(0, 10, (3, 16, 16, 3))).astype(np.float32)
    denoiser = Denoiser(NLMParams(h=20, patch_radius=1, search_radius=1), "cpu")
    with pytest.raises(ValueError, match=FLOAT_SCALE_MESSAGE):
        denoiser.denoise_frame(clip, 1)
    with pytest.raises(ValueError, match=FLOAT_SCALE_MESSAGE):
        list(denoiser.stream(iter(clip)))


def test_float_frames_with_strong_unclipped_noise_are_taken() -> None:
    """Noise reaches far beyond [0, 1] in a few pixels (the window adds up to 100 levels, unclipped)
    without moving the mean: such frames are on the 0..1 scale and are filtered."""
    clip = np.float32(0.9) + np.random.default_rng(0).normal(0, 200 / 255, (3, 16, 16, 3)).astype(np.float32)
    assert clip.max() > 2 and clip.min() < -1
    frame = Denoiser(NLMParams(h=400, patch_radius=1, search_radius=1), "cpu").denoise_frame(clip, 1)
    assert np.std(frame) < np.std(clip[1])


def test_color_transform_must_match_the_channels() -> None:
    denoiser = Denoiser(NLMParams(h=10, patch_radius=1, search_radius=1, color_transform=np.eye(3)), "cpu")
    with pytest.raises(ValueError, match=r"color_transform is 3x3 but the frames have 1 channel\(s\)"):
        denoiser.denoise_frame(np.zeros((2, 12, 12), np.float32), 0)


@pytest.mark.parametrize("index", [-1, 2, 1.0, True])
def test_index_outside_the_clip(index) -> None:
    with pytest.raises(IndexError, match=r"index must be an integer in 0..1, got"):
        Denoiser(NLMParams(h=10), "cpu").denoise_frame(np.zeros((2, 12, 12, 3), np.float32), index)


def test_backend_and_method_selection(monkeypatch) -> None:
    denoiser = Denoiser(NLMParams(h=10), "cpu")
    assert (denoiser.backend, denoiser.method) == ("cpu", "fused")
    assert "cores" in denoiser.device_name
    assert Denoiser(NLMParams(h=10), "cpu", method="cascade").method == "cascade"
    with pytest.raises(ValueError, match="method must be 'fused' or 'cascade', got 'magic'"):
        Denoiser(NLMParams(h=10), "cpu", method="magic")
    with pytest.raises(ValueError, match="backend must be 'auto', 'cpu' or 'gpu', got 'tpu'"):
        Denoiser(NLMParams(h=10), "tpu")
    monkeypatch.setenv("NLMEANS_BACKEND", "cpu")
    assert resolve_backend("auto") == "cpu"
    monkeypatch.setenv("NLMEANS_BACKEND", "quantum")
    with pytest.raises(ValueError, match="NLMEANS_BACKEND must be 'auto', 'cpu' or 'gpu', got 'quantum'"):
        resolve_backend("auto")


def test_gpu_without_cupy_says_why(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` fail
    backend_module.gpu_unavailable_reason.cache_clear()
    try:
        with pytest.raises(BackendUnavailableError, match="the GPU backend is unavailable: CuPy is not installed"):
            Denoiser(NLMParams(h=10), "gpu")
        monkeypatch.delenv("NLMEANS_BACKEND", raising=False)
        assert resolve_backend("auto") == "cpu"
    finally:
        backend_module.gpu_unavailable_reason.cache_clear()


def test_a_cupy_that_fails_to_import_says_why(monkeypatch) -> None:
    """As a bundle missing a module CuPy needs: CuPy's page of advice shrinks to its cause."""

    class BrokenCupy:
        def find_spec(self, name, path=None, target=None):
            if name == "cupy":
                cause = "ModuleNotFoundError: No module named 'graphlib'"
                raise ImportError(f"=====\nFailed to import CuPy.\n\nOriginal error:\n  {cause}\n=====")

    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    monkeypatch.setattr(sys, "meta_path", [BrokenCupy(), *sys.meta_path])
    backend_module.gpu_unavailable_reason.cache_clear()
    try:
        reason = backend_module.gpu_unavailable_reason()
    finally:
        backend_module.gpu_unavailable_reason.cache_clear()
    assert reason == "CuPy is installed but does not import: ModuleNotFoundError: No module named 'graphlib'"


def test_engine_imports_without_qt_or_pyav(tmp_path) -> None:
    """The engine must run where Qt and PyAV are missing (the GPU machine has neither)."""
    # Run away from the repository: from its root, `import engine` would load a second copy under a
    # top-level name, whose numba cache entries the installed package then cannot unpickle.
    code = (
        "import sys\n"
        "for name in ('PySide6', 'pyqtgraph', 'av', 'nlmeans_studio.gui'): sys.modules[name] = None\n"
        "import numpy as np\n"
        "from nlmeans_studio import engine\n"
        "d = engine.Denoiser(engine.NLMParams(h=20, patch_radius=1, search_radius=1), 'cpu')\n"
        "print(d.denoise_frame(np.zeros((1, 8, 8, 3), np.float32), 0).shape)\n"
        "assert not any(m.split('.')[0] in ('PySide6', 'pyqtgraph', 'av') for m in sys.modules if sys.modules[m])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "(8, 8, 3)"


def test_the_engine_is_not_imported_under_a_second_name() -> None:
    """From the repository's root `import engine` finds the folder: refused, with the right name."""
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", "import engine"], capture_output=True, text=True, cwd=root)
    assert result.returncode == 1
    assert "ImportError: import nlmeans_studio.engine, not engine" in result.stderr


def test_warm_up_compiles_for_the_frame_size(backend_method) -> None:
    backend, method = backend_method
    denoiser = Denoiser(NLMParams(h=20, patch_radius=2, search_radius=2), backend, method=method)
    assert denoiser.warm_up(16, 18) is None
    with pytest.raises(ValueError, match="too small"):
        denoiser.warm_up(3, 3)


def test_the_cpu_kernel_compiles_once_for_every_parameter() -> None:
    """Radii, h, weighting, centre weight and the window are run-time values of one numba kernel."""
    from nlmeans_studio.engine.video.filters import fused_cpu

    clip = noisy_clip("random", seed=6, frames=3, shape=(16, 16))
    for params in [
        NLMParams(h=20, patch_radius=1, search_radius=1),
        NLMParams(h=35, patch_radius=3, search_radius=2, frames_past=2, frames_future=0, weighting="exponential"),
        NLMParams(h=50, patch_radius=0, search_radius=4, center_weight="max", color_transform=np.eye(3) * 2),
    ]:
        Denoiser(params, "cpu").denoise_frame(clip, 1)
    assert len(fused_cpu._denoise.signatures) == 1


def test_gray_frames_come_back_gray() -> None:
    """A (T, H, W) clip gave (H, W, 1) frames; each output now has its input frame's shape."""
    clip = noisy_clip("random", seed=5, frames=3, shape=(12, 14))[..., 0]
    denoiser = Denoiser(NLMParams(h=30, patch_radius=1, search_radius=1, frames_past=1, frames_future=1), "cpu")
    frame = denoiser.denoise_frame(clip, 1)
    assert frame.shape == (12, 14)
    streamed = list(denoiser.stream(iter(clip)))
    assert [output.shape for output in streamed] == [(12, 14)] * 3
    np.testing.assert_array_equal(streamed[1], frame)
    assert denoiser.denoise_frame(clip[..., np.newaxis], 1).shape == (12, 14, 1)


def test_one_denoiser_shared_by_threads_gives_the_serial_frames(backend_method) -> None:
    # A pool of threads sharing one Denoiser, each on its own frame: every result equals the
    # serial one (issue 32: each call's scratch was the Denoiser's, overwritten mid-frame).
    from concurrent.futures import ThreadPoolExecutor

    clip = noisy_clip("random", seed=5, frames=8, shape=(40, 300))
    backend, method = backend_method
    denoiser = Denoiser(NLMParams(h=40, patch_radius=2, frames_past=1, frames_future=1), backend, method=method)
    serial = [denoiser.denoise_frame(clip, index) for index in range(len(clip))]
    for _ in range(3):  # a race shows only now and then
        with ThreadPoolExecutor(max_workers=8) as pool:
            threaded = list(pool.map(lambda index: denoiser.denoise_frame(clip, index), range(len(clip))))
        for index, frame in enumerate(threaded):
            # The same frames go through the same code: equal to float32 rounding of the order.
            np.testing.assert_allclose(frame, serial[index], rtol=0, atol=1e-6, err_msg=f"frame {index}")


THREADED_SCRIPT = """
from concurrent.futures import ThreadPoolExecutor
import numpy as np
from nlmeans_studio.engine import Denoiser, NLMParams, denoise_volume

clip = np.random.default_rng(1).random((8, 40, 300, 3), dtype=np.float32)
denoiser = Denoiser(NLMParams(h=40, patch_radius=2, frames_past=1, frames_future=1), "cpu")
serial = [denoiser.denoise_frame(clip, index) for index in range(8)]
with ThreadPoolExecutor(8) as pool:
    threaded = list(pool.map(lambda index: denoiser.denoise_frame(clip, index), range(8)))
assert all(np.allclose(a, b, rtol=0, atol=1e-6) for a, b in zip(serial, threaded, strict=True))
volumes = [np.random.default_rng(seed).random((6, 12, 12), dtype=np.float32) for seed in range(4)]
with ThreadPoolExecutor(4) as pool:
    list(pool.map(lambda volume: denoise_volume(volume, h=0.3, search_radius=1, backend="cpu"), volumes))
"""


def test_threads_take_turns_on_numbas_own_threading_layer() -> None:
    # Where neither OpenMP nor TBB loads (macOS wheels without libomp, slim Linux images) numba
    # runs its workqueue layer, which aborted the process when two threads launched at once.
    environment = {**os.environ, "NUMBA_THREADING_LAYER": "workqueue"}
    run = subprocess.run([sys.executable, "-c", THREADED_SCRIPT], capture_output=True, text=True, env=environment,
                         timeout=240)  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]


def test_a_cpu_denoiser_says_once_that_its_first_frame_compiles(monkeypatch, caplog) -> None:
    # From the Python API the first compile (1-2 minutes on 2 cores) came with no word.
    monkeypatch.setattr(compiled, "_ANNOUNCED", type(compiled._ANNOUNCED)())  # a fresh process's
    monkeypatch.setattr(denoiser_module, "cpu_filter_compiles", lambda: False)
    with caplog.at_level(logging.WARNING, logger="nlmeans_studio.engine"):
        Denoiser(NLMParams(h=10), "cpu")
        assert caplog.messages == []  # numba's cache holds the filter: nothing to say
        monkeypatch.setattr(denoiser_module, "cpu_filter_compiles", lambda: True)
        for _ in range(2):
            Denoiser(NLMParams(h=10), "cpu")
    assert caplog.messages == [COMPILING]
