"""NLMeans Studio's engine: Non-Local Means video denoising on the CPU (NumPy, numba) or GPU (CuPy).

This is the engine's public face: everything the window, the command line and a library user
need is exported here, and ``nlmeans_studio.gui`` imports nothing else of the engine (an
import-linter contract in the test suite holds both to it). Other modules are the engine's
own and may change.

The engine never imports Qt. CuPy, numba and PyAV are imported when first needed, so this
package imports with NumPy alone.

Its folders are floors (an import-linter contract holds them): the command line (``cli``) over
the benchmark (``bench``), over the two products, ``video`` and ``volume``, which mirror each
other and import neither the other, over the device plumbing (``cpu``, ``gpu``) and the media
files (``media``), over the base modules (``backend``, ``frames``, ``memory``, ...). Inside the
package, modules import each other relatively (``from ..media.reader import VideoReader``), so
that an import says how far up or across the floors it reaches.

Filtering
    ``denoise`` (an image or a clip in an array, in one call; also ``nlmeans_studio.denoise``),
    ``NLMParams``, ``Denoiser``, ``PlanarDenoiser`` (planar frames, as VapourSynth holds them, from
    many threads), ``LumaChromaDenoiser``, ``GuidedDenoiser``, the volume filter
    ``denoise_volume``.
Noise and h
    ``choose_filter`` (the filter ``denoise`` and the window choose for a clip's noise),
    ``estimate_noise``, ``estimate_clip_noise`` and ``estimate_noise_over`` (pairs of frames
    spread over a clip, as ``denoise --noise auto`` and the window measure it), ``suggest_h``,
    ``apply_estimate``, ``decorrelation_decision``, the luma/chroma mode's helpers,
    ``estimate_volume_noise``.
Tuning
    ``tune_for_fps`` (the window and strengths of best estimated quality that export at a frame
    rate on this machine; ``tune`` on the command line), ``TuneResult``, ``TuneCandidate``,
    ``TargetNotReachedError``.
Files
    ``VideoReader``, ``VideoWriter``, ``read_frames``, ``denoise_file``, ``read_volume``,
    ``write_volume``; ``is_image_sequence`` and ``sequence_files`` (numbered images named by a
    pattern, ``scans/%06d.dpx``), ``names_a_volume``.
Live video
    ``LiveReader`` (a stream or a capture device), ``denoise_live`` and its ``LiveStatus``
    (frames dropped, latency).
The window's engine
    ``Previewer`` (before/after previews, playback), ``render_passes`` (a still in passes, the
    shown region first, after ``unfiltered_preview``; ``quick_preview`` while the CPU filter
    compiles), ``compile_cpu_filter``, ``RenderAhead``, ``difference_image``.
"""

if __name__ != "nlmeans_studio.engine":
    # Python started in the repository's root finds engine/ as a top-level package: a second copy
    # whose numba cache entries (shared with the real one) the installed package cannot unpickle.
    raise ImportError(f"import nlmeans_studio.engine, not {__name__}: the engine is installed under nlmeans_studio")

from .backend import (
    BACKENDS,
    BackendUnavailableError,
    GpuOutOfMemoryError,
    gpu_unavailable_reason,
    resolve_backend,
)
from .cpu.compiled import COMPILING
from .media.ffmpeg import VideoError
from .media.formats import (
    CODECS,
    CodecNotHeldError,
    aspect_ratio_lost,
    chroma_halved,
    default_codec,
    misread_streams,
    output_format,
)
from .media.image_sequence import is_image_sequence, sequence_files
from .media.live import LiveReader
from .media.probe import VideoInfo
from .media.reader import VIDEO_SUFFIXES, VideoReader, read_frames
from .media.timecode import timecode_after
from .media.writer import VideoWriter, check_encoder, check_output_path
from .metrics import psnr
from .resources import ICON, PRESET_FOLDER, SAMPLE_CLIP
from .version import __version__
from .video.choose_h import apply_estimate, decorrelation_decision, suggest_h
from .video.default_filter import FilterChoice, choose_filter, sure_sample_length
from .video.denoiser import METHODS, Denoiser, compile_cpu_filter
from .video.export import ExportCancelledError, decoded_run, denoise_file, estimate_clip_noise
from .video.filters import filter_compiles as video_filter_compiles
from .video.guided import GuidedDenoiser
from .video.live import LiveStatus, denoise_live
from .video.luma_chroma import (
    LumaChromaDenoiser,
    matrix_for,
    parse_luma_chroma,
    split_estimate,
    suggest_luma_chroma_h,
)
from .video.noise import estimate_noise, estimate_noise_over
from .video.noise_estimate import NoiseEstimate
from .video.one_call import denoise
from .video.params import (
    CENTER_WEIGHTS,
    DEFAULT_H,
    FRAMES_MAX,
    PATCH_RADIUS_MAX,
    SEARCH_RADIUS_MAX,
    WEIGHTINGS,
    NLMParams,
)
from .video.planar import PlanarDenoiser
from .video.playback import RenderAhead
from .video.presets import (
    Preset,
    PresetError,
    find_preset,
    load_preset,
    save_preset,
    shipped_presets,
)
from .video.preview import LumaChroma, Preview, Previewer, SyntheticNoise, difference_image
from .video.preview_passes import STAGES, quick_preview, render_passes, unfiltered_preview
from .video.synthetic_noise import add_noise, add_realistic_noise
from .video.tune import TargetNotReachedError, TuneCandidate, TuneResult, tune_for_fps
from .volume.denoise import denoise_volume, denoise_volume_slice
from .volume.denoise import filter_compiles as volume_filter_compiles
from .volume.io import (
    VOLUME_SUFFIXES,
    OneImageError,
    VolumeFile,
    check_volume_output,
    names_a_volume,
    read_volume,
    volume_format,
)
from .volume.noise import VolumeNoiseEstimate, estimate_volume_noise, suggest_volume_h
from .volume.params import CHANNEL_MODES
from .volume.writer import write_volume


def filter_compiles(backend: str = "auto", *, volume: bool = False) -> bool:
    """Whether the first frame filtered on ``backend`` waits for the CPU filter to compile.

    With ``volume``, whether the first volume does. It waits where numba's cache holds no build of
    its current code for this machine.

    Parameters
    ----------
    backend : {"auto", "cpu", "gpu"}
        As ``Denoiser`` and ``denoise_volume`` resolve it.
    volume : bool
        The 3D filter of ``denoise_volume`` rather than the video filter of ``Denoiser``.

    Returns
    -------
    bool
        True where the CPU's numba filter will compile first (one to two minutes, once per machine and
        version); False where it is cached, and on the GPU, whose kernels CuPy compiles in a
        few seconds and keeps.
    """
    return volume_filter_compiles(backend) if volume else video_filter_compiles(backend)


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
    from .cli import main

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
    "STAGES",
    "VIDEO_SUFFIXES",
    "VOLUME_SUFFIXES",
    "WEIGHTINGS",
    "BackendUnavailableError",
    "CodecNotHeldError",
    "Denoiser",
    "ExportCancelledError",
    "FilterChoice",
    "GpuOutOfMemoryError",
    "GuidedDenoiser",
    "LiveReader",
    "LiveStatus",
    "LumaChroma",
    "LumaChromaDenoiser",
    "NLMParams",
    "NoiseEstimate",
    "OneImageError",
    "PlanarDenoiser",
    "Preset",
    "PresetError",
    "Preview",
    "Previewer",
    "RenderAhead",
    "SyntheticNoise",
    "TargetNotReachedError",
    "TuneCandidate",
    "TuneResult",
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
    "aspect_ratio_lost",
    "check_encoder",
    "check_output_path",
    "check_volume_output",
    "choose_filter",
    "chroma_halved",
    "command_line",
    "compile_cpu_filter",
    "decoded_run",
    "decorrelation_decision",
    "default_codec",
    "denoise",
    "denoise_file",
    "denoise_live",
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
    "is_image_sequence",
    "load_preset",
    "matrix_for",
    "misread_streams",
    "names_a_volume",
    "output_format",
    "parse_luma_chroma",
    "psnr",
    "quick_preview",
    "read_frames",
    "read_volume",
    "render_passes",
    "resolve_backend",
    "save_preset",
    "sequence_files",
    "shipped_presets",
    "split_estimate",
    "suggest_h",
    "suggest_luma_chroma_h",
    "suggest_volume_h",
    "sure_sample_length",
    "timecode_after",
    "tune_for_fps",
    "unfiltered_preview",
    "volume_format",
    "write_volume",
]
