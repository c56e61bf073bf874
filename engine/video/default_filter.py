"""The filter a person gets who tunes nothing: the variant and strengths chosen from the clip's noise.

Chosen on the defaults study (docs/bench/2026-11-26-defaults-study.md, a calibration corpus
and a held-out validation corpus): a colour clip is filtered in Y'CbCr with one strength for
luma and one for chroma (``luma_chroma``), a gray clip as it is; both with exponential weights
and the centre weight "max" (``NLMParams``' defaults). At each variant's best h that one was
within 0.5 dB of the best variant in 28 of 30 held-out cases; the paper's bisquare with centre
one in 13.

The strengths are those ``suggest_h`` gives for each plane group's noise. Where the noise is
what Stein's unbiased risk estimate assumes (added to the picture, of a covariance the clip
shows: white, or correlated between neighbouring pixels as demosaicing and film grain leave
it, or growing with brightness; not an encoder's), the factor on them is chosen from the clip
itself (``sure.choose_strength`` on a few frames' centre, its probe shaped like the noise by
``noise_shape``): the table was calibrated on other pictures, and smooth ones want another h
(held-out retina at sigma 25: -1.64 dB at the table's h, -0.00 at SURE's). Light noise may
get the centre weight "one" instead (``center_candidates``: the defaults study of 2026-11-28,
docs/bench/2026-11-28b-light-noise-and-the-centre-weight.md). Where the noise is in a Y'CbCr
source's samples (``NoiseShape.basis``: luma's and chroma's apart), chroma's factor and then
luma's are searched again apart: subsampled chroma wants more than the ratio ``suggest_h`` gives
(an archivist's ffmpeg-made captures: +0.03 to +0.50 dB, docs/bench/2026-11-29c-sure-shape-in-ycbcr.md).
Where SURE applies, the RGB filter is scored too, and chosen where its risk is clearly lower
(``MODE_MARGIN``): a dark, smooth sky or a colourful texture filters better in RGB (the study's
rocket: +0.5 to +1.4 dB; docs/bench/2026-11-29e-sure-chooses-the-mode.md); not for a Y'CbCr
source, whose export in Y'CbCr keeps what RGB clips (``rgb_allowed``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from ..frames import to_float32
from .choose_h import apply_estimate
from .denoiser import Denoiser
from .luma_chroma import LumaChromaDenoiser, split_estimate, suggest_luma_chroma_h, yuv_matrix
from .noise_estimate import LOW_CONFIDENCE, NoiseEstimate
from .noise_shape import NoiseShape, noise_shape
from .params import NLMParams
from .sure import choose_strength

LumaChroma = tuple[float, float, str]  # (h_luma, h_chroma, matrix): LumaChromaDenoiser's strengths
AUTO = "auto"
FROM_NOISE, SURE, ENCODER, GIVEN = "from the noise", "SURE on the clip", "an encoder's noise", "given"  # .how
SURE_RANGE = (0.5, 2.0)  # factors on the suggested strengths SURE searches
SURE_CROP = 192  # pixels: the side of the frames' centre SURE scores (its cost: 20 filter runs a frame)
SURE_FRAMES = 2  # frames scored (each with its window's frames around it)
ENCODER_FACTOR = 1.5  # on the luma/chroma strengths for an encoder's noise (``encoder_noise``)
ENCODER_CHROMA = 0.55  # chroma's noise sigma over luma's in Y'CbCr under which the noise is in luma alone
SMOOTH_GRAIN = 0.8  # spatial_correlation from which suggest_h's smooth-noise factor has raised h
CENTER_WEIGHTS = ("max", "one")  # what "auto" chooses among for light noise: SURE scores each at its best strength
LIGHT_NOISE = 6.0  # 8-bit levels of average sigma: under it the centre weight "one" may win (``center_candidates``)
MODE_MARGIN = 0.002  # of the noise's variance: by how much SURE's risk in RGB must be under Y'CbCr's to filter in RGB


@dataclasses.dataclass(frozen=True)
class FilterChoice:
    """The filter chosen for a clip.

    Attributes
    ----------
    params : NLMParams
        The window, weighting and centre weight; h and the color transform for the RGB (or gray)
        filter.
    luma_chroma : (h_luma, h_chroma, matrix) or None
        Strengths in 8-bit levels for Y and for Cb/Cr, and the Y'CbCr matrix, where the clip is
        filtered in Y'CbCr; None: in its own channels with ``params``.
    factor : float
        The factor on the suggested strengths (luma's in Y'CbCr): SURE's, or ``ENCODER_FACTOR``
        for an encoder's noise (1 where neither applies).
    how : str
        How the strengths were chosen, for a person: "from the noise", "SURE on the clip",
        "an encoder's noise" or "given".
    chroma_factor : float or None
        SURE's factor on the suggested chroma strength where it chose one apart from luma's
        (noise of a Y'CbCr source's samples); None: ``factor``.
    over_ycbcr : bool
        Whether SURE chose the RGB filter over Y'CbCr's (luma/chroma "auto"), which ``describe``
        says.
    """

    params: NLMParams
    luma_chroma: LumaChroma | None
    factor: float = 1.0
    how: str = FROM_NOISE
    chroma_factor: float | None = None
    over_ycbcr: bool = False

    @property
    def factors(self) -> tuple[float, float]:
        """The factors on the suggested luma (or one) strength and on the chroma strength."""
        return self.factor, self.factor if self.chroma_factor is None else self.chroma_factor

    def describe(self, note: str = "") -> str:
        """One line: the mode and its strengths, the factor on them and ``note`` in brackets.

        The colour decorrelation last in the RGB mode. E.g. "luma/chroma (bt709) exponential/max,
        h_Y = 5.4, h_UV = 4.7 (SURE on the clip: x0.91)", or "(SURE on the clip: x1.26 on luma,
        x1.68 on chroma)" where they differ; "exponential/max, h = 7.9 (SURE on the clip: x1.21;
        RGB filters it better than Y'CbCr), color decorrelation off".
        """
        variant = f"{self.params.weighting}/{self.params.center_weight}"
        luma, chroma = (f"x{factor:.2f}" for factor in self.factors)
        factors = luma if luma == chroma else f"{luma} on luma, {chroma} on chroma"
        notes = [f"{self.how}: {factors}"] if self.how in (SURE, ENCODER) else []
        notes += ["RGB filters it better than Y'CbCr"] if self.over_ycbcr else []
        notes += [note] if note else []
        brackets = f" ({'; '.join(notes)})" if notes else ""
        if self.luma_chroma is not None:
            h_luma, h_chroma, matrix = self.luma_chroma
            return f"luma/chroma ({matrix}) {variant}, h_Y = {h_luma:.1f}, h_UV = {h_chroma:.1f}{brackets}"
        decorrelation = "on" if self.params.color_transform is not None else "off"
        return f"{variant}, h = {self.params.h:.1f}{brackets}, color decorrelation {decorrelation}"

    def denoiser(self, backend: str = "auto", *, bit_depth: int | None = None) -> Denoiser | LumaChromaDenoiser:
        """Return the filter on ``backend``, for uint16 frames of ``bit_depth`` bits as ``Denoiser`` takes it."""
        if self.luma_chroma is None:
            return Denoiser(self.params, backend, bit_depth=bit_depth)
        return LumaChromaDenoiser(self.params, *self.luma_chroma, backend=backend, bit_depth=bit_depth)


def noise_line(estimate: NoiseEstimate, choice: FilterChoice, note: str = "") -> str:
    """One line for a person: the noise read and the filter chosen for it, ``note`` in the filter's brackets.

    E.g. "noise: sigma 9.8, 10.1, 9.9 levels (temporal), confidence 92%; luma/chroma (bt709) ...".
    """
    sigma = ", ".join(f"{s:.1f}" for s in estimate.sigma)
    read = f"sigma {sigma} levels ({estimate.method}), confidence {estimate.confidence:.0%}"
    return f"noise: {read}; {choice.describe(note)}"


def sure_applies(estimate: NoiseEstimate) -> bool:
    """Whether SURE can choose the strength for this noise: some, added to the picture.

    Its covariance and its shape between pixels and by brightness (``noise_shape``) are what
    SURE's probe is drawn with; not an encoder's noise (``encoder_noise``), which is the
    picture's detail as much as noise.
    """
    return estimate.average_sigma >= 1.0 and not encoder_noise(estimate)


def encoder_noise(estimate: NoiseEstimate) -> bool:
    """Whether the noise is what an encoder leaves.

    In luma alone (chroma's sigma in Y'CbCr under ENCODER_CHROMA times luma's: encoders quantize
    chroma's away, 0.0-0.3 on the study's H.264, HEVC and MPEG-2, 0.49 where x264's texture was
    read in motion; noise in a Y'CbCr source's own samples keeps 0.61-0.67, and was taken for an
    encoder's where the channels' count that told them apart fell under 2, at 1.94-1.99: 2.3 dB
    lost on bikes) and not read as smooth film grain, for which ``suggest_h`` has already raised
    h. Its patches differ by quantized blocks as well as by noise, and the best luma/chroma
    strengths are about 1.5 times those suggested (``ENCODER_FACTOR``, measured on the defaults
    study's calibration corpus: H.264, HEVC and MPEG-2 best at 1.25-2 times, 22 of 24 cases
    within 0.5 dB at 1.5, 13 at 1). The motion-compensated estimate reads no
    smoothness, so film grain measured that way gets the factor too (held-out: -1.57 dB at 1,
    -0.09 at 1.5).
    """
    if len(estimate.covariance) != 3:
        return False
    split = split_estimate(estimate)
    smooth = estimate.method != "motion" and estimate.spatial_correlation >= SMOOTH_GRAIN
    return split.sigma_chroma < ENCODER_CHROMA * split.sigma_luma and not smooth


def choose_filter(
    estimate: NoiseEstimate,
    window: NLMParams | None = None,
    *,
    matrix: str = "bt709",
    luma_chroma: str | tuple[float, float] | None = AUTO,
    strength: float = 1.0,
    sample: Sequence[np.ndarray] | np.ndarray | None = None,
    backend: str = "auto",
    shape: NoiseShape | None = None,
    center_weight: str = AUTO,
    rgb_allowed: bool = True,
) -> FilterChoice:
    """Return the filter for a clip of noise ``estimate``: what ``denoise`` and the window use by default.

    Parameters
    ----------
    estimate : NoiseEstimate
        The clip's noise (``estimate_noise``).
    window : NLMParams, optional
        The window, weighting and centre weight (its h and color transform are replaced);
        None: ``NLMParams()``'s defaults.
    matrix : {"bt709", "bt601", "bt2020"}
        The clip's Y'CbCr matrix (``matrix_for``).
    luma_chroma : "auto", (h_luma, h_chroma) or None
        "auto" (the default): a colour clip in Y'CbCr at the strengths its noise suggests, or in
        RGB where SURE finds that better on ``sample`` (``rgb_allowed``); given strengths:
        those, in 8-bit levels; None: the clip's own channels, with the color decorrelation where
        ``decorrelation_decision`` says it helps.
    strength : float
        A multiple of the suggested strengths (a preset's lighter or stronger filter); with
        SURE, a multiple of the strengths it finds best.
    sample : (T, H, W, C) frames, optional
        Consecutive frames of the clip (uint8, uint16 at 16 bits, or float in [0, 1]) for SURE
        to choose the factor on; None: the suggested strengths as they are.
    backend : {"auto", "cpu", "gpu"}
        Where SURE's filter runs.
    shape : NoiseShape, optional
        The noise's shape for SURE's probe, where the caller measured it once for many calls
        (``noise_shape``); None: measured on ``sample``.
    center_weight : {"auto", "max", "one"}
        The pixel's own weight. "auto" (the default): chosen with the strength among
        ``center_candidates`` by SURE where it applies, else ``unjudged_center``'s, also for
        strengths given; "max" or "one": that one, whatever ``window`` says.
    rgb_allowed : bool
        Whether "auto" may filter in RGB: where SURE's risk there is under Y'CbCr's by more than
        MODE_MARGIN of the noise's variance. False for a Y'CbCr source whose planes the export
        filters as they are (a reader's ``yuv_layout``): RGB would clip its super-whites,
        sub-blacks and colours out of RGB's gamut, which Y'CbCr keeps.

    Returns
    -------
    FilterChoice
    """
    window = NLMParams() if window is None else window
    if center_weight != AUTO:
        window = dataclasses.replace(window, center_weight=center_weight)
    colour = len(estimate.covariance) == 3
    if colour and isinstance(luma_chroma, tuple):
        centre = given_strength_center(estimate, center_weight)
        given = dataclasses.replace(window, color_transform=None, center_weight=centre)
        return FilterChoice(given, (*luma_chroma, matrix), 1.0, GIVEN)
    in_luma_chroma = colour and luma_chroma == AUTO
    encoder = ENCODER_FACTOR if in_luma_chroma and encoder_noise(estimate) else 1.0

    def at(scale: float, centre: str, chroma_scale: float | None = None, ycbcr: bool = in_luma_chroma) -> FilterChoice:
        with_centre = dataclasses.replace(window, center_weight=centre)
        if ycbcr:
            h_luma, h_chroma = suggest_luma_chroma_h(split_estimate(estimate, matrix), with_centre)
            params = dataclasses.replace(with_centre, color_transform=None)
            chroma_scale = scale if chroma_scale is None else chroma_scale
            return FilterChoice(params, (scale * encoder * h_luma, chroma_scale * encoder * h_chroma, matrix))
        suggested = apply_estimate(with_centre, estimate)
        return FilterChoice(dataclasses.replace(suggested, h=scale * suggested.h), None)

    candidates = center_candidates(estimate) if center_weight == AUTO else (window.center_weight,)
    if encoder != 1.0:  # "one" for light noise, "max" over it, as the study's corpus chose them
        return dataclasses.replace(at(strength, candidates[-1]), factor=encoder, how=ENCODER)
    unjudged = unjudged_center(estimate) if center_weight == AUTO else window.center_weight
    if sample is None or len(sample) == 0 or not sure_applies(estimate):
        return at(strength, unjudged)
    if shape is None:  # in Y'CbCr, luma's and chroma's apart (chroma subsampling correlates only chroma's)
        shape = noise_shape(np.asarray(sample), estimate, yuv_matrix(matrix) if in_luma_chroma else None)
    if shape is None:  # correlated noise without flat blocks in the sample to measure its shape on
        return at(strength, unjudged)
    frames = to_float32(_centre(np.asarray(sample), SURE_CROP))
    scored = _scored_frames(len(frames), window)
    covariance = estimate.covariance

    def search(make: Callable[[float], FilterChoice], low: float, high: float) -> tuple[float, float]:
        return choose_strength(lambda f: make(f).denoiser(backend), frames, scored, covariance, low, high, shape=shape)

    best = {}  # (in Y'CbCr, centre weight): ((luma's or the one factor, chroma's), risk)
    for ycbcr in (True, False) if in_luma_chroma and rgb_allowed else (in_luma_chroma,):
        for centre in candidates:
            factor, risk = search(lambda f, c=centre, y=ycbcr: at(f, c, ycbcr=y), *SURE_RANGE)
            luma = chroma = factor
            if ycbcr and shape.basis is not None:  # noise of Y'CbCr samples: chroma's factor, then luma's, apart
                around = [factor * bound for bound in SURE_RANGE]
                chroma, _ = search(lambda f, c=centre, y=factor: at(y, c, f), *around)
                luma, risk = search(lambda f, c=centre, u=chroma: at(f, c, u), *around)
            best[ycbcr, centre] = ((luma, chroma), risk)
    margin = MODE_MARGIN * float(np.trace(covariance)) / len(covariance)  # RGB's risk must be under by more
    ycbcr, centre = min(best, key=lambda key: best[key][1] + (margin if in_luma_chroma and not key[0] else 0.0))
    (luma, chroma), _ = best[ycbcr, centre]
    chosen = at(strength * luma, centre, strength * chroma, ycbcr)  # a preset's multiple of them
    return dataclasses.replace(
        chosen,
        factor=luma,
        chroma_factor=None if chroma == luma else chroma,
        how=SURE,
        over_ycbcr=in_luma_chroma and not ycbcr,
    )


def unjudged_center(estimate: NoiseEstimate) -> str:
    """Return the centre weight where SURE cannot judge: "one" for light noise or noise read unsure, else "max".

    With "one" the filter tends to the frame as h falls (``center_candidates``): light noise, and
    noise the estimate is unsure of (under LOW_CONFIDENCE: read in motion, where a codec smoothed
    the flat areas), whose h may be off. Not an encoder's noise (``encoder_noise``), which takes
    "max" over LIGHT_NOISE as calibrated. ffmpeg's test pattern with noise in its samples,
    through ProRes (its flat bars' noise smoothed, read in motion at 0.4): "max" 35.9 and 36.2 dB
    at 960x540 and 1280x720, "one" 39.0 and 39.3.
    """
    return "one" if estimate.average_sigma < LIGHT_NOISE or estimate.confidence < LOW_CONFIDENCE else "max"


def given_strength_center(estimate: NoiseEstimate, center_weight: str = AUTO) -> str:
    """Return the centre weight for strengths a person gives: ``center_weight``, or the noise's for "auto".

    The noise's: the one it calls for where SURE does not judge (``unjudged_center``).
    Typing the strengths the defaults chose, for light noise, went back to "max": 42.1 dB where
    the defaults gave 44.0 on a restorer's zoom over a still at sigma 2, under the noisy 42.3.
    """
    return unjudged_center(estimate) if center_weight == AUTO else center_weight


def center_candidates(estimate: NoiseEstimate) -> tuple[str, ...]:
    """Return the centre weights to choose among for this noise: both for light noise, else "max".

    With "max" a pixel weighs as much as its best match, however far that is: as h falls the
    filter tends to the mean of the two, not to the frame. Under light noise the frame's own
    detail is much of what differs, and "max" blurs it (textured clips with white noise of sigma
    2: 3-6 dB below "one"); over heavier noise "max" wins (sigma 10 and more: 0.5-2 dB). Between,
    it depends on the picture: SURE chooses, and where it cannot (an encoder's noise, or none to
    measure), "one". ``LIGHT_NOISE``, from the defaults study's calibration corpus (each mode at
    its best strength): SURE chose the better of the two on all 12 cases read under 6 levels, and
    "one" wrongly on 8 of the 11 where it chose it over 9.7; on an encoder's noise "one" was within
    0.1 dB of "max" or better on all 12 cases read under 6 levels and lost on 10 of 11 read over 6.1
    (up to 0.53 dB).
    """
    return CENTER_WEIGHTS if estimate.average_sigma < LIGHT_NOISE else ("max",)


def sure_sample_length(window: NLMParams) -> int:
    """Frames ``choose_filter``'s sample should hold: SURE_FRAMES scored, with their window's.

    Parameters
    ----------
    window : NLMParams
        The filter's window (its past and future frames count).

    Returns
    -------
    int
        Consecutive frames to give as ``sample``: the middle ones of the clip, as ``denoise``
        and the window take them.
    """
    return SURE_FRAMES + window.frames_past + window.frames_future


def _scored_frames(length: int, window: NLMParams) -> list[int]:
    """Return the frames of a sample of ``length`` that have their whole window inside it.

    All of them where the sample is shorter than a window.
    """
    first, last = window.frames_past, length - window.frames_future
    return list(range(first, last)) if last > first else list(range(length))


def _centre(frames: np.ndarray, side: int) -> np.ndarray:
    """Return the central side x side pixels of each frame (all of a smaller frame)."""
    height, width = frames.shape[1:3]
    top, left = max(0, (height - side) // 2), max(0, (width - side) // 2)
    return np.ascontiguousarray(frames[:, top : top + side, left : left + side])
