"""One image, no frame after it: the noise the automatic estimate reads, and what the defaults give.

Four 256 x 256 crops of scikit-image's data (a stained section, a rocket, the Hubble deep field, a
retina) with white noise of sigma 2, 5, 10 and 20, noise demosaiced from a Bayer mosaic (sigma
15), white noise of 10 through JPEG at quality 75, and white noise smoothed by a Gaussian of 0.8
and 1.2 pixels. Per case: the true sigma, the estimate's (``estimate_noise``), the white noise
read by the patches' smallest principal components (Chen, Zhu and Heng, ICCV 2015), and the
gain in dB of three rules: A the defaults, B the white-noise filter for the principal components'
sigma, C that where the estimate reads more than 1.5 times it, else A. Not a test: scikit-image
and SciPy are not dependencies (``pip install scikit-image``).

    python scripts/notebooks/one_image_estimates.py
"""

from __future__ import annotations

import io

import numpy as np
import skimage.data
from numpy.lib.stride_tricks import sliding_window_view
from PIL import Image
from scipy import ndimage

from nlmeans_studio.engine import denoise, estimate_noise

PATCH = 5  # pixels a side of the patches whose covariance is taken
FACTOR = 1.5  # rule C: the estimate over the principal components' reading past this


def crops() -> dict[str, np.ndarray]:
    """The four pictures, uint8 RGB, 256 x 256."""
    return {
        "ihc": skimage.data.immunohistochemistry()[:256, :256],
        "rocket": skimage.data.rocket()[100:356, 200:456],
        "hubble": skimage.data.hubble_deep_field()[:256, :256],
        "retina": skimage.data.retina()[300:556, 300:556],
    }


def demosaiced(clean: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """``clean`` through an RGGB mosaic with white noise of ``sigma``, bilinear demosaicing back."""
    height, width, _ = clean.shape
    mask = np.zeros((height, width, 3), bool)
    mask[0::2, 0::2, 0] = mask[1::2, 1::2, 2] = mask[0::2, 1::2, 1] = mask[1::2, 0::2, 1] = True
    raw = (clean + rng.normal(0, sigma, clean.shape)) * mask
    kernel = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]], float)
    planes = [
        ndimage.convolve(raw[..., c], kernel, mode="mirror")
        / ndimage.convolve(mask[..., c].astype(float), kernel, mode="mirror")
        for c in range(3)
    ]
    return np.stack(planes, axis=-1)


def through_jpeg(picture: np.ndarray, quality: int) -> np.ndarray:
    """``picture`` written as a JPEG of ``quality`` and read back."""
    stored = io.BytesIO()
    Image.fromarray(np.clip(np.round(picture), 0, 255).astype(np.uint8)).save(stored, "JPEG", quality=quality)
    return np.asarray(Image.open(stored)).astype(float)


def noisy_cases(clean: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The noises of the module's docstring on ``clean``, uint8."""
    picture = clean.astype(float)
    cases = {f"white{sigma}": picture + rng.normal(0, sigma, picture.shape) for sigma in (2, 5, 10, 20)}
    cases["demosaic15"] = demosaiced(picture, 15, rng)
    cases["jpeg10q75"] = through_jpeg(picture + rng.normal(0, 10, picture.shape), 75)
    for width, gain in ((0.8, 18), (1.2, 25)):
        cases[f"blur{width}"] = (
            picture + ndimage.gaussian_filter(rng.normal(0, 1, picture.shape), (width, width, 0)) * gain
        )
    return {name: np.clip(np.round(case), 0, 255).astype(np.uint8) for name, case in cases.items()}


def principal_sigma(picture: np.ndarray) -> float:
    """The white noise's sigma from the smallest eigenvalues of the patches' covariance, averaged over the channels.

    The eigenvalues, smallest first, are taken fewer until their mean is at most their median:
    those left are the noise's alone (Chen, Zhu and Heng).
    """
    sigmas = []
    for channel in np.moveaxis(picture.astype(np.float64), -1, 0):
        patches = sliding_window_view(channel, (PATCH, PATCH)).reshape(-1, PATCH * PATCH)
        patches = patches - patches.mean(axis=0)
        eigenvalues = np.sort(np.linalg.eigvalsh(patches.T @ patches / len(patches)))
        for count in range(len(eigenvalues), 0, -1):
            kept = eigenvalues[:count]
            if kept.mean() <= np.median(kept):
                break
        sigmas.append(float(np.sqrt(max(kept.mean(), 0.0))))
    return float(np.mean(sigmas))


def psnr(picture: np.ndarray, clean: np.ndarray) -> float:
    """dB, 255 as peak."""
    return float(10 * np.log10(255**2 / np.mean((picture.astype(float) - clean.astype(float)) ** 2)))


def main() -> None:
    rng = np.random.default_rng(5)
    gains: dict[str, list[float]] = {"A": [], "B": [], "C": []}
    print(f"{'picture':<8}{'noise':<11}{'true':>6}{'read':>6}{'pca':>6}{'A':>8}{'B':>8}{'C':>8}")
    for name, clean in crops().items():
        for noise, noisy in noisy_cases(clean, rng).items():
            true = float((noisy.astype(float) - clean).std())
            read = float(np.mean(estimate_noise(noisy[None]).sigma))
            principal = principal_sigma(noisy)
            before = psnr(noisy, clean)
            defaults = psnr(denoise(noisy, backend="cpu"), clean) - before
            white = psnr(denoise(noisy, sigma=principal, backend="cpu"), clean) - before
            either = white if read > FACTOR * principal else defaults
            for rule, gain in zip("ABC", (defaults, white, either), strict=True):
                gains[rule].append(gain)
            print(
                f"{name:<8}{noise:<11}{true:6.1f}{read:6.1f}{principal:6.1f}{defaults:+8.2f}{white:+8.2f}{either:+8.2f}"
            )
    for rule, values in gains.items():
        below = sum(value < 0 for value in values)
        print(f"{rule}: mean {np.mean(values):+.2f} dB, worst {min(values):+.2f}, below noisy {below}")


if __name__ == "__main__":
    main()
