"""The ``denoise-volume`` command.

A NIfTI, TIFF stack or .npy volume in, the denoised one out; and ``estimate-noise`` on a volume.

h comes from the volume's noise estimate when not given (engine/volume/noise.py); the output
is written under a hidden name and renamed when complete (engine/volume/writer.py), keeping the
source's grid and data type class.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING

import numpy as np

from ..backend import BACKENDS
from ..shared_params import CENTER_WEIGHTS, WEIGHTINGS
from .params import CHANNEL_MODES
from .rician import NOISE_MODELS

if TYPE_CHECKING:
    from .io import VolumeFile

GRID_TOLERANCE = 1e-3  # world units (NIfTI: mm): a mask's affine within it of the volume's is on its grid
LOG_PROGRESS_SECONDS = 10.0  # progress in a log (stderr not a terminal): a line this often, and the first at once


def _radii(text: str) -> int | tuple[int, int, int]:
    """Parse "2" or "1,2,2" (z, y, x)."""
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or z,y,x integers, got {text!r}") from None
    if len(values) == 1:
        return values[0]
    if len(values) != 3:
        raise argparse.ArgumentTypeError(f"expected an integer or z,y,x integers, got {text!r}")
    return tuple(values)


def _strengths(text: str) -> float | list[float]:
    """Parse "12" or, one a channel filtered separately, "12,30"."""
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, or one a channel such as 12,30, got {text!r}") from None
    return values[0] if len(values) == 1 else values


def gpu_ids(text: str) -> list[int] | str:
    """Parse "all" or "0,1"."""
    if text == "all":
        return text
    try:
        ids = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'all' or GPU ids such as 0,1, got {text!r}") from None
    if min(ids) < 0:
        raise argparse.ArgumentTypeError(f"GPU ids count from 0, got {text!r}")
    return ids


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Add ``denoise-volume`` to the CLI's subcommands."""
    parser = commands.add_parser(
        "denoise-volume",
        help="denoise a 3D volume (NIfTI, TIFF stack, .npy) into a new file",
        description="Denoise the volume INPUT into OUTPUT with the fully 3D NLMeans filter (written to a "
        "temporary file, renamed when complete). Formats: .nii, .nii.gz, .tif, .tiff, .npy.",
    )
    parser.add_argument("input", help="a volume file: .nii, .nii.gz, .tif, .tiff or .npy")
    parser.add_argument("output", help="the denoised volume, in the same data type class and grid")
    parser.add_argument(
        "--h",
        type=_strengths,
        default=None,
        help="strength in the volume's units, or one a channel (12,30) with --channels separately (default: from "
        "the noise estimate, each channel's own where they are filtered separately)",
    )
    parser.add_argument("--patch-radius", type=_radii, default=1, help="B, voxels: 1 (default) or z,y,x")
    parser.add_argument("--search-radius", type=_radii, default=5, help="A, voxels: 5 (default) or z,y,x")
    parser.add_argument("--weighting", choices=WEIGHTINGS, default="exponential", help="default: exponential")
    parser.add_argument("--center-weight", choices=CENTER_WEIGHTS, default="one", help="default: one")
    parser.add_argument(
        "--channels",
        choices=("auto", *CHANNEL_MODES),
        default="auto",
        help="a multichannel volume's channels: together (the patch distance sums them, as for RGB) or separately "
        "(each filtered on its own, with its own h: fluorescence channels image different structures); auto "
        "(default): separately where the file keeps them on an axis of their own (ImageJ hyperstacks, OME-TIFF, "
        "NIfTI vectors) or, without --h, where their noise differs by more than 1.5 times, else together",
    )
    parser.add_argument("--backend", choices=BACKENDS, default="auto", help="default: auto (the GPU where it runs)")
    parser.add_argument("--devices", type=gpu_ids, default=None, help="GPUs to split the volume over: 0,1 or all")
    parser.add_argument(
        "--noise-model",
        choices=NOISE_MODELS,
        default="gaussian",
        help="rician for MRI magnitude images: squared magnitudes averaged and their bias removed, so that the "
        "background goes to 0 instead of about 1.25 sigma (CPU only; default: gaussian)",
    )
    parser.add_argument(
        "--sigma",
        type=_strengths,
        default=None,
        help="with --noise-model rician: the noise's sigma in the volume's units (the Gaussian noise of each of the "
        "magnitude's two parts), or one a channel (default: the noise estimate's, each channel's own)",
    )
    parser.add_argument(
        "--mask",
        default=None,
        help="a volume file of the input's grid (.nii, .nii.gz, .tif, .tiff, .npy) holding 1 (or true) where voxels "
        "are denoised and 0 where they are kept as they are (a brain mask); only boxes around its voxels are filtered",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="CPU threads for the CPU filter, 1 to NUMBA_NUM_THREADS (default: all); fewer leave cores to other work, "
        "with the same result",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace OUTPUT if it exists")
    parser.add_argument("--quiet", action="store_true", help="no progress and no summary")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")


class _Progress:
    """A percentage with an ETA on stderr.

    Redrawn at most twice a second on a terminal, a line every LOG_PROGRESS_SECONDS in a log (stderr
    a file or a pipe). The rate is taken from the first report on: before it come reading, the noise
    estimate and, on a first CPU run, compiling the filter, which made the first ETA of a short run
    many times too long.
    """

    def __init__(self) -> None:
        self.terminal = sys.stderr.isatty()
        self.drawn: float | None = None
        self.first: tuple[int, float] | None = None  # work done and time at the first report

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        self.first = self.first or (done, now)
        interval = 0.5 if self.terminal else LOG_PROGRESS_SECONDS
        if done < total and self.drawn is not None and now - self.drawn < interval:
            return
        self.drawn = now
        first_done, first_time = self.first
        rate = (done - first_done) / (now - first_time) if done > first_done else 0.0
        text = f"{100 * done / total:5.1f} %  " + (f"ETA {(total - done) / rate:.0f} s" if rate > 0 else "starting")
        if self.terminal:
            print(f"\r{text}  ", end="\n" if done >= total else "", file=sys.stderr, flush=True)
        else:
            print(text, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> tuple[int, ...]:
    """Run ``denoise-volume`` and return the shape of the volume denoised.

    (z, y, x) or, with channels, (z, y, x, c); errors propagate to the CLI's handler.
    """
    from ..backend import resolve_backend, resolve_devices
    from ..cpu.compiled import COMPILING
    from .checks import filled_outside, require_finite
    from .denoise import (
        checked_volume,
        denoise_volume,
        filter_compiles,
        require_cpu_room_for,
    )
    from .io import check_volume_input, check_volume_output, read_volume, volume_format
    from .params import VolumeParams, channel_strengths
    from .writer import lost_in, write_volume

    # What can be refused without the volume is refused before reading it and estimating its
    # noise; the input first, as the command line names it first.
    check_volume_input(args.input)
    if args.mask is not None:
        check_volume_input(args.mask)
    check_volume_output(args.output, args.input, overwrite=args.overwrite)
    if args.threads is not None:
        from ..cpu.threads import check_threads

        try:
            check_threads(args.threads)
        except ValueError as error:
            raise ValueError(f"--{error}") from error
    given = args.h if isinstance(args.h, list) else [1.0 if args.h is None else args.h]
    for strength in given:
        params = VolumeParams.checked(
            strength, args.patch_radius, args.search_radius, args.weighting, args.center_weight
        )
    if isinstance(args.h, list) and args.channels == "together":
        raise ValueError("--h gives one h a channel: the channels must be filtered separately (--channels)")
    if args.sigma is not None and args.noise_model != "rician":
        raise ValueError("--sigma is the Rician model's (--noise-model rician); the Gaussian model's strength is --h")
    if args.devices is not None:  # before reading: a combination refused, or no GPU
        if args.backend == "cpu":
            raise ValueError("--devices spreads the volume over GPUs: not with --backend cpu")
        args.devices = resolve_devices(args.devices)
    resolve_backend(args.backend)
    source = read_volume(args.input, series=True)
    series = bool(source.extra.get("series"))  # a NIfTI time series (Z, Y, X, T): filtered volume by volume
    first = source.data[..., 0] if series else source.data  # a series' volumes share their shape
    inside = None if args.mask is None else _mask(args.mask, source)
    try:
        checked_volume(first, params, finite=False)  # a volume smaller than the window
        # NaN voxels: refused, unless all lie outside the mask (the estimate reads them as 0, as the filter does)
        readable = source.data if inside is None else filled_outside(source.data, inside)
        require_finite(readable)
    except ValueError as error:
        raise ValueError(f"{args.input}: {error}") from error
    if series and volume_format(args.output) == "tiff":
        raise ValueError(f"{args.output}: a time series is written as NIfTI (or .npy), not TIFF")
    mode = source.channel_mode(args.channels, args.h)
    count = source.data.shape[3] if source.data.ndim == 4 and not series else 1
    if count > 1 and not args.quiet:
        print(f"{count} channels, filtered {mode}", file=sys.stderr)
    if series and not args.quiet:
        print(f"a series of {source.data.shape[3]} volumes, each filtered on its own", file=sys.stderr)
    if isinstance(args.h, list) and series:
        raise ValueError(
            f"{args.input}: a series of {source.data.shape[3]} volumes takes one --h for all of them (without "
            "--h, each volume's own from its noise): give one number"
        )
    if isinstance(args.h, list) and mode != "separately":
        raise ValueError(
            f"{args.input}: --h gives one h a channel, but its channels are filtered together: "
            "add --channels separately"
        )
    try:
        channel_strengths(args.h, count, mode)
    except ValueError as error:
        raise ValueError(f"{args.input}: {error}") from error
    h = args.h
    if h is None and series:
        if not args.quiet:
            print("h from each volume's own noise estimate", file=sys.stderr)
    elif h is None:
        apart = mode == "separately" and count > 1
        parts = [readable[..., c] for c in range(count)] if apart else [readable]
        h = [_suggested_h(args, part, f"channel {c + 1}: " if apart else "") for c, part in enumerate(parts)]
        h = h if apart else h[0]
    elif not args.quiet:
        low, high = float(np.min(readable)), float(np.max(readable))
        largest = max(h) if isinstance(h, list) else h
        if largest > high - low:
            print(
                f"warning: h {largest:g} is more than the volume's whole range "
                f"({low:g} to {high:g}): every voxel of the search window weighs nearly alike, a blur; without "
                "--h, h comes from the noise",
                file=sys.stderr,
            )
    sigma = args.sigma
    if args.noise_model == "rician" and not series:
        sigma = _rician_sigma(args, source.data, mode)
    if resolve_backend(args.backend) == "cpu":
        require_cpu_room_for(first)  # before a word about a compile that could not happen
    if not args.quiet and filter_compiles(args.backend):
        print(COMPILING, file=sys.stderr)
    start = time.perf_counter()
    filtered = denoise_volume(
        source.data,
        h=h,
        patch_radius=args.patch_radius,
        search_radius=args.search_radius,
        weighting=args.weighting,
        center_weight=args.center_weight,
        backend=args.backend,
        devices=args.devices,
        progress=None if args.quiet else _Progress(),
        channels=mode,
        threads=args.threads,
        mask=inside,
        channel_axis=3 if source.data.ndim == 4 and not series else None,
        series_axis=3 if series else None,
        noise_model=args.noise_model,
        sigma=sigma,
    )
    write_volume(args.output, filtered, source, overwrite=args.overwrite)
    if lost_in(args.output, source) and not args.quiet:
        print(f"note: {args.output}: {lost_in(args.output, source)}", file=sys.stderr)
    if not args.quiet:
        shape = "x".join(str(n) for n in source.data.shape)
        print(f"denoised {shape} voxels in {time.perf_counter() - start:.1f} s -> {args.output}", file=sys.stderr)
    return source.data.shape


def _rician_sigma(args: argparse.Namespace, volume: np.ndarray, mode: str) -> float | list[float]:
    """Return the sigma whose bias the Rician model removes, said on stderr unless --quiet.

    --sigma, else each channel's as ``denoise_volume`` reads it: in the air around the object
    where it has some (the noise estimate said before reads the object's flattest blocks).
    """
    from .rician import estimated_sigmas

    if args.sigma is not None:
        sigmas, how = args.sigma if isinstance(args.sigma, list) else [args.sigma], "given"
    else:
        sigmas = [float(s) for s in estimated_sigmas(volume.reshape(*volume.shape[:3], -1), mode)]
        how = "read in the air around the object where it has some, else as estimated"
    if not args.quiet:
        print(
            f"Rician model: sigma {', '.join(f'{s:.4g}' for s in sigmas)} ({how}); 2 sigma^2 taken from the "
            "averaged squared magnitudes",
            file=sys.stderr,
        )
    return sigmas if len(sigmas) > 1 else sigmas[0]


def _mask(path: str, source: VolumeFile) -> np.ndarray:
    """Read ``--mask``: a bool (Z, Y, X) array on ``source``'s grid, or ValueError naming it as the mask.

    Of the source's shape and, where both are NIfTI, its voxel-to-world affine: a mask of the same
    shape in another space (flipped, another voxel size) would change the wrong voxels, silently.
    """
    from .io import read_volume
    from .mask import checked_mask

    try:
        mask = read_volume(path)
    except ValueError as error:
        raise ValueError(f"--mask {path}: {str(error).removeprefix(f'{path}: ')}") from error
    try:
        inside = checked_mask(mask.data, source.data.shape[:3])
    except ValueError as error:
        said = f"--mask {path}: {error}"
        if mask.format == source.format == "nifti" and mask.data.shape[:3] != source.data.shape[:3]:
            # the shapes as nibabel and FSL show them too
            said += f" (x, y, z as the files hold them: {_xyz(source.data.shape)} and {_xyz(mask.data.shape)})"
        raise ValueError(said) from error
    if mask.affine is not None and source.affine is not None and not _same_grid(mask.affine, source.affine):
        raise ValueError(
            f"--mask {path}: on another grid than the volume: its voxel-to-world affine differs "
            f"(voxel size {_voxel_size(mask.affine)} against {_voxel_size(source.affine)}, origin "
            f"{_origin(mask.affine)} against {_origin(source.affine)}, axes toward {_axes(mask.affine)} against "
            f"{_axes(source.affine)}); resample it onto the volume's grid first "
            "(nibabel.processing.resample_from_to, FSL flirt -applyxfm, ANTs antsApplyTransforms)"
        )
    return inside


def _xyz(shape: tuple[int, ...]) -> str:
    """Return a (z, y, x[, ...]) shape as NIfTI tools show it: x, y, z first."""
    return "x".join(str(size) for size in (*shape[:3][::-1], *shape[3:]))


def _same_grid(first: np.ndarray, second: np.ndarray) -> bool:
    """Whether two voxel-to-world affines map voxels to the same places, to GRID_TOLERANCE (the files' units)."""
    return bool(np.allclose(first, second, rtol=0, atol=GRID_TOLERANCE))


def _voxel_size(affine: np.ndarray) -> str:
    return "x".join(f"{size:.3g}" for size in np.linalg.norm(affine[:3, :3], axis=0))


def _axes(affine: np.ndarray) -> str:
    """Return where voxel axes i, j, k point, as NIfTI tools say it (RAS: right, anterior, superior)."""
    codes = ("LR", "PA", "IS")
    columns = affine[:3, :3].T
    return "".join(codes[int(np.argmax(np.abs(c)))][int(c[np.argmax(np.abs(c))] > 0)] for c in columns)


def _origin(affine: np.ndarray) -> str:
    return "(" + ", ".join(f"{value:.4g}" for value in affine[:3, 3]) + ")"


def _suggested_h(args: argparse.Namespace, data: np.ndarray, label: str) -> float:
    """Suggest h for ``data`` from its noise, said on stderr with the estimate's warnings unless --quiet.

    ``data``: a volume, or one channel of it (``label`` says which).
    """
    from .noise import estimate_volume_noise, suggest_volume_h

    try:
        estimate = estimate_volume_noise(data)
        h = suggest_volume_h(estimate, args.weighting, center_weight=args.center_weight, patch_radius=args.patch_radius)
    except (ValueError, MemoryError) as error:  # too small, constant, or short of memory: --h skips the estimate
        raise type(error)(f"{args.input}: {label}{error}; give --h instead") from error
    if not args.quiet:
        sigma = estimate.average_sigma
        print(f"{label}noise sigma {sigma:.4g} (from {estimate.blocks} blocks) -> h {h:.4g}", file=sys.stderr)
        if estimate.growth:
            print(f"warning: {label}{estimate.growth}; give --h to choose", file=sys.stderr)
        if estimate.clean:
            print(
                f"warning: {label}the volume looks clean (noise under {estimate.clean_sigma:.4g}, half an 8-bit "
                "level of its range): h is set for that much noise; give --h to choose",
                file=sys.stderr,
            )
    return h


def estimate(path: str, *, as_json: bool) -> int:
    """Print a volume's noise as ``denoise-volume`` estimates it, and the h it suggests for each weighting.

    Each channel's own noise where it filters them separately, each volume's own in a NIfTI time
    series; errors propagate to the CLI's handler.
    """
    from .io import read_volume

    source = read_volume(path, series=True)
    if source.extra.get("series"):
        return _estimate_series(path, source.data, as_json=as_json)
    mode = source.channel_mode()
    count = source.data.shape[3] if source.data.ndim == 4 else 1
    apart = mode == "separately" and count > 1
    parts = [source.data[..., c] for c in range(count)] if apart else [source.data]
    reports = [_noise_report(path, part) | {"channel": c + 1 if apart else None} for c, part in enumerate(parts)]
    if as_json:
        print(json.dumps({"channels": mode, "estimates": reports}))
        return 0
    shape = " x ".join(str(n) for n in source.data.shape[:3])
    print(f"a {shape} (z, y, x) volume" + (f" of {count} channels, filtered {mode}" if count > 1 else ""))
    for report in reports:
        label = f"channel {report['channel']}: " if apart else ""
        print(f"{label}noise sigma (the volume's units): {', '.join(f'{s:.4g}' for s in report['sigma'])}")
        print(f"{label}from {report['blocks']} blocks above the background")
        if report["band_sigmas"]:
            bands = ", ".join(f"{s:.3g}" for s in report["band_sigmas"])
            print(f"{label}sigma in brightness bands, darkest first: {bands}")
        if report["clean"]:
            print(f"{label}the volume looks clean: h is suggested for noise of half an 8-bit level of its range")
        for weighting, h in report["suggested_h"].items():
            print(f"{label}suggested h: {h:.4g} for {weighting} weights, patch radius 1 and centre weight one")
        if report["warning"]:
            print(f"warning: {label}{report['warning']}")
    return 0


def _estimate_series(path: str, series: np.ndarray, *, as_json: bool) -> int:
    """Print each (Z, Y, X) volume's noise of a (Z, Y, X, T) ``series``, as ``denoise-volume`` estimates each's h.

    JSON: ``{"series": T, "estimates": [...]}``, one report a volume (numbered from 0, as FSL's
    ``fslroi`` counts them); text: a line a volume.
    """
    reports = [_noise_report(f"{path}: volume {t}", series[..., t]) | {"volume": t} for t in range(series.shape[3])]
    if as_json:
        print(json.dumps({"series": series.shape[3], "estimates": reports}))
        return 0
    shape = " x ".join(str(n) for n in series.shape[:3])
    print(f"a series of {series.shape[3]} volumes of {shape} (z, y, x), each filtered with h from its own noise")
    for report in reports:
        sigma = ", ".join(f"{s:.4g}" for s in report["sigma"])
        h = report["suggested_h"]["exponential"]
        clean = " (looks clean)" if report["clean"] else ""
        print(
            f"volume {report['volume']}: noise sigma {sigma} from {report['blocks']} blocks{clean}, suggested h "
            f"{h:.4g} for exponential weights"
        )
        if report["warning"]:
            print(f"warning: volume {report['volume']}: {report['warning']}")
    return 0


def _noise_report(path: str, data: np.ndarray) -> dict:
    """Return a volume's (or one channel's) noise estimate and suggested h per weighting, as JSON values."""
    from .noise import estimate_volume_noise, suggest_volume_h

    try:
        result = estimate_volume_noise(data)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from error
    return {
        "sigma": [round(float(s), 6) for s in result.sigma],
        "blocks": result.blocks,
        "band_sigmas": [round(s, 6) for s in result.band_sigmas],
        "signal_dependent": result.signal_dependent,
        "clean": result.clean,
        "suggested_h": {  # the default weighting first
            weighting: round(suggest_volume_h(result, weighting), 6)
            for weighting in sorted(WEIGHTINGS, key=lambda weighting: weighting != "exponential")
        },
        "warning": result.growth or None,
    }
