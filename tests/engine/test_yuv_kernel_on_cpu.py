"""kernels/yuv.cu, run on the CPU, against media.yuv's numba conversions: equal sample for sample.

Both to RGB and back, and to the luma/chroma filter's Y' and chroma and back.

CI has no GPU, so the kernels are compiled here as C++ with ``cuda_on_cpu.h`` (without fused
multiply-adds, as the GPU compiles them) and run on small frames of every subsampling, depth and
range, odd sizes included, their samples spread over the whole range (out-of-range values too,
which the conversion clips). tests/engine/test_gpu_yuv.py runs the same kernels on the GPU.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from nlmeans_studio.engine.frames import yuv_plane_shapes
from nlmeans_studio.engine.gpu.device import KERNELS
from nlmeans_studio.engine.media.yuv import planes_to_rgb, planes_to_ycbcr, rgb_to_planes, ycbcr_to_planes, yuv_layout

COMPILER = shutil.which("g++")
pytestmark = pytest.mark.skipif(COMPILER is None, reason="needs g++ (C++20) to run the CUDA kernels on the CPU")

DRIVER = """#include "cuda_on_cpu.h"
#include "yuv.cu"
#include <cstdlib>
#include <string>

template <typename T>
std::vector<T> read(const char* name, std::size_t count) {
    std::vector<T> values(count);
    FILE* file = fopen(name, "rb");
    if (fread(values.data(), sizeof(T), count, file) != count) std::exit(2);
    fclose(file);
    return values;
}

template <typename T>
void write(const char* name, const std::vector<T>& values) {
    FILE* file = fopen(name, "wb");
    fwrite(values.data(), sizeof(T), values.size(), file);
    fclose(file);
}

// Every thread of a grid in turn (the kernels have no barriers).
template <typename Kernel>
void each_thread(long long threads_needed, int grid_y, Kernel kernel) {
    const int threads = 256;
    blockDim = {threads, 1, 1};
    for (int by = 0; by < grid_y; ++by)
        for (long long bx = 0; bx * threads < threads_needed; ++bx)
            for (int t = 0; t < threads; ++t) {
                blockIdx = {static_cast<int>(bx), by, 0};
                threadIdx = {t, 0, 0};
                kernel();
            }
}

template <typename Sample, typename Pixel>
void run(int height, int width, int across, int down) {
    const int rows = (height + (1 << down) - 1) >> down, columns = (width + (1 << across) - 1) >> across;
    const long long pixels = 1LL * height * width, samples = pixels + 2LL * rows * columns;
    const std::vector<double> coefficients = read<double>("coefficients.bin", 7);
    const std::vector<Sample> planes = read<Sample>("planes.bin", samples);
    std::vector<Pixel> rgb(3 * pixels);
    each_thread(pixels, 1, [&] {
        yuv_to_rgb<Sample, Pixel>(planes.data(), rgb.data(), height, width, across, down, coefficients.data(),
                                  static_cast<double>(static_cast<Pixel>(-1)));
    });
    write("rgb.bin", rgb);
    const std::vector<Pixel> given = read<Pixel>("given.bin", 3 * pixels);
    std::vector<Sample> out(samples);
    std::vector<float> differences(2 * pixels);
    const double scale = 1.0 / static_cast<Pixel>(-1);
    each_thread(pixels, 1, [&] {
        rgb_to_luma<Pixel, Sample>(given.data(), scale, out.data(), differences.data(), pixels, coefficients.data());
    });
    each_thread(1LL * rows * columns, 2, [&] {
        decimated_chroma<Sample>(differences.data(), out.data() + pixels, height, width, across, down,
                                 coefficients.data());
    });
    write("planes_out.bin", out);
    std::vector<float> luma(pixels), chroma(3 * pixels);
    each_thread(pixels, 1, [&] {
        yuv_to_ycbcr<Sample>(planes.data(), luma.data(), chroma.data(), height, width, across, down,
                             coefficients.data());
    });
    write("luma.bin", luma);
    write("chroma.bin", chroma);
    const std::vector<float> given_luma = read<float>("given_luma.bin", pixels);
    const std::vector<float> given_chroma = read<float>("given_chroma.bin", 3 * pixels);
    each_thread(pixels, 1, [&] {
        ycbcr_to_luma<Sample>(given_luma.data(), given_chroma.data(), out.data(), differences.data(), pixels,
                              coefficients.data());
    });
    each_thread(1LL * rows * columns, 2, [&] {
        decimated_chroma<Sample>(differences.data(), out.data() + pixels, height, width, across, down,
                                 coefficients.data());
    });
    write("planes_of_ycbcr.bin", out);
}

int main(int, char** argv) {
    const bool deep_samples = std::string(argv[1]) == "16", deep_pixels = std::string(argv[2]) == "16";
    const int height = std::atoi(argv[3]), width = std::atoi(argv[4]), across = std::atoi(argv[5]);
    const int down = std::atoi(argv[6]);
    if (deep_samples && deep_pixels) run<unsigned short, unsigned short>(height, width, across, down);
    if (deep_samples && !deep_pixels) run<unsigned short, unsigned char>(height, width, across, down);
    if (!deep_samples && deep_pixels) run<unsigned char, unsigned short>(height, width, across, down);
    if (!deep_samples && !deep_pixels) run<unsigned char, unsigned char>(height, width, across, down);
}
"""


@pytest.fixture(scope="module")
def kernels(tmp_path_factory) -> Path:
    """The kernels compiled for the CPU: the program's folder."""
    folder = tmp_path_factory.mktemp("yuv_kernels")
    (folder / "main.cpp").write_text(DRIVER)
    include = Path(__file__).parent
    command = [COMPILER, "-O1", "-std=c++20", "-ffp-contract=off", f"-I{KERNELS}", f"-I{include}", "-o", "yuv"]
    subprocess.run([*command, "main.cpp"], cwd=folder, check=True)
    return folder


def run_kernels(
    folder: Path, planes: list[np.ndarray], given: np.ndarray, layout, ycbcr: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, list, tuple[np.ndarray, np.ndarray], list]:
    """Return what the kernels make: RGB of ``planes``, the planes of RGB ``given``, Y' and chroma of
    ``planes``, and the planes of Y' and chroma ``ycbcr``."""
    height, width = planes[0].shape
    np.concatenate([plane.ravel() for plane in planes]).tofile(folder / "planes.bin")
    given.tofile(folder / "given.bin")
    for name, values in zip(("given_luma.bin", "given_chroma.bin"), ycbcr, strict=True):
        values.astype(np.float32).tofile(folder / name)
    layout.coefficients().tofile(folder / "coefficients.bin")
    depths = [str(8 * np.dtype(dtype).itemsize) for dtype in (layout.sample_dtype, given.dtype)]
    subprocess.run(["./yuv", *depths, str(height), str(width), *map(str, layout.chroma_shift)], cwd=folder, check=True)
    rgb = np.fromfile(folder / "rgb.bin", given.dtype).reshape(height, width, 3)
    luma = np.fromfile(folder / "luma.bin", np.float32).reshape(height, width, 1)
    chroma = np.fromfile(folder / "chroma.bin", np.float32).reshape(height, width, 3)
    shapes = yuv_plane_shapes(height, width, layout.chroma_shift)
    ends = np.cumsum([rows * columns for rows, columns in shapes])[:-1]

    def split(name: str) -> list[np.ndarray]:
        flat = np.fromfile(folder / name, layout.sample_dtype)
        return [part.reshape(shape) for part, shape in zip(np.split(flat, ends), shapes, strict=True)]

    return rgb, split("planes_out.bin"), (luma, chroma), split("planes_of_ycbcr.bin")


def random_ycbcr(rng: np.random.Generator, height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Y' and chroma as the filter gives them, past the range of every layout's samples at the ends."""
    luma = rng.uniform(-0.2, 1.2, (height, width, 1)).astype(np.float32)
    chroma = rng.uniform(-0.2, 1.2, (height, width, 3)).astype(np.float32)
    return luma, chroma


BT601_LIMITED, BT709_FULL = {"colorspace": 5}, {"colorspace": 1, "range": 2}
CASES = [  # pixel format, color tags, height, width, RGB dtype
    ("yuv420p", BT601_LIMITED, 6, 8, np.uint8),
    ("yuv420p", {}, 7, 9, np.uint8),  # odd sizes: a chroma row and column of their own
    ("yuv420p", BT709_FULL, 5, 10, np.uint16),
    ("yuv422p", BT601_LIMITED, 4, 11, np.uint8),
    ("yuv411p", BT601_LIMITED, 3, 13, np.uint8),  # a quarter of the columns, and a last one of its own
    ("yuv411p", BT709_FULL, 2, 16, np.uint16),
    ("yuv444p", BT709_FULL, 3, 5, np.uint8),
    ("yuv420p10le", BT601_LIMITED, 9, 6, np.uint16),
    ("yuv422p10le", BT709_FULL, 6, 7, np.uint16),
    ("yuv420p12le", {"colorspace": 9}, 4, 4, np.uint8),
    ("yuvj420p", {}, 3, 3, np.uint8),
    ("yuv444p16le", BT601_LIMITED, 5, 6, np.uint16),
]


@pytest.mark.parametrize(("pixel_format", "color", "height", "width", "dtype"), CASES)
def test_the_kernels_convert_as_the_cpu_does(kernels, pixel_format, color, height, width, dtype) -> None:
    layout = yuv_layout(pixel_format, color, height)
    rng = np.random.default_rng(height * width)
    top = 2**layout.bits - 1
    shapes = yuv_plane_shapes(height, width, layout.chroma_shift)
    planes = [rng.integers(0, top + 1, shape).astype(layout.sample_dtype) for shape in shapes]
    planes[0][0, :2] = (0, top)  # the ends of the range, beyond limited range's
    given = rng.integers(0, np.iinfo(dtype).max + 1, (height, width, 3)).astype(dtype)
    given[0, 0], given[-1, -1] = 0, np.iinfo(dtype).max
    ycbcr = random_ycbcr(rng, height, width)
    rgb, converted, (luma, chroma), of_ycbcr = run_kernels(kernels, planes, given, layout, ycbcr)
    np.testing.assert_array_equal(rgb, planes_to_rgb(planes, layout, np.dtype(dtype)))
    for ours, cpu in zip(converted, rgb_to_planes(given, layout), strict=True):
        np.testing.assert_array_equal(ours, cpu)
    cpu_luma, cpu_chroma = planes_to_ycbcr(planes, layout)
    np.testing.assert_array_equal(luma, cpu_luma)
    np.testing.assert_array_equal(chroma, cpu_chroma)
    for ours, cpu in zip(of_ycbcr, ycbcr_to_planes(*ycbcr, layout), strict=True):
        np.testing.assert_array_equal(ours, cpu)


def test_smooth_pictures_convert_as_the_cpu_does(kernels) -> None:
    """Samples near each other (a picture, not noise), where chroma interpolation lands on half steps."""
    layout = yuv_layout("yuv420p", {}, 12)
    y, x = np.mgrid[0:12, 0:14]
    given = np.stack([(y * 20 + x * 3) % 256, (x * 17) % 256, (y * 9 + 100) % 256], axis=2).astype(np.uint8)
    planes = rgb_to_planes(given, layout)
    ycbcr = planes_to_ycbcr(planes, layout)
    rgb, converted, (luma, chroma), of_ycbcr = run_kernels(kernels, planes, given, layout, ycbcr)
    np.testing.assert_array_equal(rgb, planes_to_rgb(planes, layout, np.dtype(np.uint8)))
    for ours, cpu in zip(converted, planes, strict=True):
        np.testing.assert_array_equal(ours, cpu)
    np.testing.assert_array_equal(luma, ycbcr[0])
    np.testing.assert_array_equal(chroma, ycbcr[1])
    for ours, cpu in zip(of_ycbcr, planes, strict=True):  # both ways: the picture's own samples
        np.testing.assert_array_equal(ours, cpu)
