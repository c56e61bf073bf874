"""nlmeans_studio.vapoursynth.NLMeans: KNLMeansCL's parameters, checked against nlm_ispc (a CPU port of it).

Skipped where VapourSynth is not installed (it needs Python >= 3.12: ``pip install -e ".[peers]"``);
the comparisons with nlm_ispc carry the marker ``peers`` and skip where that plugin is missing.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

vs = pytest.importorskip("vapoursynth", reason="VapourSynth is not installed (it needs Python >= 3.12)")

from nlmeans_studio.engine import Denoiser, NLMParams, gpu_unavailable_reason, read_frames  # noqa: E402 - after the skip
from nlmeans_studio.vapoursynth import NLMeans  # noqa: E402 - imports VapourSynth

core = vs.core
needs_nlm_ispc = pytest.mark.skipif(not hasattr(core, "nlm_ispc"), reason="nlm_ispc is not installed")
ROOT = Path(__file__).resolve().parent.parent.parent
FRAMES, HEIGHT, WIDTH = 5, 48, 64
SIGMA = 10 / 255  # white noise, full scale


def planes_of(seed: int, fmt) -> list[list[np.ndarray]]:
    """Seeded noisy frames of ``fmt``, per frame a list of planes at their own sizes, in [0, 1] (U, V about 0.5)."""
    rng = np.random.default_rng(seed)
    frames = []
    for t in range(FRAMES):
        planes = []
        for plane in range(fmt.num_planes):
            chroma = plane > 0 and fmt.color_family == vs.YUV
            height = HEIGHT >> (fmt.subsampling_h if chroma else 0)
            width = WIDTH >> (fmt.subsampling_w if chroma else 0)
            rows, columns = np.mgrid[0:height, 0:width] / (6.0 if chroma else 10.0)
            clean = 0.5 + 0.3 * np.sin(columns + t / 4 + plane) * np.cos(rows)
            planes.append(np.clip(clean + rng.normal(0, SIGMA, clean.shape), 0, 1))
        frames.append(planes)
    return frames


def clip_of(frames: list[list[np.ndarray]], fmt) -> "vs.VideoNode":
    """A clip of ``fmt`` holding ``frames`` (values in [0, 1]; integer formats scaled to their peak, float YUV's
    chroma centred on 0 as VapourSynth's is)."""
    blank = core.std.BlankClip(format=fmt.id, width=WIDTH, height=HEIGHT, length=len(frames))

    def fill(n, f):
        out = f.copy()
        for plane, values in enumerate(frames[n]):
            if fmt.sample_type == vs.INTEGER:
                values = np.rint(values * ((1 << fmt.bits_per_sample) - 1))
            elif plane > 0 and fmt.color_family == vs.YUV:
                values = values - 0.5
            np.asarray(out[plane])[...] = values
        return out

    return core.std.ModifyFrame(blank, blank, fill)


def planes_from(clip: "vs.VideoNode") -> list[list[np.ndarray]]:
    """Per frame, the clip's planes as float64 in 8-bit levels (integer samples scaled from their depth)."""
    fmt = clip.format
    scale = 255 / ((1 << fmt.bits_per_sample) - 1) if fmt.sample_type == vs.INTEGER else 255
    return [[np.asarray(f[p]).astype(np.float64) * scale for p in range(fmt.num_planes)] for f in clip.frames()]


def interior(plane: np.ndarray, margin: int) -> np.ndarray:
    return plane[margin:-margin, margin:-margin]


# (format, channels, wmode, h, (d, a, s), guided): float, 8- to 16-bit integer, 4:4:4 and 4:2:0, each plane group
PEER_CASES = [
    ("GRAYS", "Y", 0, 6.0, (1, 2, 2), False),
    ("GRAYS", "Y", 2, 20.0, (0, 3, 1), False),
    ("GRAYS", "Y", 0, 6.0, (1, 2, 2), True),
    ("YUV444PS", "Y", 2, 20.0, (1, 2, 2), False),
    ("YUV444PS", "UV", 0, 6.0, (1, 2, 2), False),
    ("YUV444PS", "YUV", 0, 6.0, (1, 1, 3), False),
    ("YUV444PS", "YUV", 2, 20.0, (1, 2, 2), True),
    ("GRAY8", "AUTO", 0, 6.0, (1, 2, 2), False),
    ("YUV420P8", "UV", 2, 20.0, (1, 2, 1), False),
    ("YUV420P8", "Y", 0, 6.0, (0, 2, 2), True),
    ("YUV444P16", "YUV", 0, 6.0, (1, 2, 2), False),
    ("YUV420P16", "Y", 2, 20.0, (1, 2, 2), False),
    ("YUV420P10", "UV", 0, 6.0, (1, 2, 2), False),
]


@pytest.mark.peers
@needs_nlm_ispc
@pytest.mark.parametrize(("format_name", "channels", "wmode", "h", "window", "guided"), PEER_CASES)
def test_interior_pixels_equal_nlm_ispc(format_name, channels, wmode, h, window, guided) -> None:
    fmt = core.get_video_format(getattr(vs, format_name))
    clip = clip_of(planes_of(1, fmt), fmt)
    rclip = clip_of(planes_of(2, fmt), fmt) if guided else None
    d, a, s = window
    arguments = dict(d=d, a=a, s=s, h=h, channels=channels, wmode=wmode, wref=1.0, rclip=rclip)
    theirs = planes_from(core.nlm_ispc.NLMeans(clip, **arguments))
    ours = planes_from(NLMeans(clip, **arguments, backend="cpu", temporal_ends="clamp"))
    given = planes_from(clip)
    filtered = {"Y": [0], "UV": [1, 2], "YUV": [0, 1, 2], "AUTO": [0]}[channels]
    for n in range(FRAMES):
        for plane in range(fmt.num_planes):
            if plane not in filtered:
                np.testing.assert_array_equal(ours[n][plane], given[n][plane])  # copied
                continue
            difference = np.abs(interior(ours[n][plane], a + s) - interior(theirs[n][plane], a + s))
            # 8-bit levels: float32 rounding of two sums in another order. Integer samples: equal, but one
            # sample off where that rounding sits on a half step (rarely: 1 in 200 at 16 bits, 1/257 level).
            step = 255 / ((1 << fmt.bits_per_sample) - 1) if fmt.sample_type == vs.INTEGER else 0
            assert difference.max() <= max(0.01, step * 1.001), (n, plane)
            assert np.mean(difference > 0.01) < 0.002, (n, plane)
            assert np.abs(ours[n][plane] - given[n][plane]).mean() > 0.1  # it filtered (noise of sigma 10 levels)


@pytest.mark.gpu
@pytest.mark.peers
@needs_nlm_ispc
@pytest.mark.parametrize("num_streams", [1, 3])
@pytest.mark.parametrize(("format_name", "channels"), [("YUV444PS", "YUV"), ("YUV420P8", "UV")])
def test_gpu_frames_from_several_threads_equal_nlm_ispcs_inside(format_name, channels, num_streams) -> None:
    fmt = core.get_video_format(getattr(vs, format_name))
    clip = clip_of(planes_of(7, fmt), fmt)
    arguments = dict(d=1, a=2, s=2, h=6.0, channels=channels)
    theirs = planes_from(core.nlm_ispc.NLMeans(clip, **arguments))
    threads, core.num_threads = core.num_threads, 4  # frames asked for from four threads at once
    try:
        gpu = NLMeans(clip, **arguments, backend="gpu", num_streams=num_streams, temporal_ends="clamp")
        ours = planes_from(gpu)
    finally:
        core.num_threads = threads
    step = 255 / ((1 << fmt.bits_per_sample) - 1) if fmt.sample_type == vs.INTEGER else 0
    for n in range(FRAMES):
        for plane in {"YUV": [0, 1, 2], "UV": [1, 2]}[channels]:
            difference = np.abs(interior(ours[n][plane], 4) - interior(theirs[n][plane], 4))
            assert difference.max() <= max(0.01, step * 1.001), (n, plane)  # as on the CPU
            assert np.mean(difference > 0.01) < 0.002, (n, plane)


# (format, channels, guided, width): each sample type and plane group; 50 columns leave a row pitch beyond the row
GPU_CASES = [
    ("RGB24", "RGB", False, WIDTH),
    ("YUV420P8", "Y", True, 50),
    ("YUV420P8", "UV", False, 50),
    ("YUV444P16", "YUV", False, WIDTH),
    ("YUV420P10", "UV", True, WIDTH),
    ("GRAYH", "Y", False, 50),
    ("YUV444PS", "YUV", True, WIDTH),
]


@pytest.mark.gpu
@pytest.mark.parametrize("num_streams", [3, 8])  # 5 frames: phases of 2, 2 and 1 frames; one frame each
@pytest.mark.parametrize("temporal_ends", ["truncate", "clamp"])
@pytest.mark.parametrize(("format_name", "channels", "guided", "width"), GPU_CASES)
def test_gpu_frames_equal_the_cpu_filters_from_several_threads(
    format_name, channels, guided, width, temporal_ends, num_streams
) -> None:
    """The GPU's planes (uploaded once each, rounded there, frames filtered at once) are the CPU filter's."""
    fmt = core.get_video_format(getattr(vs, format_name))
    clip, rclip = (core.std.Crop(clip_of(planes_of(seed, fmt), fmt), right=WIDTH - width) for seed in (8, 9))
    arguments = dict(d=1, a=2, s=2, h=6.0, channels=channels, rclip=rclip if guided else None)
    cpu = planes_from(NLMeans(clip, **arguments, backend="cpu", temporal_ends=temporal_ends))
    threads, core.num_threads = core.num_threads, 4  # frames asked for from four threads at once
    try:
        gpu = planes_from(
            NLMeans(clip, **arguments, backend="gpu", num_streams=num_streams, temporal_ends=temporal_ends)
        )
    finally:
        core.num_threads = threads
    step = 255 / ((1 << fmt.bits_per_sample) - 1) if fmt.sample_type == vs.INTEGER else 0
    for n in range(FRAMES):
        for plane in range(fmt.num_planes):
            difference = np.abs(gpu[n][plane] - cpu[n][plane])
            # 8-bit levels: float32 sums in another order; integers one sample off where that sits on a half step
            # (the GPU's integer output rounds halves up, the host's to even). Half floats: their step near 1.
            tolerance = 0.25 if fmt.bits_per_sample == 16 and fmt.sample_type == vs.FLOAT else max(0.01, step * 1.001)
            assert difference.max() <= tolerance, (n, plane)
            assert np.mean(difference > 0.01) < 0.002, (n, plane)


@pytest.mark.gpu
@pytest.mark.parametrize("guided", [False, True])
def test_the_gpu_sends_each_source_frame_over_the_bus_once(monkeypatch, guided) -> None:
    """d = 1: three frames a window, but consecutive outputs share two, so N outputs upload N frames (2N guided).

    One stream: the outputs are filtered in order (with several, one may fall behind the others
    by more than the frames kept, timing decides, and some frames go up again).
    """
    from nlmeans_studio.engine.gpu.planes import PlaneTransfers

    upload_into = PlaneTransfers.upload_into
    uploaded = []

    def counted(self, frame, out) -> None:
        uploaded.append(frame)
        upload_into(self, frame, out)

    monkeypatch.setattr(PlaneTransfers, "upload_into", counted)
    fmt = core.get_video_format(vs.RGB24)
    length = 24
    frames = [planes_of(seed, fmt)[seed % FRAMES] for seed in range(length)]
    clip, rclip = clip_of(frames, fmt), clip_of(frames[::-1], fmt)
    threads, core.num_threads = core.num_threads, 8
    try:
        filtered = NLMeans(clip, d=1, a=2, s=2, h=6.0, rclip=rclip if guided else None, backend="gpu", num_streams=1)
        for _ in filtered.frames():
            pass
    finally:
        core.num_threads = threads
    assert len(uploaded) == length * (2 if guided else 1)


@pytest.mark.parametrize("temporal_ends", ["truncate", "clamp"])
def test_frames_equal_the_engines_denoiser_on_the_window_temporal_ends_picks(temporal_ends) -> None:
    """All pixels, borders included: the filter is the engine's; "truncate" searches the frames there are,
    "clamp" the first or last frame again for each one missing, as KNLMeansCL does."""
    fmt = core.get_video_format(vs.GRAYS)
    frames = planes_of(3, fmt)
    clip = np.stack([planes[0] for planes in frames]).astype(np.float32)
    ours = planes_from(NLMeans(clip_of(frames, fmt), d=2, a=2, s=1, h=6.0, backend="cpu", temporal_ends=temporal_ends))
    denoiser = Denoiser(NLMParams(h=6.0, patch_radius=1, search_radius=2, frames_past=2, frames_future=2), "cpu")
    for n in range(FRAMES):
        if temporal_ends == "truncate":
            expected = denoiser.denoise_frame(clip, n)
        else:
            expected = denoiser.denoise_frame([clip[min(max(n + k, 0), FRAMES - 1)] for k in range(-2, 3)], 2)
        np.testing.assert_allclose(ours[n][0], expected * 255, atol=1e-3)  # 8-bit levels; the same float32 sums


@pytest.mark.peers
@needs_nlm_ispc
@pytest.mark.parametrize("temporal_ends", ["truncate", "clamp"])
def test_only_the_clips_ends_depend_on_temporal_ends(temporal_ends) -> None:
    fmt = core.get_video_format(vs.GRAYS)
    clip = clip_of(planes_of(4, fmt), fmt)
    theirs = planes_from(core.nlm_ispc.NLMeans(clip, d=1, a=2, s=2, h=6.0))
    ours = planes_from(NLMeans(clip, d=1, a=2, s=2, h=6.0, backend="cpu", temporal_ends=temporal_ends))
    ends_differ = [np.abs(interior(ours[n][0] - theirs[n][0], 4)).max() > 1 for n in range(FRAMES)]
    assert ends_differ == [temporal_ends == "truncate", False, False, False, temporal_ends == "truncate"]


@pytest.mark.parametrize("format_name", ["GRAY16", "YUV420P16", "RGB48"])
@pytest.mark.parametrize("level", [0, 4095])
def test_a_dark_16_bit_frame_is_filtered(format_name, level) -> None:
    """A black or dark 16-bit frame (a fade's end) stopped the render: its samples all fit in 9 or 12 bits,
    which the engine refused as an ambiguous depth, naming a bit_depth NLMeans does not take."""
    fmt = core.get_video_format(getattr(vs, format_name))
    color = [level] * fmt.num_planes
    clip = core.std.BlankClip(format=fmt.id, width=WIDTH, height=HEIGHT, length=3, color=color)
    for plane in planes_from(NLMeans(clip, d=1, a=2, s=1, h=6.0, backend="cpu"))[1]:
        np.testing.assert_array_equal(plane, level * 255 / 65535)  # a flat frame stays as it is


@pytest.mark.parametrize("channels", ["Y", "YUV"])
def test_outputs_keep_the_frames_properties_and_the_planes_not_filtered(channels) -> None:
    """A frame all of whose planes are filtered is made anew (not copied), so its properties are copied by hand."""
    fmt = core.get_video_format(vs.YUV444P8)
    frames = planes_of(8, fmt)
    clip = core.std.SetFrameProps(clip_of(frames, fmt), _Matrix=1, _SceneChangePrev=1, Tape="reel 7")
    out = NLMeans(clip, d=1, a=2, s=1, h=6.0, channels=channels, backend="cpu")
    for source, denoised in zip(clip.frames(close=True), out.frames(close=True), strict=True):
        assert dict(denoised.props) == dict(source.props)
        for plane in range(3):
            filtered = channels == "YUV" or plane == 0
            unchanged = np.array_equal(np.asarray(denoised[plane]), np.asarray(source[plane]))
            assert unchanged != filtered, plane


def test_half_float_equals_single_float_to_half_precision() -> None:
    frames = planes_of(5, core.get_video_format(vs.GRAYS))
    half, single = (
        NLMeans(clip_of(frames, core.get_video_format(f)), a=2, s=1, h=6.0, backend="cpu") for f in (vs.GRAYH, vs.GRAYS)
    )
    assert half.format.id == vs.GRAYH
    half, single = planes_from(half), planes_from(single)
    for n in range(FRAMES):
        np.testing.assert_allclose(half[n][0], single[n][0], atol=0.25)  # 8-bit levels: half's step near 1 is 1/2048


@pytest.mark.peers
@needs_nlm_ispc
def test_rgb_differs_from_nlm_ispc_only_by_its_redmean_distance() -> None:
    """KNLMeansCL weighs R, G, B by the pair's mean red; ours is the plain mean: close, not equal."""
    fmt = core.get_video_format(vs.RGBS)
    clip = clip_of(planes_of(6, fmt), fmt)
    theirs = planes_from(core.nlm_ispc.NLMeans(clip, d=1, a=2, s=2, h=6.0))
    ours = planes_from(NLMeans(clip, d=1, a=2, s=2, h=6.0, backend="cpu", temporal_ends="clamp"))
    difference = np.abs(
        np.array([[interior(p, 4) for p in f] for f in ours]) - [[interior(p, 4) for p in f] for f in theirs]
    )
    assert 0.01 < difference.mean() < 0.5  # 8-bit levels


@pytest.mark.parametrize(
    ("format_name", "arguments", "match"),
    [
        (
            "GRAYS",
            {"wmode": 1},
            r"wmode=1 \(bisquare A, 1 - u\) is not one of NLMeans Studio's weightings; use wmode=0",
        ),
        ("GRAYS", {"wmode": 3}, r"wmode=3 \(bisquare C, \(1 - u\)\^8\)"),
        ("GRAYS", {"wmode": 4}, r"wmode must be 0 \(Welsch\) or 2 \(bisquare\), got 4"),
        ("GRAYS", {"wref": 0.5}, r"wref must be 1.0, got 0.5"),
        (
            "GRAYS",
            {"d": 9},
            r"d \(the temporal radius: frames searched on each side\) must be an integer in 0..8, got 9",
        ),
        ("GRAYS", {"a": -1}, r"a \(the search radius in pixels\) must be an integer in 0..16, got -1"),
        ("GRAYS", {"s": 1.5}, r"s \(the patch radius in pixels\) must be an integer in 0..8, got 1.5"),
        ("GRAYS", {"h": 0}, r"h must be a finite number > 0 \(8-bit levels\) in 0.001..10000, got 0"),
        ("GRAYS", {"channels": "UV"}, r"channels='UV' needs a YUV clip, got GrayS"),
        ("GRAYS", {"channels": "RGB"}, r"channels='RGB' needs an RGB clip"),
        ("GRAYS", {"channels": "XYZ"}, r"channels must be one of Y, UV, YUV, RGB, AUTO, got 'XYZ'"),
        ("YUV420P8", {"channels": "YUV"}, r"channels='YUV' needs a YUV 4:4:4 \(filter others with 'Y' and 'UV'\) clip"),
        ("RGB24", {"channels": "Y"}, r"channels='Y' needs a GRAY or YUV clip, got RGB24"),
        ("GRAY32", {}, r"clip is Gray32; 8 to 16-bit integer, half or single float samples are accepted"),
        ("GRAYS", {"temporal_ends": "mirror"}, r"temporal_ends must be 'truncate' or 'clamp', got 'mirror'"),
        ("GRAYS", {"backend": "tpu"}, r"backend must be 'auto', 'cpu' or 'gpu', got 'tpu'"),
        ("GRAYS", {"num_streams": 0}, r"num_streams \(frames filtered at once on the GPU\) must be .* 1..64, got 0"),
        ("GRAYS", {"device_id": -1}, r"device_id \(the GPU's number\) must be an integer in 0..1023, got -1"),
        ("GRAYS", {"device_id": 1, "backend": "cpu"}, r"device_id=1 names a GPU, but .* CPU \(backend='cpu' was"),
        ("YUV420P8", {"channels": "UV", "a": 16, "s": 8}, r"planes are 32x24 .* a=16 and s=8: .* a \+ s \+ 1 = 25"),
        ("GRAYS", {"device_type": "fpga"}, r"device_type must be one of auto, default, gpu, accelerator, cpu, got"),
        ("GRAYS", {"device_type": "gpu", "backend": "cpu"}, r"device_type='gpu' and backend='cpu' disagree"),
        ("GRAYS", {"info": True}, r"info \(KNLMeansCL's text over the frame\) is not drawn here; leave it False"),
    ],
)
def test_what_it_cannot_do_is_refused_saying_why(format_name, arguments, match) -> None:
    clip = core.std.BlankClip(format=getattr(vs, format_name), width=WIDTH, height=HEIGHT, length=FRAMES)
    with pytest.raises(vs.Error, match=match):
        NLMeans(clip, **arguments)


def test_a_clip_of_variable_format_is_refused_as_such() -> None:
    """It said "clip is None; 8 to 16-bit integer, half or single float samples are accepted"."""
    mixed = core.std.Splice(
        [core.std.BlankClip(format=vs.YUV420P8), core.std.BlankClip(format=vs.GRAY8)], mismatch=True
    )
    with pytest.raises(vs.Error, match=r"clip must have a constant format and size; convert it to one first"):
        NLMeans(mixed, backend="cpu")


def test_a_frame_it_cannot_read_is_refused_naming_the_filter_the_frame_and_the_way_out() -> None:
    """A float clip on 0..255 (a common slip) failed in a 15-line traceback through the engine,
    worded for NumPy: the error is the filter's own, with VapourSynth's way out."""
    clip = core.std.Expr(
        core.std.BlankClip(format=vs.GRAYS, width=WIDTH, height=HEIGHT, length=FRAMES, color=0.5), "x 255 *"
    )
    with pytest.raises(
        vs.Error,
        match=r"NLMeans: frame 1: float frames are read with 0\.\.1 as full scale.*std\.Expr\(clip, 'x 255 /'\)",
    ):
        NLMeans(clip, h=3.0, backend="cpu").get_frame(1)


@pytest.mark.parametrize("phases", [1, 2, 3, 11, 20])
def test_frames_split_over_streams_come_back_in_order_each_with_its_own_window(phases) -> None:
    """The GPU's num_streams (the split runs only there; here with a filter that names its inputs):
    frame n is made once, from frame n of each window clip, at n, for any count of a clip's length."""
    from nlmeans_studio.vapoursynth.nlmeans import _in_phases

    length = 11
    blank = core.std.BlankClip(format=vs.GRAY16, width=8, height=8, length=length)

    def numbered(n, f):
        out = f.copy()
        np.asarray(out[0])[...] = n
        return out

    source = core.std.ModifyFrame(blank, blank, numbered)
    windows = [source, source[1:] + source[length - 1]]  # frame n and its clamped successor
    made = []

    def filtered(n, f):
        made.append(n)
        out = f[0].copy()
        np.asarray(out[0])[...] = 1000 * n + 10 * int(np.asarray(f[0][0])[0, 0]) + int(np.asarray(f[1][0])[0, 0])
        return out

    threads, core.num_threads = core.num_threads, 4
    try:
        split = _in_phases(source, windows, filtered, phases)
        values = [int(np.asarray(frame[0])[0, 0]) for frame in split.frames()]
    finally:
        core.num_threads = threads
    assert split.num_frames == length
    assert values == [1000 * n + 10 * n + min(n + 1, length - 1) for n in range(length)]
    assert sorted(made) == list(range(length))


def test_knlmeanscls_opencl_work_sizes_are_taken_and_change_nothing() -> None:
    fmt = core.get_video_format(vs.GRAY8)
    clip = clip_of(planes_of(6, fmt), fmt)
    plain = planes_from(NLMeans(clip, a=2, s=1, h=6.0, backend="cpu"))
    sized = planes_from(NLMeans(clip, a=2, s=1, h=6.0, backend="cpu", ocl_x=16, ocl_y=8, ocl_r=3))
    for ours, theirs in zip(plain, sized, strict=True):
        np.testing.assert_array_equal(ours[0], theirs[0])


def test_knlmeanscls_device_type_chooses_the_backend() -> None:
    """A KNLMeansCL script's device_type="cpu" (or info=False) was a TypeError."""
    frames = planes_of(3, core.get_video_format(vs.GRAYS))
    clip = clip_of(frames, core.get_video_format(vs.GRAYS))
    by_type = planes_from(NLMeans(clip, a=2, s=1, h=6.0, device_type="CPU", info=False))
    by_backend = planes_from(NLMeans(clip, a=2, s=1, h=6.0, backend="cpu"))
    for mine, theirs in zip(by_type, by_backend, strict=True):
        np.testing.assert_array_equal(mine[0], theirs[0])


@pytest.mark.skipif(gpu_unavailable_reason() is None, reason="a GPU is here")
def test_the_gpu_asked_for_where_there_is_none_is_refused() -> None:
    clip = core.std.BlankClip(format=vs.GRAYS, width=WIDTH, height=HEIGHT, length=FRAMES)
    with pytest.raises(vs.Error, match=r"NLMeans: the GPU backend is unavailable: "):
        NLMeans(clip, backend="gpu")


@pytest.mark.gpu
def test_a_gpu_this_machine_lacks_is_refused() -> None:
    clip = core.std.BlankClip(format=vs.GRAYS, width=WIDTH, height=HEIGHT, length=FRAMES)
    with pytest.raises(vs.Error, match=r"device_id must be below \d+, the GPUs here; got 1023"):
        NLMeans(clip, backend="gpu", device_id=1023)


@pytest.mark.parametrize(
    ("rclip", "match"),
    [
        (
            core.std.BlankClip(format=vs.GRAY8, width=WIDTH, height=HEIGHT, length=FRAMES),
            r"rclip must have clip's format",
        ),
        (
            core.std.BlankClip(format=vs.GRAYS, width=WIDTH, height=HEIGHT, length=3),
            r"GrayS, 64x48, 5 frames\), got GrayS, 64x48, 3",
        ),
        ("clip.png", r"rclip must be a video clip, got str"),
    ],
)
def test_a_guide_unlike_the_clip_is_refused(rclip, match) -> None:
    clip = core.std.BlankClip(format=vs.GRAYS, width=WIDTH, height=HEIGHT, length=FRAMES)
    with pytest.raises(vs.Error, match=match):
        NLMeans(clip, rclip=rclip)


def readme_script_and_commands() -> tuple[str, list[str], list[list[str]]]:
    """The README's VapourSynth script, its one-time set-up command and its pipe's two commands."""
    section = (ROOT / "README.md").read_text().split("## Use from VapourSynth", 1)[1].split("\n## ", 1)[0]
    script = re.findall(r"```py\n(.*?)```", section, re.DOTALL)[0]
    block = re.findall(r"```bash\n(.*?)```", section, re.DOTALL)[0]
    setup, pipe = (line.split("  #")[0].strip() for line in block.strip().splitlines())
    return script, setup.split(), [command.split() for command in pipe.split(" | ")]


def test_the_readmes_script_through_vspipe_into_the_command_line_gives_every_frame(tmp_path: Path) -> None:
    """As the README pipes it: ``vspipe -c y4m denoise.vpy - | nlmeans-studio denoise - out.mkv``."""
    bin_folder = Path(sys.executable).parent
    if shutil.which("vspipe", path=str(bin_folder)) is None:
        pytest.skip("vspipe is not installed")
    script, setup, (vspipe, denoise) = readme_script_and_commands()
    assert setup == [".venv/bin/vapoursynth", "config"] and vspipe[:4] == [
        ".venv/bin/vspipe",
        "-c",
        "y4m",
        "denoise.vpy",
    ]
    assert denoise[:3] == [".venv/bin/nlmeans-studio", "denoise", "-"]
    (tmp_path / "denoise.vpy").write_text(script)
    # vspipe finds Python through `vapoursynth config`'s file, written here rather than in ~/.config; the CPU filters.
    environment = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path), "NLMEANS_BACKEND": "cpu"}
    subprocess.run([str(bin_folder / "vapoursynth"), *setup[1:]], env=environment, check=True, capture_output=True)
    piped = subprocess.Popen(
        [str(bin_folder / "vspipe"), *vspipe[1:]], stdout=subprocess.PIPE, cwd=tmp_path, env=environment
    )
    denoised = subprocess.run(
        [str(bin_folder / "nlmeans-studio"), *denoise[1:], "--quiet"],
        stdin=piped.stdout,
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    piped.stdout.close()
    assert piped.wait(timeout=60) == 0
    assert denoised.returncode == 0, denoised.stderr
    frames = read_frames(tmp_path / "out.mkv")
    assert frames.shape[:3] == (10, 240, 320)  # the script's clip
