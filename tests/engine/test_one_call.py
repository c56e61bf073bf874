"""``denoise`` (engine.video.one_call), through the public API: the filter the command line chooses,
the given array's shape, dtype and range back, refusals that name the axis, threads, the doctest,
and CuPy arrays filtered on their GPU with the copies over the bus counted."""

from __future__ import annotations

import dataclasses
import doctest
import logging
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import nlmeans_studio
from nlmeans_studio.engine import (
    COMPILING,
    Denoiser,
    NLMParams,
    SyntheticNoise,
    apply_estimate,
    choose_filter,
    denoise,
    estimate_noise,
    gpu_unavailable_reason,
    matrix_for,
    sure_sample_length,
)
from nlmeans_studio.engine.frames import at_full_scale

SMALL = {"patch_radius": 1, "search_radius": 1}  # the smallest window the tests allow: fast
WINDOW = NLMParams(**SMALL)
MATRIX = matrix_for(2, 48)  # an untagged 48-line picture: BT.601, as denoise reads an untagged file


def _picture(
    seed: int, frames: int = 1, channels: int = 3, sigma: object = 10, size: tuple[int, int] = (48, 64)
) -> np.ndarray:
    """(T, H, W, C) uint8 of ``size`` (H, W): a smooth ramp, moving one pixel a frame, with white noise.

    Of ``sigma`` levels, or sigmas broadcast over (T, 1, 1, C): one a frame or one a channel. The
    ramp rises 48 and 64 levels over the height and width, whatever the size.
    """
    height, width = size
    rows, columns = np.mgrid[0:height, 0:width]
    rows, columns = rows * 48 // height, columns * 64 // width
    clean = np.stack(
        [np.stack([90 + rows + t, 80 + columns, 150 + 0 * rows][:channels], axis=-1) for t in range(frames)]
    )
    noise = np.random.default_rng(seed).normal(0, 1, clean.shape) * np.asarray(sigma)
    return np.clip(np.rint(clean + noise), 0, 255).astype(np.uint8)


def _exported(choice, frames: np.ndarray, dtype=np.uint8, bit_depth: int | None = None) -> np.ndarray:
    """``frames`` (T, H, W, C) through ``choice``'s filter on the CPU, as an export writes them."""
    return np.stack(list(choice.denoiser("cpu", bit_depth=bit_depth).export_stream(iter(frames), dtype)))


def test_without_h_or_sigma_it_is_the_filter_denoise_chooses_sure_included() -> None:
    # Less noise on the first and last frame: SURE's factor tells the middle frames from the first ones.
    clip = _picture(1, frames=6, sigma=np.array([4, 10, 10, 10, 10, 4])[:, None, None, None])
    estimate = estimate_noise(clip)
    length = sure_sample_length(WINDOW)
    middle = (len(clip) - length) // 2  # denoise's sample: the clip's middle frames, as the command line's
    choice = choose_filter(estimate, WINDOW, matrix=MATRIX, sample=clip[middle : middle + length])
    assert choice.how == "SURE on the clip"  # white noise: SURE's factor (and mode)
    assert np.array_equal(denoise(clip, backend="cpu", **SMALL), _exported(choice, clip))
    image = clip[2]
    choice = choose_filter(estimate_noise(image), WINDOW, matrix=MATRIX, sample=image[None])
    assert np.array_equal(denoise(image, backend="cpu", **SMALL), _exported(choice, image[None])[0])


def test_a_gray_clip_is_filtered_as_it_is() -> None:
    clip = _picture(2, frames=3, channels=1)[..., 0]  # (T, H, W)
    choice = choose_filter(estimate_noise(clip[..., None]), WINDOW, sample=clip[..., None])
    assert choice.luma_chroma is None
    assert np.array_equal(
        denoise(clip, time_axis=0, backend="cpu", **SMALL), _exported(choice, clip[..., None])[..., 0]
    )


def test_sigma_gives_the_filter_chosen_for_white_noise_of_that_sigma() -> None:
    """As for measured noise (SURE on the frames chooses the factor and centre weight), without measuring."""
    image = _picture(3)[0]
    noise = SyntheticNoise(12.0).estimate(3)
    choice = choose_filter(noise, WINDOW, matrix=MATRIX, sample=image[None], backend="cpu")
    assert choice.how == "SURE on the clip"
    assert np.array_equal(denoise(image, sigma=12, backend="cpu", **SMALL), _exported(choice, image[None])[0])


def test_h_is_the_plain_filter_at_that_h() -> None:
    gray = _picture(4, channels=1)[0, ..., 0]
    expected = Denoiser(NLMParams(h=8.0, **SMALL), "cpu").export_stream([gray], np.uint8)
    assert np.array_equal(denoise(gray, h=8, backend="cpu", **SMALL), next(expected)[..., 0])
    colour = _picture(4, sigma=[3, 3, 20])[0]  # its channels decorrelated where the noise says so, as denoise --h does
    params = apply_estimate(WINDOW, estimate_noise(colour), h=8.0)
    assert params.color_transform is not None  # a noisy blue channel: the noise lies off the gray axis
    expected = Denoiser(params, "cpu").export_stream([colour], np.uint8)
    assert np.array_equal(denoise(colour, h=8, backend="cpu", **SMALL), next(expected))


FULL_SCALE = {np.uint8: 255, np.uint16: 65535, np.float32: 1.0, np.float64: 1.0}


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32, np.float64])
@pytest.mark.parametrize("layout", ["gray image", "colour image", "colour clip"])
def test_the_dtype_shape_and_range_come_back(dtype, layout) -> None:
    frames = _picture(5, frames=3 if layout == "colour clip" else 1, channels=1 if layout == "gray image" else 3)
    data = {"gray image": frames[0, ..., 0], "colour image": frames[0], "colour clip": frames}[layout]
    full_scale = FULL_SCALE[dtype]
    given = (data.astype(np.float64) * (full_scale / 255)).astype(dtype)  # uint16: 257 x the 8-bit values
    result = denoise(given, sigma=10, backend="cpu", **SMALL)
    assert result.dtype == dtype and result.shape == data.shape
    reference = denoise(data.astype(np.float32) / 255, sigma=10, backend="cpu", **SMALL)  # the same picture
    # Integers are rounded to their levels: within half a level of the float result (and float32's rounding).
    assert np.abs(result / full_scale - reference).max() <= 0.5 / full_scale + 1e-6
    assert result.min() >= 0 and result.max() <= full_scale


def test_uint16_of_fewer_bits_comes_back_at_its_depth() -> None:
    image = _picture(6)[0].astype(np.uint16) * 4  # 10-bit samples, 0..1020
    sample = at_full_scale(image, 10)[None]  # SURE's frames, at 16-bit full scale
    choice = choose_filter(SyntheticNoise(10.0).estimate(3), WINDOW, matrix=MATRIX, sample=sample, backend="cpu")
    result = denoise(image, sigma=10, bit_depth=10, backend="cpu", **SMALL)
    assert result.dtype == np.uint16 and result.max() <= 1023
    assert np.array_equal(result, _exported(choice, image[None], np.uint16, bit_depth=10)[0])
    dark = (image // 32).astype(np.uint16)  # values all under 2^12: 16-bit only when told so
    assert denoise(dark, sigma=1, bit_depth=16, backend="cpu", **SMALL).dtype == np.uint16
    with pytest.raises(ValueError, match=r"values all fit in 9 bits .* pass bit_depth=9 .* or bit_depth=16"):
        denoise(dark, h=10, backend="cpu", **SMALL)


def test_sigma_0_gives_the_data_back_unchanged() -> None:
    texture = np.random.default_rng(8).integers(0, 256, (2, 32, 40, 3), dtype=np.uint8)
    result = denoise(texture, sigma=0, backend="cpu", **SMALL)
    assert np.array_equal(result, texture) and not np.shares_memory(result, texture)


def test_with_h_frames_too_small_to_measure_are_filtered_in_their_channels() -> None:
    image = _picture(9, size=(10, 12))[0]
    expected = Denoiser(NLMParams(h=8.0, **SMALL), "cpu").export_stream([image], np.uint8)
    assert np.array_equal(denoise(image, h=8, backend="cpu", **SMALL), next(expected))


def test_big_endian_samples_give_what_native_ones_give() -> None:
    image = _picture(10)[0].astype(np.uint16) * 257
    native = denoise(image, sigma=10, backend="cpu", **SMALL)
    swapped = denoise(image.astype(">u2"), sigma=10, backend="cpu", **SMALL)
    assert np.array_equal(swapped, native)


def test_time_and_channel_axes_anywhere_give_the_same_frames() -> None:
    clip = _picture(7, frames=3)  # (T, H, W, C)
    expected = denoise(clip, sigma=10, backend="cpu", **SMALL)
    moved = clip.transpose(1, 3, 2, 0)  # (H, C, W, T)
    result = denoise(moved, sigma=10, time_axis=-1, channel_axis=1, backend="cpu", **SMALL)
    assert np.array_equal(result, expected.transpose(1, 3, 2, 0))
    channels_first = clip.transpose(3, 0, 1, 2)  # (C, T, H, W): time is the first other axis
    result = denoise(channels_first, sigma=10, channel_axis=0, backend="cpu", **SMALL)
    assert np.array_equal(result, expected.transpose(3, 0, 1, 2))
    gray = clip[..., 0]
    expected = denoise(gray, sigma=10, time_axis=0, backend="cpu", **SMALL)
    result = denoise(gray.transpose(1, 2, 0), sigma=10, time_axis=2, backend="cpu", **SMALL)  # (H, W, T)
    assert np.array_equal(result, expected.transpose(1, 2, 0))


@pytest.mark.parametrize(
    ("data", "options", "match"),
    [
        (np.zeros((48, 64, 16), np.uint8), {}, r"channel_axis=-1 of data of shape \(48, 64, 16\) has 16 entries"),
        (np.zeros((48, 64, 4), np.uint8), {}, r"has 4 entries.*: RGBA\? denoise the colour \(data\[\.\.\., :3\]\)"),
        (np.zeros((5, 48, 64), np.uint8), {}, r"has 64 entries.*needs time_axis=0; a 3D volume.*denoise_volume"),
        (np.zeros((3, 48, 64, 3), np.uint8), {"channel_axis": 1}, r"channel_axis=1 .* has 48 entries"),
        (np.zeros((48, 64), np.uint8), {"time_axis": 0}, r"time_axis=0 names an axis of a 2D array"),
        (np.zeros((3, 48, 64, 3), np.uint8), {"time_axis": 3}, r"time_axis and channel_axis name the same axis \(3\)"),
        (np.zeros((3, 48, 64, 3), np.uint8), {"time_axis": 4}, r"time_axis must be an integer in -4..3 .* got 4"),
        (np.zeros((48, 64, 3), np.uint8), {"channel_axis": None}, r"channel_axis=None says data .* is gray"),
        (np.zeros((2, 3, 48, 64, 3), np.uint8), {}, r"got 5 dimensions of shape \(2, 3, 48, 64, 3\)"),
        (np.zeros((48, 64, 3), np.int32), {}, r"uint8, uint16, float32 or float64 .* got int32"),
        (np.full((48, 64, 3), 128.0), {"sigma": 10}, r"divide 8-bit values by 255"),
        (np.zeros((48, 64, 3), np.uint8), {"h": 5, "sigma": 5}, r"give h or sigma, not both"),
        (np.zeros((48, 64, 3), np.uint8), {"roi": (0, 0, 16, 16), "sigma": 5}, r"give roi .* or sigma, not both"),
        (np.zeros((48, 64, 3), np.uint8), {"roi": (56, 0, 16, 16)}, r"the region \(56, 0, 16, 16\) leaves the 64x48"),
        (np.zeros((48, 64, 3), np.uint8), {"sigma": 300}, r"sigma must be a number of 8-bit levels in 0..255, got 300"),
        (np.zeros((48, 64, 3), np.uint8), {"h": 0}, r"h must be a finite number > 0"),
        (np.zeros((48, 64, 3), np.uint8), {"search_radius": 20}, r"search_radius must be an integer in 0..16, got 20"),
        (np.zeros((48, 64, 3), np.uint16), {"bit_depth": 8}, r"bit_depth must be an integer in 9..16"),
        (np.zeros((48, 64, 3), np.uint16), {"bit_depth": "10"}, r"bit_depth must be .* got '10'"),
        (np.zeros((48, 64, 3), np.uint8), {"bit_depth": 10}, r"bit_depth is for uint16 data .* got uint8 data"),
        (np.zeros((48, 64, 3), np.float32), {"h": 5, "bit_depth": 10}, r"bit_depth is for uint16 .* got float32"),
        (None, {}, r"data must be an array of numbers .* got None"),
        ("image.png", {}, r"got 'image.png'; to denoise a file, read it first or run nlmeans-studio denoise"),
        (np.full((48, 64), 1023, np.uint16), {"sigma": 1, "bit_depth": 9}, r"bit_depth=9 holds samples up to 511"),
        (np.zeros((12, 12, 3), np.uint8), {}, r"too small for the automatic noise estimate .* give the strength h"),
        (np.zeros((4, 4), np.uint8), {"h": 5}, r"too small for search_radius 3 and patch_radius 4"),
        (np.zeros((0, 16, 16), np.uint8), {"time_axis": 0, "h": 5}, r"data of shape \(0, 16, 16\) holds no samples"),
        (np.zeros((0, 0), np.uint8), {}, r"data of shape \(0, 0\) holds no samples"),  # was (1, 0, 0, 1)
        (np.array([[0.5, np.nan], [np.inf, 0.2]] * 16), {"h": 5}, r"got 32 NaN or infinite values: replace them"),
    ],
)
def test_what_it_cannot_filter_is_refused_saying_why(data, options, match) -> None:
    with pytest.raises(ValueError, match=match):
        denoise(data, backend="cpu", **options)


def test_eight_threads_sharing_it_give_what_serial_calls_give() -> None:
    inputs = [_picture(seed, frames=1 + seed % 3) for seed in range(8)]  # images and clips, the default filter
    serial = [denoise(frames, backend="cpu", **SMALL) for frames in inputs]
    with ThreadPoolExecutor(8) as pool:
        threaded = list(pool.map(lambda frames: denoise(frames, backend="cpu", **SMALL), inputs))
    assert all(np.array_equal(a, b) for a, b in zip(serial, threaded, strict=True))


def test_the_first_compile_is_announced_once_and_only_when_it_happens(monkeypatch, caplog) -> None:
    from nlmeans_studio.engine.cpu import compiled
    from nlmeans_studio.engine.video import one_call

    image = _picture(8)[0]
    monkeypatch.setattr(compiled, "_ANNOUNCED", type(compiled._ANNOUNCED)())  # a fresh process's
    monkeypatch.setattr(one_call, "cpu_filter_compiles", lambda: False)
    with caplog.at_level(logging.WARNING, logger="nlmeans_studio.engine"):
        denoise(image, sigma=10, backend="cpu", **SMALL)
        assert caplog.messages == []  # numba's cache holds the filter: nothing to announce
        monkeypatch.setattr(one_call, "cpu_filter_compiles", lambda: True)
        for _ in range(2):
            denoise(image, sigma=10, backend="cpu", **SMALL)
    assert caplog.messages == [COMPILING]


def test_the_docstring_examples_run() -> None:
    """The Examples of ``denoise``'s docstring, as ``python -m doctest`` runs them."""
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in doctest.DocTestFinder().find(nlmeans_studio.denoise, "denoise", globs={}):
        runner.run(test)
    failed, tried = runner.summarize(verbose=False)
    assert tried >= 6 and failed == 0


def test_the_top_level_package_and_the_engine_export_the_same_function() -> None:
    assert nlmeans_studio.denoise is denoise
    assert "denoise" in nlmeans_studio.__all__


@pytest.mark.gpu
def test_a_cupy_array_comes_back_a_cupy_array_on_its_device() -> None:
    assert gpu_unavailable_reason() is None
    import cupy

    clip = _picture(9, frames=3)
    on_gpu = cupy.asarray(clip)
    result = denoise(on_gpu, sigma=10, backend="gpu", **SMALL)
    assert isinstance(result, cupy.ndarray) and result.device == on_gpu.device and result.dtype == np.uint8
    on_cpu = denoise(clip, sigma=10, backend="cpu", **SMALL)
    # The backends agree to 1e-4 of full scale: an output on a half level may round either way.
    assert np.abs(cupy.asnumpy(result).astype(int) - on_cpu).max() <= 1
    floats = cupy.asarray(clip[..., 0].astype(np.float32) / 255)
    result = denoise(floats, time_axis=0, backend="gpu", **SMALL)  # the noise measured on a host copy
    assert isinstance(result, cupy.ndarray) and result.shape == floats.shape and result.dtype == cupy.float32


@dataclasses.dataclass(frozen=True)
class _BusCopy:
    """A copy between the host and a GPU: its direction, and the shape and bytes of the array copied."""

    to_host: bool
    shape: tuple[int, ...]
    nbytes: int

    def of_frames(self, height: int, width: int) -> bool:
        """Whether it holds whole height x width frames (the picture), not a table, a matrix or a crop."""
        return any(self.shape[axis : axis + 2] == (height, width) for axis in range(len(self.shape) - 1))


@pytest.fixture
def bus_copies(monkeypatch) -> list[_BusCopy]:
    """The host <-> GPU copies made through CuPy while the test runs, in order.

    CuPy moves data from Cython, where no Python wrapper sees the CUDA runtime's copies; but each
    move the engine can ask for starts at one of CuPy's Python entry points, and those are wrapped
    here, still calling the originals: ``ndarray.get`` (which ``cupy.asnumpy`` calls: to the
    host), and ``ndarray.set``, assignment of a NumPy array into a CuPy one, and
    ``cupy.array`` / ``asarray`` / ``asanyarray`` / ``ascontiguousarray`` of host data (to the
    GPU). A NumPy function cannot copy a CuPy array unseen: CuPy refuses the implicit conversion
    (``__array__`` raises TypeError).
    """
    import cupy

    copies: list[_BusCopy] = []

    def on_host(data: object) -> bool:
        return not isinstance(data, cupy.ndarray) and not hasattr(data, "__cuda_array_interface__")

    get, set_, setitem = cupy.ndarray.get, cupy.ndarray.set, cupy.ndarray.__setitem__

    def counted_get(self, *args, **kwargs):
        copies.append(_BusCopy(True, self.shape, self.nbytes))
        return get(self, *args, **kwargs)

    def counted_set(self, array, *args, **kwargs):
        copies.append(_BusCopy(False, self.shape, self.nbytes))
        return set_(self, array, *args, **kwargs)

    def counted_setitem(self, key, value):
        if isinstance(value, np.ndarray):
            copies.append(_BusCopy(False, value.shape, value.nbytes))
        return setitem(self, key, value)

    def counted(convert):
        def counted_convert(data, *args, **kwargs):
            result = convert(data, *args, **kwargs)
            if on_host(data):
                copies.append(_BusCopy(False, result.shape, result.nbytes))
            return result

        return counted_convert

    try:
        monkeypatch.setattr(cupy.ndarray, "get", counted_get)
    except TypeError:  # CuPy before 13, whose ndarray is an extension type
        pytest.skip("cupy.ndarray's methods cannot be wrapped in this CuPy (an extension type before CuPy 13)")
    monkeypatch.setattr(cupy.ndarray, "set", counted_set)
    monkeypatch.setattr(cupy.ndarray, "__setitem__", counted_setitem)
    for name in ("array", "asarray", "asanyarray", "ascontiguousarray"):
        monkeypatch.setattr(cupy, name, counted(getattr(cupy, name)))
    return copies


LARGE = (208, 256)  # frames larger than SURE's 192 x 192 crop, so that a crop is told from a frame
# layout: (dtype, its picture from _picture at LARGE, the call's axes)
CUPY_INPUTS = {
    "gray clip uint8": (np.uint8, lambda: _picture(10, frames=4, channels=1, size=LARGE)[..., 0], {"time_axis": 0}),
    "colour clip uint8": (np.uint8, lambda: _picture(11, frames=4, size=LARGE), {}),
    "gray image float32": (np.float32, lambda: _picture(12, channels=1, size=LARGE)[0, ..., 0], {}),
    "colour image float32": (np.float32, lambda: _picture(13, size=LARGE)[0], {}),
}


def _on_the_last_gpu(layout: str):
    """The layout's picture as a CuPy array on the last GPU: one other than the current where there are several."""
    import cupy

    dtype, make, _ = CUPY_INPUTS[layout]
    picture = make()
    picture = picture if dtype == np.uint8 else picture.astype(np.float32) / 255
    with cupy.cuda.Device(cupy.cuda.runtime.getDeviceCount() - 1):
        return cupy.asarray(picture)


def _as_measured(given, layout: str) -> _BusCopy:
    """The copy to the host of ``given`` as ``denoise`` measures its noise: as (T, H, W, C) frames."""
    frames = given if "clip" in layout else given[None]
    frames = frames if "colour" in layout else frames[..., None]
    return _BusCopy(True, frames.shape, frames.nbytes)


def _filtered_counting(layout: str, copies: list[_BusCopy], **options) -> tuple[object, list[_BusCopy], list[_BusCopy]]:
    """``denoise`` the layout's CuPy array; return the array, the copies of whole frames made, and the others.

    Also checks that the result is a CuPy array of the input's shape and dtype on its device, and
    that the counting sees a copy: the result's own download afterwards.
    """
    import cupy

    given = _on_the_last_gpu(layout)
    copies.clear()
    result = denoise(given, backend="gpu", **SMALL, **CUPY_INPUTS[layout][2], **options)
    made = list(copies)
    assert isinstance(result, cupy.ndarray) and result.device == given.device
    assert result.shape == given.shape and result.dtype == given.dtype
    cupy.asnumpy(result)
    assert copies[len(made) :] == [_BusCopy(True, result.shape, result.nbytes)]  # the hooks are live
    height, width = LARGE
    frames = [copy for copy in made if copy.of_frames(height, width)]
    return given, frames, [copy for copy in made if not copy.of_frames(height, width)]


@pytest.mark.gpu
@pytest.mark.parametrize("layout", CUPY_INPUTS)
def test_with_h_a_cupy_array_stays_on_its_gpu_but_for_the_colour_noise_estimate(layout, bus_copies) -> None:
    """With h, a gray array never crosses the bus; a colour one goes to the host once, whole.

    ``denoise(h=...)`` decorrelates a colour array's channels where its noise lies off the gray
    axis, as ``denoise --h`` does: the noise is measured (``estimate_noise``, NumPy) on a host copy
    of the frames, one copy of the array. A gray array has no channels to decorrelate and is not
    measured. The filtering itself (conversion to float32 and back, the kernels) stays on the GPU;
    what goes up is the kernels' small launch tables: the frames' addresses and the colour matrix.
    """
    given, frames, others = _filtered_counting(layout, bus_copies, h=8.0)
    assert frames == ([_as_measured(given, layout)] if "colour" in layout else [])
    assert all(not copy.to_host and copy.nbytes <= 1024 for copy in others)  # addresses, a 3 x 3 matrix


@pytest.mark.gpu
@pytest.mark.parametrize("layout", CUPY_INPUTS)
def test_with_h_automatic_a_cupy_array_goes_to_the_host_once_for_the_noise(layout, bus_copies) -> None:
    """Without h or sigma, the array goes to the host once, whole; only SURE's crops cross otherwise.

    The noise is measured (``estimate_noise``, NumPy) on a host copy of the frames: one copy of
    the array to the host. Where the noise suits Stein's unbiased risk estimate (this white noise
    does), ``choose_filter`` scores about 20 strengths on the centre SURE_CROP x SURE_CROP pixels
    of the middle frames of that host copy, each run sending its crops to the GPU and its output
    back: many copies, each at most a float32 RGB crop, whatever the frames' size. Then the array
    is filtered where it is, as with h.
    """
    from nlmeans_studio.engine.video.default_filter import SURE_CROP

    given, frames, others = _filtered_counting(layout, bus_copies)
    assert frames == [_as_measured(given, layout)]
    assert all(copy.nbytes <= SURE_CROP * SURE_CROP * 3 * 4 for copy in others)


def test_floats_in_0_to_1_come_back_in_0_to_1() -> None:
    """A scientist's float image of saturated colours came back from -0.047 to 1.045 (luma/chroma's way
    back to RGB leaves the gamut), and skimage.img_as_ubyte refused it. Values the input has past 1 stay."""
    pattern = np.zeros((64, 64, 3), np.float32)
    pattern[:, :32, 0], pattern[:, 32:, 2], pattern[::2, :, 1] = 1, 1, 1
    noisy = np.clip(pattern + np.random.default_rng(0).normal(0, 0.05, pattern.shape), 0, 1).astype(np.float32)
    result = denoise(noisy, backend="cpu")
    assert result.dtype == np.float32 and result.min() >= 0 and result.max() <= 1
    noisy[0, 0, 0] = 1.7  # a highlight past full scale (linear light)
    assert denoise(noisy, backend="cpu").max() <= 1.7


def test_a_masked_array_with_masked_values_is_refused_and_one_without_them_filtered() -> None:
    """A scientist's masked array lost its mask without a word; its masked values were averaged in."""
    image = np.random.default_rng(3).integers(0, 256, (32, 40, 3), dtype=np.uint8)
    masked = np.ma.masked_array(image, mask=np.zeros(image.shape, bool))
    assert np.array_equal(denoise(masked, h=5, backend="cpu", **SMALL), denoise(image, h=5, backend="cpu", **SMALL))
    masked[0, 0] = np.ma.masked
    with pytest.raises(ValueError, match=r"masked array with 3 masked values.*data\.filled\(value\)"):
        denoise(masked, h=5, backend="cpu", **SMALL)


def test_a_sixteen_bit_clips_light_noise_is_filtered_at_the_sigma_it_has() -> None:
    """A camera's 16-bit counts with noise of 0.07 8-bit levels (18 counts): the measured or given
    sigma is what h follows, not a floor of half an 8-bit level (noise-free 8-bit footage's), under
    which the filter took out 5 times the noise and came back worse than it went in."""
    rng = np.random.default_rng(4)
    y, x = np.mgrid[0:64, 0:80]
    clean = np.stack([2000 + 1500 * np.sin((x + 2 * t) / 7.0) * np.cos(y / 11.0) for t in range(5)])
    noisy = np.clip(np.rint(clean + rng.normal(0, 18, clean.shape)), 0, 65535).astype(np.uint16)

    def error(clip: np.ndarray) -> float:
        return float(np.sqrt(np.mean((clip.astype(np.float64) - clean) ** 2)))

    measured = denoise(noisy, time_axis=0, bit_depth=16, backend="cpu")
    given = denoise(noisy, time_axis=0, bit_depth=16, sigma=18 * 255 / 65535, backend="cpu")
    assert measured.dtype == given.dtype == np.uint16
    assert error(measured) < 0.8 * error(noisy) and error(given) < 0.8 * error(noisy)
