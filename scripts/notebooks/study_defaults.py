"""How far `denoise`'s defaults fall from the best result, on clips the calibration never saw.

Two corpora of clean 7-frame clips with motion (panning and zooming windows over still images
from scikit-image's data, and the shared real clips), each with twelve noises: white Gaussian of
sigma 2, 5, 10 and 25, YUV-domain, Poisson-Gaussian, demosaiced and H.264-compressed
(``add_realistic_noise``), HEVC- and MPEG-2-compressed, film grain, and none but x264's at CRF 20
(a well-made file). The calibration corpus
is for tuning; the validation corpus is only ever reported. scikit-image's astronaut, coffee
and chelsea images are in neither: they make the independent corpus, run once when the defaults
are settled (a face and a dark helmet ring, a cup's saturated highlights, fur).

Per case, the RGB PSNR (dB) of the middle three frames, all outputs rounded to 8 bits:
- noisy: the input;
- defaults: the noise estimated as ``denoise --noise auto`` does (``estimate_noise`` on the
  clip) and the filter ``automatic.choose_filter`` makes of it, the command line's own path;
- per variant (weighting / centre weight, RGB, and the luma/chroma mode), its best h found by
  golden-section search over log h, at the default window;
- nlm_ispc at its best h (same window, wmode 0 and 2, its default wref), where VapourSynth and
  the plugin import (``pip install vapoursynth vapoursynth-nlm-ispc``, Python 3.12);
- BM3D per frame at the true sigma, where ``bm3d`` imports: the reference above NLMeans.

    python scripts/notebooks/study_defaults.py make .study/corpus.npz       # needs PyAV, scikit-image, ../shared/data
    python scripts/notebooks/study_defaults.py run .study/corpus.npz --corpus validation --json out.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import multiprocessing
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from nlmeans_studio.engine import (
    Denoiser,
    LumaChromaDenoiser,
    NLMParams,
    NoiseEstimate,
    add_realistic_noise,
    apply_estimate,
    estimate_noise,
    estimate_noise_over,
    psnr,
    split_estimate,
    suggest_luma_chroma_h,
)
from nlmeans_studio.engine.video.default_filter import choose_filter, sure_sample_length
from nlmeans_studio.engine.video.sure import choose_strength, golden_minimum

FRAMES, HEIGHT, WIDTH = 7, 240, 320
MIDDLE = (2, 3, 4)  # the frames scored: each has the default window's past and future frame
CORPORA = {
    # name: (source, motion); motion "pan" (dy, dx pixels a frame), "zoom", or "video"
    "calibration": [
        ("rocket", (0.7, 1.9)),
        ("immunohistochemistry", (1.3, -0.6)),
        ("stereo_motorcycle", "zoom"),
        ("gravel", (0.4, 0.9)),
        ("brick", "zoom"),
        ("bikes", "video"),
    ],
    "validation": [
        ("hubble_deep_field", (0.3, 0.5)),
        ("retina", "zoom"),
        ("grass", (1.1, 0.8)),
        ("coins", "zoom"),
        ("bigbuckbunny", "video"),
    ],
    "independent": [
        ("astronaut", (0.6, 1.4)),
        ("coffee", "zoom"),
        ("chelsea", (-0.9, 0.7)),
    ],
}
NOISES = {  # name: (add_realistic_noise kind, sigma in 8-bit levels)
    "white10": ("clipped", 10.0),
    "white25": ("clipped", 25.0),
    "yuv10": ("yuv", 10.0),
    "signal15": ("signal", 15.0),
    "demosaic15": ("demosaic", 15.0),
    "h264": ("h264", 15.0),
    "hevc": ("clipped", 15.0),  # then x265 CRF 28, 4:2:0 (made with the corpus: PyAV)
    "mpeg2": ("clipped", 12.0),  # then MPEG-2 at qscale 5, 4:2:0
    "grain": ("grain", 12.0),  # film grain: smooth, one draw shared by R, G, B, strongest in the mid-tones
    "white2": ("clipped", 2.0),  # light noise: a good camera's, where the frame's detail is most of what differs
    "white5": ("clipped", 5.0),
    "x264crf20": ("clean", 2.0),  # the clean clip through x264 at CRF 20, 4:2:0 (2: the h search's scale)
}
ENCODED = {"h264": None, "hevc": ("libx265", {"crf": "28", "preset": "fast", "x265-params": "log-level=error"}),
           "mpeg2": ("mpeg2video", {"qscale": "5"}),
           "x264crf20": ("libx264", {"crf": "20", "preset": "medium"})}  # fmt: skip
VARIANTS = ["bisquare/one", "bisquare/max", "exponential/one", "exponential/max"]
LUMA_CHROMA_VARIANTS = ["exponential/max", "exponential/one"]
GOLDEN_STEPS = 10
H_RANGE = (0.25, 6.0)  # h / sigma searched


def _bilinear(image: np.ndarray, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``image`` (H, W, 3) sampled at float coordinates (clamped), bilinearly."""
    rows = np.clip(rows, 0, image.shape[0] - 1.001)
    columns = np.clip(columns, 0, image.shape[1] - 1.001)
    r0, c0 = rows.astype(int), columns.astype(int)
    fr, fc = (rows - r0)[..., None], (columns - c0)[..., None]
    top = image[r0, c0] * (1 - fc) + image[r0, c0 + 1] * fc
    bottom = image[r0 + 1, c0] * (1 - fc) + image[r0 + 1, c0 + 1] * fc
    return top * (1 - fr) + bottom * fr


def _still_clip(image: np.ndarray, motion: tuple[float, float] | str) -> np.ndarray:
    """FRAMES windows of HEIGHT x WIDTH over ``image``: a sub-pixel pan or a slow zoom in."""
    image = image.astype(np.float64)
    if image.ndim == 2:
        image = np.repeat(image[..., None], 3, axis=-1)
    image = image[..., :3]
    rows, columns = np.mgrid[0:HEIGHT, 0:WIDTH].astype(np.float64)
    centre = np.array(image.shape[:2]) / 2
    frames = []
    for k in range(FRAMES):
        if motion == "zoom":
            scale = 1.0 / (1.0 + 0.025 * k)
            y = centre[0] + (rows - HEIGHT / 2) * scale
            x = centre[1] + (columns - WIDTH / 2) * scale
        else:
            dy, dx = motion
            y = centre[0] - HEIGHT / 2 - 3 * dy + rows + k * dy
            x = centre[1] - WIDTH / 2 - 3 * dx + columns + k * dx
        frames.append(_bilinear(image, y, x))
    return np.clip(np.rint(np.stack(frames)), 0, 255).astype(np.uint8)


def _video_clip(path: Path) -> np.ndarray:
    from nlmeans_studio.engine import read_frames

    frames = read_frames(str(path), FRAMES, start=40)
    top, left = (frames.shape[1] - HEIGHT) // 2, (frames.shape[2] - WIDTH) // 2
    return np.ascontiguousarray(frames[:, top : top + HEIGHT, left : left + WIDTH, :3])


def make_corpus(out: Path, shared: Path) -> None:
    """Every clean clip, and its H.264-noisy version (PyAV is needed for that), into one .npz."""
    from skimage import data

    arrays = {}
    for corpus in CORPORA.values():
        for source, motion in corpus:
            if motion == "video":
                clean = _video_clip(shared / f"{source}.mp4")
            else:
                image = getattr(data, source)()
                clean = _still_clip(image[0] if isinstance(image, tuple) else image, motion)  # the left view
            arrays[f"{source}/clean"] = clean
            for noise, encoder in ENCODED.items():
                if encoder is None:
                    noisy = add_realistic_noise(clean, "h264", NOISES[noise][1], seed=1)
                    arrays[f"{source}/{noise}"] = np.clip(np.rint(noisy * 255), 0, 255).astype(np.uint8)
                else:
                    arrays[f"{source}/{noise}"] = _encoded(_noisy(arrays, source, noise), *encoder)
            print(f"{source}: {clean.shape}", flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, **arrays)


def _encoded(frames: np.ndarray, codec: str, options: dict) -> np.ndarray:
    """Float RGB frames encoded (4:2:0, 8 bits) with ``codec`` and decoded back, uint8."""
    import io

    import av

    buffer = io.BytesIO()
    with av.open(buffer, "w", format="matroska") as container:
        stream = container.add_stream(codec, rate=25)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        stream.options = options
        for frame in np.clip(np.rint(frames * 255), 0, 255).astype(np.uint8):
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(stream.encode())
    buffer.seek(0)
    with av.open(buffer) as container:
        return np.stack([frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)])


def _film_grain(clean: np.ndarray, sigma: float, seed: int) -> np.ndarray:
    """``clean`` (uint8) with grain as film scans show it: one draw for R, G and B, smoothed over about a pixel (a
    [1, 2, 1] / 4 kernel along rows and columns), strongest in the mid-tones (sigma there,
    half of it at black and white), 8 bits, clipped."""
    clean = clean.astype(np.float32) / 255
    draw = np.random.default_rng(seed).standard_normal(clean.shape[:3]).astype(np.float32)
    for axis in (1, 2):
        draw = (np.roll(draw, 1, axis) + 2 * draw + np.roll(draw, -1, axis)) / 4
    draw /= draw.std()
    luma = clean @ np.float32([0.2126, 0.7152, 0.0722])
    level = sigma / 255 * (0.5 + 2 * luma * (1 - luma))
    noisy = clean + (level * draw)[..., None]
    return np.clip(np.rint(noisy * 255), 0, 255).astype(np.float32) / 255


def _noisy(arrays: dict, source: str, noise: str) -> np.ndarray:
    """The noisy clip, float32 in [0, 1]; encoded noises as the corpus holds them, the others
    drawn here from a fixed seed."""
    if f"{source}/{noise}" in arrays:
        return arrays[f"{source}/{noise}"].astype(np.float32) / 255
    kind, sigma = NOISES[noise]
    if kind == "clean":
        return arrays[f"{source}/clean"].astype(np.float32) / 255
    if kind == "grain":
        return _film_grain(arrays[f"{source}/clean"], sigma, seed=1)
    return add_realistic_noise(arrays[f"{source}/clean"], kind, sigma, seed=1)


def _score(clean: np.ndarray, denoise: Callable[[int], np.ndarray]) -> float:
    """Mean PSNR of the middle frames, each output rounded to 8 bits as a file would hold it."""
    return float(np.mean([psnr(clean[i], np.clip(np.rint(denoise(i) * 255), 0, 255) / 255) for i in MIDDLE]))


def _golden(score: Callable[[float], float], low: float, high: float) -> tuple[float, float]:
    """The (h, score) that maximise ``score`` over [low, high], searched in log h."""
    log_h, negative = golden_minimum(lambda x: -score(math.exp(x)), math.log(low), math.log(high), GOLDEN_STEPS)
    return math.exp(log_h), -negative


def _variant(name: str) -> NLMParams:
    weighting, center = name.split("/")
    return NLMParams(weighting=weighting, center_weight=center)


def _our_best(clean: np.ndarray, noisy: np.ndarray, sigma: float, backend: str) -> dict:
    """Each variant's best h and PSNR at the default window: RGB, and luma/chroma (h_Y, h_UV in
    the ratio the estimate suggests, scaled together)."""
    results = {}
    low, high = H_RANGE[0] * sigma, H_RANGE[1] * sigma
    for name in VARIANTS:
        denoiser = Denoiser(_variant(name), backend)

        def rgb(h: float, denoiser: Denoiser = denoiser) -> float:
            denoiser.params = dataclasses.replace(denoiser.params, h=h)
            return _score(clean, lambda i: denoiser.denoise_frame(noisy, i))

        results[name] = _golden(rgb, low, high)
    _, estimate = estimate_noise_over(lambda i: noisy[i], 0, len(noisy))
    for name in LUMA_CHROMA_VARIANTS:
        h_luma, h_chroma = suggest_luma_chroma_h(split_estimate(estimate), _variant(name))

        def luma_chroma(scale: float, name: str = name, h_luma: float = h_luma, h_chroma: float = h_chroma) -> float:
            denoiser = LumaChromaDenoiser(_variant(name), h_luma * scale, h_chroma * scale, backend=backend)
            return _score(clean, lambda i: denoiser.denoise_frame(noisy, i))

        results[f"luma-chroma {name}"] = _golden(luma_chroma, 0.25, 4.0)
    return results


def _defaults(clean: np.ndarray, noisy: np.ndarray, backend: str) -> tuple[float, str]:
    """PSNR of the product's defaults, and what they chose: the noise as ``denoise`` reads it
    (``estimate_noise`` on the clip: pairs spread over it), the filter ``choose_filter`` makes
    of it, with SURE on the sample ``denoise`` reads (the middle frames)."""
    estimate = estimate_noise(noisy)
    middle = (len(noisy) - sure_sample_length(NLMParams())) // 2
    sample = noisy[middle : middle + sure_sample_length(NLMParams())]
    choice = choose_filter(estimate, sample=sample, backend=backend)
    denoiser = choice.denoiser(backend)
    chosen = f"{choice.describe()}, sigma read {estimate.average_sigma:.1f}"
    return _score(clean, lambda i: denoiser.denoise_frame(noisy, i)), chosen


def _candidate_defaults(clean: np.ndarray, noisy: np.ndarray, backend: str) -> dict:
    """PSNR of each variant at the h ``suggest_h`` gives it, and at the strengths SURE chooses
    (``_sure_choices``), from the noise as read and from the noise alone (the clip's noise on a
    flat gray frame: what a perfect estimate would say)."""
    results = {}
    noise_only = np.clip(noisy - clean + 0.5, 0, 1)
    for reading, frames in (("read", noisy), ("true", noise_only)):
        _, estimate = estimate_noise_over(lambda i, frames=frames: frames[i], 0, len(frames))
        for name in VARIANTS:
            denoiser = Denoiser(apply_estimate(_variant(name), estimate), backend)
            results[f"{reading} {name}"] = _score(clean, lambda i, d=denoiser: d.denoise_frame(noisy, i))
        for name in ("bisquare/max", *LUMA_CHROMA_VARIANTS):
            h_luma, h_chroma = suggest_luma_chroma_h(split_estimate(estimate), _variant(name))
            denoiser = LumaChromaDenoiser(_variant(name), h_luma, h_chroma, backend=backend)
            results[f"{reading} luma-chroma {name}"] = _score(clean, lambda i, d=denoiser: d.denoise_frame(noisy, i))
        for name, value in _sure_choices(clean, noisy, estimate, backend).items():
            results[f"{reading} {name}"] = value
    return results


def _sure_choices(clean: np.ndarray, noisy: np.ndarray, estimate: NoiseEstimate, backend: str) -> dict:
    """PSNR of exponential/max in RGB and in luma/chroma, each at the factor on its suggested
    strength that SURE chooses, and of whichever of the two SURE rates better."""
    variant = _variant("exponential/max")
    h_luma, h_chroma = suggest_luma_chroma_h(split_estimate(estimate), variant)
    h_rgb = apply_estimate(variant, estimate)
    makers = {
        "RGB": lambda scale: Denoiser(dataclasses.replace(h_rgb, h=h_rgb.h * scale), backend),
        "luma-chroma": lambda scale: LumaChromaDenoiser(variant, h_luma * scale, h_chroma * scale, backend=backend),
    }
    results, risks = {}, {}
    for mode, denoiser_at in makers.items():
        scale, risks[mode] = choose_strength(denoiser_at, noisy, MIDDLE, estimate.covariance, 0.25, 4.0)
        chosen = denoiser_at(scale)
        results[f"SURE {mode} exponential/max"] = _score(clean, lambda i, d=chosen: d.denoise_frame(noisy, i))
    best = min(risks, key=risks.get)
    results["SURE's choice of RGB or luma-chroma exponential/max"] = results[f"SURE {best} exponential/max"]
    return results


def _nlm_ispc_best(clean: np.ndarray, noisy: np.ndarray, sigma: float) -> tuple[float, float] | None:
    """nlm_ispc's best (h, PSNR) over wmode 0 and 2 at the default window, or None if absent."""
    try:
        import vapoursynth as vs
    except ImportError:
        return None
    core = vs.core
    if not hasattr(core, "nlm_ispc"):
        return None
    params = NLMParams()
    planes = np.ascontiguousarray(noisy.transpose(0, 3, 1, 2))
    blank = core.std.BlankClip(width=WIDTH, height=HEIGHT, format=vs.RGBS, length=FRAMES)

    def fill(n: int, f: vs.VideoFrame) -> vs.VideoFrame:
        out = f.copy()
        for plane in range(3):
            np.asarray(out[plane])[:] = planes[n, plane]
        return out

    source = core.std.ModifyFrame(blank, blank, fill)
    best = (0.0, -math.inf)
    for wmode in (0, 2):

        def score(h: float, wmode: int = wmode) -> float:
            clip = core.nlm_ispc.NLMeans(
                source, d=params.frames_past, a=params.search_radius, s=params.patch_radius, h=h, wmode=wmode
            )

            def frame(i: int) -> np.ndarray:
                out = clip.get_frame(i)
                return np.stack([np.asarray(out[p]) for p in range(3)], axis=-1)

            return _score(clean, frame)

        found = _golden(score, H_RANGE[0] * sigma, H_RANGE[1] * sigma)
        best = max(best, found, key=lambda pair: pair[1])
    return best


def _bm3d(clean: np.ndarray, noisy: np.ndarray, sigma: float) -> float | None:
    try:
        import bm3d
    except ImportError:
        return None
    return _score(clean, lambda i: bm3d.bm3d_rgb(noisy[i], sigma / 255).astype(np.float32))


def study_case(corpus_file: str, source: str, noise: str, backend: str, previous: dict | None = None) -> dict:
    """One row: every figure of one clip and noise; with ``previous`` (the row of an earlier run
    on the same corpus file), only the defaults' figures, the rest taken from it."""
    with np.load(corpus_file) as stored:
        arrays = {key: stored[key] for key in stored.files if key.startswith(f"{source}/")}
    clean = arrays[f"{source}/clean"].astype(np.float32) / 255
    noisy = _noisy(arrays, source, noise)
    sigma = NOISES[noise][1]
    started = time.perf_counter()
    defaults, chosen = _defaults(clean, noisy, backend)
    if previous is not None:
        return {**previous, "defaults": defaults, "chosen": chosen, "seconds": time.perf_counter() - started}
    best = _our_best(clean, noisy, sigma, backend)
    candidates = _candidate_defaults(clean, noisy, backend)
    row = {
        "source": source,
        "noise": noise,
        "noisy": _score(clean, lambda i: noisy[i]),
        "defaults": defaults,
        "chosen": chosen,
        "variants": {name: {"h": h, "psnr": value} for name, (h, value) in best.items()},
        "candidates": candidates,
    }
    peer = _nlm_ispc_best(clean, noisy, sigma)
    row["nlm_ispc"] = None if peer is None else {"h": peer[0], "psnr": peer[1]}
    row["bm3d"] = _bm3d(clean, noisy, sigma)
    row["seconds"] = time.perf_counter() - started
    return row


def _print_row(row: dict) -> None:
    best_name, best = max(row["variants"].items(), key=lambda item: item[1]["psnr"])
    peer = row["nlm_ispc"]["psnr"] if row["nlm_ispc"] else math.nan
    bm3d = row["bm3d"] if row["bm3d"] is not None else math.nan
    print(
        f"{row['source']:18s} {row['noise']:10s} | {row['noisy']:5.2f} | {row['defaults']:5.2f} "
        f"({row['defaults'] - best['psnr']:+.2f}) | {best['psnr']:5.2f} {best_name} h {best['h']:.1f} | "
        f"{peer:5.2f} | {bm3d:5.2f} | {row['chosen']}",
        flush=True,
    )


def run(corpus_file: Path, corpus: str, backend: str, jobs: int, json_out: Path | None, reuse: Path | None) -> None:
    cases = [(source, noise) for source, _ in CORPORA[corpus] for noise in NOISES]
    earlier = {(row["source"], row["noise"]): row for row in json.loads(reuse.read_text())} if reuse else {}
    print(f"# {corpus} corpus: {len(cases)} cases, RGB PSNR dB of frames {MIDDLE}, backend {backend}")
    print("source             noise      | noisy | defaults (gap to our best) | our best variant, h | nlm_ispc | bm3d")
    rows = []
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [
            pool.submit(study_case, str(corpus_file), source, noise, backend, earlier.get((source, noise)))
            for source, noise in cases
        ]
        for future in futures:
            rows.append(future.result())
            _print_row(rows[-1])
    gaps = [row["defaults"] - max(v["psnr"] for v in row["variants"].values()) for row in rows]
    within = sum(gap >= -0.5 for gap in gaps)
    print(f"# defaults within 0.5 dB of our best: {within} of {len(gaps)}; worst {min(gaps):+.2f} dB")
    peers = [row["defaults"] - row["nlm_ispc"]["psnr"] for row in rows if row["nlm_ispc"]]
    if peers:
        print(f"# defaults at or above nlm_ispc's best: {sum(gap >= 0 for gap in peers)} of {len(peers)}")
    for name in [*VARIANTS, *(f"luma-chroma {name}" for name in LUMA_CHROMA_VARIANTS)]:
        wins = sum(max(row["variants"], key=lambda key: row["variants"][key]["psnr"]) == name for row in rows)
        print(f"# best variant {name}: {wins} of {len(rows)}")
    for name in rows[0]["candidates"]:
        gaps = [row["candidates"][name] - max(v["psnr"] for v in row["variants"].values()) for row in rows]
        within = sum(gap >= -0.5 for gap in gaps)
        print(f"# at the suggested h, {name}: within 0.5 dB {within} of {len(gaps)}, worst {min(gaps):+.2f} dB")
    if json_out:
        json_out.write_text(json.dumps(rows, indent=1))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    make = verbs.add_parser("make", help="build the corpora's clips")
    make.add_argument("out", type=Path)
    make.add_argument(
        "--shared", type=Path, default=Path("../shared/data"), help="where bikes.mp4 and bigbuckbunny.mp4 are"
    )
    study = verbs.add_parser("run", help="the table for one corpus")
    study.add_argument("corpus_file", type=Path)
    study.add_argument("--corpus", choices=list(CORPORA), default="validation")
    study.add_argument("--backend", default="auto")
    study.add_argument("--jobs", type=int, default=1, help="cases in parallel processes")
    study.add_argument("--json", type=Path, default=None)
    study.add_argument(
        "--reuse", type=Path, default=None, help="an earlier run's JSON: recompute only the defaults' figures"
    )
    args = parser.parse_args(argv)
    if args.verb == "make":
        make_corpus(args.out, args.shared)
    else:
        run(args.corpus_file, args.corpus, args.backend, args.jobs, args.json, args.reuse)


if __name__ == "__main__":
    main(sys.argv[1:])
