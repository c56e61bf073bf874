"""``nlmeans-studio denoise``: the filter chosen for a clip's noise, its progress and the stop signals.

The progress goes to stderr; the stop signals leave no partial file.
"""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
import threading
from pathlib import Path

from ..backend import (
    resolve_backend,
    resolve_devices,
)
from ..cpu.compiled import announce_compile, silence_compile_notice
from ..media.ffmpeg import VideoError, show_ffmpeg_messages
from ..media.formats import (
    ANY_SIZE_ENCODERS,
    CODECS,
    DELIVERY_CODEC,
    LOSSLESS_SOURCES,
    MASTER_SOURCES,
    aspect_ratio_lost,
    check_encoding,
    check_subsampled_size,
    chroma_halved,
    default_codec,
    encoder_preset,
    misread_streams,
    output_format,
    output_pixel_format,
    stream_muxer,
)
from ..media.image_sequence import is_image_sequence
from ..media.pipe import PIPE, PipeReader
from ..media.probe import VideoInfo
from ..media.reader import VideoReader, source_yuv_layout
from ..media.still_image import is_still_image
from ..media.writer import STANDARD_OUTPUT, check_encoder, check_output_path
from ..memory import (
    require_cpu_room,
)
from ..video.choose_h import apply_estimate
from ..video.clip_denoiser import refusal, runs_plain
from ..video.default_filter import (
    AUTO,
    GIVEN,
    FilterChoice,
    choose_filter,
    given_strength_center,
    noise_line,
    sure_sample_length,
)
from ..video.export import (
    ExportCancelledError,
    ExportSummary,
    clip_sample,
    denoise_file,
    estimate_clip_noise,
    frame_range,
)
from ..video.filters import cpu_filter_compiles
from ..video.luma_chroma import (
    matrix_for,
)
from ..video.noise_estimate import BLOCK
from ..video.params import NLMParams
from ..video.presets import FIELDS as PRESET_FIELDS
from ..video.presets import Preset, find_preset, load_preset
from ..volume.cli import LOG_PROGRESS_SECONDS
from .arguments import UNSET
from .still import run_still

WINDOW_OPTIONS = tuple(name for name in PRESET_FIELDS if name != "h")  # the filter's options a preset also sets


class ProgressBar:
    """Frames, fps and ETA on stderr.

    One line redrawn at most four times a second on a terminal, a line every LOG_PROGRESS_SECONDS
    where stderr goes to a file or a pipe (a log). The rate is measured from the first frame on:
    before it come the start-up's seconds (on a first run, the CPU filter's compile: up to a
    minute), which would make the ETA of a short clip minutes.
    """

    def __init__(self) -> None:
        self._terminal = sys.stderr.isatty()
        self._drawn: float | None = None  # seconds when a line was last drawn
        self._line_open = False  # a partial line is on screen
        self._first: tuple[int, float] | None = None  # frames done and seconds when the first was
        self._width = 0  # characters of the longest line drawn

    def __call__(self, done: int, total: int, seconds: float) -> None:
        """Draw an export's progress: ``done`` of ``total`` frames (0: unknown) at ``seconds`` since the start."""
        if self._first is None and done > 0:
            self._first = (done, seconds)
        first_done, first_seconds = self._first or (done, seconds)
        fps = (done - first_done) / (seconds - first_seconds) if seconds > first_seconds else 0.0
        rate = f"{fps:.1f} fps" if fps > 0 else "starting"
        if total:
            eta = f"  ETA {(total - done) / fps:.0f} s" if fps > 0 else ""
            line = f"{done}/{total} frames ({100 * done / total:.0f} %)  {rate}{eta}"
        else:  # a pipe, of unknown length
            line = f"{done} frame{'' if done == 1 else 's'}  {rate}"
        self.show(line, seconds, last=bool(total) and done >= total)

    def show(self, line: str, seconds: float, *, last: bool = False) -> None:
        """Draw ``line`` at ``seconds`` since the start, unless one was drawn within the interval; ``last`` always."""
        interval = 0.25 if self._terminal else LOG_PROGRESS_SECONDS
        if not last and self._drawn is not None and seconds - self._drawn < interval:
            return
        self._drawn = seconds
        if not self._terminal:
            print(line, file=sys.stderr, flush=True)
            return
        line = f"\r{line}  "
        self._line_open = not last
        line, self._width = line.ljust(self._width), max(self._width, len(line))  # no tail of a longer line
        print(line, end="" if self._line_open else "\n", file=sys.stderr, flush=True)

    def close(self) -> None:
        """End a partial line, so that an error after it starts a line of its own."""
        if self._line_open:
            print(file=sys.stderr, flush=True)
            self._line_open = False


def check_output(args: argparse.Namespace, info: VideoInfo | None = None, *, exists: bool = True) -> None:
    """Refuse an OUTPUT that could not be written, before any work: its codec, encoder, name, container, place.

    ``info``: the source's, whose streams the output must hold; None before a source is open.
    ``exists``: an OUTPUT there already, without --overwrite, refused too.
    """
    if args.output == STANDARD_OUTPUT:
        return
    live = getattr(args, "live", False)
    codec = args.codec or default_codec(Path(args.output), info, rgb=args.rgb, preset=args.preset)
    check_encoding(codec, args.crf, args.preset or encoder_preset(codec, live=live), rgb=args.rgb)
    check_encoder(codec, args.output)  # one this machine lacks: NVENC without an NVIDIA encoder
    if stream_muxer(args.output, codec) is None:  # a file, not a stream's URL
        output_format(Path(args.output), codec, info)  # a name that cannot hold the codec: said first
        if _size_checked_here(args, codec, info):  # an odd size 4:2:0 refuses: said before the noise's lines
            pixel_format = output_pixel_format(codec, info, gray=False, rgb=args.rgb)
            check_subsampled_size(Path(args.output), pixel_format, info.width, info.height)
        if exists:
            check_output_path(Path(args.output), Path(args.input), args.overwrite)


def _size_checked_here(args: argparse.Namespace, codec: str, info: VideoInfo | None) -> bool:
    """Whether ``check_output`` checks the size ``codec`` needs, before the noise is measured.

    A video file's frames the noise estimate takes; smaller ones are said to be too small first,
    and the writer checks them.
    """
    if info is None or is_image_sequence(Path(args.output)) or CODECS[codec][0] in ANY_SIZE_ENCODERS:
        return False
    return min(info.width, info.height) >= BLOCK


def window_params(args: argparse.Namespace, preset: Preset | None) -> NLMParams:
    """Return the filter's parameters asked for before any noise is measured.

    The options, over ``preset``'s, over the defaults.
    """
    base = NLMParams() if preset is None else preset.params
    chosen = {name: getattr(args, name) for name in WINDOW_OPTIONS if getattr(args, name) is not None}
    return dataclasses.replace(base, **chosen, h=base.h if args.h is None else args.h)


def _preset(args: argparse.Namespace) -> str | None:
    """Return the encoder's speed preset: --preset, else the codec's default; None live (the stream's rate picks it)."""
    if args.preset or getattr(args, "live", False):
        return args.preset
    return encoder_preset(args.codec, live=False)


def output_options(args: argparse.Namespace) -> dict[str, object]:
    """Return how the command writes OUTPUT (backend, codec and its options), as the engine's exports take them."""
    return {
        "backend": args.backend,
        "codec": args.codec,
        "crf": args.crf,
        "preset": _preset(args),
        "overwrite": args.overwrite,
        "rgb": args.rgb,
    }


def filter_asked(args: argparse.Namespace, preset: Preset | None, info: VideoInfo) -> FilterChoice:
    """Return the filter asked for.

    The options, over ``preset``'s, over the defaults; its strengths from the noise
    (``default_filter.choose_filter``: luma/chroma for a colour clip, or RGB where SURE finds it
    better on an RGB source; SURE unless an encoder's noise)
    unless --h or --noise none. ``info``: the source's, whose streams the output must hold.
    """
    params = window_params(args, preset)
    check_output(args, info)  # before the slower estimate
    matrix = matrix_for(info.color.get("colorspace", 2), info.height)
    mode = _luma_chroma_asked(args, preset)
    strength = 1.0 if preset is None else preset.strength
    if args.noise == "none":
        if args.h is None and preset is not None and strength is not None:
            raise ValueError(f"--filter-preset {args.filter_preset} sets h from the noise: give --h with --noise none")
        if mode == AUTO:
            raise ValueError("--luma-chroma auto sets its strengths from the noise: give H_Y,H_UV with --noise none")
        choice = FilterChoice(params, None if mode is None else (*mode, matrix), how=GIVEN)
        if mode is not None and not args.quiet:  # strengths given: what filters, as --noise auto says it
            print(f"filter: {choice.describe('given')}", file=sys.stderr)
        return choice
    roi = None if args.noise == "auto" else args.noise
    estimate = estimate_clip_noise(args.source, roi=roi, start=args.start, duration=args.duration)
    note = ""
    own_h = preset is not None and strength is None  # a preset's h in levels, as --h is one
    center_weight = args.center_weight or (AUTO if preset is None else preset.center_weight)
    if (args.h is not None or own_h) and mode is None:  # one strength: the colour transform still follows the noise
        params = dataclasses.replace(params, center_weight=given_strength_center(estimate, center_weight))
        choice = FilterChoice(apply_estimate(params, estimate, h=params.h), None, how=GIVEN)
        whose = "yours" if args.h is not None else f"{args.filter_preset}'s"
        note = f"{whose}; the noise suggests {apply_estimate(params, estimate).h:.1f}"
    else:
        sample = None
        if isinstance(mode, str) or mode is None:  # strengths from the noise: SURE may refine them
            sample = clip_sample(args.source, sure_sample_length(params), args.start, args.duration)
        choice = choose_filter(
            estimate,
            params,
            matrix=matrix,
            luma_chroma=mode,
            strength=1.0 if strength is None else strength,
            sample=sample,
            backend=args.backend if args.devices is None else "gpu",
            center_weight=center_weight,
            rgb_allowed=source_yuv_layout(info) is None,  # a Y'CbCr source stays in Y'CbCr, where nothing clips
        )
        if strength not in (None, 1.0):
            note = f"{args.filter_preset}'s strength: x{strength:g}"
    if not args.quiet:
        print(noise_line(estimate, choice, note), file=sys.stderr)
        if estimate.warning:
            print(f"warning: {estimate.warning}", file=sys.stderr)
    return choice


def _luma_chroma_asked(args: argparse.Namespace, preset: Preset | None) -> str | tuple[float, float] | None:
    """Return the luma/chroma mode.

    --luma-chroma, else the preset's, else auto (a colour clip in Y'CbCr, or RGB where SURE finds it
    better on an RGB source), except where one strength
    is given (--h), no noise is estimated (--noise none) or the filter runs as the plain one
    (--devices, --guide).
    """
    if args.luma_chroma is not UNSET:
        return args.luma_chroma
    if preset is not None:
        return preset.luma_chroma
    plain = args.h is not None or args.noise == "none" or runs_plain(guide=args.guide, devices=args.devices)
    return None if plain else AUTO


def source_info(args: argparse.Namespace) -> VideoInfo:
    """Return what INPUT holds, with what a person should know before its frames are used said on stderr.

    Such as a truncated file, an interlaced pipe, sound that an image sequence OUTPUT cannot carry
    or that OUTPUT's container keeps in a form older readers misread, a 4:2:2 master written 4:2:0,
    anamorphic pixels written square.
    """
    info = args.source.info
    if info.warning and not args.quiet:
        print(f"warning: {args.input}: {info.warning}", file=sys.stderr)
    if info.other_streams and is_image_sequence(Path(args.output)) and not args.quiet:
        print(f"warning: {args.output}: an image sequence carries no audio or subtitles", file=sys.stderr)
    if (misread := misread_streams(Path(args.output), info)) and not args.quiet:
        print(f"warning: {args.output}: the audio is copied unchanged, but {misread}", file=sys.stderr)
    piped = args.output == "-"  # a y4m stream, in the source's own sampling whatever --codec says
    if not piped and (halved := chroma_halved(args.codec, info)) and not args.quiet:
        print(f"warning: {args.output}: {halved}", file=sys.stderr)
    if (lost := aspect_ratio_lost(Path(args.output), args.codec, info)) and not args.quiet:
        print(f"warning: {args.output}: {lost}", file=sys.stderr)
    return info


class Stop:
    """What Ctrl-C, SIGTERM and SIGHUP do to a command.

    Once a video's frames are being written, the export is asked to stop at its next frame (it
    removes its file and joins its threads); otherwise the command stops at once. Either way it says
    'cancelled', exits 130 and leaves nothing behind. A signal the run was started ignoring stays
    ignored: ``nohup nlmeans-studio denoise ... &`` outlives its terminal. Off the main thread
    (``command_line`` called from a worker) Python lets no handler be set: the caller's stay.
    """

    SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")

    def __init__(self) -> None:
        self.cancel = threading.Event()
        self.exporting = False
        stops = [getattr(signal, name) for name in self.SIGNALS if hasattr(signal, name)]
        stops = [stop for stop in stops if signal.getsignal(stop) is not signal.SIG_IGN]
        if threading.current_thread() is not threading.main_thread():
            stops = []
        self._previous = {stop: signal.signal(stop, self._stop) for stop in stops}
        self._previous_unraisable = sys.unraisablehook
        if stops:
            sys.unraisablehook = self._unraisable

    def _stop(self, signum: int, frame: object) -> None:
        self.cancel.set()
        if not self.exporting:
            raise KeyboardInterrupt

    def _unraisable(self, unraisable: sys.UnraisableHookArgs) -> None:
        """Print what Python drops, but a stop's KeyboardInterrupt: ``cancel`` keeps it for ``start_exporting``.

        Python drops an exception raised in a callback of its own (a weak reference's, the garbage
        collector's) and prints its traceback: the noise estimate went on to a whole export.
        """
        if not isinstance(unraisable.exc_value, KeyboardInterrupt):
            self._previous_unraisable(unraisable)

    def start_exporting(self) -> None:
        """From now on a signal stops the export at its next frame; one that came before stops the run now."""
        self.exporting = True
        if self.cancel.is_set():
            raise KeyboardInterrupt

    def restore(self) -> None:
        """Put back the signal handlers that were there before this ``Stop``."""
        for stop, handler in self._previous.items():
            signal.signal(stop, handler)
        sys.unraisablehook = self._previous_unraisable


def open_source(args: argparse.Namespace) -> None:
    """Check the devices and backend ``args`` ask for, and open INPUT as ``args.source`` (the caller closes it).

    Options that cannot go together, a GPU asked for and unavailable, a CPU run that cannot fit an
    address-space limit, a window option out of range, then an INPUT that does not exist, then an
    OUTPUT that could not be written (``check_output``: a codec this machine cannot encode, a name
    that cannot hold it, one that exists without --overwrite) are said before any reading.
    """
    show_ffmpeg_messages(verbose=args.verbose)
    if args.quiet:
        silence_compile_notice()  # the Denoisers' too
    if args.devices is not None:  # before any reading: a combination refused, or no GPU
        asked = args.luma_chroma is not UNSET and args.luma_chroma is not None
        refused = refusal(luma_chroma=asked, guide=args.guide, devices=True, backend=args.backend, command_line=True)
        if refused is not None:
            raise ValueError(refused)
        args.devices = resolve_devices(args.devices)
    # A GPU asked for and unavailable, or a CPU run that cannot fit an address-space limit (numba
    # and its threads): said before the noise estimate, whose FFmpeg threads take room.
    on_gpu = resolve_backend(args.backend) == "gpu"
    if not on_gpu:
        require_cpu_room(0, compiles=cpu_filter_compiles)
    window_params(args, None)  # a radius or an h out of range, as given: before any file is looked at
    missing = Path(args.input)
    if args.input != PIPE and not is_image_sequence(missing) and not missing.exists():
        raise VideoError(f"{args.input}: no such file")  # named before anything about OUTPUT
    if missing.is_dir():
        raise VideoError(
            f"{args.input}: is a folder, not a video file: give one of its files, or denoise them all with "
            f"'nlmeans-studio batch {args.input} --out DIR'"
        )
    check_output(args, exists=False)  # checked again, an OUTPUT that exists too, with the source's streams
    # One reader, opened once, for the file's facts, the noise, SURE's sample and the export (a
    # pipe is read once, by all); the export's frames decoded on NVDEC on the GPU.
    if args.input == PIPE and args.frame_rate is not None:
        raise ValueError("--frame-rate is an image sequence's: a y4m stream has its own")
    args.source = (
        PipeReader()
        if args.input == PIPE
        else VideoReader(args.input, hardware_decoding=on_gpu, frame_rate=args.frame_rate)
    )
    if isinstance(args.source, VideoReader):  # a range past the clip's end: said before an OUTPUT that exists
        _check_range(args)
    choose_codec(args, args.source.info)


def choose_codec(args: argparse.Namespace, info: VideoInfo | None) -> None:
    """Set ``args.codec`` where none was asked for (``default_codec``).

    Where it keeps a master's kind, ``args.codec_kept`` says so, for the run's last line.
    """
    if args.codec is not None:
        return
    args.codec = default_codec(Path(args.output), info, rgb=args.rgb, preset=args.preset)
    if info is None or args.rgb or args.codec == DELIVERY_CODEC:
        return
    if info.codec in (*MASTER_SOURCES, *LOSSLESS_SOURCES):
        args.codec_kept = f"{args.codec}, the source's kind ({info.codec}); --codec h264 for a smaller file"


def _check_range(args: argparse.Namespace) -> None:
    """Refuse --start past the end of ``args.source`` (a file); say where --duration runs past it."""
    reader = args.source
    first, last = frame_range(reader, args.start, args.duration)
    length = reader.start_time(len(reader) - 1) + float(1 / reader.info.frame_rate)  # from frame 0, as --start
    if args.duration is not None and args.start + args.duration > length + 1e-6 and not args.quiet:
        print(
            f"warning: {args.input}: the clip lasts {length:.3f} s: from {args.start:g} s there are "
            f"{length - args.start:.3f} s of the {args.duration:g} s asked for ({last - first} frames)",
            file=sys.stderr,
        )


def chosen_filter(args: argparse.Namespace) -> FilterChoice:
    """Return the filter ``args`` ask for on ``args.source`` (``open_source``), its noise estimated as they say.

    What was chosen, and what a person should know of the source, is said on stderr.
    """
    preset = None if args.filter_preset is None else load_preset(find_preset(args.filter_preset))
    return filter_asked(args, preset, source_info(args))


def export_denoised(
    args: argparse.Namespace,
    choice: FilterChoice,
    stop: Stop,
    *,
    frames: range | None = None,
    segment_of: range | None = None,
) -> ExportSummary:
    """Denoise ``args.source`` into ``args.output`` with ``choice``, its progress on stderr; return what was done.

    ``frames`` and ``segment_of`` as ``denoise_file`` takes them: a segment of a longer output,
    by frame number (``args.start`` and ``args.duration`` are then not used).
    """
    progress = None if args.quiet else ProgressBar()
    part = frames is not None
    try:
        if resolve_backend(args.backend) != "gpu":
            announce_compile(cpu_filter_compiles)  # once: where SURE's Denoiser compiled, it said so
        stop.start_exporting()
        summary = denoise_file(
            args.source,
            args.output,
            choice.params,
            **output_options(args),
            start=0.0 if part else args.start,
            duration=None if part else args.duration,
            frames=frames,
            segment_of=segment_of,
            progress=progress,
            cancel=stop.cancel,
            luma_chroma=choice.luma_chroma,
            guide=args.guide,
            devices=args.devices,
        )
    finally:
        if progress is not None:
            progress.close()
    if not args.quiet:
        print(
            f"denoised {summary.frames} frames in {summary.seconds:.1f} s ({summary.fps:.1f} fps) on the "
            f"{summary.backend} ({summary.device_name}), decoded on the {summary.decoder} -> {args.output}"
            + (f" ({kept})" if (kept := getattr(args, "codec_kept", "")) else ""),
            file=sys.stderr,
        )
    if summary.damage_warning:
        print(f"warning: {args.input}: {summary.damage_warning}", file=sys.stderr)
    return summary


def run_denoise(args: argparse.Namespace, stop: Stop) -> ExportSummary:
    """Run ``denoise`` on ``args`` and return what the export did.

    ``args`` are the parser's, or a batch's for one of its files; errors propagate to the caller's
    handler.
    """
    if is_still_image(Path(args.input)) and is_still_image(Path(args.output)):
        show_ffmpeg_messages(verbose=args.verbose)
        return run_still(args)
    try:
        open_source(args)
        return export_denoised(args, chosen_filter(args), stop)
    except KeyboardInterrupt:
        raise ExportCancelledError(f"cancelled; {args.output} was not written") from None
    finally:
        if isinstance(getattr(args, "source", None), VideoReader):
            args.source.close()
