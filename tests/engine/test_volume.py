"""The volume filter (DESIGN.md §6) against the float64 reference of tests/volume_reference.py:
numba CPU, the CUDA kernels (both on the GPU; volume_direct here and volume_tiled in
test_volume_kernel_on_cpu.py on the CPU through tests/engine/cuda_on_cpu.h), slabs and several
GPUs, and the public boundary's errors."""

from __future__ import annotations

import itertools
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest
from emulated_cuda import COMPILER, compile_program
from test_volume_kernel_on_cpu import write_emulated_source
from volume_reference import reference_denoise_volume

from nlmeans_studio.engine import denoise_volume, estimate_volume_noise, suggest_volume_h
from nlmeans_studio.engine.volume.denoise import denoise_volume_slice, padded_volume
from nlmeans_studio.engine.volume.filter_gpu import copy_planes, kernel_name, source_planes, voxel_run
from nlmeans_studio.engine.volume.params import VolumeParams
from nlmeans_studio.engine.volume.slabs import filter_in_slabs, split_range, tapered_ranges

TEMPLATE = Path(__file__).parents[1] / "data" / "mni152_t1_crop.npz"

TOLERANCE = 1e-4  # voxels in [0, 1]: float32 sums of up to 27 x 2 squared differences and 1330 weights

CASES = [  # shape, patch radius, search radius, weighting, centre weight, h
    ((9, 10, 11), 1, 2, "exponential", "one", 0.3),
    ((8, 9, 12, 2), (1, 0, 2), (1, 2, 3), "bisquare", "max", 0.4),
    ((7, 9, 8), (0, 1, 1), (2, 1, 2), "exponential", "max", 0.05),  # small h: relative weights
    ((6, 7, 8), 1, (2, 3, 1), "bisquare", "one", 0.3),
    ((7, 8, 9), 1, 2, "exponential", "one", 0.03),  # u past 87: float32 weights underflow to 0
]


TILES_CASE = ((19, 70, 65, 3), (1, 1, 0), (2, 1, 3), "exponential", "max", 0.2)  # blocks on every axis, RGB
# volume_tiled wider than a tile: two 62-wide tiles and the last 16 columns in the one-column
# strip; a tile and 48 columns left, more than the strip's 30, so a second wide tile.
STRIP_CASES = [
    ((9, 20, 140), 1, 2, "exponential", "one", 0.3),
    ((6, 11, 110), 1, (1, 2, 3), "bisquare", "max", 0.4),
]


def _channels_last(volume: np.ndarray) -> dict:
    """``denoise_volume``'s channel_axis for a (Z, Y, X, C) volume: a 4D array's axes are named."""
    return {"channel_axis": 3} if np.ndim(volume) == 4 else {}


def _random(shape: tuple[int, ...], seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).random(shape, dtype=np.float32)


def _crop() -> np.ndarray:
    """A 12 x 14 x 13 crop of the MNI152 T1 template (tests/data/README.md), in [0, 1], with noise."""
    clean = np.load(TEMPLATE)["t1"].astype(np.float32) / 255
    return clean + np.random.default_rng(3).normal(0, 0.05, clean.shape).astype(np.float32)


def _gpu_or_skip() -> None:
    from nlmeans_studio.engine.backend import gpu_unavailable_reason

    reason = gpu_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)


@pytest.mark.parametrize(("shape", "patch", "search", "weighting", "center", "h"), CASES)
def test_cpu_matches_the_reference(shape, patch, search, weighting, center, h) -> None:
    volume = _random(shape)
    options = dict(h=h, patch_radius=patch, search_radius=search, weighting=weighting, center_weight=center)
    out = denoise_volume(volume, **_channels_last(volume), backend="cpu", **options)
    assert out.dtype == np.float32 and out.shape == volume.shape
    np.testing.assert_allclose(out, reference_denoise_volume(volume, **options), rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize(("weighting", "center"), [("exponential", "one"), ("bisquare", "max")])
def test_cpu_matches_the_reference_on_the_mri_template(weighting, center) -> None:
    volume = _crop()
    options = dict(h=0.05, patch_radius=1, search_radius=(2, 3, 3), weighting=weighting, center_weight=center)
    out = denoise_volume(volume, **_channels_last(volume), backend="cpu", **options)
    np.testing.assert_allclose(out, reference_denoise_volume(volume, **options), rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize("slabs", [2, 3, 7])
def test_slabs_equal_one_pass(slabs) -> None:
    volume = _random((7, 8, 9, 2), seed=4)
    options = dict(h=0.3, patch_radius=(1, 1, 0), search_radius=(2, 1, 2), backend="cpu")
    whole = denoise_volume(volume, **_channels_last(volume), **options)
    np.testing.assert_array_equal(denoise_volume(volume, **_channels_last(volume), slabs=slabs, **options), whole)


@pytest.mark.parametrize(("axis", "index"), [(0, 0), (0, 4), (1, 3), (2, 8)])
def test_a_slice_equals_that_plane_of_the_whole_volume(axis, index) -> None:
    volume = _random((7, 8, 9, 2), seed=6)
    options = dict(h=0.3, patch_radius=(1, 0, 1), search_radius=(2, 1, 3), center_weight="max", backend="cpu")
    plane = denoise_volume_slice(volume, index, axis=axis, **options)
    np.testing.assert_allclose(
        plane, np.take(denoise_volume(volume, **_channels_last(volume), **options), index, axis=axis), rtol=0, atol=1e-6
    )
    with pytest.raises(ValueError, match=r"index must be an integer in 0..6, got 7"):
        denoise_volume_slice(volume, 7, **options)
    with pytest.raises(ValueError, match=r"axis must be an integer in 0..2, got 3"):
        denoise_volume_slice(volume, 0, axis=3, **options)


def test_progress_reports_every_offset_pair_of_every_slab() -> None:
    reports = []
    denoise_volume(_random((6, 5, 5)), h=0.3, patch_radius=1, search_radius=1, backend="cpu", slabs=3,
                   progress=lambda done, total: reports.append((done, total)))  # fmt: skip
    assert reports == [(done, 39) for done in range(1, 40)]  # 13 pairs of 3^3 offsets, 3 slabs


def test_the_next_slab_is_padded_while_the_filter_works_and_the_volume_is_unchanged() -> None:
    """filter_in_slabs reads a filter's next slab on another thread during its current one."""
    from nlmeans_studio.engine.volume.filter_cpu import filter_padded_cpu

    volume = _random((10, 6, 7, 1), seed=8)
    params = VolumeParams.checked(0.3, 1, 1, "exponential", "one")
    ranges = split_range(10, 3)
    reading = {start: threading.Event() for start, _ in ranges}  # set when that slab's padding began
    overlapped = []

    def read_slab(start: int, stop: int) -> np.ndarray:
        reading[start].set()
        return padded_volume(volume, params.pad, (start, stop))

    def slab_filter(slab: np.ndarray, slab_params: VolumeParams, first_plane: int) -> np.ndarray:
        index = len(overlapped)
        if index + 1 < len(ranges):  # the next slab's padding starts while this one is filtered
            overlapped.append(reading[ranges[index + 1][0]].wait(timeout=10))
        else:
            overlapped.append(True)
        return filter_padded_cpu(slab, slab_params)

    out = filter_in_slabs(read_slab, volume.shape, params, len(ranges), [slab_filter])
    assert overlapped == [True, True, True]
    np.testing.assert_array_equal(out, filter_padded_cpu(padded_volume(volume, params.pad), params))


def _padding_cases(seed: int) -> list[tuple[np.ndarray, tuple[int, int, int], tuple[int, int]]]:
    """(volume, pad, output planes) on random shapes and anisotropic radii, 1-2 channels, tiny
    volumes (each axis as small as its radii allow), slabs at both ends, in the middle, whole."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(12):
        patch, search = rng.integers(0, 3, 3), rng.integers(0, 4, 3)
        least = patch + search + 1
        shape = (*(least + rng.integers(0, 6, 3) * rng.integers(0, 2, 3)), int(rng.integers(1, 3)))
        volume = rng.random(shape, dtype=np.float32)
        pad = tuple(int(p) for p in patch + search)
        depth = shape[0]
        middle = (depth // 3, max(depth // 3 + 1, 2 * depth // 3))
        for planes in [(0, depth), (0, 1), (depth - 1, depth), middle, (0, middle[1]), (middle[0], depth)]:
            cases.append((volume, pad, planes))
    return cases


def test_a_slabs_source_planes_are_the_planes_padded_volume_mirrors() -> None:
    """The GPU uploads planes [low, high) of the volume and mirrors them by index there: on the
    CPU, those planes padded in y and x the same way give padded_volume's slab exactly."""
    for volume, pad, planes in _padding_cases(seed=11):
        low, high, indices = source_planes(*planes, volume.shape[0], pad[0])
        assert 0 <= low < high <= volume.shape[0] and indices.dtype == np.int32
        assert indices.min() >= 0 and indices.max() < high - low
        widths = [(0, 0), (pad[1], pad[1]), (pad[2], pad[2]), (0, 0)]
        rebuilt = np.pad(volume[low:high][indices], widths, mode="reflect").transpose(0, 3, 1, 2)
        np.testing.assert_array_equal(rebuilt, padded_volume(volume, pad, planes))


@pytest.mark.parametrize("planes", [1, 2, 7, 40])
def test_planes_copied_on_threads_equal_one_copy(planes) -> None:
    source = np.random.default_rng(planes).random((planes, 5, 6, 2), dtype=np.float32)[:, ::-1]  # a strided view
    target = np.full(source.shape, np.nan, dtype=np.float32)
    copy_planes(target, source)
    np.testing.assert_array_equal(target, source)


@pytest.mark.parametrize(
    ("length", "runners", "least", "thinnest", "thickest"),
    [
        (512, 1, 1, 16, None),
        (512, 2, 1, 16, None),
        (600, 3, 1, 16, None),
        (512, 1, 12, 16, None),
        (2000, 2, 1, 16, 100),
        (10, 2, 1, 1, None),
        (7, 1, 1, 1, None),
    ],
)
def test_each_runners_slabs_double_to_its_middle_and_halve_to_its_end(
    length, runners, least, thinnest, thickest
) -> None:
    ranges = tapered_ranges(length, runners, least=least, thinnest=thinnest, thickest=thickest)
    assert ranges[0][0] == 0 and ranges[-1][1] == length and len(ranges) >= max(least, runners)
    assert all(stop == start for (_, stop), (start, _) in itertools.pairwise(ranges))
    sizes = [stop - start for start, stop in ranges]
    assert min(sizes) >= 1
    if thickest is not None:
        assert max(sizes) <= thickest + 4  # the bounds' rounding to the z tiles
    for runner in range(runners):
        mine = sizes[runner::runners]
        middle = mine.index(max(mine))
        assert len(mine) >= 3 and mine[0] < max(mine) and mine[-1] < max(mine)  # thin at both ends
        assert min(mine[0], mine[-1]) >= thinnest - 4
        assert all(a < b for a, b in itertools.pairwise(mine[: middle + 1]) if b < max(mine) - 4)  # rising
        assert all(a > b for a, b in itertools.pairwise(mine[middle:]) if a < max(mine) - 4)  # falling
    if length >= 64 * runners:
        assert all(start % 4 == 0 for start, _ in ranges)  # on the kernel's z tiles


def test_the_study_volume_on_one_gpu_starts_and_ends_with_a_thin_slab() -> None:
    sizes = [stop - start for start, stop in tapered_ranges(512, 1, thinnest=16)]
    assert sizes == [24, 44, 96, 184, 96, 44, 24]  # 1, 2, 4, 8, 4, 2, 1 units of 23.3 planes, on multiples of 4
    assert tapered_ranges(40, 1, thinnest=16) == split_range(40, 1)  # too thin to taper: even


def test_ranges_split_evenly() -> None:
    assert split_range(10, 3) == [(0, 3), (3, 6), (6, 10)]
    assert split_range(2, 5) == [(0, 1), (1, 2)]


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_channels_filtered_separately_are_each_filtered_alone_with_their_own_h(backend) -> None:
    """channels="separately": each channel equals the reference of that channel alone at its own
    h, the whole volume and a preview's plane alike, on the CPU and the GPU."""
    if backend == "gpu":
        _gpu_or_skip()
    volume = _random((7, 8, 9, 3), seed=7)
    options = dict(patch_radius=(1, 0, 1), search_radius=(2, 1, 2), center_weight="max", backend=backend)
    strengths = [0.1, 0.3, 0.6]
    filtered = denoise_volume(volume, **_channels_last(volume), h=strengths, channels="separately", **options)
    reference = np.stack(
        [
            reference_denoise_volume(volume[..., c], h=h, **{k: v for k, v in options.items() if k != "backend"})
            for c, h in enumerate(strengths)
        ],
        axis=-1,
    )
    np.testing.assert_allclose(filtered, reference, rtol=0, atol=TOLERANCE)
    plane = denoise_volume_slice(volume, 3, axis=1, h=strengths, channels="separately", **options)
    np.testing.assert_allclose(plane, filtered[:, 3], rtol=0, atol=1e-6)
    one_h = denoise_volume(
        volume, **_channels_last(volume), h=0.3, channels="separately", **options
    )  # one h for every channel
    np.testing.assert_array_equal(one_h[..., 1], filtered[..., 1])
    assert not np.allclose(
        one_h[..., 1], denoise_volume(volume, **_channels_last(volume), h=0.3, **options)[..., 1], atol=1e-3
    )


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_the_result_goes_into_out_where_given(backend) -> None:
    """out=: the same volume bit for bit, written into the caller's array (its pages already
    written: the GPU's copies out cost half), on one device and every device, channels together
    or separately; arrays that cannot take it are refused before any work."""
    if backend == "gpu":
        _gpu_or_skip()
    volume = _random((9, 10, 11, 2), seed=8)
    options = dict(h=0.3, patch_radius=1, search_radius=(1, 2, 2), backend=backend)
    placements = [dict(), dict(channels="separately")] + ([dict(devices="all", slabs=3)] if backend == "gpu" else [])
    for placement in placements:
        expected = denoise_volume(volume, **_channels_last(volume), **options, **placement)
        out = np.full(volume.shape, np.nan, np.float32)
        assert denoise_volume(volume, **_channels_last(volume), out=out, **options, **placement) is out
        np.testing.assert_array_equal(out, expected)
    one = np.full(volume.shape[:3], np.nan, np.float32)
    denoise_volume(volume[..., 0], out=one, **options)
    np.testing.assert_array_equal(one, denoise_volume(volume[..., 0], **options))
    for bad, message in (
        (np.empty(volume.shape, np.float64), "out must be a float32 array of the volume's shape"),
        (np.empty((9, 10, 11), np.float32), r"shape \(9, 10, 11, 2\), got float32 \(9, 10, 11\)"),
        (np.empty((11, 10, 9, 2), np.float32).transpose(2, 1, 0, 3), "C-contiguous"),
        (volume, "must not share memory with the volume"),
        ([0.0], "got list"),
    ):
        with pytest.raises(ValueError, match=message):
            denoise_volume(volume, **_channels_last(volume), out=bad, **options)


def test_a_channel_filtered_separately_is_not_held_back_by_the_others_edges() -> None:
    """A first-time user's two-channel stack: channel 0 flat with noise, channel 1 bright spheres.
    Filtered together, channel 0 kept nearly all its noise along the spheres' edges (the patch
    distance there is the other channel's); separately it is smoothed everywhere."""
    rng = np.random.default_rng(2)
    z, y, x = np.mgrid[:16, :32, :32]
    spheres = np.where((z - 8) ** 2 + (y - 16) ** 2 + (x - 16) ** 2 < 36, 1000.0, 0.0)
    volume = np.stack([np.full(spheres.shape, 100.0), spheres], axis=-1) + rng.normal(0, 30, (*spheres.shape, 2))
    edge = np.abs(np.sqrt((z - 8) ** 2 + (y - 16) ** 2 + (x - 16) ** 2) - 6) < 1.5
    options = dict(h=[33.0, 33.0], patch_radius=1, search_radius=3, backend="cpu")
    together = denoise_volume(volume, **_channels_last(volume), h=33.0, patch_radius=1, search_radius=3, backend="cpu")
    separately = denoise_volume(volume, **_channels_last(volume), channels="separately", **options)
    assert together[..., 0][edge].std() > 20  # of 30: hardly filtered
    assert separately[..., 0][edge].std() < 8


@pytest.mark.parametrize(
    ("volume", "options", "match"),
    [
        (np.zeros((8, 8, 8, 2)), {"h": [1.0, 2.0], "channels": "together"}, r"h is one number where channels are"),
        (np.zeros((8, 8, 8, 2)), {"h": [1.0], "channels": "separately"}, r"one a channel \(2\), got 1"),
        (np.zeros((8, 8, 8, 2)), {"h": [1.0, -1.0], "channels": "separately"}, "h must be a finite number > 0"),
        (np.zeros((8, 8, 8, 2)), {"channels": "apart"}, "channels must be"),
        (np.zeros((2, 8, 8, 8, 1)), {}, r"\(Z, Y, X\) or \(Z, Y, X, C\) array, got 5 dimensions"),
        (np.zeros((8, 8)), {}, "got 2 dimensions"),
        (np.full((8, 8, 8), np.nan), {}, "must be finite, got 512 NaN"),
        (np.zeros((8, 8, 8), dtype=complex), {}, r"real numbers, got dtype complex128: take the magnitude first"),
        (np.zeros((8, 8, 8), dtype=[("R", "u1"), ("G", "u1"), ("B", "u1")]), {}, "fields R, G, B: give them as a chan"),
        (type("Nifti1Image", (), {"get_fdata": lambda self: None})(), {}, "a nibabel image, not an array: pass image"),
        (np.zeros((6, 20, 20)), {"search_radius": 5}, r"smaller than the filter's window.*\(7, 7, 7\)"),
        (np.zeros((0, 8, 8), np.float32), {"h": 5}, r"volume of shape \(0, 8, 8\) holds no voxels"),  # "1 or 2 voxels"
        (  # a (Z, Y, X, T) time series: its 64 time points were filtered as channels
            np.zeros((10, 32, 48, 64)),
            {},
            r"shape \(10, 32, 48, 64\) has 64 channels \(its last axis\) and at most 16 are filtered together: a "
            r"time series is filtered one time point at a time with series_axis=3",
        ),
        (  # a (T, Z, Y, X) one: the message says which axes it measured
            np.zeros((3, 32, 48, 12)),
            {"search_radius": 3},
            r"shape \(3, 32, 48, 12\) is smaller than the filter's window: Z, Y, X = \(3, 32, 48\) \(the first "
            r"three axes; the last, of 12, is read as channels: a time series .*\), and each must be at least .* = "
            r"\(5, 5, 5\)",
        ),
        (np.zeros((8, 8, 8)), {"h": 0}, "h must be a finite number > 0"),
        (np.zeros((8, 8, 8)), {"h": float("nan")}, "h must be a finite number > 0"),
        (np.zeros((8, 8, 8)), {"search_radius": (1, 2)}, r"integer or a \(z, y, x\) triple"),
        (np.zeros((8, 8, 8)), {"search_radius": 17}, r"search_radius must be an integer in 0..16, got 17"),
        (np.zeros((8, 8, 8)), {"patch_radius": (1, -1, 1)}, r"patch_radius\[y\] must be an integer in 0..8"),
        (np.zeros((8, 8, 8)), {"weighting": "gauss"}, "weighting must be"),
        (np.zeros((8, 8, 8)), {"center_weight": "all"}, "center_weight must be"),
        (np.zeros((8, 8, 8)), {"backend": "tpu"}, "backend must be"),
        (np.zeros((8, 8, 8)), {"devices": "some"}, "devices must be None, 'all' or a non-empty list"),
        (np.zeros((8, 8, 8)), {"devices": [0, 0]}, "must not repeat"),
        (np.zeros((8, 8, 8)), {"devices": [0], "backend": "cpu"}, "devices selects GPUs"),
    ],
)
def test_bad_input_is_refused_clearly(volume, options, match) -> None:
    arguments = dict(h=1.0, search_radius=1, backend="cpu") | options
    with pytest.raises(ValueError, match=match):
        denoise_volume(volume, **_channels_last(volume), **arguments)


def _run_kernel_on_cpu(folder: Path, volume: np.ndarray, params: VolumeParams) -> np.ndarray:
    """volume.cu's kernel compiled with g++ (tests/engine/cuda_on_cpu.h), one emulated thread at a time."""
    data = volume if volume.ndim == 4 else volume[..., np.newaxis]
    planes, rows, columns, channels = data.shape
    padded_volume(data, params.pad).tofile(folder / "padded.bin")
    az, ay, ax = params.search_radius
    run = voxel_run(params, channels)
    write_emulated_source(folder)
    main = f"""int main() {{
    std::vector<float> padded({padded_volume(data, params.pad).size}), out({planes * rows * columns * channels});
    FILE* file = fopen("padded.bin", "rb");
    fread(padded.data(), sizeof(float), padded.size(), file);
    fclose(file);
    blockDim = {{{columns}, {rows}, 1}};
    for (int z = 0; z < {-(-planes // run)}; ++z)
        for (int y = 0; y < {rows}; ++y)
            for (int x = 0; x < {columns}; ++x) {{
                blockIdx = {{0, 0, z}};
                threadIdx = {{x, y, 0}};
                {kernel_name(params, channels)}(padded.data(), out.data(), {planes}, {rows},
                    {columns}, {az}, {ay}, {ax}, {params.patch_sum_scale(channels)!r}f);
            }}
    file = fopen("out.bin", "wb");
    fwrite(out.data(), sizeof(float), out.size(), file);
    fclose(file);
}}
"""
    compile_program(folder, "volume.inc", main)
    subprocess.run(["./kernel"], cwd=folder, check=True)
    return np.fromfile(folder / "out.bin", dtype=np.float32).reshape(volume.shape)


@pytest.mark.skipif(COMPILER is None, reason="needs g++ (C++20) to run the CUDA kernel on the CPU")
@pytest.mark.parametrize(("shape", "patch", "search", "weighting", "center", "h"), CASES)
def test_cuda_kernel_on_the_cpu_matches_the_reference(tmp_path, shape, patch, search, weighting, center, h) -> None:
    volume = _random(shape)
    params = VolumeParams.checked(h, patch, search, weighting, center)
    options = dict(h=h, patch_radius=patch, search_radius=search, weighting=weighting, center_weight=center)
    out = _run_kernel_on_cpu(tmp_path, volume, params)
    np.testing.assert_allclose(out, reference_denoise_volume(volume, **options), rtol=0, atol=TOLERANCE)


@pytest.mark.gpu
@pytest.mark.parametrize(("shape", "patch", "search", "weighting", "center", "h"), CASES)
def test_gpu_matches_the_reference(shape, patch, search, weighting, center, h) -> None:
    _gpu_or_skip()
    volume = _random(shape)
    options = dict(h=h, patch_radius=patch, search_radius=search, weighting=weighting, center_weight=center)
    out = denoise_volume(volume, **_channels_last(volume), backend="gpu", **options)
    assert out.dtype == np.float32 and out.shape == volume.shape
    np.testing.assert_allclose(out, reference_denoise_volume(volume, **options), rtol=0, atol=TOLERANCE)
    np.testing.assert_allclose(
        out, denoise_volume(volume, **_channels_last(volume), backend="cpu", **options), rtol=0, atol=TOLERANCE
    )


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["tiled", "tiled-12-warps", "direct"])
@pytest.mark.parametrize(("shape", "patch", "search", "weighting", "center", "h"), [*CASES, TILES_CASE, *STRIP_CASES])
def test_each_gpu_kernel_matches_the_reference(kind, shape, patch, search, weighting, center, h) -> None:
    """volume_tiled (with its layout, and with 12 warps a block) and volume_direct alike
    (denoise_volume takes the tiled one where it fits), every voxel written (the output starts as NaN)."""
    _gpu_or_skip()
    import cupy

    from nlmeans_studio.engine.gpu.device import device_attributes
    from nlmeans_studio.engine.volume.filter_gpu import tiled_layout, volume_launcher

    volume = _random(shape, seed=len(shape) + 7)
    params = VolumeParams.checked(h, patch, search, weighting, center)
    data = volume if volume.ndim == 4 else volume[..., np.newaxis]
    layout = None
    if kind == "tiled-12-warps":
        layout = tiled_layout(params, data.shape[3], device_attributes(cupy, cupy.cuda.Device().id)[0], warps=12)
    out = cupy.full(data.shape, np.nan, dtype=cupy.float32)
    _, launch = volume_launcher(cupy, params, data.shape, kind.split("-")[0], layout)
    launch(cupy.asarray(padded_volume(data, params.pad)), out)
    options = dict(h=h, patch_radius=patch, search_radius=search, weighting=weighting, center_weight=center)
    expected = reference_denoise_volume(volume, **options)
    np.testing.assert_allclose(cupy.asnumpy(out).reshape(volume.shape), expected, rtol=0, atol=TOLERANCE)


@pytest.mark.gpu
def test_gpu_slabs_and_every_device_equal_one_pass(monkeypatch) -> None:
    _gpu_or_skip()
    import cupy

    from nlmeans_studio.engine.volume import denoise

    volume = _crop()
    options = dict(h=0.05, patch_radius=1, search_radius=(2, 3, 3), backend="gpu")
    whole = denoise_volume(volume, **_channels_last(volume), **options)
    np.testing.assert_array_equal(denoise_volume(volume, **_channels_last(volume), slabs=3, **options), whole)
    devices = list(range(cupy.cuda.runtime.getDeviceCount()))
    np.testing.assert_array_equal(denoise_volume(volume, **_channels_last(volume), devices=devices, **options), whole)
    np.testing.assert_array_equal(
        denoise_volume(volume, **_channels_last(volume), devices="all", slabs=5, **options), whole
    )
    monkeypatch.setattr(denoise, "THINNEST_SLAB", 1)  # the 12 planes tapered: 1, 3, 4, 3, 1 on one GPU
    np.testing.assert_array_equal(denoise_volume(volume, **_channels_last(volume), **options), whole)
    np.testing.assert_array_equal(denoise_volume(volume, **_channels_last(volume), devices="all", **options), whole)


@pytest.mark.gpu
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("plane", [0, 7, -1])  # the first slab, a middle one, the last
def test_the_gpu_finds_a_non_finite_voxel_in_any_slab_on_any_device(bad, plane) -> None:
    _gpu_or_skip()
    volume = _crop()
    volume[plane, 5, 6] = bad
    for options in (dict(slabs=1), dict(slabs=4), dict(slabs=5, devices="all")):
        with pytest.raises(ValueError, match="volume must be finite, got 1 NaN or infinite voxels"):
            denoise_volume(
                volume,
                **_channels_last(volume),
                h=0.05,
                patch_radius=1,
                search_radius=(2, 3, 3),
                backend="gpu",
                **options,
            )
    volume[plane, 5, 6] = 0.5  # and the pipeline's count starts again at zero in the next call
    denoise_volume(volume, **_channels_last(volume), h=0.05, patch_radius=1, search_radius=(2, 3, 3), backend="gpu")


@pytest.mark.gpu
def test_the_gpu_pads_a_slab_exactly_as_padded_volume() -> None:
    _gpu_or_skip()
    import cupy

    from nlmeans_studio.engine.volume.filter_gpu import pad_slab_gpu

    for volume, pad, planes in _padding_cases(seed=12):
        low, high, indices = source_planes(*planes, volume.shape[0], pad[0])
        padded = pad_slab_gpu(cupy, cupy.asarray(volume[low:high]), cupy.asarray(indices), pad)
        np.testing.assert_array_equal(cupy.asnumpy(padded), padded_volume(volume, pad, planes))


@pytest.mark.gpu
@pytest.mark.parametrize(("shape", "patch", "search", "weighting", "center", "h"), [*CASES, TILES_CASE, *STRIP_CASES])
def test_gpu_volume_equals_the_host_padded_kernel_bit_for_bit(
    monkeypatch, shape, patch, search, weighting, center, h
) -> None:
    """denoise_volume (slabs mirrored on the GPU, staged in chunks of 1-3 planes, dealt over the
    devices) equals the kernel on the slab padded on the host, as it ran before, bit for bit."""
    _gpu_or_skip()
    import cupy

    from nlmeans_studio.engine.volume import filter_gpu as volume_gpu

    volume = _random(shape, seed=len(shape) + 9)
    params = VolumeParams.checked(h, patch, search, weighting, center)
    data = volume if volume.ndim == 4 else volume[..., np.newaxis]
    out = cupy.full(data.shape, np.nan, dtype=cupy.float32)
    _, launch = volume_gpu.volume_launcher(cupy, params, data.shape)
    launch(cupy.asarray(padded_volume(data, params.pad)), out)
    expected = cupy.asnumpy(out).reshape(volume.shape)
    options = dict(h=h, patch_radius=patch, search_radius=search, weighting=weighting, center_weight=center)
    plane_bytes = 4 * int(np.prod(data.shape[1:]))
    for staging_planes, slabs, devices in [(1000, None, None), (1, 2, None), (3, 3, "all"), (2, shape[0], "all")]:
        monkeypatch.setattr(volume_gpu, "STAGING_BYTES", staging_planes * plane_bytes)
        got = denoise_volume(volume, **_channels_last(volume), backend="gpu", slabs=slabs, devices=devices, **options)
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_allclose(expected, reference_denoise_volume(volume, **options), rtol=0, atol=TOLERANCE)
    for axis in range(3):
        for index in (0, volume.shape[axis] - 1):
            plane = denoise_volume_slice(volume, index, axis=axis, backend="gpu", **options)
            np.testing.assert_allclose(plane, np.take(expected, index, axis=axis), rtol=0, atol=1e-6)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", [(0, 0, 0), (3, 4, 5), (-1, -1, -1)])
def test_all_finite_finds_every_nan_and_infinity_wherever_it_is(bad, where, monkeypatch) -> None:
    from nlmeans_studio.engine.volume import checks
    from nlmeans_studio.engine.volume.checks import all_finite

    monkeypatch.setattr(checks, "FINITE_BLOCK_BYTES", 2 * 7 * 8 * 4)  # two planes a block, as a large volume's

    volume = np.random.default_rng(1).normal(size=(6, 7, 8, 2)).astype(np.float32) * 1e30  # large, finite
    assert all_finite(volume) and all_finite(volume.astype(np.float64)) and all_finite(np.zeros((3, 3, 3), int))
    assert all_finite(volume, parallel_bytes=64)  # in runs of planes on threads, as large volumes are
    volume[(*where, 1)] = bad
    assert not all_finite(volume)
    assert not all_finite(volume, parallel_bytes=64) and not all_finite(volume[:, :, ::-1], parallel_bytes=64)
    with pytest.raises(ValueError, match="got 1 NaN or infinite voxels"):
        denoise_volume(volume, **_channels_last(volume), h=1.0, patch_radius=1, search_radius=1, backend="cpu")


def _numba_out_of_memory() -> SystemError:
    """What a numba function returns when an allocation fails in its threads."""
    try:
        raise MemoryError("Allocation failed (probably too large).")
    except MemoryError as error:
        try:
            raise SystemError("CPUDispatcher(<function _row_sums>) returned a result with an exception set") from error
        except SystemError as wrapped:
            return wrapped


@pytest.mark.parametrize("failure", [MemoryError("Unable to allocate 15.3 MiB"), _numba_out_of_memory()])
def test_memory_running_out_mid_run_says_what_to_lower(monkeypatch, failure) -> None:
    # Past the estimate of engine/memory.py, or where no limit lets it estimate: NumPy's bare
    # 'Unable to allocate', or numba's SystemError from its threads (a traceback on the command line).
    from nlmeans_studio.engine.volume import filter_cpu as volume_cpu

    def fail(*arguments: object) -> None:
        raise failure

    monkeypatch.setattr(volume_cpu, "filter_padded_cpu", fail)
    with pytest.raises(
        MemoryError, match=r"^out of memory \(.+\); use fewer threads \(NUMBA_NUM_THREADS.+crop the volume"
    ):
        denoise_volume(np.zeros((8, 8, 8), np.float32), h=1.0, search_radius=1, backend="cpu")


def test_without_h_the_noise_sets_it_as_denoise_volume_does() -> None:
    """h=None: the volume's noise gives h (suggest_volume_h), one a channel where they are filtered apart."""
    ramp = np.linspace(0, 100, 24)[:, None, None] + np.zeros((24, 20, 22))
    volume = (ramp + np.random.default_rng(3).normal(0, 5, ramp.shape)).astype(np.float32)
    options = {"patch_radius": 1, "search_radius": 1, "backend": "cpu"}
    h = suggest_volume_h(estimate_volume_noise(volume), patch_radius=1)
    assert np.array_equal(denoise_volume(volume, **options), denoise_volume(volume, h=h, **options))
    two = np.stack([volume, 3 * volume], axis=-1)  # three times the noise in the second channel
    each = [suggest_volume_h(estimate_volume_noise(two[..., c]), patch_radius=1) for c in range(2)]
    assert each[1] == pytest.approx(3 * each[0], rel=0.05)
    apart = {"channels": "separately", "channel_axis": 3, **options}
    assert np.array_equal(denoise_volume(two, **apart), denoise_volume(two, h=each, **apart))
    with pytest.raises(ValueError, match=r"the volume is constant: .*; give h instead"):
        denoise_volume(np.ones((8, 8, 8), np.float32), **options)
