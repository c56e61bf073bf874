"""What neuroimaging and microscopy users ask of ``denoise_volume`` and ``denoise-volume``.

The automatic h, the threads, masks, 4D series and Rician noise, through the public API and the
command line (as a subprocess). Small volumes of one dtype and few radii, so that numba compiles
few variants.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from nlmeans_studio.engine import denoise_volume, estimate_volume_noise, suggest_volume_h

CLI = [sys.executable, "-m", "nlmeans_studio.engine"]
SHAPE = (12, 14, 13)
SETTINGS = {"patch_radius": 1, "search_radius": 2, "backend": "cpu"}


def _noisy(shape: tuple[int, ...] = SHAPE, seed: int = 1, sigma: float = 8.0) -> np.ndarray:
    """A smooth ramp with a bright cube, plus Gaussian noise of ``sigma``: float32, in 0..255 units."""
    grid = np.indices(shape, dtype=np.float32)
    clean = 60 + 4 * grid[2] + 3 * grid[1]
    clean[3:8, 4:10, 3:9] += 80
    return (clean + np.random.default_rng(seed).normal(0, sigma, shape)).astype(np.float32)


def test_h_none_is_the_suggested_h_of_the_noise_estimate() -> None:
    volume = _noisy()
    suggested = suggest_volume_h(estimate_volume_noise(volume), patch_radius=1)
    automatic = denoise_volume(volume, **SETTINGS)
    np.testing.assert_array_equal(automatic, denoise_volume(volume, h=suggested, **SETTINGS))
    assert not np.array_equal(automatic, denoise_volume(volume, h=2 * suggested, **SETTINGS))


def test_h_none_gives_each_channel_filtered_separately_its_own_noises_h() -> None:
    volume = np.stack([_noisy(seed=1, sigma=4.0), _noisy(seed=2, sigma=16.0)], axis=-1)
    strengths = [suggest_volume_h(estimate_volume_noise(volume[..., c]), patch_radius=1) for c in range(2)]
    assert strengths[1] > 2 * strengths[0]  # four times the noise
    automatic = denoise_volume(volume, channels="separately", **SETTINGS)
    np.testing.assert_array_equal(automatic, denoise_volume(volume, h=strengths, channels="separately", **SETTINGS))


def test_h_none_on_a_constant_volume_says_there_is_no_noise() -> None:
    with pytest.raises(ValueError, match="constant"):
        denoise_volume(np.full(SHAPE, 7.0, dtype=np.float32), **SETTINGS)


def test_the_command_without_h_equals_python_with_h_none(tmp_path) -> None:
    volume = _noisy()
    np.save(tmp_path / "scan.npy", volume)
    command = [*CLI, "denoise-volume", "scan.npy", "out.npy", "--search-radius", "2", "--backend", "cpu", "--quiet"]
    subprocess.run(command, check=True, cwd=tmp_path, capture_output=True, text=True)
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), denoise_volume(volume, **SETTINGS))


def test_one_thread_gives_the_default_result_bit_for_bit() -> None:
    import numba

    volume = _noisy()
    default = denoise_volume(volume, h=10.0, **SETTINGS)
    np.testing.assert_array_equal(denoise_volume(volume, h=10.0, threads=1, **SETTINGS), default)
    assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS  # the call's count was put back


@pytest.mark.parametrize("threads", [0, -1, 1 << 10, 1.5, True, "2"])
def test_threads_out_of_range_are_refused_naming_the_range(threads) -> None:
    with pytest.raises(ValueError, match=r"threads must be an integer in 1\.\.\d+ .*NUMBA_NUM_THREADS.*got"):
        denoise_volume(_noisy(), h=10.0, threads=threads, **SETTINGS)


def test_the_command_refuses_threads_out_of_range(tmp_path) -> None:
    np.save(tmp_path / "scan.npy", _noisy())
    command = [*CLI, "denoise-volume", "scan.npy", "out.npy", "--threads", "0", "--backend", "cpu"]
    run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode != 0
    assert "--threads must be an integer in 1.." in run.stderr
    assert not (tmp_path / "out.npy").exists()
