"""Synthetic noise on clean frames.

White Gaussian noise of a covariance (``add_noise``) and the kinds real footage shows
(``add_realistic_noise``: clipped, YUV, signal dependent, demosaiced, H.264 round trip).
"""

from __future__ import annotations

import numpy as np

from .noise_estimate import _float_frames


def add_noise(frames: np.ndarray, covariance: np.ndarray, seed: int, *, bit_depth: int | None = None) -> np.ndarray:
    """Frames (float in [0, 1], or integers, scaled) plus Gaussian noise of ``covariance``.

    White in space, correlated across channels as ``covariance`` says; float32 out, not
    clipped, so that the noise stays exactly Gaussian.

    Parameters
    ----------
    frames : array_like
        One frame (H, W[, C]) or several (T, H, W[, C]), C = 1 or 3; uint8 and uint16 are
        scaled to [0, 1], floats taken in [0, 1] (full scale).
    covariance : (C, C) array_like
        The noise covariance in full scale squared (a sigma of 10 levels is (10/255)^2 on the
        diagonal); positive semi-definite.
    seed : int
        Seed of NumPy's random generator: the same seed gives the same noise.
    bit_depth : int, optional
        Bits per sample of uint16 frames, as ``estimate_noise`` takes it.

    Returns
    -------
    numpy.ndarray
        float32 in full scale, not clipped: (T, H, W, C) for several frames or a 4D input,
        else (H, W, C).

    Raises
    ------
    ValueError
        ``covariance`` is not C x C for these frames or not positive semi-definite, or the
        frames are not frames (dtype, shape, NaN or infinite values).
    """
    images = np.stack(_float_frames(frames, bit_depth))
    covariance = np.asarray(covariance, dtype=np.float64)
    channels = images.shape[-1]
    if covariance.shape != (channels, channels):
        raise ValueError(f"covariance must be {channels}x{channels} for these frames, got shape {covariance.shape}")
    values, vectors = np.linalg.eigh(covariance)
    if values.min() < -1e-12:
        raise ValueError("covariance must be positive semi-definite")
    root = vectors @ np.diag(np.sqrt(np.clip(values, 0, None))) @ vectors.T
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal(images.shape) @ root.T
    result = (images + noise).astype(np.float32)
    return result if np.asarray(frames).ndim == 4 or len(images) > 1 else result[0]


REALISTIC_NOISES = ("clipped", "yuv", "signal", "demosaic", "h264")
BT601 = np.array([[0.299, 0.587, 0.114], [-0.168736, -0.331264, 0.5], [0.5, -0.418688, -0.081312]])


def add_realistic_noise(
    frames: np.ndarray, kind: str, sigma: float, seed: int, *, bit_depth: int | None = None
) -> np.ndarray:
    """Frames as footage brings its noise: 8-bit, clipped, in YUV, signal dependent or compressed.

    Parameters
    ----------
    frames : array
        Clean frames (T, H, W, 3), uint8, uint16 or float in [0, 1].
    kind : {"clipped", "yuv", "signal", "demosaic", "h264"}
        "clipped": white Gaussian noise of ``sigma`` per RGB channel, rounded to 8 bits and
        clipped; "yuv": Gaussian noise of ``sigma`` on Y, Cb and Cr (BT.601, full range) as
        FFmpeg's ``noise`` filter and tape add it, then RGB, 8 bits, clipped; "signal":
        Poisson-Gaussian camera noise, variance sigma^2 (0.2 + 1.6 I) for intensity I in [0, 1]
        (sigma at mid gray), 8 bits, clipped; "demosaic": white noise of ``sigma`` on a Bayer
        mosaic (RGGB), interpolated bilinearly to RGB as a camera's demosaicing does (spatially
        correlated, weaker in R and B), 8 bits, clipped; "h264": "clipped" noise encoded with
        libx264 (CRF 23, 4:2:0) and decoded, which smooths the noise and holds static blocks still.
    sigma : float
        Noise level in 8-bit levels.
    seed : int
        Seed of NumPy's random generator: the same seed gives the same noise.
    bit_depth : int, optional
        Bits per sample of uint16 frames, as ``estimate_noise`` takes it.

    Returns
    -------
    numpy.ndarray
        (T, H, W, 3) float32 in [0, 1], on the 8-bit grid ("h264": height and width cropped to
        even numbers).

    Raises
    ------
    ValueError
        An unknown ``kind``, or frames that are not frames (dtype, shape, NaN or infinite values).

    Notes
    -----
    "h264" needs PyAV (imported when first used).
    """
    if kind not in REALISTIC_NOISES:
        raise ValueError(f"kind must be one of {', '.join(REALISTIC_NOISES)}, got {kind!r}")
    images = np.stack(_float_frames(frames, bit_depth)).astype(np.float64)
    rng = np.random.default_rng(seed)
    scale = sigma / 255
    if kind == "yuv":
        yuv = images @ BT601.T + scale * rng.standard_normal(images.shape)
        noisy = yuv @ np.linalg.inv(BT601).T
    elif kind == "signal":
        noisy = images + scale * np.sqrt(0.2 + 1.6 * np.clip(images, 0, 1)) * rng.standard_normal(images.shape)
    elif kind == "demosaic":
        noisy = images + scale * _demosaiced(rng.standard_normal(images.shape[:-1]))
    else:
        noisy = images + scale * rng.standard_normal(images.shape)
    result = np.clip(np.rint(noisy * 255), 0, 255).astype(np.uint8)
    if kind == "h264":
        result = _h264_round_trip(result)
    return result.astype(np.float32) / 255


def _demosaiced(mosaic: np.ndarray) -> np.ndarray:
    """(..., H, W) samples of an RGGB Bayer mosaic, interpolated bilinearly to (..., H, W, 3) (wrapping at the edges).

    Each channel keeps its own sites and averages its 2 or 4 nearest.
    """
    rows, columns = np.indices(mosaic.shape[-2:])
    sites = [(rows % 2 == 0) & (columns % 2 == 0), (rows + columns) % 2 == 1, (rows % 2 == 1) & (columns % 2 == 1)]

    def spread(values: np.ndarray, shifts: list[tuple[int, int]], weight: float) -> np.ndarray:
        return weight * sum(np.roll(values, shift, axis=(-2, -1)) for shift in shifts)

    sides, corners = [(0, 1), (0, -1), (1, 0), (-1, 0)], [(1, 1), (1, -1), (-1, 1), (-1, -1)]
    channels = []
    for index, site in enumerate(sites):
        own = mosaic * site
        nearest = spread(own, sides, 0.25) if index == 1 else spread(own, sides, 0.5) + spread(own, corners, 0.25)
        channels.append(np.where(site, own, nearest))
    return np.stack(channels, axis=-1)


def _h264_round_trip(frames: np.ndarray) -> np.ndarray:
    """RGB uint8 frames encoded with libx264 (CRF 23, yuv420p) and decoded back."""
    import io

    import av

    buffer = io.BytesIO()
    height, width = frames.shape[1] // 2 * 2, frames.shape[2] // 2 * 2
    with av.open(buffer, "w", format="matroska") as container:
        stream = container.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {"crf": "23", "preset": "fast"}
        for frame in frames[:, :height, :width]:
            container.mux(stream.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(frame), format="rgb24")))
        container.mux(stream.encode())
    buffer.seek(0)
    with av.open(buffer) as container:
        decoded = [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]
    return np.stack(decoded)
