"""Luma/chroma mode: Y and (Cb, Cr) filtered with their own strengths (issue 19)."""

import dataclasses

import numpy as np
import pytest
from clips import DATA, noisy_clip
from reference import reference_denoise

from nlmeans_studio.engine import Denoiser, NLMParams, psnr
from nlmeans_studio.engine.video.choose_h import apply_estimate
from nlmeans_studio.engine.video.luma_chroma import (
    CHROMA_OFFSET,
    LumaChromaDenoiser,
    estimate_luma_chroma_noise,
    matrix_for,
    parse_luma_chroma,
    split_estimate,
    suggest_luma_chroma_h,
    yuv_matrix,
)
from nlmeans_studio.engine.video.noise import estimate_noise


@pytest.mark.parametrize("matrix", ["bt601", "bt709"])
def test_each_plane_group_is_the_exact_filter_on_its_planes(matrix) -> None:
    clip = np.clip(noisy_clip("bikes", seed=1), 0, 1)
    params = NLMParams(h=1, patch_radius=1, search_radius=2, weighting="exponential", center_weight="max")
    result = LumaChromaDenoiser(params, 9.0, 21.0, matrix, backend="cpu").denoise_frame(clip, 2)
    forward = yuv_matrix(matrix).astype(np.float32)
    yuv = clip @ forward.T
    chroma = np.zeros_like(yuv)
    chroma[..., :2] = yuv[..., 1:] + CHROMA_OFFSET
    luma = reference_denoise(yuv[..., :1], 2, NLMParams(**{**_window(params), "h": 9.0}))
    # The (Cb, Cr, 0) clip's distance is 2/3 of the mean over Cb and Cr: h x sqrt(2/3).
    chroma = reference_denoise(chroma, 2, NLMParams(**{**_window(params), "h": 21.0 * np.sqrt(2 / 3)}))
    expected = np.concatenate([luma, chroma[..., :2] - CHROMA_OFFSET], axis=-1) @ np.linalg.inv(forward).T
    np.testing.assert_allclose(result, expected, rtol=0, atol=2e-5)  # float32 rounding of the filter and 2 matrices


def _window(params: NLMParams) -> dict:
    return {
        "patch_radius": params.patch_radius,
        "search_radius": params.search_radius,
        "frames_past": params.frames_past,
        "frames_future": params.frames_future,
        "weighting": params.weighting,
        "center_weight": params.center_weight,
    }


def test_export_stream_gives_the_frames_denoise_frame_gives() -> None:
    clip = np.clip(noisy_clip("random", seed=2, frames=4, shape=(20, 24)), 0, 1)
    denoiser = LumaChromaDenoiser(NLMParams(h=1, patch_radius=1, search_radius=2), 12.0, 30.0, backend="cpu")
    streamed = list(denoiser.export_stream(iter(clip), np.float32))
    for index, frame in enumerate(streamed):
        np.testing.assert_array_equal(frame, denoiser.denoise_frame(clip, index))
    assert all(frame.dtype == np.uint8 for frame in denoiser.export_stream(iter(clip)))


def test_matrices_and_their_errors() -> None:
    assert matrix_for(1, 480) == "bt709" and matrix_for(6, 1080) == "bt601"
    assert matrix_for(2, 1080) == "bt709" and matrix_for(2, 576) == "bt601"  # unspecified: by size
    # A phone's HLG or an HDR10 master, whatever its size: its own matrix, not BT.601 (a new user's 320x180 clips)
    assert matrix_for(9, 180) == "bt2020" and matrix_for(10, 2160) == "bt2020"
    for matrix in ("bt601", "bt709", "bt2020"):
        np.testing.assert_allclose(yuv_matrix(matrix) @ [1, 1, 1], [1, 0, 0], atol=1e-12)  # gray has no chroma
    np.testing.assert_allclose(yuv_matrix("bt2020")[0], [0.2627, 0.6780, 0.0593], atol=1e-12)  # H.273's Kr, Kb
    with pytest.raises(ValueError, match="matrix must be 'bt601', 'bt709' or 'bt2020', got 'rec2020'"):
        yuv_matrix("rec2020")
    gray = np.zeros((2, 16, 16), np.uint8)
    with pytest.raises(ValueError, match=r"needs RGB frames \(H, W, 3\), got \(16, 16, 1\): a gray clip has no chroma"):
        LumaChromaDenoiser(NLMParams(h=1, patch_radius=1, search_radius=1), 4, 9, backend="cpu").denoise_frame(gray, 0)


def test_chroma_heavy_noise_gains_over_the_best_single_pass() -> None:
    with np.load(DATA / "bikes_frames.npz") as archive:
        clean = archive["frames"].astype(np.float32) / 255
    forward = yuv_matrix("bt601")
    rng = np.random.default_rng(3)
    yuv = clean.astype(np.float64) @ forward.T + rng.standard_normal(clean.shape) * np.array([5, 15, 15]) / 255
    noisy = (np.clip(np.rint(yuv @ np.linalg.inv(forward).T * 255), 0, 255) / 255).astype(np.float32)
    window = NLMParams(h=1)
    estimate = estimate_luma_chroma_noise(noisy, "bt601")
    np.testing.assert_allclose([estimate.sigma_luma, estimate.sigma_chroma], [5, 15], rtol=0.25)
    h_luma, h_chroma = suggest_luma_chroma_h(estimate, window)
    split = psnr(clean[1], LumaChromaDenoiser(window, h_luma, h_chroma, "bt601", "cpu").denoise_frame(noisy, 1))
    params = apply_estimate(window, estimate_noise(noisy))
    single = max(
        psnr(clean[1], Denoiser(dataclasses.replace(params, h=params.h * ratio), "cpu").denoise_frame(noisy, 1))
        for ratio in (0.7, 1.0, 1.4)
    )
    # Measured +0.5 dB (bikes) and +2.1 dB (the sample clip) over the best single RGB pass.
    assert split >= single + 0.3, f"luma/chroma {split:.2f} dB, single pass {single:.2f} dB"


def test_cli_denoises_in_luma_chroma(tmp_path, capsys) -> None:
    pytest.importorskip("av", reason="the CLI reads and writes videos with PyAV")
    from test_video import make_clip

    from nlmeans_studio.engine.cli import main
    from nlmeans_studio.engine.media.reader import read_frames

    clean = make_clip(tmp_path / "clean.mkv", frames=3, size=(64, 80))
    arguments = ["denoise", str(tmp_path / "clean.mkv"), "--codec", "ffv1", "--rgb"]
    assert main([*arguments, str(tmp_path / "auto.mkv"), "--luma-chroma", "auto", "--center-weight", "one"]) == 0
    # The clip's estimate (pairs spread over it, as --noise auto and the window take it) seen in
    # Y'CbCr: before, three frames from the start, estimated on Y'CbCr frames, where compressed
    # footage read 1.4 and 1.4 (its noise in Y, averaged with the subsampled chroma's).
    from nlmeans_studio.engine.video.export import estimate_clip_noise

    expected = suggest_luma_chroma_h(
        split_estimate(estimate_clip_noise(tmp_path / "clean.mkv"), "bt601"), NLMParams(h=1, center_weight="one")
    )
    said = f"luma/chroma (bt601) exponential/one, h_Y = {expected[0]:.1f}, h_UV = {expected[1]:.1f}"
    assert said in capsys.readouterr().err  # a clean clip: no SURE (nothing to judge the strength on)
    given_arguments = [*arguments, "--noise", "none", str(tmp_path / "given.mkv"), "--luma-chroma", "4,9"]
    assert main(given_arguments) == 0
    assert "luma/chroma (bt601) exponential/max, h_Y = 4.0, h_UV = 9.0 (given)" in capsys.readouterr().err
    given = read_frames(tmp_path / "given.mkv", 3)
    params = NLMParams(h=1)
    expected = LumaChromaDenoiser(params, 4.0, 9.0, "bt601", "cpu").export_stream(iter(clean))
    for frame, reference in zip(given, expected, strict=True):
        np.testing.assert_allclose(frame, reference, atol=1)  # one level: a half step rounded either way
    with pytest.raises(SystemExit):
        main([*arguments, str(tmp_path / "bad.mkv"), "--luma-chroma", "4"])
    assert "expected off, auto or H_Y,H_UV (two strengths in levels), got '4'" in capsys.readouterr().err
    assert main([*arguments, str(tmp_path / "off.mkv"), "--luma-chroma", "off"]) == 0
    assert ", color decorrelation o" in capsys.readouterr().err  # in RGB, with one h
    assert main([*arguments, "--noise", "none", str(tmp_path / "bad.mkv"), "--luma-chroma", "auto"]) == 1
    assert "--luma-chroma auto sets its strengths from the noise: give H_Y,H_UV" in capsys.readouterr().err


def test_modes_as_written() -> None:
    assert parse_luma_chroma("off") is None and parse_luma_chroma("auto") == "auto"
    assert parse_luma_chroma("4,9.5") == (4.0, 9.5)
    with pytest.raises(ValueError, match="expected off, auto or H_Y,H_UV"):
        parse_luma_chroma("strong")
    with pytest.raises(ValueError, match=r"strengths must be in \(0, 10000\] levels, got '0,9'"):
        parse_luma_chroma("0,9")


def test_an_rgb_estimate_split_matches_the_estimate_taken_in_ycbcr() -> None:
    """The window splits the estimate it has: M C M^T equals estimating on the Y'CbCr frames
    where both take the same regions (here the whole frame, given as the region). One frame: its
    high-pass residuals are linear in the frame; two frames' motion-matched change is read as the
    median of its tiles, which a change of color space may reorder."""
    clip = np.clip(noisy_clip("random", seed=3, frames=1, shape=(48, 64)), 0, 1)
    roi = (0, 0, 64, 48)
    split = split_estimate(estimate_noise(clip, roi=roi), "bt601")
    direct = estimate_luma_chroma_noise(clip, "bt601", roi=roi)
    # float32 frames and the CHROMA_OFFSET shift: equal to a few parts in 10^5
    np.testing.assert_allclose(split.luma.covariance, direct.luma.covariance, rtol=1e-4)
    np.testing.assert_allclose(split.chroma.covariance, direct.chroma.covariance, rtol=1e-4, atol=1e-9)
