"""``nlmeans-studio denoise photo.png out.png``: one image in, one image out, in its own layout.

The picture goes through the one-call ``denoise`` (its noise measured and the filter chosen as for
a clip, or ``--h``), with the window ``--patch-radius``, ``--search-radius``, ``--weighting`` and
``--center-weight`` give; gray stays gray and 16 bits stay 16 bits (``media.still_image``). An
EXR's linear floats are filtered on the 0..1 scale of their own range (0 or below up to 1 or
above), ``--h`` in 8-bit levels of it, and put back on theirs.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..backend import resolve_backend
from ..media.still_image import read_still, stored_format, write_still
from ..media.writer import check_output_path
from ..video.default_filter import AUTO
from ..video.export import ExportSummary
from ..video.one_call import CHOICE_LOGGER, denoise
from ..video.params import NLMParams

# Options of a clip that one image has no use for: refused when given (--start 0, its default, is
# not), not silently dropped.
CLIP_OPTIONS = ("frames_past", "frames_future", "start", "duration", "devices", "guide", "filter_preset")


def run_still(args: argparse.Namespace) -> ExportSummary:
    """Denoise the image ``args.input`` into the image ``args.output``; return what was done.

    Raises
    ------
    ValueError
        A clip's option given for one image; a ``--noise`` region outside it.
    VideoError
        An input FFmpeg cannot read as an image, or a layout the output cannot hold.
    """
    given = [f"--{name.replace('_', '-')}" for name in CLIP_OPTIONS if getattr(args, name, None) not in (None, 0.0)]
    if given:
        raise ValueError(f"{' and '.join(given)}: one image has no frames or clip to use it; leave it out")
    check_output_path(Path(args.output), Path(args.input), args.overwrite)
    started = time.perf_counter()
    image = read_still(Path(args.input))
    stored_format(Path(args.output), image.layout)  # a picture the output cannot hold: said before any work
    defaults = NLMParams()
    h = defaults.h if args.h is None and args.noise == "none" else args.h
    window = {
        "patch_radius": defaults.patch_radius if args.patch_radius is None else args.patch_radius,
        "search_radius": defaults.search_radius if args.search_radius is None else args.search_radius,
        "weighting": args.weighting or defaults.weighting,
        "center_weight": args.center_weight or AUTO,  # chosen with the strength, as for a clip
    }
    region = None if args.noise in ("auto", "none") else args.noise  # X,Y,W,H: a flat region of the image
    with _choice_said(quiet=args.quiet):
        pixels = _denoised(image.pixels, Path(args.input), h=h, roi=region, backend=args.backend, **window)
    write_still(Path(args.output), dataclasses.replace(image, pixels=pixels), overwrite=args.overwrite)
    backend = resolve_backend(args.backend)
    summary = ExportSummary(1, time.perf_counter() - started, backend, backend, "CPU")
    if not args.quiet:
        print(f"denoised 1 image in {summary.seconds:.1f} s on the {backend} -> {args.output}", file=sys.stderr)
    return summary


@contextlib.contextmanager
def _choice_said(*, quiet: bool) -> Iterator[None]:
    """Print the one call's lines on stderr meanwhile: the noise read and the filter chosen, as for a clip."""
    if quiet:
        yield
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    level = CHOICE_LOGGER.level
    CHOICE_LOGGER.addHandler(handler)
    CHOICE_LOGGER.setLevel(logging.INFO)
    try:
        yield
    finally:
        CHOICE_LOGGER.removeHandler(handler)
        CHOICE_LOGGER.setLevel(level)


def _denoised(pixels: np.ndarray, path: Path, **settings: object) -> np.ndarray:
    """Return the one-call ``denoise`` of a picture; floats on the 0..1 scale of their own range and back.

    Raises
    ------
    ValueError
        Float samples that are NaN or infinite.
    """
    if pixels.dtype.kind != "f":  # 16 bits as stored, whatever the values reach (a 12-bit camera's: under 4096)
        return denoise(pixels, bit_depth=16 if pixels.dtype == np.uint16 else None, **settings)
    if not np.isfinite(pixels).all():
        raise ValueError(f"{path}: holds NaN or infinite samples; the filter needs finite ones")
    low, high = min(0.0, float(pixels.min())), max(1.0, float(pixels.max()))
    scaled = denoise(((pixels - low) / (high - low)).astype(np.float32), **settings)
    return (scaled * (high - low) + low).astype(np.float32)
