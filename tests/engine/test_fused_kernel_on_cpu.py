"""The fused CUDA kernel, run on the CPU, against the float64 reference.

CI has no GPU, so ``engine/kernels/nlm.cu`` is compiled here as C++ with ``cuda_on_cpu.h``
(one fiber per CUDA thread, a barrier per block) and run on small clips, with the tile layout
``engine.video.filters.fused_layout`` picks. This checks the kernel's indexing, layouts, rounds and
barriers on every commit; the GPU tests check the same kernel on the device.

Tolerance: max abs difference <= 1e-4 on values in [0, 1], as the exactness grid; uint8
output within 1 level of the rounded reference. 8-bit clips run the kernel's packed path
(distances on the bytes, in integers) and are compared with the reference on bytes / 255.
"""

import subprocess
from pathlib import Path

import numpy as np
import pytest
from clips import noisy_clip, random_color_transform
from emulated_cuda import COMPILER, compile_program
from reference import reference_denoise

from nlmeans_studio.engine import NLMParams
from nlmeans_studio.engine.frames import integer_scale
from nlmeans_studio.engine.gpu.device import CUDA_TYPES, KERNELS
from nlmeans_studio.engine.video.filters.fused_gpu import fused_kernel_name
from nlmeans_studio.engine.video.filters.fused_layout import (
    FUSED_THREADS,
    FusedGrid,
    FusedLayout,
    fused_grid,
    fused_layout,
    patch_scale,
    split_tiles,
)

TOLERANCE = 1e-4

H100_SHARED_BYTES = 232448  # per block, opt-in
H100_MULTIPROCESSORS = 132

pytestmark = pytest.mark.skipif(COMPILER is None, reason="needs g++ (C++20) to run the CUDA kernel on the CPU")


def run_kernel_on_cpu(
    folder: Path,
    clip: np.ndarray,
    center: int,
    params: NLMParams,
    out_dtype=np.float32,
    shared_limit=H100_SHARED_BYTES,
    concurrent=H100_MULTIPROCESSORS,
    guide: np.ndarray | None = None,
) -> tuple[np.ndarray, FusedLayout, FusedGrid]:
    """Compile nlm.cu's fused kernel for ``params`` and run it on ``clip``, the window itself
    (its frames, Dp before ``center`` and Df after; float32, or uint8:
    the packed path, as FusedGpuFilter runs 8-bit frames), with the grid FusedGpuFilter makes
    for ``concurrent`` blocks at once; returns the (H, W, C) output, the layout and the grid used.
    ``guide``, a window of ``clip``'s shape, gives the distances (the guided kernel, never packed)."""
    frames, height, width, channels = clip.shape
    transformed, guided = params.color_transform is not None, guide is not None
    packed = clip.dtype == np.uint8 and not transformed and not guided
    layout = fused_layout(
        params.patch_radius, params.search_radius, channels, transformed or guided, shared_limit, packed
    )
    grid = fused_grid(layout, height, width, frames, concurrent)
    scale = patch_scale(params, channels, packed)
    source = (
        (KERNELS / "nlm.cu")
        .read_text()
        .replace("extern __shared__ float shared[];", "float* shared = emulated_shared_memory;")
    )
    (folder / "nlm.inc").write_text(source)
    out_type = CUDA_TYPES[np.dtype(out_dtype)]
    kernel = fused_kernel_name(params, channels, layout, packed=packed, guided=guided, out_dtype=out_dtype)
    full_scale = 255.0 if out_dtype == np.uint8 else 1.0
    main = f"""int main() {{
    const int frames = {frames}, height = {height}, width = {width}, channels = {channels};
    std::vector<float> data((size_t)frames * channels * height * width), transform(channels * channels);
    std::vector<float> guide_data(data.size());
    std::vector<unsigned> words((size_t)frames * height * width);
    FILE* file = fopen("frames.bin", "rb");
    fread(data.data(), sizeof(float), data.size(), file);
    fclose(file);
    file = fopen("packed.bin", "rb");
    fread(words.data(), sizeof(unsigned), words.size(), file);
    fclose(file);
    file = fopen("transform.bin", "rb");
    fread(transform.data(), sizeof(float), transform.size(), file);
    fclose(file);
    file = fopen("guide.bin", "rb");
    fread(guide_data.data(), sizeof(float), guide_data.size(), file);
    fclose(file);
    std::vector<const float*> pointers, guides;
    std::vector<const unsigned*> packed;
    for (int t = 0; t < frames; ++t) {{
        pointers.push_back(data.data() + (size_t)t * channels * height * width);
        packed.push_back(words.data() + (size_t)t * height * width);
        guides.push_back(guide_data.data() + (size_t)t * channels * height * width);
    }}
    std::vector<{out_type}> output((size_t)height * width * channels);
    std::vector<float> partials({grid.split * grid.pieces * layout.partial_floats(channels)} + 1, std::nanf(""));
    std::vector<int> arrivals({grid.split} + 1, 0);
    launch({grid.blocks}, 1, {FUSED_THREADS}, {layout.shared_bytes}, [&] {{
        {kernel}(pointers.data(), {"packed.data()" if packed else "nullptr"}, frames, {center}, height, width,
                 {"transform.data()" if transformed else "nullptr"}, {scale!r}f, output.data(), {full_scale!r}f,
                 {grid.tiles_x}, {grid.whole_tiles}, {grid.parts}, partials.data(), arrivals.data(),
                 {"guides.data()" if guided else "nullptr"});
    }});
    for (int count : arrivals) if (count != 0) return 1;  // every split tile's counter back at zero
    file = fopen("output.bin", "wb");
    fwrite(output.data(), sizeof(output[0]), output.size(), file);
    fclose(file);
}}
"""
    compile_program(folder, "nlm.inc", main)
    for name, frames_of in (("frames", clip), ("guide", clip if guide is None else guide)):
        planes = frames_of.transpose(0, 3, 1, 2).astype(np.float32) * np.float32(integer_scale(frames_of.dtype))
        np.ascontiguousarray(planes).tofile(folder / f"{name}.bin")
    words = sum(clip[..., channel].astype(np.uint32) << (8 * channel) for channel in range(channels))
    np.ascontiguousarray(words, dtype=np.uint32).tofile(folder / "packed.bin")
    transform = params.color_transform if transformed else np.eye(channels)
    np.asarray(transform, dtype=np.float32).tofile(folder / "transform.bin")
    subprocess.run(["./kernel"], cwd=folder, check=True)
    output = np.fromfile(folder / "output.bin", dtype=out_dtype).reshape(height, width, channels)
    return output, layout, grid


CASES = [
    # (params, (frames, height, width, channels), centre): partial tiles on every side, several
    # rounds and groups, every option; the names say what each adds.
    pytest.param(
        NLMParams(h=40, patch_radius=2, search_radius=3, frames_past=1, frames_future=1, weighting="bisquare"),
        (3, 40, 70, 3),
        1,
        id="two-tile-columns-three-frames",
    ),
    pytest.param(
        NLMParams(h=30, patch_radius=4, search_radius=2, frames_past=0, frames_future=1, center_weight="max"),
        (2, 33, 60, 3),
        0,
        id="centre-max-first-frame",
    ),
    pytest.param(
        NLMParams(
            h=30,
            patch_radius=1,
            search_radius=1,
            frames_past=1,
            frames_future=0,
            weighting="exponential",
            color_transform=random_color_transform(2),
        ),
        (2, 20, 17, 3),
        1,
        id="exponential-color-transform",
    ),
    pytest.param(
        NLMParams(h=30, patch_radius=3, search_radius=5, frames_past=0, frames_future=0),
        (1, 40, 60, 1),
        0,
        id="gray-single-frame",
    ),
    pytest.param(
        NLMParams(h=40, patch_radius=8, search_radius=16, frames_past=1, frames_future=0, center_weight="max"),
        (2, 26, 27, 1),
        1,
        id="largest-radii",
    ),
    pytest.param(
        NLMParams(h=40, patch_radius=0, search_radius=0, frames_past=1, frames_future=1),
        (3, 9, 10, 3),
        1,
        id="no-spatial-search",
    ),
]


@pytest.mark.parametrize(("params", "shape", "center"), CASES)
def test_fused_kernel_matches_the_reference(tmp_path, params, shape, center) -> None:
    frames, height, width, channels = shape
    clip = noisy_clip("random", seed=height + width, frames=frames, shape=(height, width), channels=channels)
    output, _, _ = run_kernel_on_cpu(tmp_path, clip, center, params)
    np.testing.assert_allclose(output, reference_denoise(clip, center, params), rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize(("shared_limit", "tile_height"), [(100_000, 16), (45_000, 8)])
def test_shorter_tiles_match_the_reference(tmp_path, shared_limit, tile_height) -> None:
    params = NLMParams(h=40, patch_radius=4, search_radius=3, frames_past=1, frames_future=0)
    clip = noisy_clip("bigbuckbunny", seed=4, frames=2, shape=(36, 44))
    output, layout, _ = run_kernel_on_cpu(tmp_path, clip, 1, params, shared_limit=shared_limit)
    assert layout.tile_height == tile_height
    np.testing.assert_allclose(output, reference_denoise(clip, 1, params), rtol=0, atol=TOLERANCE)


PACKED_CASES = [
    pytest.param(
        NLMParams(h=40, patch_radius=4, search_radius=3, frames_past=1, frames_future=1),
        (3, 40, 70, 3),
        1,
        id="color-three-frames",
    ),
    pytest.param(
        NLMParams(h=25, patch_radius=2, search_radius=5, frames_past=0, frames_future=1, weighting="exponential"),
        (2, 33, 60, 3),
        0,
        id="exponential-first-frame",
    ),
    pytest.param(
        NLMParams(h=30, patch_radius=8, search_radius=4, frames_past=1, frames_future=0, center_weight="max"),
        (2, 26, 27, 1),
        1,
        id="gray-largest-patch",
    ),
]


@pytest.mark.parametrize(("params", "shape", "center"), PACKED_CASES)
def test_packed_path_matches_the_reference_on_8_bit_frames(tmp_path, params, shape, center) -> None:
    frames, height, width, channels = shape
    clip = noisy_clip("random", seed=height * width, frames=frames, shape=(height, width), channels=channels)
    clip8 = np.clip(np.rint(clip * 255), 0, 255).astype(np.uint8)
    output, layout, _ = run_kernel_on_cpu(tmp_path, clip8, center, params)
    assert layout.z_stride == layout.tile_width + 2 * (params.search_radius + params.patch_radius)  # Y of its own
    np.testing.assert_allclose(output, reference_denoise(clip8 / 255.0, center, params), rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
@pytest.mark.parametrize(
    ("d", "search_radius", "concurrent", "split", "parts"),
    [
        (1, 3, 4, 2, 2),  # 2 of 6 tiles in 3 frames x 2 parts of their 4 rounds
        (0, 3, 8, 6, 4),  # every tile in 4 parts of one round each
        (0, 1, 8, 6, 4),  # A = 1 has one round: 3 of the 4 parts have none
    ],
)
def test_split_tiles_add_up_to_the_reference(tmp_path, dtype, d, search_radius, concurrent, split, parts) -> None:
    """With a few blocks at once, the grid's last tiles run as pieces (a frame and a part of its
    rounds each) and the last piece to finish adds them up."""
    params = NLMParams(
        h=40, patch_radius=2, search_radius=search_radius, frames_past=d, frames_future=d, center_weight="max"
    )
    clip = noisy_clip("random", seed=21, frames=2 * d + 1, shape=(60, 150))  # 2 x 3 tiles of 32 x 56
    if dtype == np.uint8:
        clip = np.clip(np.rint(clip * 255), 0, 255).astype(np.uint8)
    output, _, grid = run_kernel_on_cpu(tmp_path, clip, d, params, concurrent=concurrent)
    assert (grid.split, grid.parts) == (split, parts)
    expected = reference_denoise(clip * integer_scale(clip.dtype), d, params)
    np.testing.assert_allclose(output, expected, rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize(
    ("h", "dtype", "transformed", "concurrent"),
    [
        (0.5, np.float32, False, 1),
        (0.5, np.float32, False, H100_MULTIPROCESSORS),
        (0.5, np.uint8, False, H100_MULTIPROCESSORS),
        (1.5, np.uint8, False, 1),
        (1.5, np.float32, True, H100_MULTIPROCESSORS),
    ],
)
def test_relative_exponential_weights_at_small_h(tmp_path, h, dtype, transformed, concurrent) -> None:
    """Exponential weights with the largest weight as the centre's, at h where exp(-u) leaves
    float32's range on a real crop: each pixel's shift, its rebasing, and the split tiles'
    pieces of different shifts (one block at a time: whole tiles; 132: the last wave split)."""
    params = NLMParams(
        h=h,
        patch_radius=2,
        search_radius=3,
        weighting="exponential",
        center_weight="max",
        color_transform=random_color_transform(5) if transformed else None,
    )
    clip = noisy_clip("bikes", seed=int(h * 10), frames=3, shape=(36, 44))
    if dtype == np.uint8:
        clip = np.clip(np.rint(clip * 255), 0, 255).astype(np.uint8)
    output, _, grid = run_kernel_on_cpu(tmp_path, clip, 1, params, concurrent=concurrent)
    assert (grid.split > 0) == (concurrent > 1)
    expected = reference_denoise(clip * integer_scale(clip.dtype), 1, params)
    np.testing.assert_allclose(output, expected, rtol=0, atol=TOLERANCE)


def test_the_last_wave_is_split_into_pieces_that_fill_it() -> None:
    """1080p at B = 4 is 1190 tiles for the H100's 132 multiprocessors: the last 2 run as 3 frames
    (or 1) x 4 parts of their rounds; 4K's last 72 as one wave of frames; a full wave stays whole."""
    assert split_tiles(1190, 3, 132) == (2, 4)
    assert split_tiles(1190, 1, 132) == (2, 4)
    assert split_tiles(4692, 3, 132) == (72, 1)
    assert split_tiles(1188, 1, 132) == (0, 1)


def test_kernel_names_are_the_template_instances_the_kernel_was_built_for() -> None:
    """fused_kernel_name, which the launch and run_kernel_on_cpu share, writes the arguments in
    nlm_fused's order: the names (compile-cache keys, and the instance docs/performance.md
    measures) stay as they were."""
    layout = fused_layout(4, 3, 3, False, H100_SHARED_BYTES, packed=True)
    assert (
        fused_kernel_name(
            NLMParams(h=30, weighting="bisquare", center_weight="one"), 3, layout, packed=True, out_dtype=np.uint8
        )
        == "nlm_fused<4, 3, 3, 4, 32, 56, 70, 72, 72, false, true, false, false, unsigned char, 1>"
    )
    params = NLMParams(h=30, weighting="exponential", center_weight="max", color_transform=np.eye(3))
    layout = fused_layout(4, 3, 3, True, H100_SHARED_BYTES)
    assert fused_kernel_name(params, 3, layout, packed=False, guided=True, out_dtype=np.uint16, min_blocks=2) == (
        f"nlm_fused<4, 3, 3, {layout.template_arguments}, true, false, true, true, unsigned short, 2, true>"
    )


def test_uint8_output_is_the_rounded_filter(tmp_path) -> None:
    params = NLMParams(h=35, patch_radius=3, search_radius=2, frames_past=1, frames_future=1)
    clip = noisy_clip("bigbuckbunny", seed=5, frames=3, shape=(36, 44))
    output, _, _ = run_kernel_on_cpu(tmp_path, clip, 1, params, out_dtype=np.uint8)
    expected = np.clip(np.round(reference_denoise(clip, 1, params) * 255), 0, 255)
    assert np.abs(output.astype(np.int16) - expected).max() <= 1  # rounding at a .5 boundary may differ


GUIDED_CASES = [
    # (params, (frames, height, width, channels), centre, clip dtype): the guided instance (Z
    # from the guide, Y in a region of its own) with each weighting and centre weight, a
    # transform, relative weights at small h with split tiles, and 8-bit frames off the packed path.
    pytest.param(
        NLMParams(h=40, patch_radius=2, search_radius=3, frames_past=1, frames_future=1, weighting="bisquare"),
        (3, 40, 70, 3),
        1,
        np.float32,
        id="two-tile-columns-three-frames",
    ),
    pytest.param(
        NLMParams(
            h=30,
            patch_radius=1,
            search_radius=2,
            frames_past=0,
            frames_future=1,
            weighting="exponential",
            color_transform=random_color_transform(3),
        ),
        (2, 20, 17, 3),
        0,
        np.float32,
        id="exponential-color-transform",
    ),
    pytest.param(
        NLMParams(h=1.5, patch_radius=2, search_radius=3, weighting="exponential", center_weight="max"),
        (3, 36, 44, 3),
        1,
        np.uint8,
        id="relative-weights-small-h-8-bit",
    ),
    pytest.param(
        NLMParams(h=40, patch_radius=4, search_radius=2, frames_past=1, frames_future=0, center_weight="max"),
        (2, 26, 27, 1),
        1,
        np.uint8,
        id="gray-centre-max-8-bit",
    ),
]


@pytest.mark.parametrize(("params", "shape", "center", "dtype"), GUIDED_CASES)
def test_guided_kernel_matches_the_reference(tmp_path, params, shape, center, dtype) -> None:
    """Distances from a guide (another noisy pass of the frames), the average from the clip."""
    frames, height, width, channels = shape
    clip, guide = (
        noisy_clip("random", seed=height + width + seed, frames=frames, shape=(height, width), channels=channels)
        for seed in (0, 1)
    )
    if dtype == np.uint8:
        clip, guide = (np.clip(np.rint(frames_of * 255), 0, 255).astype(np.uint8) for frames_of in (clip, guide))
    output, layout, _ = run_kernel_on_cpu(tmp_path, clip, center, params, guide=guide)
    assert layout.y_stride > 0  # Y of its own
    scale = integer_scale(dtype)
    expected = reference_denoise(clip * scale, center, params, guide=guide * scale)
    np.testing.assert_allclose(output, expected, rtol=0, atol=TOLERANCE)
    assert np.abs(expected - reference_denoise(clip * scale, center, params)).max() > 1e-2  # the guide mattered
