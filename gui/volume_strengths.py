"""The volume window's h: one for channels filtered together, one a channel filtered separately.

Each h starts at the suggestion of its noise estimate (the whole volume's, or the channel's own;
or the noise of a region the user drew) for the filter's settings (weighting, centre weight,
patch radius), and follows it when they change until the user sets another.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from nlmeans_studio.engine import VolumeNoiseEstimate, estimate_volume_noise, suggest_volume_h

TOGETHER = -1  # the key of the h that channels filtered together share
SIGNIFICANT = 4  # digits the box shows of h; a suggested h filters as it is, as denoise-volume's does
# An h this many times above (or below) its suggestion is said to blur (or hardly filter): a
# first-time user's h of 1e9 against noise of 119 gave a box blur without a word.
FAR_FROM_SUGGESTED = 8.0


def suggested(estimate: VolumeNoiseEstimate, settings: dict) -> float:
    """``suggest_volume_h`` for ``settings`` (weighting, center_weight, patch_radius), unrounded.

    An export at the suggestion equals ``denoise-volume``'s bit for bit: rounded to the box's
    digits, it differed from it in 75 voxels of a microscopist's stack.
    """
    return float(suggest_volume_h(estimate, **settings))


class VolumeStrengths:
    """h for ``data`` (Z, Y, X, C) float32, its channels filtered ``mode`` ("together" or
    "separately"); ``estimate`` is the whole volume's noise (channels together), already taken."""

    def __init__(self, data: np.ndarray, estimate: VolumeNoiseEstimate, mode: str) -> None:
        self._data = data
        self._estimates = {TOGETHER: estimate}
        self.region: str = ""  # where the noise was measured, when the user drew a region: "z 4-8, y 2-9, x 1-5"
        self._h: dict[int, float] = {}
        self._suggested: dict[int, float] = {}
        self.mode = mode
        self.settings = {"weighting": "exponential", "center_weight": "one", "patch_radius": 1}

    def _key(self, channel: int) -> int:
        return TOGETHER if self.mode == "together" or self._data.shape[3] == 1 else channel

    def _estimate(self, key: int) -> VolumeNoiseEstimate:
        """The noise of ``key``: a channel's own (estimated when first asked), or the whole volume's."""
        if key not in self._estimates:
            self._estimates[key] = estimate_volume_noise(self._data[..., key])
        return self._estimates[key]

    def h(self, channel: int) -> float:
        """The h that filters ``channel``."""
        key = self._key(channel)
        if key not in self._h:
            self._h[key] = self._suggested[key] = suggested(self._estimate(key), self.settings)
        return self._h[key]

    def set_h(self, channels: list[int], value: float) -> None:
        """The user's h for ``channels`` (all of them where filtered together)."""
        for channel in channels:
            self.h(channel)  # its suggestion first, so that it no longer follows it
            self._h[self._key(channel)] = value

    def use_region(self, estimate: VolumeNoiseEstimate, where: str) -> None:
        """The noise measured in a region the user drew (``where`` says it): every h takes its
        suggestion for it, each channel's own sigma where channels are filtered separately."""
        self._estimates = {TOGETHER: estimate}
        for channel in range(self._data.shape[3]):
            self._estimates[channel] = dataclasses.replace(estimate, sigma=estimate.sigma[channel : channel + 1])
        self._h.clear()
        self._suggested.clear()
        self.region = where

    def set_settings(self, **settings: object) -> None:
        """The filter's weighting, centre weight and patch radius: each h still at its suggestion
        takes the new settings'."""
        self.settings = settings
        for key, h in list(self._h.items()):
            if h == self._suggested[key]:  # by its own key: the shared h follows the whole volume's noise
                self._h[key] = self._suggested[key] = suggested(self._estimate(key), settings)

    def strengths(self) -> float | list[float]:
        """``denoise_volume``'s h: one, or one a channel where they are filtered separately."""
        if self._key(0) == TOGETHER:
            return self.h(0)
        return [self.h(channel) for channel in range(self._data.shape[3])]

    def describe(self, channels: list[int]) -> str:
        """The noise of the shown ``channels`` and the h it suggests, with the estimate's notes."""
        lines = []
        for key, channel in {self._key(channel): channel for channel in channels}.items():
            estimate = self._estimate(key)
            sigma = ", ".join(f"{s:.3g}" for s in estimate.sigma)
            whose = "Noise" if key == TOGETHER else f"Channel {key + 1}: noise"
            whose += f" in your region ({self.region})" if self.region else ""
            text = (
                f"{whose} sigma {sigma} (the volume's units): h {suggested(estimate, self.settings):.{SIGNIFICANT}g} "
                f"suggested for these settings."
            )
            if estimate.growth:
                text += f" Note: {estimate.growth}."
            if estimate.clean:
                text += " The volume looks clean: h is set for half an 8-bit level of its range."
            ratio = self.h(channel) / suggested(estimate, self.settings)
            if ratio > FAR_FROM_SUGGESTED:
                text += f" h is {ratio:.3g} times that: every voxel of the search window weighs alike, a blur."
            elif ratio < 1 / FAR_FROM_SUGGESTED:
                text += f" h is {1 / ratio:.3g} times below that: the filter will hardly change the volume."
            lines.append(text)
        return "\n".join(lines)
