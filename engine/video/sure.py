"""The filter's strength chosen from the clip itself: Stein's unbiased risk estimate (SURE).

For noise n of covariance Sigma, white in space and time, added to a clean frame x, and a
denoiser f of the noisy frame y = x + n, SURE estimates the mean squared error against the
clean frame without knowing it:

    E||f(y) - x||^2 = E[ ||f(y) - y||^2 - N tr(Sigma) + 2 tr(Sigma J) ]

J the Jacobian of f with respect to the frame itself (the other frames of the window carry
noise independent of it). tr(Sigma J) is estimated by Monte Carlo (Ramani, Blu and Unser,
"Monte-Carlo SURE", IEEE TIP 17(9), 2008, doi:10.1109/TIP.2008.2001404): with a probe b of the
noise's covariance, b . (f(y + eps b) - f(y)) / eps; applied to NLMeans by Van De Ville and
Kocher ("SURE-based Non-Local Means", IEEE SPL 16(11), 2009, doi:10.1109/LSP.2009.2027669).
Each h costs two filter runs of the frames scored; one probe per frame, shared by every h,
keeps the risk smooth in h.

For noise white in space, Sigma is per pixel and b = Sigma^(1/2) z, z standard normal. Noise
correlated between neighbouring pixels (demosaiced, film grain), or whose level follows
brightness, has a covariance between pixels too: Stein's identity holds with that covariance
(tr of it times J), and the probe is drawn with it (``noise_shape.NoiseShape``), else the risk
reads too low at small h. The noise must be additive and independent of the picture: not an
encoder's error, which is the picture's detail as much as noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from ..frames import checked_frame, to_float32
from .noise_shape import WHITE, NoiseShape

PROBE_STEP = 0.05  # eps, in units of the probe's own sigma: small against the patch distances' noise
SEARCH_STEPS = 8  # golden-section steps over log h: the optimum to about 5 %


class FrameDenoiser(Protocol):
    """What SURE needs of a filter: frame ``index`` of ``clip`` denoised, (H, W, C) float32."""

    def denoise_frame(self, clip: Sequence[np.ndarray], index: int) -> np.ndarray:
        """Return frame ``index`` of ``clip``, denoised, (H, W, C) float32."""
        ...


def sure_mse(
    denoiser: FrameDenoiser,
    clip: Sequence[np.ndarray],
    index: int,
    covariance: np.ndarray,
    *,
    seed: int = 0,
    shape: NoiseShape = WHITE,
) -> float:
    """Stein's unbiased estimate of the mean squared error of ``denoiser``'s frame ``index``.

    Parameters
    ----------
    denoiser : Denoiser or LumaChromaDenoiser
        The filter, at the strength being judged.
    clip : sequence of (H, W, C) frames
        The noisy frames of its window, uint8, uint16 or float in [0, 1].
    index : int
        The frame scored.
    covariance : (C, C) array_like
        The noise's covariance between channels, full scale squared (``NoiseEstimate.covariance``).
    seed : int
        The probe's seed: the same seed gives the same probe, so that strengths compare fairly.
    shape : NoiseShape
        The noise's correlation between pixels and level by brightness (``noise_shape``);
        ``WHITE``: independent from pixel to pixel, of one level.

    Returns
    -------
    float
        The estimated mean squared error per sample, full scale squared (PSNR = -10 log10 of it).
    """
    frames = [to_float32(checked_frame(frame)) for frame in clip]
    noisy = frames[index]
    covariance = np.asarray(covariance, dtype=np.float64)
    probe = shape.probe(noisy, covariance, np.random.default_rng(seed))
    step = PROBE_STEP
    output = denoiser.denoise_frame(frames, index).astype(np.float64)
    frames[index] = noisy + step * probe
    moved = denoiser.denoise_frame(frames, index).astype(np.float64)
    divergence = float(np.sum(probe * (moved - output))) / step  # tr(Sigma J), estimated
    noise_energy = float(np.sum(shape.level(noisy) ** 2)) * float(np.trace(covariance))  # E||noise||^2
    residual = float(np.sum((output - noisy) ** 2))
    return (residual - noise_energy + 2 * divergence) / noisy.size


def choose_strength(
    denoiser_at: Callable[[float], FrameDenoiser],
    clip: Sequence[np.ndarray],
    indices: Sequence[int],
    covariance: np.ndarray,
    low: float,
    high: float,
    *,
    shape: NoiseShape = WHITE,
) -> tuple[float, float]:
    """Return the strength in [low, high] of least SURE over the frames ``indices``, and that risk.

    ``denoiser_at(s)`` makes the filter at strength s (an h in 8-bit levels, or a factor on the
    suggested strengths); the search is golden-section over log s, SEARCH_STEPS steps. ``shape``:
    the noise's, as ``sure_mse`` takes it.
    """

    def risk(log_strength: float) -> float:
        denoiser = denoiser_at(math.exp(log_strength))
        return float(np.mean([sure_mse(denoiser, clip, i, covariance, seed=i, shape=shape) for i in indices]))

    best, least = golden_minimum(risk, math.log(low), math.log(high), SEARCH_STEPS)
    return math.exp(best), least


def golden_minimum(function: Callable[[float], float], low: float, high: float, steps: int) -> tuple[float, float]:
    """Return the (x, function(x)) of least value found in [low, high] by ``steps`` golden-section steps.

    Each step shrinks the bracket by 0.618; for a function with one minimum there.
    """
    ratio = (math.sqrt(5) - 1) / 2
    a, b = low, high
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = function(c), function(d)
    for _ in range(steps):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = function(c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = function(d)
    return (c, fc) if fc < fd else (d, fd)
