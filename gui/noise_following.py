"""h follows the noise: the filter's strengths and color decorrelation set from the noise in use.

The noise in use is the synthetic noise while it is on, else the clip's latest estimate. h is
``strength`` times the h the engine suggests for that noise and the window (1 by default; a
preset's strength sets another multiple), times the factor ``choose_filter`` gives for the
clip's estimate (SURE's best on the clip, or an encoder's noise's; as ``denoise`` chooses it),
and so are the luma/chroma strengths unless they are given (chroma's with its own factor where
SURE chose one apart). Under the luma/chroma mode "auto" the clip is filtered in Y'CbCr, or in
RGB with one h where SURE found that better on the clip. The centre weight follows the noise in
use too, set when it changes (light noise may get "one"; the one chosen with the clip's factor,
or ``choose_filter``'s for the synthetic noise) and yours to change until it next does.
Color decorrelation is offered when the noise gives a color transform, and ticked where the
engine says it helps. A clip's saved h stands until its first estimate arrives.
"""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import QObject, Signal

from nlmeans_studio.engine import (
    FilterChoice,
    NLMParams,
    NoiseEstimate,
    Preset,
    apply_estimate,
    choose_filter,
    parse_luma_chroma,
    split_estimate,
    suggest_luma_chroma_h,
)

from .controls import RGB, YCBCR, ParameterPanel
from .panels import NoisePanel
from .saved_settings import ClipSettings


class NoiseFollower(QObject):
    """Sets the parameter panel from the noise; the window feeds it the clip, the estimates and
    the synthetic noise's changes, and wires its signals.

    ``estimate_needed``: h has no noise to follow and a clip is open, the window asks the worker
    for an estimate. ``parameters_changed``: h, decorrelation or the luma/chroma strengths may
    have moved, preview again.
    """

    estimate_needed = Signal()
    parameters_changed = Signal()

    def __init__(self, parameters: ParameterPanel, noise: NoisePanel, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._parameters = parameters
        self._noise = noise
        self.estimate: NoiseEstimate | None = None  # the clip's latest estimate
        self.noise_in_use: NoiseEstimate | None = None  # what h follows: the synthetic noise or the estimate
        self.strength = 1.0  # h as a multiple of the h suggested for the noise (a preset's)
        self.choice: FilterChoice | None = None  # the filter choose_filter chose for the clip's estimate
        self.pinned_center: str | None = None  # a preset's centre weight, which the noise does not change
        self.matrix: str | None = None  # the clip's Y'CbCr matrix; None until a clip is open
        self._keep_h = False  # the clip's saved h stands when its noise estimate arrives
        parameters.luma_chroma_mode_changed.connect(self._follow_in_luma_chroma)

    def new_clip(self, matrix: str) -> None:
        """Another clip is open (Y'CbCr ``matrix``): its noise, and so the filter chosen for it, are not known yet."""
        self.matrix = matrix
        self.estimate = self.noise_in_use = self.choice = self.pinned_center = None
        self._parameters.offer_decorrelation(None)
        self._parameters.set_auto_mode(None)
        self._noise.clear_estimate()

    def restore_clip(self, clip: ClipSettings, keep_h: bool) -> None:
        """A clip's settings; with ``keep_h`` (saved with the clip) their h stands until its
        estimate arrives, else h follows the synthetic noise if on, or the noise estimated."""
        self.strength = clip.strength
        self._parameters.set_params(clip.params)
        self._parameters.set_luma_chroma_mode(parse_luma_chroma(clip.luma_chroma))
        self._keep_h = keep_h  # synthetic_changed follows: the h saved with the clip stands, whatever its noise
        self._noise.restore(clip.noise)
        self._keep_h = keep_h and self._noise.noise() is None  # and when the estimate on its way arrives

    def synthetic_changed(self) -> None:
        """h follows the synthetic noise while it is on, the clip's estimated noise otherwise."""
        synthetic = self._noise.noise()
        if synthetic is not None:
            self.apply_noise(synthetic.estimate())
        elif self.estimate is not None:
            self.apply_noise(self.estimate)
        elif self.matrix is not None:
            self.noise_in_use = None
            self.estimate_needed.emit()

    def estimated(self, estimate: NoiseEstimate, choice: FilterChoice | None = None) -> None:
        """The worker measured the clip's noise, and ``choose_filter`` chose the filter for it
        (None: the suggested strengths): its factors on the strengths it suggests
        (``FilterChoice.factors``: SURE's, an encoder's noise's, else 1) and its centre weight are
        followed (a saved h and its centre weight no longer stand); where it chose RGB over
        Y'CbCr (``FilterChoice.over_ycbcr``), so is its mode while auto is on. The factors also
        serve the other modes, which the choice did not score."""
        self.estimate = estimate
        self.choice = choice
        self.apply_noise(estimate)
        self._keep_h = False

    def apply_noise(self, estimate: NoiseEstimate | None = None) -> None:
        """h (``strength`` times the suggested h) and color decorrelation from ``estimate``, which
        becomes ``noise_in_use`` (by default the noise in use already, if any). The noise panel
        shows the clip's estimate with the h it suggests for the window now, whatever h is in use
        (a clip's saved h, a preset's multiple)."""
        estimate = estimate or self.noise_in_use
        if estimate is None:
            return
        self.noise_in_use = estimate
        self._parameters.set_auto_mode(self._auto_mode(estimate))
        if not self._keep_h:
            center = self._center_for(estimate)
            self._parameters.set_params(dataclasses.replace(self._parameters.params(), center_weight=center))
        suggested = apply_estimate(self._parameters.params(), estimate)
        try:
            transform = estimate.color_transform() if len(estimate.covariance) > 1 else None
        except ValueError:
            transform = None
        self._parameters.offer_decorrelation(transform, ticked=suggested.color_transform is not None)
        if not self._keep_h:
            self._parameters.set_h(self._multiple() * suggested.h)
        if estimate is self.estimate:
            shown = self._parameters.params()
            variant = f"{shown.weighting}/{shown.center_weight}"
            self._noise.show_estimate(estimate, shown.color_transform, suggested.h, variant)
        self._follow_in_luma_chroma()
        self.parameters_changed.emit()

    def reset_to_suggested(self) -> None:
        """The default filter (``NLMParams()``, luma/chroma auto); its strengths from the noise
        when it is known."""
        self.strength, self.pinned_center = 1.0, None
        self._parameters.set_params(NLMParams())
        self._parameters.set_luma_chroma_mode("auto")
        self.apply_noise()
        self._choose_for_the_window()

    def apply_preset(self, preset: Preset) -> None:
        """A preset's parameters; its strength sets h from the noise (estimated first if unknown). Its
        centre weight "auto" keeps the one chosen for the clip's noise; another stays, whatever the
        noise (``pinned_center``), as ``denoise --filter-preset`` keeps it."""
        self.pinned_center = None if preset.center_weight == "auto" else preset.center_weight
        center = self.pinned_center or self._parameters.params().center_weight
        self._parameters.set_params(dataclasses.replace(preset.params, center_weight=center))
        self._parameters.set_luma_chroma_mode(preset.luma_chroma)
        self._follow_in_luma_chroma()  # for the preset's window, also where the mode was auto already
        if preset.strength is not None:
            self.strength = preset.strength
            if self.noise_in_use is None and self.matrix is not None:
                self.estimate_needed.emit()
            self.apply_noise()
            self._choose_for_the_window()

    def _choose_for_the_window(self) -> None:
        """Where the clip's filter was chosen on the clip for another window than the one now set
        (a preset's, or the default one after a preset), the worker is asked to choose it again for
        this one, as ``denoise --filter-preset`` does (window Light was 0.64 dB under the command
        line's light: SURE's factor of the window before). Meanwhile the strengths scale the old
        factors. Not over a region's estimate, which the clip's would replace."""
        chosen = self._chosen()
        if chosen is None or self.estimate is None or self.estimate.method == "region":
            return
        pinned_elsewhere = self.pinned_center not in (None, chosen.params.center_weight)
        if _window(chosen.params) != _window(self._parameters.params()) or pinned_elsewhere:
            self.estimate_needed.emit()

    def relative_strength(self, params: NLMParams) -> float | None:
        """``params.h`` as a multiple of the h suggested for the noise in use (None: not known),
        for a preset that follows the next clip's noise."""
        if self.noise_in_use is None:
            return None
        return params.h / (self._factor() * apply_estimate(params, self.noise_in_use).h)

    def _follow_in_luma_chroma(self) -> None:
        """Unless given, the two strengths are the suggested ones for the noise in use, times
        ``strength`` (as h is): the RGB estimate seen in the clip's Y'CbCr. Off, they show what
        auto would use, and where typing them starts from."""
        estimate, mode = self.noise_in_use, self._parameters.luma_chroma_mode()
        if isinstance(mode, tuple) or estimate is None or self.matrix is None:
            return
        if len(estimate.covariance) != 3:  # a gray clip has no chroma: it is filtered as it is
            return
        h_luma, h_chroma = suggest_luma_chroma_h(split_estimate(estimate, self.matrix), self._parameters.params())
        self._parameters.set_luma_chroma_h(self._multiple() * h_luma, self._multiple(chroma=True) * h_chroma)

    def _auto_mode(self, estimate: NoiseEstimate) -> str | None:
        """Where luma/chroma auto filters for ``estimate``: RGB where the clip's choice put it over
        Y'CbCr, else Y'CbCr; None for a gray clip, which has no chroma."""
        if len(estimate.covariance) != 3:
            return None
        chosen = self._chosen()
        return RGB if chosen is not None and chosen.over_ycbcr else YCBCR

    def _center_for(self, estimate: NoiseEstimate) -> str:
        """The centre weight for ``estimate``: a preset's pinned one, the one chosen with the clip's
        factor, else the one ``choose_filter`` gives that noise without frames to score (the
        synthetic noise's)."""
        if self.pinned_center is not None:
            return self.pinned_center
        if estimate is self.estimate and self.choice is not None:
            return self.choice.params.center_weight
        return choose_filter(estimate, self._parameters.params()).params.center_weight

    def _factor(self, chroma: bool = False) -> float:
        """choose_filter's factor (chroma's, or luma's and the one strength's) where the noise in use
        is the clip's estimate (not the synthetic noise)."""
        chosen = self._chosen()
        return 1.0 if chosen is None else chosen.factors[chroma]

    def _chosen(self) -> FilterChoice | None:
        """The filter chosen for the clip's estimate where that is the noise in use (not the synthetic noise)."""
        return self.choice if self.noise_in_use is self.estimate else None

    def _multiple(self, chroma: bool = False) -> float:
        """A strength's multiple of the one suggested: a preset's strength times choose_filter's factor."""
        return self.strength * self._factor(chroma)


def _window(params: NLMParams) -> tuple:
    """What SURE's factors depend on besides the noise: the patch, the search, the frames, the weighting."""
    return params.patch_radius, params.search_radius, params.frames_past, params.frames_future, params.weighting
