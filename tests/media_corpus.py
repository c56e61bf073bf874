"""Real-world video files, written by PyAV's own encoders, whose frames say their own number.

Each frame carries its number as a row of large black and white blocks (bit 0 at the left) over
moving texture, so motion-compensated codecs make real P- and B-frames and lossy ones keep the
code readable: ``frame_number`` recognises a decoded frame from its pixels. ``CORPUS`` is the set
of files FFmpeg plays that the reader must read exactly (issue 16), from B-frames in MP4 to
MPEG-2 in a VOB; ``write_clip`` makes one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

BITS = 8  # frames up to 255
BLOCK = 16  # pixels per code block: survives 4:2:0 / 4:1:1 chroma, DCT blocks and strong quantisation
DARK, LIGHT = 24, 232


@dataclass(frozen=True)
class ClipSpec:
    """How to write one test clip: encoder, container and the settings that make it realistic."""

    name: str  # file name, its extension picks the container unless ``container`` is given
    encoder: str
    pixel_format: str = "yuv420p"
    size: tuple[int, int] = (128, 192)  # height, width
    rate: Fraction = Fraction(25)
    frames: int = 75
    gop: int = 12
    container: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    first_pts: int = 0  # in frames: a clip that starts later than 0
    times: tuple[int, ...] | None = None  # explicit timestamps in milliseconds (variable frame rate)
    audio: bool = False


X264 = "x264-params"
CORPUS: tuple[ClipSpec, ...] = (
    ClipSpec("h264-bframes.mp4", "libx264", options={X264: "keyint=24:min-keyint=24:bframes=3:b-pyramid=normal"}),
    ClipSpec(
        "h264-ntsc.mp4", "libx264", rate=Fraction(30000, 1001), options={X264: "keyint=30:min-keyint=30:bframes=3"}
    ),
    ClipSpec("h264-opengop.mp4", "libx264", options={X264: "keyint=20:min-keyint=20:bframes=3:open-gop=1"}),
    ClipSpec("h264-late-start.mp4", "libx264", first_pts=10, options={X264: "keyint=16:min-keyint=16:bframes=2"}),
    ClipSpec("h264.mkv", "libx264", options={X264: "keyint=24:min-keyint=24:bframes=3:open-gop=1"}),
    ClipSpec("h264.ts", "libx264", options={X264: "keyint=24:min-keyint=24:bframes=3"}),
    ClipSpec("h264-opengop.ts", "libx264", options={X264: "keyint=20:min-keyint=20:bframes=3:open-gop=1"}),
    ClipSpec("mpeg2.ts", "mpeg2video", gop=15, options={"bf": "2"}),
    ClipSpec("mpeg2.mpg", "mpeg2video", gop=15, options={"bf": "2"}, container="mpeg"),
    ClipSpec("mpeg2.vob", "mpeg2video", gop=15, options={"bf": "2"}, container="vob", audio=True),
    ClipSpec("hevc.mp4", "libx265", options={"x265-params": "keyint=24:min-keyint=24:open-gop=1:log-level=error"}),
    ClipSpec(
        "hevc10.mkv",
        "libx265",
        pixel_format="yuv420p10le",
        options={"x265-params": "keyint=30:min-keyint=30:bframes=4:log-level=error"},
    ),
    ClipSpec("vp9.webm", "libvpx-vp9", gop=30, options={"deadline": "realtime", "cpu-used": "8"}),
    ClipSpec("av1.mkv", "libsvtav1", gop=30, options={"preset": "12"}),
    ClipSpec("mpeg4-bframes.avi", "mpeg4", gop=12, options={"bf": "2"}),
    ClipSpec("mjpeg.avi", "mjpeg", pixel_format="yuvj420p"),
    ClipSpec("dv.avi", "dvvideo", pixel_format="yuv411p", size=(480, 720), rate=Fraction(30000, 1001), frames=40),
    ClipSpec("prores.mov", "prores_ks", pixel_format="yuv422p10le", frames=40),
    ClipSpec("ffv1.mkv", "ffv1", pixel_format="bgr0"),
    ClipSpec(
        "vfr.mkv",
        "libx264",
        frames=30,
        times=tuple(round(40 * n + 25 * np.sin(n)) + 25 for n in range(30)),
        options={X264: "keyint=10:bframes=2"},
    ),
)


def clip_image(number: int, height: int, width: int) -> np.ndarray:
    """Frame ``number`` as RGB uint8: its code in the top rows, moving texture below."""
    rows, cols = np.mgrid[0:height, 0:width].astype(np.float64)
    shift = 3.0 * number
    texture = 128 + 60 * np.sin((cols + shift) / 9.0) * np.cos((rows - 0.5 * shift) / 7.0)
    image = np.stack([texture, np.roll(texture, 5, axis=1), 255 - texture], axis=-1)
    for bit in range(BITS):
        value = LIGHT if number >> bit & 1 else DARK
        image[:BLOCK, bit * BLOCK : (bit + 1) * BLOCK] = value
    return np.clip(image, 0, 255).astype(np.uint8)


def frame_number(frame: np.ndarray) -> int:
    """The number a decoded (H, W, 3) frame of any dtype carries in its code blocks."""
    scale = {np.dtype(np.uint16): 65535, np.dtype(np.float32): 1}.get(frame.dtype, 255)
    centre = slice(BLOCK // 4, BLOCK * 3 // 4)
    levels = [
        frame[centre, bit * BLOCK + BLOCK // 4 : (bit + 1) * BLOCK - BLOCK // 4].mean() / scale for bit in range(BITS)
    ]
    return sum(1 << bit for bit, level in enumerate(levels) if level > 0.5)


def write_clip(folder: Path, spec: ClipSpec) -> Path:
    """Write ``spec``'s clip (frames numbered 0, 1, ...) into ``folder``; returns its path."""
    path = folder / spec.name
    height, width = spec.size
    with av.open(str(path), "w", format=spec.container) as container:
        stream = container.add_stream(spec.encoder, rate=spec.rate)
        stream.width, stream.height, stream.pix_fmt = width, height, spec.pixel_format
        stream.codec_context.gop_size = spec.gop
        stream.options = dict(spec.options)
        time_base = Fraction(1, 1000) if spec.times else 1 / spec.rate
        stream.codec_context.time_base = time_base
        audio = (
            container.add_stream("mp2" if spec.container in ("vob", "mpeg") else "aac", rate=48000)
            if spec.audio
            else None
        )
        for number in range(spec.frames):
            frame = av.VideoFrame.from_ndarray(clip_image(number, height, width), format="rgb24")
            frame.pts = spec.times[number] if spec.times else number + spec.first_pts
            frame.time_base = time_base
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
        if audio is not None:
            _write_tone(container, audio, seconds=float(spec.frames / spec.rate))
    return path


def _write_tone(container: av.container.OutputContainer, stream: av.AudioStream, seconds: float) -> None:
    """A 440 Hz tone of ``seconds``, in the encoder's frame size."""
    rate, size = stream.codec_context.sample_rate, stream.codec_context.frame_size or 1024
    samples = (np.sin(2 * np.pi * 440 * np.arange(int(rate * seconds)) / rate) * 0.3).astype(np.float32)
    layout = stream.codec_context.layout.name
    channels = stream.codec_context.layout.nb_channels
    audio_format = stream.codec_context.format.name
    for start in range(0, len(samples) - size + 1, size):
        block = np.repeat(samples[None, start : start + size], channels, axis=0)
        if not audio_format.endswith("p"):
            block = block.T.reshape(1, -1)
        frame = av.AudioFrame.from_ndarray(
            block.astype(np.int16) if audio_format.startswith("s16") else block, format=audio_format, layout=layout
        )
        frame.sample_rate, frame.pts = rate, start
        container.mux(stream.encode(frame))
    container.mux(stream.encode(None))


def plain_pyav_numbers(path: Path) -> list[int]:
    """The frame numbers plain PyAV's sequential decode presents, in order: the definition of
    frame n and of the frame count."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return [frame_number(frame.to_ndarray(format="rgb24")) for frame in container.decode(stream)]
