"""``NLMeans``: the engine's filter as a VapourSynth filter, with KNLMeansCL's parameters."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import threading
from collections.abc import Callable, Iterator

import numpy as np
import vapoursynth as vs

from nlmeans_studio.engine import (
    FRAMES_MAX,
    PATCH_RADIUS_MAX,
    SEARCH_RADIUS_MAX,
    BackendUnavailableError,
    NLMParams,
    PlanarDenoiser,
    gpu_unavailable_reason,
    resolve_backend,
)

WEIGHTINGS = {0: "exponential", 2: "bisquare"}  # KNLMeansCL's wmode: Welsch exp(-u), bisquare B (1 - u)^2
CHANNELS = ("Y", "UV", "YUV", "RGB", "AUTO")
TEMPORAL_ENDS = ("truncate", "clamp")
NAME = "nlmeans_studio.vapoursynth.NLMeans"
# KNLMeansCL's device_type -> our backend
DEVICE_TYPES = {"auto": "auto", "default": "auto", "gpu": "gpu", "accelerator": "gpu", "cpu": "cpu"}


def NLMeans(  # noqa: N802 - KNLMeansCL's name, so that scripts change only the namespace
    clip: vs.VideoNode,
    d: int = 1,
    a: int = 2,
    s: int = 4,
    h: float = 1.2,
    channels: str = "AUTO",
    wmode: int = 0,
    wref: float = 1.0,
    rclip: vs.VideoNode | None = None,
    device_id: int = 0,
    num_streams: int = 4,
    *,
    backend: str = "auto",
    temporal_ends: str = "truncate",
    device_type: str | None = None,
    info: bool = False,
    ocl_x: int = 0,
    ocl_y: int = 0,
    ocl_r: int = 0,
) -> vs.VideoNode:
    """Denoise ``clip`` with Non-Local Means, as KNLMeansCL's ``KNLMeansCL`` and ``nlm_ispc.NLMeans`` do.

    The engine's filter (docs/DESIGN.md §1) with KNLMeansCL's parameters and their meanings; one
    ``PlanarDenoiser`` serves the whole clip, so that the GPU keeps its compiled kernels and buffers
    from frame to frame, and each source frame crosses the bus once while the outputs that search
    it are filtered (its planes through page-locked memory; the outputs rounded on the GPU and sent
    back the same way). With several ``num_streams`` a frame is sent again where one stream has
    fallen behind the others by more than the frames kept.

    Parameters
    ----------
    clip : vapoursynth.VideoNode
        GRAY, YUV (any subsampling) or RGB, 8 to 16-bit integer, half or single float, of a
        constant format and size.
    d : int
        Temporal radius, in frames: d past and d future frames are searched (0..8).
    a : int
        Search radius, in pixels: the window is (2a+1) x (2a+1) (0..16).
    s : int
        Patch radius, in pixels: patches are (2s+1) x (2s+1) (0..8).
    h : float
        Strength in 8-bit levels (1/255 of full scale at any bit depth), KNLMeansCL's scale and
        ours: a patch's weight is exp(-D / (h/255)^2) with D the mean squared difference over its
        pixels and the filtered planes, samples scaled to [0, 1]. 0.001..10000.
    channels : {"AUTO", "Y", "UV", "YUV", "RGB"}
        The planes filtered, together (their patch distance is the mean over them); the others are
        copied. "AUTO": "RGB" for RGB clips, "Y" for GRAY and YUV. "UV" filters the chroma planes
        at their own size; "YUV" needs 4:4:4 (as in KNLMeansCL: filter subsampled clips with "Y"
        and "UV" in two calls).
    wmode : {0, 2}
        0: Welsch, exp(-u); 2: bisquare, (1 - u)^2 for u <= 1. KNLMeansCL's 1 (1 - u) and 3
        ((1 - u)^8) are not weightings of ours and are refused.
    wref : float
        The centre pixel's weight as a multiple of the largest weight of the others; only 1.0,
        our centre weight "max", can be expressed.
    rclip : vapoursynth.VideoNode, optional
        A clip of ``clip``'s format, size and length whose patches give the distances while
        ``clip`` is averaged (the engine's guide).
    device_id : int
        The GPU the filter runs on where the backend is the GPU; on the CPU only 0 is taken, so
        that a script asking for a GPU is not run on the CPU unawares.
    num_streams : int
        Frames filtered at once on the GPU (1..64), each on a CUDA stream of its own, as
        vszipcu's: VapourSynth runs a Python filter's calls one at a time, so frame n goes
        through the (n % num_streams)-th of num_streams filters, which run side by side on
        VapourSynth's threads (at most ``core.num_threads`` at once). 4, the default, was the
        fastest or near it for 8- and 16-bit samples at 1080p on an H100 (1.5-2.8x one at a
        time); float samples gained more from 8. Ignored on the CPU, where each frame uses
        every core.
    backend : {"auto", "cpu", "gpu"}
        "auto": the GPU where CuPy sees one (or NLMEANS_BACKEND says so), else the CPU.
    temporal_ends : {"truncate", "clamp"}
        Near the clip's ends, "truncate" (ours, DESIGN.md §1) searches only the frames there are;
        "clamp" (KNLMeansCL's) searches the first or last frame again in place of each missing
        one, which weighs it, the centre pixel included, twice or more.
    device_type : {"auto", "default", "gpu", "accelerator", "cpu"}, optional
        KNLMeansCL's, so that its scripts run unchanged: the backend ("auto" and "default": auto,
        "gpu" and "accelerator": the GPU, "cpu": the CPU); give it or ``backend``, not both.
    info : bool
        KNLMeansCL's text over the frame: not drawn; only False is taken.
    ocl_x, ocl_y, ocl_r : int
        KNLMeansCL's OpenCL work sizes, so that its scripts run unchanged: taken and ignored.

    Returns
    -------
    vapoursynth.VideoNode
        ``clip``'s format, size, length and frame properties, the filtered planes replaced.

    Raises
    ------
    vapoursynth.Error
        A format or parameter this filter cannot take; the message names it, says what is
        accepted, and, for KNLMeansCL's wmode 1 and 3 and wref other than 1, that ours has no
        counterpart.

    Notes
    -----
    Against nlm_ispc (a CPU port of KNLMeansCL) with the same arguments, pixels at least a + s
    from the frame's edges are equal: float samples to float32 rounding, integer samples within
    one sample (both sum in float32), for "Y", "UV" and "YUV", both weightings, with and without
    ``rclip``; with ``temporal_ends="clamp"`` on every frame, with the default away from the
    clip's first and last d frames (tests/engine/test_vapoursynth.py; the figures in
    docs/bench/2026-11-26-vapoursynth-against-nlm-ispc.md). Not at small h, where nlm_ispc's
    weights underflow, nor, with the bisquare, where a pixel's whole window lies at the cutoff,
    where float32 rounding decides (the README's figures). What differs, by design:

    - Borders: ours mirror the frame without repeating the edge pixel; KNLMeansCL clamps
      coordinates into the frame, so pixels within a + s of an edge differ.
    - Ends of the clip: see ``temporal_ends``. KNLMeansCL's repeated frame brings each pixel's
      own patch in again at full weight, so its first and last frames are hardly filtered where h
      is below the noise; ours are filtered as the others.
    - RGB: our distance is the plain mean over R, G and B; KNLMeansCL weighs them by the pair's
      mean red (the "redmean" colour distance: (2 + r)/3, 4/3 and (3 - r)/3 for r the mean of the
      two red samples), which depends on the pixels and so is no colour transform of ours: RGB
      outputs are close, not equal.
    - Exponential weights are computed relative to the window's best, so a small h never loses
      them to float underflow; where KNLMeansCL's all underflow it returns the pixel unchanged.

    With exponential weights and white noise of sigma 8-bit levels, h near 0.6 sigma works well;
    with the bisquare, near 2 sigma (``nlmeans_studio.engine.suggest_h`` reads it for a window).
    The cost grows with (2a+1)^2 (2d+1); s costs almost nothing.
    """
    clip = _check_clip(clip, "clip")
    fmt = clip.format
    backend = _backend(backend, device_type)
    if info is not False:
        raise vs.Error(f"{NAME}: info (KNLMeansCL's text over the frame) is not drawn here; leave it False")
    d = _checked_int("d", d, FRAMES_MAX, "the temporal radius: frames searched on each side")
    a = _checked_int("a", a, SEARCH_RADIUS_MAX, "the search radius in pixels")
    s = _checked_int("s", s, PATCH_RADIUS_MAX, "the patch radius in pixels")
    planes = _planes(fmt, channels)
    try:
        params = NLMParams(
            h=h,
            patch_radius=s,
            search_radius=a,
            frames_past=d,
            frames_future=d,
            weighting=_weighting(wmode),
            center_weight=_center_weight(wref),
        )
        if len(planes) == 2:  # U and V go in as (U, V, 0): see PlanarDenoiser's planes
            params = dataclasses.replace(params, h=params.h * math.sqrt(2 / 3))
    except ValueError as error:  # h out of the engine's range
        raise vs.Error(f"{NAME}: {error}") from None
    if rclip is not None:
        _check_guide(clip, rclip)
    if temporal_ends not in TEMPORAL_ENDS:
        raise vs.Error(f"{NAME}: temporal_ends must be 'truncate' or 'clamp', got {temporal_ends!r}")
    _check_plane_size(fmt, clip.width, clip.height, planes, params)
    device = _Device(backend, device_id, num_streams)
    peak = (1 << fmt.bits_per_sample) - 1 if fmt.sample_type == vs.INTEGER else None
    # On the GPU each source frame goes up once while it stays there: the windows of the frames that
    # core.num_threads threads ask for at once, and 2d more, are kept (a copy of each clip's).
    spare = (1 + (rclip is not None)) * (vs.core.num_threads + 2 * d)
    with device.selected():
        denoiser = PlanarDenoiser(params, device.backend, planes=len(planes), peak=peak, spare=spare)
    length = clip.num_frames
    # What a float clip's frame refused for its scale needs in VapourSynth's words
    float_scale = "" if peak is not None else " (float clips are 0..1: std.Expr(clip, 'x 255 /') scales 8-bit values)"
    neighbours = [_shifted(clip, k) for k in range(-d, d + 1)]
    guides = [] if rclip is None else [_shifted(rclip, k) for k in range(-d, d + 1)]

    def filtered(n: int, f: vs.VideoFrame | list[vs.VideoFrame]) -> vs.VideoFrame:
        """Return the clip's frame n filtered, ``f`` being its window's frames (those of ``neighbours + guides``)."""
        f = f if isinstance(f, list) else [f]  # ModifyFrame hands one clip's frame alone
        kept, center = _window(n, length, d, temporal_ends)
        numbers = [min(max(n + k - d, 0), length - 1) for k in kept]  # neighbour k is frame n + k - d, clamped
        frames = {(0, number): f[k] for number, k in zip(numbers, kept, strict=True)}  # keys: (clip 0, rclip 1)
        if guides:
            frames.update({(1, number): f[len(neighbours) + k] for number, k in zip(numbers, kept, strict=True)})
        keys = [(0, number) for number in numbers]
        out = _output_frame(f[d], planes)
        try:
            with device.selected():
                denoiser.denoise_into(
                    keys,
                    center,
                    lambda key: [np.asarray(frames[key][plane]) for plane in planes],
                    [np.asarray(out[plane]) for plane in planes],
                    guide_keys=[(1, number) for _, number in keys] if guides else None,
                )
        except ValueError as error:  # samples the filter cannot read (a float clip on 0..255, NaN)
            raise vs.Error(f"{NAME}: frame {n}: {error}{float_scale}") from None
        return out

    return _in_phases(clip, neighbours + guides, filtered, device.phases)


def _in_phases(
    clip: vs.VideoNode,
    windows: list[vs.VideoNode],
    filtered: Callable[[int, vs.VideoFrame | list[vs.VideoFrame]], vs.VideoFrame],
    phases: int,
) -> vs.VideoNode:
    """Return ``clip`` with frame n made by ``filtered(n, the frames n of windows)``, ``phases`` frames at a time.

    VapourSynth runs a ModifyFrame's calls one at a time; frames n with n % phases = k go through
    a ModifyFrame of their own, so that ``phases`` calls run at once, and are interleaved back.
    """
    phases = min(phases, clip.num_frames)
    if phases == 1:
        return clip.std.ModifyFrame(windows, filtered)

    def phase(k: int) -> vs.VideoNode:
        def call(n: int, f: vs.VideoFrame | list[vs.VideoFrame]) -> vs.VideoFrame:
            return filtered(n * phases + k, f)

        return clip[k::phases].std.ModifyFrame([window[k::phases] for window in windows], call)

    interleaved = vs.core.std.Interleave([phase(k) for k in range(phases)], extend=True, modify_duration=False)
    return interleaved[: clip.num_frames]  # the phases' last frames repeated by extend are never asked for


def _output_frame(source: vs.VideoFrame, planes: tuple[int, ...]) -> vs.VideoFrame:
    """Return a writable frame for ``source``'s output: its properties, and the planes not filtered as they are.

    Where every plane is filtered the frame is new (its planes are written whole); a copy of
    ``source`` would copy each plane once more when it is written.
    """
    if len(planes) < source.format.num_planes:
        return source.copy()
    out = vs.core.create_video_frame(source.format, source.width, source.height)
    out.props.update(source.props)
    return out


def _backend(backend: str, device_type: object) -> str:
    """Return the backend ``backend`` or KNLMeansCL's ``device_type`` asks for."""
    if device_type is None:
        return backend
    named = DEVICE_TYPES.get(device_type.lower()) if isinstance(device_type, str) else None
    if named is None:
        raise vs.Error(f"{NAME}: device_type must be one of {', '.join(DEVICE_TYPES)}, got {device_type!r}")
    if backend != "auto" and backend != named:
        raise vs.Error(f"{NAME}: device_type={device_type!r} and backend={backend!r} disagree; give one of them")
    return named


def _checked_int(name: str, value: object, high: int, meaning: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
        raise vs.Error(f"{NAME}: {name} ({meaning}) must be an integer in 0..{high}, got {value!r}")
    return value


def _weighting(wmode: object) -> str:
    """Return our weighting for KNLMeansCL's ``wmode``, or refuse the two we do not have."""
    if wmode in (1, 3) and not isinstance(wmode, bool):
        kind = "bisquare A, 1 - u" if wmode == 1 else "bisquare C, (1 - u)^8"
        raise vs.Error(
            f"{NAME}: wmode={wmode} ({kind}) is not one of NLMeans Studio's weightings; use wmode=0 "
            "(Welsch, exp(-u)) or wmode=2 (bisquare B, (1 - u)^2)"
        )
    if isinstance(wmode, bool) or wmode not in WEIGHTINGS:
        raise vs.Error(f"{NAME}: wmode must be 0 (Welsch) or 2 (bisquare), got {wmode!r}")
    return WEIGHTINGS[wmode]


def _center_weight(wref: object) -> str:
    """Return our centre weight for KNLMeansCL's ``wref``: 1.0 is "max", no other value is ours."""
    if isinstance(wref, bool) or not isinstance(wref, (int, float)) or wref != 1:
        raise vs.Error(
            f"{NAME}: wref must be 1.0, got {wref!r}: the centre pixel weighs as the largest weight of the "
            "others (KNLMeansCL's wref=1.0); NLMeans Studio has no multiple of it"
        )
    return "max"


def _check_clip(clip: object, name: str) -> vs.VideoNode:
    """Return ``clip``, refusing what is not a clip of a constant format and size that the filter reads."""
    if not isinstance(clip, vs.VideoNode):
        raise vs.Error(f"{NAME}: {name} must be a video clip, got {type(clip).__name__}")
    fmt = clip.format
    if fmt is None or fmt.color_family == vs.UNDEFINED or clip.width == 0 or clip.height == 0:
        raise vs.Error(
            f"{NAME}: {name} must have a constant format and size; convert it to one first (e.g. "
            "core.resize.Bicubic(clip, width=W, height=H, format=vs.YUV420P8))"
        )
    integer = fmt.sample_type == vs.INTEGER and 8 <= fmt.bits_per_sample <= 16
    floating = fmt.sample_type == vs.FLOAT and fmt.bits_per_sample in (16, 32)
    if not (integer or floating):
        raise vs.Error(f"{NAME}: {name} is {fmt.name}; 8 to 16-bit integer, half or single float samples are accepted")
    if fmt.color_family not in (vs.GRAY, vs.YUV, vs.RGB):
        raise vs.Error(f"{NAME}: {name} is {fmt.name}; GRAY, YUV or RGB clips are accepted")
    return clip


def _check_guide(clip: vs.VideoNode, rclip: object) -> None:
    """Refuse a guide whose format, size or length is not ``clip``'s."""
    rclip = _check_clip(rclip, "rclip")
    if (rclip.format.id, rclip.width, rclip.height, rclip.num_frames) != (
        clip.format.id,
        clip.width,
        clip.height,
        clip.num_frames,
    ):
        raise vs.Error(
            f"{NAME}: rclip must have clip's format, size and length ({clip.format.name}, {clip.width}x{clip.height}, "
            f"{clip.num_frames} frames), got {rclip.format.name}, {rclip.width}x{rclip.height}, "
            f"{rclip.num_frames} frames"
        )


def _planes(fmt: vs.VideoFormat, channels: object) -> tuple[int, ...]:
    """Return the planes ``channels`` filters together in a clip of ``fmt``, refusing what KNLMeansCL refuses."""
    name = channels.upper() if isinstance(channels, str) else channels
    if name not in CHANNELS:
        raise vs.Error(f"{NAME}: channels must be one of {', '.join(CHANNELS)}, got {channels!r}")
    if name == "AUTO":
        name = "RGB" if fmt.color_family == vs.RGB else "Y"
    accepted = {
        "Y": fmt.color_family in (vs.GRAY, vs.YUV),
        "UV": fmt.color_family == vs.YUV,
        "YUV": fmt.color_family == vs.YUV and fmt.subsampling_w == fmt.subsampling_h == 0,
        "RGB": fmt.color_family == vs.RGB,
    }
    if not accepted[name]:
        needs = {
            "Y": "a GRAY or YUV",
            "UV": "a YUV",
            "YUV": "a YUV 4:4:4 (filter others with 'Y' and 'UV')",
            "RGB": "an RGB",
        }
        raise vs.Error(f"{NAME}: channels={name!r} needs {needs[name]} clip, got {fmt.name}")
    return {"Y": (0,), "UV": (1, 2)}.get(name, (0, 1, 2))


def _check_plane_size(fmt: vs.VideoFormat, width: int, height: int, planes: tuple[int, ...], params: NLMParams) -> None:
    """Refuse planes smaller than a + s + 1 pixels now, rather than on the first frame."""
    if planes[0] != 0:
        width, height = width >> fmt.subsampling_w, height >> fmt.subsampling_h
    smallest = params.min_frame_size
    if width < smallest or height < smallest:
        raise vs.Error(
            f"{NAME}: the filtered planes are {width}x{height} pixels, too small for a={params.search_radius} and "
            f"s={params.patch_radius}: both sides must be at least a + s + 1 = {smallest}"
        )


def _shifted(clip: vs.VideoNode, k: int) -> vs.VideoNode:
    """Return the clip whose frame n is ``clip``'s frame n + k, clamped to the clip: KNLMeansCL's neighbours."""
    length = clip.num_frames
    if k < 0:
        head = clip[0] * min(-k, length)
        return head + clip[: length + k] if -k < length else head
    if k > 0:
        tail = clip[length - 1] * min(k, length)
        return clip[k:] + tail if k < length else tail
    return clip


def _window(n: int, length: int, d: int, temporal_ends: str) -> tuple[range, int]:
    """Return which of frame n's 2d + 1 clamped neighbours are searched, and the centre's place among them."""
    if temporal_ends == "clamp":
        return range(2 * d + 1), d
    first = max(-d, -n)
    return range(d + first, d + min(d, length - 1 - n) + 1), -first


class _Device:
    """Where the filter runs: the CPU, or GPU ``device_id`` with ``num_streams`` frames filtered at once.

    On the GPU each VapourSynth thread runs its calls on a CUDA stream of its own, so that the
    frames filtered at once overlap their copies and kernels.
    """

    def __init__(self, backend: str, device_id: object, num_streams: object) -> None:
        self.device_id = _checked_int("device_id", device_id, 1023, "the GPU's number")
        if isinstance(num_streams, bool) or not isinstance(num_streams, int) or not 1 <= num_streams <= 64:
            raise vs.Error(
                f"{NAME}: num_streams (frames filtered at once on the GPU) must be an integer in 1..64, got "
                f"{num_streams!r}"
            )
        try:
            self.backend = resolve_backend(backend)
        except (ValueError, BackendUnavailableError) as error:
            raise vs.Error(f"{NAME}: {error}") from None
        if self.backend == "cpu" and self.device_id:
            why = "backend='cpu' was asked for"
            if backend != "cpu":
                why = gpu_unavailable_reason() or "NLMEANS_BACKEND=cpu"
            raise vs.Error(
                f"{NAME}: device_id={self.device_id} names a GPU, but the filter runs on the CPU ({why}); "
                "leave device_id out to filter on the CPU"
            )
        self.phases = num_streams if self.backend == "gpu" else 1
        if self.backend == "gpu":
            import cupy

            self._cupy = cupy
            count = cupy.cuda.runtime.getDeviceCount()
            if self.device_id >= count:
                raise vs.Error(f"{NAME}: device_id must be below {count}, the GPUs here; got {self.device_id}")
            self._streams = threading.local()

    @contextlib.contextmanager
    def selected(self) -> Iterator[None]:
        """Run the block on this device: on the GPU on the calling thread's stream."""
        if self.backend == "cpu":
            yield
            return
        with self._cupy.cuda.Device(self.device_id):
            stream = getattr(self._streams, "stream", None)
            if stream is None:
                stream = self._streams.stream = self._cupy.cuda.Stream(non_blocking=True)
            with stream:
                yield
