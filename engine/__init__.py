"""NLMeans Studio's engine: Non-Local Means video denoising on the CPU (NumPy, numba) or GPU (CuPy).

This is the engine's public face: everything the window, the command line and a library user
need is exported here, and ``nlmeans_studio.gui`` imports nothing else of the engine (an
import-linter contract in the test suite holds both to it). Other modules are the engine's
own and may change.

The engine never imports Qt. CuPy, numba and PyAV are imported when first needed, so this
package imports with NumPy alone.

Filtering
    ``NLMParams``, ``Denoiser``, ``LumaChromaDenoiser``, ``GuidedDenoiser``, the volume filter
    ``denoise_volume``.
Noise and h
    ``choose_filter`` (the filter ``denoise`` and the window choose for a clip's noise),
    ``estimate_noise``, ``estimate_clip_noise`` and ``estimate_noise_over`` (pairs of frames
    spread over a clip, as ``denoise --noise auto`` and the window measure it), ``suggest_h``,
    ``apply_estimate``, ``decorrelation_decision``, the luma/chroma mode's helpers,
    ``estimate_volume_noise``.
Files
    ``VideoReader``, ``VideoWriter``, ``read_frames``, ``denoise_file``, ``read_volume``,
    ``write_volume``.
The window's engine
    ``Previewer`` (before/after previews, playback), ``RenderAhead``, ``difference_image``.
"""

from importlib.metadata import PackageNotFoundError, version

from nlmeans_studio.engine.automatic import FilterChoice, choose_filter, sure_sample_length
from nlmeans_studio.engine.backend import (
    BACKENDS,
    BackendUnavailableError,
    GpuOutOfMemoryError,
    gpu_unavailable_reason,
    resolve_backend,
)
from nlmeans_studio.engine.denoiser import METHODS, Denoiser
from nlmeans_studio.engine.export import ExportCancelledError, denoise_file, estimate_clip_noise
from nlmeans_studio.engine.filters.compiled import COMPILING, filter_compiles
from nlmeans_studio.engine.guided import GuidedDenoiser
from nlmeans_studio.engine.luma_chroma import (
    LumaChromaDenoiser,
    matrix_for,
    parse_luma_chroma,
    split_estimate,
    suggest_luma_chroma_h,
)
from nlmeans_studio.engine.media.ffmpeg import VideoError
from nlmeans_studio.engine.media.formats import CODECS, CodecNotHeldError, output_format
from nlmeans_studio.engine.media.probe import VideoInfo
from nlmeans_studio.engine.media.reader import VideoReader, read_frames
from nlmeans_studio.engine.media.writer import VideoWriter, check_output_path
from nlmeans_studio.engine.metrics import psnr
from nlmeans_studio.engine.noise import (
    NoiseEstimate,
    add_noise,
    add_realistic_noise,
    apply_estimate,
    decorrelation_decision,
    estimate_noise,
    estimate_noise_over,
    suggest_h,
)
from nlmeans_studio.engine.params import (
    CENTER_WEIGHTS,
    DEFAULT_H,
    FRAMES_MAX,
    PATCH_RADIUS_MAX,
    SEARCH_RADIUS_MAX,
    WEIGHTINGS,
    NLMParams,
)
from nlmeans_studio.engine.playback import RenderAhead
from nlmeans_studio.engine.presets import Preset, PresetError, find_preset, load_preset, save_preset, shipped_presets
from nlmeans_studio.engine.preview import LumaChroma, Preview, Previewer, SyntheticNoise, difference_image
from nlmeans_studio.engine.resources import ICON, PRESET_FOLDER, SAMPLE_CLIP
from nlmeans_studio.engine.volume.denoise import denoise_volume, denoise_volume_slice
from nlmeans_studio.engine.volume.io import (
    SUFFIXES,
    OneImageError,
    VolumeFile,
    check_volume_output,
    read_volume,
    volume_format,
    write_volume,
)
from nlmeans_studio.engine.volume.noise import VolumeNoiseEstimate, estimate_volume_noise, suggest_volume_h
from nlmeans_studio.engine.volume.params import CHANNEL_MODES

VOLUME_SUFFIXES = tuple(SUFFIXES)  # the file names read_volume and write_volume take: ".nii.gz", ...

try:
    __version__ = version("nlmeans-studio")
except PackageNotFoundError:  # run from a source tree that was not installed
    __version__ = "0+unknown"


def command_line(argv: list[str] | None = None) -> int:
    """Run the command line (``nlmeans-studio denoise ...``) on ``argv``; returns the exit status.

    Imported when called: the window does not pay for the command line's modules.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program's name (``["denoise", "in.mp4", "out.mp4"]``); None
        (the default): ``sys.argv[1:]``.

    Returns
    -------
    int
        0 on success, 1 on an error (printed on stderr, one line), 130 when cancelled.

    Raises
    ------
    SystemExit
        Arguments the parser refuses (status 2), or ``--help``.
    """
    from nlmeans_studio.engine.cli import main

    return main(argv)


__all__ = [
    "BACKENDS",
    "CENTER_WEIGHTS",
    "CHANNEL_MODES",
    "CODECS",
    "COMPILING",
    "DEFAULT_H",
    "FRAMES_MAX",
    "ICON",
    "METHODS",
    "PATCH_RADIUS_MAX",
    "PRESET_FOLDER",
    "SAMPLE_CLIP",
    "SEARCH_RADIUS_MAX",
    "VOLUME_SUFFIXES",
    "WEIGHTINGS",
    "BackendUnavailableError",
    "CodecNotHeldError",
    "Denoiser",
    "ExportCancelledError",
    "FilterChoice",
    "GpuOutOfMemoryError",
    "GuidedDenoiser",
    "LumaChroma",
    "LumaChromaDenoiser",
    "NLMParams",
    "NoiseEstimate",
    "OneImageError",
    "Preset",
    "PresetError",
    "Preview",
    "Previewer",
    "RenderAhead",
    "SyntheticNoise",
    "VideoError",
    "VideoInfo",
    "VideoReader",
    "VideoWriter",
    "VolumeFile",
    "VolumeNoiseEstimate",
    "__version__",
    "add_noise",
    "add_realistic_noise",
    "apply_estimate",
    "check_output_path",
    "check_volume_output",
    "choose_filter",
    "command_line",
    "decorrelation_decision",
    "denoise_file",
    "denoise_volume",
    "denoise_volume_slice",
    "difference_image",
    "estimate_clip_noise",
    "estimate_noise",
    "estimate_noise_over",
    "estimate_volume_noise",
    "filter_compiles",
    "find_preset",
    "gpu_unavailable_reason",
    "load_preset",
    "matrix_for",
    "output_format",
    "parse_luma_chroma",
    "psnr",
    "read_frames",
    "read_volume",
    "resolve_backend",
    "save_preset",
    "shipped_presets",
    "split_estimate",
    "suggest_h",
    "suggest_luma_chroma_h",
    "suggest_volume_h",
    "sure_sample_length",
    "volume_format",
    "write_volume",
]
