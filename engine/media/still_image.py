"""One image in, one image out: a picture read in its own depth and channels, written back so.

A single PNG, TIFF, JPEG or OpenEXR is a picture, not a one-frame video: its samples are read as
they are stored (gray stays gray, 16 bits stay 16 bits, EXR's linear floats stay float32 at any
range, an alpha channel is kept aside) and written back in the same layout, under a hidden name
renamed into place when complete (``StagedOutput``). Each encoder's one packet is the whole file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .ffmpeg import VideoError
from .image_sequence import is_image_sequence
from .staged_output import StagedOutput

STILL_ENCODERS = {".png": "png", ".tif": "tiff", ".tiff": "tiff", ".jpg": "mjpeg", ".jpeg": "mjpeg", ".exr": "exr"}
# Decoded layouts -> the array's (PyAV's to_ndarray format); any other 8-bit one (a JPEG's Y'CbCr,
# a palette) is read as rgb24, any other deeper one as rgb48le.
_READ_AS = {
    "gray": "gray",
    "gray16be": "gray16le",
    "gray16le": "gray16le",
    "rgb24": "rgb24",
    "rgb48be": "rgb48le",
    "rgb48le": "rgb48le",
    "rgba": "rgba",
    "rgba64be": "rgba64le",
    "rgba64le": "rgba64le",
    "grayf32le": "grayf32le",  # EXR (FFmpeg decodes its half floats to these too)
    "gbrpf32le": "gbrpf32le",
    "gbrapf32le": "gbrapf32le",
}
WITH_ALPHA = ("rgba", "rgba64le", "gbrapf32le")
# The array's layout -> the encoder's pixel format, per encoder (JPEG holds 8-bit Y'CbCr only).
_WRITE_AS = {
    "png": {"gray": "gray", "gray16le": "gray16be", "rgb24": "rgb24", "rgb48le": "rgb48be", "rgba": "rgba"},
    "tiff": {"gray": "gray", "gray16le": "gray16le", "rgb24": "rgb24", "rgb48le": "rgb48le", "rgba": "rgba"},
    "mjpeg": {"gray": "yuvj444p", "rgb24": "yuvj444p"},
    "exr": {"grayf32le": "grayf32le", "gbrpf32le": "gbrpf32le", "gbrapf32le": "gbrapf32le"},
}
_HOLDS = {"png": "8- and 16-bit", "tiff": "8- and 16-bit", "mjpeg": "8-bit", "exr": "float"}
_FORMAT_NAMES = {"png": ("PNG", ".png"), "tiff": ("TIFF", ".tif"), "mjpeg": ("JPEG", ".jpg"), "exr": ("EXR", ".exr")}
_WRITE_AS["png"]["rgba64le"] = "rgba64be"
_WRITE_AS["tiff"]["rgba64le"] = "rgba64le"
JPEG_QUALITY = 2  # FFmpeg's qscale for JPEG (2 best .. 31): a denoised picture keeps its detail


@dataclass(frozen=True)
class StillImage:
    """A picture's samples and how they were stored.

    Attributes
    ----------
    pixels : ndarray
        (H, W) gray or (H, W, 3) RGB: uint8 or uint16 at full scale, or float32 (EXR: linear, any
        range).
    alpha : ndarray or None
        (H, W) alpha of the same dtype, kept aside and written back unchanged.
    layout : str
        PyAV's name of the layout read ("gray", "gray16le", "rgb24", "rgb48le", "rgba", "rgba64le";
        "grayf32le", "gbrpf32le", "gbrapf32le" from EXR).
    """

    pixels: np.ndarray
    alpha: np.ndarray | None
    layout: str


def is_still_image(path: Path) -> bool:
    """Tell whether ``path`` names one image (a PNG, TIFF, JPEG or EXR), not a numbered sequence."""
    return Path(path).suffix.lower() in STILL_ENCODERS and not is_image_sequence(Path(path))


def read_still(path: Path) -> StillImage:
    """Read one image in its own depth and channels.

    Raises
    ------
    VideoError
        A file FFmpeg cannot decode as an image.
    """
    import av

    try:
        with av.open(str(path)) as container:
            frame = next(container.decode(video=0))
    except (av.FFmpegError, StopIteration, IndexError) as error:
        raise VideoError(f"{path}: not an image FFmpeg can read ({error or 'no picture in it'})") from None
    deep = any(component.bits > 8 for component in frame.format.components)
    layout = _READ_AS.get(frame.format.name, "rgb48le" if deep else "rgb24")
    samples = frame.to_ndarray(format=layout)
    if layout in WITH_ALPHA:
        return StillImage(np.ascontiguousarray(samples[..., :3]), np.ascontiguousarray(samples[..., 3]), layout)
    return StillImage(samples, None, layout)


def stored_format(path: Path, layout: str) -> str:
    """Return the pixel format ``path``'s encoder stores a picture of ``layout`` in.

    Raises
    ------
    VideoError
        A layout the format cannot hold (16-bit samples as JPEG, floats as PNG): the message names
        the formats that can.
    """
    encoder = STILL_ENCODERS[Path(path).suffix.lower()]
    pixel_format = _WRITE_AS[encoder].get(layout)
    if pixel_format is None:
        holders = [suffix for name, (_, suffix) in _FORMAT_NAMES.items() if layout in _WRITE_AS[name]]
        others = " or ".join([", ".join(holders[:-1]), holders[-1]] if len(holders) > 1 else holders)
        raise VideoError(
            f"{path}: {_FORMAT_NAMES[encoder][0]} holds {_HOLDS[encoder]} pictures only, and this one is {layout}: "
            f"write {others}"
        )
    return pixel_format


def write_still(path: Path, image: StillImage, *, overwrite: bool) -> None:
    """Write ``image`` as ``path``'s format in the layout it was read in, staged and renamed when complete.

    Raises
    ------
    VideoError
        A layout the format cannot hold (16-bit samples as JPEG, floats as PNG): the message names
        the formats that can.
    """
    import av

    encoder, pixel_format = STILL_ENCODERS[Path(path).suffix.lower()], stored_format(path, image.layout)
    samples = image.pixels if image.alpha is None else np.dstack([image.pixels, image.alpha])
    if image.layout == "gray" and encoder == "mjpeg":
        samples, layout = np.repeat(samples[..., None], 3, axis=-1), "rgb24"
    else:
        layout = image.layout
    frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(samples), format=layout).reformat(format=pixel_format)
    codec = av.CodecContext.create(encoder, "w")
    codec.width, codec.height, codec.pix_fmt = frame.width, frame.height, pixel_format
    if encoder == "mjpeg":
        codec.options = {"qmin": str(JPEG_QUALITY), "qmax": str(JPEG_QUALITY)}
    data = b"".join(bytes(packet) for packet in [*codec.encode(frame), *codec.encode(None)])
    staged = StagedOutput(Path(path), sequence=False, overwrite=overwrite)
    try:
        staged.staged.write_bytes(data)
        staged.publish()
    except BaseException:
        staged.discard()
        raise
