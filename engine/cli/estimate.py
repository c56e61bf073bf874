"""``nlmeans-studio estimate-noise``: the noise of a video (or a volume) and the h it suggests."""

from __future__ import annotations

import argparse
import json

from ..frames import FULL_SCALE_BITS
from ..media.ffmpeg import VideoError
from ..media.reader import VideoReader, read_frames
from ..video.choose_h import apply_estimate, decorrelation_decision
from ..video.default_filter import SURE, choose_filter, given_strength_center, sure_sample_length
from ..video.export import clip_sample, estimate_clip_noise
from ..video.luma_chroma import matrix_for
from ..video.noise import estimate_noise
from ..video.params import NLMParams
from ..volume import cli as volume_cli
from ..volume.io import names_a_volume
from .arguments import ESTIMATE_FRAMES


def run_estimate_noise(args: argparse.Namespace) -> int:
    """Print the noise.

    The estimate denoise makes (pairs of frames spread over the clip, the median one) unless --frame
    / --frames choose the frames; and the filter denoise would make of it, SURE's strengths
    included (chosen on the clip's middle frames, as denoise chooses them). A volume's noise as
    denoise-volume estimates it.
    """
    if names_a_volume(args.input):
        given = [
            option
            for option, value in (("--frame", args.frame), ("--frames", args.frames), ("--roi", args.roi))
            if value is not None
        ]
        if given:
            raise ValueError(f"{args.input} is a volume: {', '.join(given)} apply to videos only; leave them out")
        return volume_cli.estimate(args.input, as_json=args.json)
    if args.frame is None and args.frames is None:
        result = estimate_clip_noise(args.input, roi=args.roi)
    else:
        first, count = args.frame or 0, args.frames or ESTIMATE_FRAMES
        with VideoReader(args.input) as reader:
            total = reader.info.frame_count
        if first + count > total:
            why = f" (--frames, {ESTIMATE_FRAMES} by default: the estimate compares consecutive frames)"
            remedy = (
                f"--frame {total - count} or lower, or fewer --frames"
                if count <= total
                else f"--frames {total} or fewer"
            )
            raise VideoError(
                f"{args.input}: has {total} frames (0 to {total - 1}), but {count} consecutive frames"
                f"{'' if args.frames else why} from frame {first} need frames {first} to {first + count - 1}: "
                f"give {remedy}"
            )
        result = estimate_noise(read_frames(args.input, count, start=first), roi=args.roi, bit_depth=FULL_SCALE_BITS)
    one_strength = NLMParams(center_weight=given_strength_center(result))  # as denoise --h runs
    h = apply_estimate(one_strength, result).h
    with VideoReader(args.input) as reader:
        matrix = matrix_for(reader.info.color.get("colorspace", 2), reader.info.height)
        sample = clip_sample(reader, sure_sample_length(NLMParams()))  # denoise's, where SURE applies
        rgb_allowed = reader.yuv_layout is None  # as denoise chooses: a Y'CbCr source stays in Y'CbCr
    default = choose_filter(result, matrix=matrix, sample=sample, rgb_allowed=rgb_allowed)
    decorrelate, reason = decorrelation_decision(result)
    try:
        transform = result.color_transform().round(4).tolist()
    except ValueError:
        transform = None
    report = {
        "sigma": result.sigma.round(3).tolist(),
        "correlation": result.correlation.round(3).tolist(),
        "covariance": result.covariance.tolist(),
        "color_transform": transform,
        "regions": len(result.regions),
        "samples": result.samples,
        "method": result.method,
        "confidence": result.confidence,
        "bands": [dict(zip(("low", "high", "sigma", "blocks"), band, strict=True)) for band in result.bands],
        "signal_dependent": result.signal_dependent,
        "spatial_correlation": result.spatial_correlation,
        "effective_channels": round(result.effective_channels, 3),
        "decorrelation": reason,
        "suggested_h": round(h, 3),
        "suggested_luma_chroma": None
        if default.luma_chroma is None
        else [round(v, 3) for v in default.luma_chroma[:2]],
        "sure_refines": default.how == SURE,
        "default_filter": default.describe(),
        "warning": result.warning,
    }
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"noise sigma per channel (8-bit levels): {', '.join(f'{s:.2f}' for s in report['sigma'])}")
    print(f"correlation: {report['correlation']}")
    print(f"color transform G: {transform}")
    print(f"from {report['regions']} region(s), {report['samples']} samples ({result.method})")
    print(f"confidence: {result.confidence:.0%}")  # as the window shows it
    for band in report["bands"]:
        low, high = round(band["low"] * 255), round(band["high"] * 255)
        print(f"sigma {band['sigma']:.2f} levels where the picture is {low}-{high} ({band['blocks']} blocks)")
    shared = ""
    if result.shared_by_channels and not decorrelate:  # as the window says it; G would whiten it
        shared = " (under the count: noise shared by the channels, as compression leaves it; h allows for it)"
    print(f"effective noise channels: {report['effective_channels']:.2f} of {len(result.covariance)}{shared}")
    print(f"color decorrelation: {report['decorrelation']}")
    variant = f"{one_strength.weighting}/{one_strength.center_weight}"  # h depends on it: the window says its own
    print(f"suggested h: {h:.1f} levels (for one strength, {variant}: denoise --h, --luma-chroma off)")
    print(f"denoise's default filter: {report['default_filter']}")
    if result.warning:
        print(f"warning: {result.warning}")
    return 0
