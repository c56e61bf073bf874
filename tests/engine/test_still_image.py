"""One image through ``nlmeans-studio denoise in.png out.png``: the picture comes back in its own
layout (gray stays gray, 16 bits stay 16, alpha unchanged), denoised as the one-call ``denoise``
denoises its samples. The images are made with the ffmpeg command line, as another tool writes them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from clips import CLI, run_cli

from nlmeans_studio.engine import denoise
from nlmeans_studio.engine.media.still_image import StillImage, read_still, write_still

WINDOW = ["--patch-radius", "1", "--search-radius", "2", "--backend", "cpu"]


def _ffmpeg_image(path: Path, pixel_format: str, source: str = "testsrc2") -> Path:
    """A 96 x 64 picture with noise, in ``pixel_format``, written by ffmpeg."""
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", f"{source}=size=96x64", "-vf", "noise=alls=20:allf=t",
         "-frames:v", "1", "-pix_fmt", pixel_format, str(path)],
        check=True, timeout=60,
    )  # fmt: skip
    return path


@pytest.mark.parametrize(
    ("name", "pixel_format", "layout", "dtype"),
    [
        ("gray.png", "gray", "gray", np.uint8),
        ("deep.png", "rgb48be", "rgb48le", np.uint16),
        ("deep-gray.tif", "gray16le", "gray16le", np.uint16),
        ("colour.tif", "rgb24", "rgb24", np.uint8),
        ("alpha.png", "rgba", "rgba", np.uint8),
    ],
)
def test_an_image_comes_back_in_its_layout_denoised(tmp_path, name, pixel_format, layout, dtype) -> None:
    source = _ffmpeg_image(tmp_path / name, pixel_format)
    output = tmp_path / f"out-{name}"
    run = run_cli([*CLI, "denoise", str(source), str(output), "--h", "12", *WINDOW], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "denoised 1 image in" in run.stderr
    before, after = read_still(source), read_still(output)
    assert (after.layout, after.pixels.dtype, after.pixels.shape) == (layout, dtype, before.pixels.shape)
    expected = denoise(before.pixels, h=12, patch_radius=1, search_radius=2, backend="cpu")
    # Equal but for rounding: in the whole suite 7 of 6144 samples of this process's filter were
    # 1 level from the command's (float32 sums on a half level; what libraries this process loaded
    # earlier may change how the tiniest weights are handled).
    difference = np.abs(after.pixels.astype(np.int64) - expected)
    assert difference.max() <= 1 and np.mean(difference > 0) < 0.01
    if before.alpha is not None:
        np.testing.assert_array_equal(after.alpha, before.alpha)
    assert not np.array_equal(after.pixels, before.pixels)


def test_a_jpeg_is_denoised_from_its_noise_into_a_jpeg(tmp_path) -> None:
    source = _ffmpeg_image(tmp_path / "photo.jpg", "yuvj420p")
    run = run_cli([*CLI, "denoise", str(source), str(tmp_path / "out.jpg"), *WINDOW], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    after = read_still(tmp_path / "out.jpg")
    assert after.pixels.shape == (64, 96, 3) and after.pixels.dtype == np.uint8


@pytest.mark.parametrize(
    ("output", "options", "message"),
    [
        ("out.jpg", [], "out.jpg: JPEG holds 8-bit pictures only, and this one is rgb48le: write .png or .tif"),
        ("out.exr", [], "out.exr: EXR holds float pictures only, and this one is rgb48le: write .png or .tif"),
        ("out.png", ["--frames-past", "2"], "--frames-past: one image has no frames or clip to use it; leave it out"),
        ("out.png", ["--noise", "90,0,16,16"], "the region (90, 0, 16, 16) leaves the 96x64 frame"),
    ],
)
def test_what_one_image_cannot_take_is_refused_before_any_work(tmp_path, output, options, message) -> None:
    source = _ffmpeg_image(tmp_path / "deep.png", "rgb48be")
    run = run_cli([*CLI, "denoise", str(source), str(tmp_path / output), *options], capture_output=True, text=True)
    assert run.returncode == 1 and message in run.stderr and "Traceback" not in run.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["deep.png"]


def test_one_images_noise_is_said_and_can_be_read_in_a_region_of_its_own(tmp_path) -> None:
    """A microscopist's stained section, texture from edge to edge, came back worse than it went in
    (31.5 dB from 34.1) without a word: the texture was read as noise, and no region could be given
    for one image. What was read and chosen is said, as for a clip, and --noise X,Y,W,H reads the
    noise where the picture is flat."""
    rng = np.random.default_rng(7)
    texture = np.kron(rng.uniform(40, 215, (16, 24, 3)), np.ones((8, 8, 1)))  # 8-pixel tiles everywhere
    texture[80:128, 0:48] = 128  # but one flat corner
    clean = texture.astype(np.float64)
    noisy = np.clip(np.round(clean + rng.normal(0, 10, clean.shape)), 0, 255).astype(np.uint8)
    write_still(tmp_path / "section.png", StillImage(noisy, None, "rgb24"), overwrite=False)
    said = {}
    for name, region in (("auto", []), ("region", ["--noise", "0,80,48,48"])):
        command = [*CLI, "denoise", tmp_path / "section.png", tmp_path / f"{name}.png", *region, "--backend", "cpu"]
        run = run_cli(command, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        said[name] = run.stderr.splitlines()[0]
    assert said["auto"].startswith("noise: sigma ") and "(spatial)" in said["auto"]
    assert said["region"].startswith("noise: sigma ") and "levels (region)" in said["region"]
    sigmas = [float(value) for value in said["region"].split("sigma ")[1].split(" levels")[0].split(", ")]
    assert all(9 <= sigma <= 11 for sigma in sigmas), said["region"]  # white noise of sigma 10 on a flat region


@pytest.mark.parametrize(("pixel_format", "shape"), [("gbrpf32le", (64, 96, 3)), ("grayf32le", (64, 96))])
def test_an_exr_comes_back_as_linear_floats_denoised(tmp_path, pixel_format, shape) -> None:
    source = _ffmpeg_image(tmp_path / "render.exr", pixel_format)
    run = run_cli(
        [*CLI, "denoise", str(source), str(tmp_path / "out.exr"), "--h", "12", *WINDOW], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    before, after = read_still(source), read_still(tmp_path / "out.exr")
    assert (after.layout, after.pixels.dtype, after.pixels.shape) == (pixel_format, np.float32, shape)
    expected = denoise(before.pixels, h=12, patch_radius=1, search_radius=2, backend="cpu")  # in 0..1 already
    np.testing.assert_allclose(after.pixels, expected, atol=1e-5)
    assert np.abs(after.pixels - before.pixels).mean() > 0.01
    refused = run_cli([*CLI, "denoise", str(source), str(tmp_path / "out.png")], capture_output=True, text=True)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert refused.stderr.strip().endswith(
        f"PNG holds 8- and 16-bit pictures only, and this one is {pixel_format}: write .exr"
    )


def test_an_exr_above_1_is_filtered_on_its_own_range(tmp_path) -> None:
    """Linear light goes past 1 (highlights): filtered on the 0..1 scale of 0..its peak, put back on it."""
    import av

    clean = np.tile(np.linspace(0, 4, 96, dtype=np.float32), (64, 1))
    noisy = np.ascontiguousarray(
        np.repeat((clean + np.random.default_rng(2).normal(0, 0.2, clean.shape))[..., None], 3, 2)
    )
    noisy = noisy.astype(np.float32)
    codec = av.CodecContext.create("exr", "w")
    codec.width, codec.height, codec.pix_fmt = 96, 64, "gbrpf32le"
    frame = av.VideoFrame.from_ndarray(noisy, format="gbrpf32le")
    (tmp_path / "hdr.exr").write_bytes(
        b"".join(bytes(packet) for packet in [*codec.encode(frame), *codec.encode(None)])
    )
    run = run_cli(
        [*CLI, "denoise", str(tmp_path / "hdr.exr"), str(tmp_path / "out.exr"), "--h", "12", *WINDOW],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    after = read_still(tmp_path / "out.exr").pixels
    low, high = float(min(0, noisy.min())), float(noisy.max())
    expected = denoise((noisy - low) / (high - low), h=12, patch_radius=1, search_radius=2, backend="cpu")
    np.testing.assert_allclose(after, expected * (high - low) + low, atol=1e-4)
    assert after.max() > 3.5 and np.abs(after - clean[..., None]).mean() < 0.6 * np.abs(noisy - clean[..., None]).mean()


@pytest.mark.parametrize("sigma", [2, 4])
def test_light_noise_on_one_image_is_taken_out_as_for_a_clip(tmp_path, sigma) -> None:
    """The centre weight is chosen with the strength, as for a clip: it was pinned to "max", which
    averaged each pixel with its best match (a Mandelbrot set with noise of sigma 2: 42.1 dB in,
    32.8 out; now 48.0)."""
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "mandelbrot=size=256x192", "-frames:v", "1",
         "-pix_fmt", "gray", str(tmp_path / "clean.png")],
        check=True, timeout=60,
    )  # fmt: skip
    clean = read_still(tmp_path / "clean.png").pixels.astype(np.float64)
    noise = np.random.default_rng(sigma).normal(0, sigma, clean.shape)
    noisy = np.clip(np.rint(clean + noise), 0, 255).astype(np.uint8)
    write_still(tmp_path / "noisy.png", StillImage(noisy, None, "gray"), overwrite=False)
    run = run_cli([*CLI, "denoise", str(tmp_path / "noisy.png"), str(tmp_path / "out.png")], capture_output=True)
    assert run.returncode == 0, run.stderr

    def psnr(picture: np.ndarray) -> float:
        return 10 * np.log10(255**2 / np.mean((picture.astype(np.float64) - clean) ** 2))

    assert psnr(read_still(tmp_path / "out.png").pixels) > psnr(noisy) + 4  # 5.9 and 7.2 dB measured


def test_a_sixteen_bit_image_of_small_values_is_denoised_at_sixteen_bits(tmp_path) -> None:
    """A 12-bit camera's frame in a 16-bit TIFF (values under 4096) is what the file says, 16 bits:
    it was refused, asking for a bit depth the command line has no option for; and its noise of 0.1
    8-bit levels (26 counts) was filtered as 0.5 (66.2 dB in, 62.3 out)."""
    y, x = np.mgrid[0:128, 0:160]
    clean = 1500 + 1000 * np.sin(x / 9.0) * np.cos(y / 13.0) + 600 * (x > 80)
    noisy = np.clip(np.rint(clean + np.random.default_rng(3).normal(0, 26, clean.shape)), 0, 65535).astype(np.uint16)
    assert noisy.max() < 4096
    write_still(tmp_path / "cells.tif", StillImage(noisy, None, "gray16le"), overwrite=False)
    run = run_cli([*CLI, "denoise", str(tmp_path / "cells.tif"), str(tmp_path / "out.tif")], capture_output=True)
    assert run.returncode == 0, run.stderr
    out = read_still(tmp_path / "out.tif").pixels

    def error(picture: np.ndarray) -> float:
        return float(np.sqrt(np.mean((picture.astype(np.float64) - clean) ** 2)))

    assert out.dtype == np.uint16 and error(out) < 0.8 * error(noisy)
