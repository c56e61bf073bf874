"""volume.cu's tiled kernel (``volume_tiled``), run on the CPU, against the float64 reference.

CI has no GPU, so the kernel is compiled here as C++ with ``cuda_on_cpu.h`` (one fiber per
CUDA thread, a barrier per block), its warp shuffles emulated through a per-block buffer
between two barriers, and run on small volumes with the tile ``tiled_layout`` picks: partial
tiles on every side, several blocks per axis, every option. The output starts as NaN, so an
unwritten voxel fails. tests/engine/test_volume.py runs the same kernel on the GPU.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from emulated_cuda import COMPILER, compile_program
from volume_reference import reference_denoise_volume

from nlmeans_studio.engine.gpu.device import KERNELS
from nlmeans_studio.engine.volume.denoise import padded_volume
from nlmeans_studio.engine.volume.filter_gpu import (
    THREAD_TILES,
    TiledLayout,
    tiled_kernel_name,
    tiled_layout,
    tiled_root,
)
from nlmeans_studio.engine.volume.params import VolumeParams

TOLERANCE = 1e-4  # as tests/engine/test_volume.py
H100_SHARED_BYTES = 232448  # per block, opt-in

pytestmark = pytest.mark.skipif(COMPILER is None, reason="needs g++ (C++20) to run the CUDA kernel on the CPU")

SHUFFLES = """
float* emulated_shuffle_slots;
// A warp shuffle: every thread of the block writes its value, then reads its source lane's.
inline float emulated_shuffle(float value, int source_lane) {
    emulated_block_barrier->arrive_and_wait();  // the last shuffle's reads are done
    emulated_shuffle_slots[threadIdx.x] = value;
    emulated_block_barrier->arrive_and_wait();
    return emulated_shuffle_slots[(threadIdx.x & ~31) + source_lane];
}
inline float __shfl_up_sync(unsigned, float value, int delta) {
    const int lane = threadIdx.x & 31;
    return emulated_shuffle(value, lane >= delta ? lane - delta : lane);
}
inline float __shfl_down_sync(unsigned, float value, int delta) {
    const int lane = threadIdx.x & 31;
    return emulated_shuffle(value, lane + delta < 32 ? lane + delta : lane);
}
"""


def write_emulated_source(folder: Path) -> None:
    """volume.cu as ``folder``/volume.inc for cuda_on_cpu.h: shared memory the emulated block's,
    and SHUFFLES before it."""
    source = (KERNELS / "volume.cu").read_text()
    source = source.replace("extern __shared__ float tile[];", "float* tile = emulated_shared_memory;")
    (folder / "volume.inc").write_text(SHUFFLES + source)


def run_tiled_on_cpu(
    folder: Path, volume: np.ndarray, params: VolumeParams, layout: TiledLayout, slab: tuple[int, int] | None = None
) -> np.ndarray:
    """volume_tiled for ``params`` with ``layout`` on ``volume`` ((Z, Y, X) or (Z, Y, X, C)), or
    on its planes [start, stop) of ``slab`` as slabs are filtered (padded_volume's planes)."""
    data = volume if volume.ndim == 4 else volume[..., np.newaxis]
    padded = padded_volume(data, params.pad, slab)
    if slab is not None:
        data = data[slice(*slab)]
    planes, rows, columns, channels = data.shape
    padded.tofile(folder / "padded.bin")
    write_emulated_source(folder)
    first_plane = 0 if slab is None else slab[0]
    launches = []
    for tile, first_column, grid in layout.launches(data.shape, params.patch_radius[2], first_plane):
        threads = 32 * tile.warps
        launches.append(f"""
    for (int gz = 0; gz < {grid[2]}; ++gz)
        for (int gy = 0; gy < {grid[1]}; ++gy)
            for (int gx = 0; gx < {grid[0]}; ++gx) {{
                std::vector<float> shared({tile.shared_bytes // 4}, std::nanf("")), slots({threads});
                blockIdx = {{gx, gy, gz}};
                blockDim = {{{threads}, 1, 1}};
                emulated_shared_memory = shared.data();
                emulated_block_barrier = &block;
                emulated_shuffle_slots = slots.data();
                block.run({threads}, [&] {{
                    {tiled_kernel_name(params, channels, tile)}(padded.data(), out.data(), {planes}, {rows},
                        {columns}, {first_column}, {first_plane % tile.planes},
                        {float(tiled_root(params, channels))!r}f);
                }});
            }}""")
    main = f"""int main() {{
    std::vector<float> padded({padded.size}), out({data.size}, std::nanf(""));
    EmulatedBlock block;
    FILE* file = fopen("padded.bin", "rb");
    if (fread(padded.data(), sizeof(float), padded.size(), file) != padded.size()) return 2;
    fclose(file);{"".join(launches)}
    file = fopen("out.bin", "wb");
    fwrite(out.data(), sizeof(float), out.size(), file);
    fclose(file);
}}
"""
    compile_program(folder, "volume.inc", main)
    subprocess.run(["./kernel"], cwd=folder, check=True)
    return np.fromfile(folder / "out.bin", dtype=np.float32).reshape(data.shape if volume.ndim == 4 else data.shape[:3])


CASES = [  # shape, patch radius, search radius, weighting, centre weight, h, thread tile (planes, rows, columns)
    ((9, 10, 11), 1, 2, "exponential", "one", 0.3, (4, 4, 2)),
    ((8, 9, 12, 2), (1, 0, 2), (1, 2, 3), "bisquare", "max", 0.4, (4, 2, 2)),
    ((7, 9, 8), (0, 1, 1), (2, 1, 2), "exponential", "max", 0.05, (4, 2, 2)),  # small h: relative weights
    ((6, 7, 8), 1, (2, 3, 1), "bisquare", "one", 0.3, (4, 4, 2)),
    ((7, 8, 9), 1, 2, "exponential", "one", 0.03, (4, 4, 2)),  # u past 87: float32 weights underflow to 0
    ((9, 20, 33, 3), (0, 1, 1), 1, "bisquare", "max", 0.5, (4, 2, 1)),  # 3 channels
    ((6, 37, 70), (1, 1, 0), (1, 2, 2), "exponential", "one", 0.2, (4, 4, 2)),  # a tile and the strip, 2 x 2 blocks
]
ONE_COLUMN = [((11, 37, 35), 1, (1, 2, 2), "exponential", "one", 0.2, (8, 4, 1))]  # a tile picked by hand


@pytest.mark.parametrize(("shape", "patch", "search", "weighting", "center", "h", "tile"), CASES + ONE_COLUMN)
def test_tiled_kernel_on_the_cpu_matches_the_reference(tmp_path, shape, patch, search, weighting, center, h, tile):
    volume = np.random.default_rng(sum(shape)).random(shape, dtype=np.float32)
    params = VolumeParams.checked(h, patch, search, weighting, center)
    channels = shape[3] if len(shape) == 4 else 1
    tiles = [tile] if (shape, tile) in [(case[0], case[-1]) for case in ONE_COLUMN] else THREAD_TILES
    layout = tiled_layout(params, channels, H100_SHARED_BYTES, tiles=tiles)
    assert layout is not None and (layout.planes, layout.rows, layout.columns) == tile
    out = run_tiled_on_cpu(tmp_path, volume, params, layout)
    options = dict(h=h, patch_radius=patch, search_radius=search, weighting=weighting, center_weight=center)
    np.testing.assert_allclose(out, reference_denoise_volume(volume, **options), rtol=0, atol=TOLERANCE)


def test_a_slab_equals_those_planes_of_one_pass_bit_for_bit(tmp_path) -> None:
    """Slabs starting at planes 3 and 6: the z tiles start at the volume's multiples of 4 all the
    same (a voxel's plane sums pair by its plane's parity), so each voxel's sums keep their order,
    in the wide tile and in the strip of the last 8 columns alike; and sweeps of 2 offsets sum as
    sweeps of 3 do."""
    volume = np.random.default_rng(9).random((11, 9, 70), dtype=np.float32)
    params = VolumeParams.checked(0.3, 1, (1, 2, 2), "exponential", "one")
    layout = tiled_layout(params, 1, H100_SHARED_BYTES)
    assert (layout.planes, layout.offsets) == (4, 3)
    assert [first for _, first, _ in layout.launches(volume.shape, 1)] == [0, 62]
    whole = run_tiled_on_cpu(tmp_path, volume, params, layout)
    np.testing.assert_array_equal(run_tiled_on_cpu(tmp_path, volume, params, layout, (3, 8)), whole[3:8])
    np.testing.assert_array_equal(run_tiled_on_cpu(tmp_path, volume, params, layout, (6, 11)), whole[6:11])
    pairs = tiled_layout(params, 1, H100_SHARED_BYTES, offsets=2)
    np.testing.assert_array_equal(run_tiled_on_cpu(tmp_path, volume, params, pairs), whole)


def test_the_tile_shrinks_to_fit_and_large_windows_fall_back() -> None:
    study = VolumeParams.checked(0.3, 1, 5, "exponential", "one")
    strip = TiledLayout(4, 4, 1, 16, 4 * 16 * 76 * 42, 3)
    assert tiled_layout(study, 1, H100_SHARED_BYTES) == TiledLayout(4, 4, 2, 8, 4 * 16 * 44 * 74, 3, strip)
    relative = VolumeParams.checked(0.3, 1, 5, "exponential", "max")
    layout = tiled_layout(relative, 1, H100_SHARED_BYTES)  # one more sum a voxel: a smaller tile, more warps
    assert (layout.planes, layout.rows, layout.columns, layout.warps) == (4, 2, 2, 12)
    assert tiled_layout(relative, 1, 150_000).warps == 8  # where 12 warps' region does not fit, 8
    assert tiled_layout(study, 1, 150_000).columns == 1  # less shared memory: a smaller tile
    assert tiled_layout(VolumeParams.checked(0.3, 8, 16, "exponential", "one"), 1, H100_SHARED_BYTES) is None


def test_the_last_columns_go_to_the_strip_where_they_fit_it() -> None:
    """512 columns: 8 tiles of 62 and the last 16 in one 30-wide strip block; 110: a tile and 48
    left, more than the strip takes, so 2 tiles; 20: no whole tile, so the wide tile alone."""
    study = VolumeParams.checked(0.3, 1, 5, "exponential", "one")
    layout = tiled_layout(study, 1, H100_SHARED_BYTES)
    assert layout.launches((512, 512, 512), 1, first_plane=0) == [
        (layout, 0, (8, 16, 128)),
        (layout.strip, 496, (1, 8, 128)),
    ]
    assert layout.launches((8, 32, 110), 1, first_plane=6) == [(layout, 0, (2, 1, 3))]
    assert layout.launches((8, 32, 20), 1) == [(layout, 0, (1, 1, 2))]
    assert layout.strip.strip is None
