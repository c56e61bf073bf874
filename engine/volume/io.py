"""Volume files: NIfTI (.nii, .nii.gz, through nibabel), TIFF stacks (.tif, .tiff, through tifffile) and NumPy (.npy).

Read into (Z, Y, X) or (Z, Y, X, C) arrays, written back keeping the source's grid (NIfTI header and
affine, TIFF voxel size) and its data type class.

nibabel and tifffile are imported when a file of theirs is read or written, so the engine
imports without them. NIfTI stores voxels (i, j, k) = (x, y, z): arrays are transposed to
(z, y, x) on reading and back on writing; channels are its vector-valued voxels (x, y, z, 1, c).
Writes go to a hidden file renamed into place when complete (engine/media/staged_output.py), as
``denoise`` writes videos.
"""

from __future__ import annotations

import contextlib
import gzip
import logging
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..media.image_sequence import is_image_sequence
from ..media.staged_output import dangling_link, folder_problem
from .noise import automatic_channel_mode

FORMAT_NAMES = {"nifti": "NIfTI", "tiff": "TIFF", "npy": "NumPy .npy"}
SUFFIXES = {".nii": "nifti", ".nii.gz": "nifti", ".tif": "tiff", ".tiff": "tiff", ".npy": "npy"}
VOLUME_SUFFIXES = tuple(SUFFIXES)  # the file names read_volume and write_volume take: ".nii.gz", ...
NIFTI_UNITS = {"meter": 1.0, "mm": 1e-3, "micron": 1e-6}  # the lengths a NIfTI header codes
# What Fiji shows an ImageJ stack with and notes of it, kept for the stack written back: composite
# or gray, channel colours and display ranges, slice labels, the acquisition's Info and Properties.
IMAGEJ_DISPLAY = ("mode", "min", "max", "Ranges", "LUTs", "Labels", "Info", "Properties")
# TIFF compressions that keep every value: a stack so compressed is written back so (JPEG's is not)
LOSSLESS_TIFF = ("LZW", "ADOBE_DEFLATE", "DEFLATE", "ZSTD", "PACKBITS", "LZMA")


def names_a_volume(path: str | Path) -> bool:
    """Return whether ``path`` names a volume file, not a video.

    Parameters
    ----------
    path : str or Path
        A file name.

    Returns
    -------
    bool
        True for a suffix of VOLUME_SUFFIXES (any case) without a frame number's place:
        ``scans/%06d.tif`` is an image sequence, which the video commands read.
    """
    return str(path).lower().endswith(VOLUME_SUFFIXES) and not is_image_sequence(Path(path))


def volume_format(path: str | Path) -> str:
    """Return "nifti", "tiff" or "npy" from the file name, or ValueError naming the known suffixes.

    Parameters
    ----------
    path : str or Path
        A file name; its suffix (.nii, .nii.gz, .tif, .tiff, .npy, any case) decides.

    Returns
    -------
    {"nifti", "tiff", "npy"}

    Raises
    ------
    ValueError
        Another suffix; the message names the known ones.
    """
    name = Path(path).name.lower()
    for suffix, kind in sorted(SUFFIXES.items(), key=lambda item: -len(item[0])):
        if name.endswith(suffix):
            return kind
    raise ValueError(f"{path}: not a volume file; use one of {', '.join(SUFFIXES)}")


def check_volume_input(path: str | Path) -> str:
    """Refuse, before any work, an input that is not a volume file or does not exist; its format otherwise.

    Parameters
    ----------
    path : str or Path
        The input volume file.

    Returns
    -------
    {"nifti", "tiff", "npy"}
        ``volume_format(path)``.

    Raises
    ------
    ValueError
        An unknown suffix.
    FileNotFoundError
        ``path`` is not a file.
    """
    kind = volume_format(path)
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: no such file")
    return kind


def check_volume_output(path: str | Path, source: str | Path | None = None, *, overwrite: bool = False) -> str:
    """Refuse, before any work, an output the run could not write; its format otherwise.

    Parameters
    ----------
    path : str or Path
        The output volume file.
    source : str or Path, optional
        The input, which the output must not be.
    overwrite : bool
        Whether an existing ``path`` may be replaced.

    Returns
    -------
    {"nifti", "tiff", "npy"}
        ``volume_format(path)``.

    Raises
    ------
    ValueError
        An unknown suffix, the input itself, something that is not a regular file, or a folder
        that does not exist or cannot be written.
    FileExistsError
        ``path`` exists and ``overwrite`` is False.
    """
    path = Path(path)
    kind = volume_format(path)
    if source is not None and path.resolve() == Path(source).resolve():
        raise ValueError(f"{path}: the output must not be the input")
    if path.exists() and not path.is_file():
        raise ValueError(f"{path}: is not a regular file; the output must be a file")
    if (link := dangling_link(path)) and not overwrite:
        raise FileExistsError(f"{path} {link}; use --overwrite (overwrite=True from Python) to replace it")
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; use --overwrite (overwrite=True from Python) to replace it")
    problem = folder_problem(path)
    if problem is not None:
        raise ValueError(f"{path}: {problem}")
    return kind


@dataclass
class VolumeFile:
    """A volume as read.

    ``data`` (Z, Y, X) or (Z, Y, X, C) in its stored type, ``spacing`` (z, y, x) voxel size, and
    what writing it back needs (``header``, ``affine``, TIFF metadata).

    ``read_volume`` makes it; the constructor takes the attributes below, in order.

    Attributes
    ----------
    data : numpy.ndarray
        The voxels, (Z, Y, X) or (Z, Y, X, C), in the file's data type.
    spacing : (float, float, float)
        Voxel size along (z, y, x), in the file's units (NIfTI: the header's, usually
        millimetres; TIFF: ImageJ's unit); 1 where the file says nothing (.npy).
    format : {"nifti", "tiff", "npy"}
        The kind of file it was read from.
    header : nibabel header or None
        The NIfTI header (a copy), kept when written back as NIfTI.
    affine : (4, 4) ndarray or None
        The NIfTI voxel-to-world matrix (a copy).
    extra : dict
        TIFF metadata: "imagej" and "ome" (whether the file was an ImageJ stack, an OME-TIFF),
        "unit" and "channels" (whether its channels were an axis of their own, C, as in ImageJ
        hyperstacks, OME-TIFF and NIfTI's vector-valued voxels: written back so). A NIfTI's:
        "unit", "channels" and "series" (a time series, its last axis time: ``read_volume``'s
        ``series``).
    """

    data: np.ndarray
    spacing: tuple[float, float, float] = (1.0, 1.0, 1.0)
    format: str = "npy"
    header: Any = None
    affine: np.ndarray | None = None
    extra: dict = field(default_factory=dict)

    def channel_mode(self, requested: str = "auto", h: float | list[float] | None = None) -> str:
        """How ``denoise-volume`` and the window filter the channels.

        ``requested``, or for "auto" "separately" where the file keeps its channels on an axis of
        their own (ImageJ hyperstacks and OME-TIFF, whose channels are mostly fluorescence channels
        imaging different structures; a NIfTI's vector voxels), else as ``denoise_volume``'s
        "auto" takes it for ``h`` (RGB samples, a 4D .npy: ``automatic_channel_mode``).
        """
        if requested != "auto":
            return requested
        if self.extra.get("series"):  # a series' volumes have one channel each
            return "together"
        if self.extra.get("channels") and self.data.ndim == 4:
            return "separately"
        return automatic_channel_mode(self.data, h)

    @property
    def directions(self) -> tuple[str, str, str] | None:
        """The anatomical direction each of the (z, y, x) indices grows towards, from a NIfTI's affine.

        One of "R" / "L", "A" / "P", "S" / "I" each, the nearest of the world's axes where the grid
        is oblique; None where the file does not say (no affine, or a NIfTI whose qform and sform
        codes are both 0: its affine is then the voxel size alone, no orientation).
        """
        if self.affine is None or self.header is None:
            return None
        if int(self.header["qform_code"]) == 0 and int(self.header["sform_code"]) == 0:
            return None
        codes = _import("nibabel").aff2axcodes(self.affine)
        return None if None in codes else tuple(codes[::-1])


class OneImageError(ValueError):
    """A volume file that holds one 2D image: a picture, which the video side reads where it is a TIFF.

    Parameters
    ----------
    message : str
        The file, its shape, and how to denoise the image.
    """


class VolumeRefusedError(ValueError):
    """A file read far enough to know it is refused.

    Not one volume (a NIfTI time series, an .npz archive), or a header that the file or the memory
    cannot hold; the message says it all.
    """


def _import(name: str) -> Any:
    try:
        return __import__(name)
    except ImportError as error:
        raise ImportError(f"{name} is needed for this volume file: pip install {name}") from error


def read_volume(path: str | Path, *, series: bool = False) -> VolumeFile:
    """Read a volume file (``volume_format`` says which kinds).

    Parameters
    ----------
    path : str or Path
        A .nii, .nii.gz, .tif, .tiff or .npy file; the suffix says which reader.
    series : bool
        Also take a NIfTI time series (X, Y, Z, T), read as (Z, Y, X, T) with ``extra["series"]``
        True (``denoise_volume(data, series_axis=3)`` filters it, ``write_volume`` writes it back
        as (X, Y, Z, T)); refused otherwise, as by callers that show one volume.

    Returns
    -------
    VolumeFile
        ``data`` (Z, Y, X) or (Z, Y, X, C) in its stored type, ``spacing`` (z, y, x), the voxel
        size in the file's units, and what writing it back needs (NIfTI header and affine,
        TIFF metadata).

    Raises
    ------
    OneImageError
        The file holds one 2D image (a ValueError).
    ValueError
        An unknown suffix, a NIfTI image that is not one volume (3D, or (X, Y, Z, 1) one time point,
        or (X, Y, Z, 1, C) vectors: channels) or, with ``series``, a series (X, Y, Z, T), or a file
        whose array is not 3D or 4D.
    OSError
        The file cannot be read (FileNotFoundError where it does not exist).
    ImportError
        nibabel (NIfTI) or tifffile (TIFF) is not installed.
    TypeError
        ``path`` is not a file name (None, a number).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file name (str or Path), got {type(path).__name__} {str(path)[:40]!r}")
    path = Path(path)
    kind = check_volume_input(path)
    try:
        volume = _read(path, kind, series)
    except (VolumeRefusedError, OneImageError, ImportError):
        raise
    except MemoryError as error:  # numpy's says the size; others say nothing
        raise MemoryError(
            f"{path}: the volume does not fit in the memory free now ({error or 'out of memory'})"
        ) from error
    except Exception as error:  # a corrupt file: each reader fails its own way (ValueError, IndexError, EOFError...)
        if isinstance(error, OSError) and not isinstance(error, gzip.BadGzipFile):
            raise  # the file itself (permissions, a disk error), not its content
        if isinstance(error, EOFError):  # gzip's "Compressed file ended before the end-of-stream marker"
            raise ValueError(
                f"{path}: the file is cut short (its compressed data ends early: a copy or download that did not "
                "finish); copy it again from its source"
            ) from error
        if "imagecodecs" in str(error):  # tifffile: "<COMPRESSION.LZW: 5> requires the 'imagecodecs' package"
            raise ValueError(
                f"{path}: its images are compressed with a codec that needs the imagecodecs package ({error}); "
                "install it (pip install imagecodecs) or save the stack uncompressed"
            ) from error
        raise ValueError(
            f"{path}: not a {FORMAT_NAMES[kind]} volume that can be read: damaged, cut short or of another kind "
            f"({type(error).__name__}: {error})"
        ) from error
    if volume.data.ndim == 2:  # one image: the video filter denoises it, as a clip of one frame
        raise _one_image(path, volume.data.shape, kind)
    if volume.data.ndim not in (3, 4):
        raise ValueError(f"{path}: an array of shape {volume.data.shape}; a volume is (Z, Y, X) or (Z, Y, X, C)")
    return volume


def _one_image(path: Path, shape: tuple[int, ...], kind: str) -> OneImageError:
    """Return the refusal of a file that holds one 2D image, with the command that denoises it."""
    stem = path.name.split(".")[0]
    command = f"nlmeans-studio denoise {stem}.tif {stem}-denoised.tif"  # `denoise` reads a TIFF, not the others
    how = command if kind == "tiff" else f"save it as a TIFF (tifffile.imwrite('{stem}.tif', image)), then {command}"
    return OneImageError(
        f"{path}: one 2D image of shape {shape}, not a volume (Z, Y, X) or (Z, Y, X, C); to denoise an image: {how}"
    )


def _read(path: Path, kind: str, series: bool = False) -> VolumeFile:
    """Return the file as its reader gives it, the readers' errors unchanged."""
    if kind == "nifti":
        nibabel = _import("nibabel")
        try:
            image = nibabel.load(path)
        except nibabel.filebasedimages.ImageFileError as error:
            raise ValueError(str(error)) from error
        shape = image.shape
        # (X, Y, Z, 1): one time point, the volume itself; (X, Y, Z, 1, C): C values in each voxel,
        # as NIfTI stores vectors (its 5th axis), the channels. The header keeps the file's shape.
        timed = series and len(shape) == 4 and shape[3] > 1  # (X, Y, Z, T)
        if len(shape) == 2:
            raise _one_image(path, shape[::-1], kind)
        if len(shape) != 3 and not (len(shape) in (4, 5) and shape[3] == 1) and not timed:
            series_way = (
                " or read_volume(path, series=True) and denoise_volume(..., series_axis=3)" if len(shape) == 4 else ""
            )
            raise VolumeRefusedError(
                f"{path}: a NIfTI volume of shape {shape}; the volume filter takes one 3D volume at a time: "
                f"denoise-volume filters a time series volume by volume{series_way}"
            )
        body = None if path.name.lower().endswith(".gz") else path.stat().st_size - image.dataobj.offset
        _check_declared(path, shape, image.header.get_data_dtype(), body)
        voxels = np.asarray(image.dataobj).reshape(shape if timed else shape[:3] + shape[4:])
        channels = voxels.ndim == 4 and not timed
        data = voxels.transpose(2, 1, 0, 3) if voxels.ndim == 4 else voxels.transpose(2, 1, 0)
        spacing = tuple(float(s) for s in image.header.get_zooms()[:3][::-1])
        unit = image.header.get_xyzt_units()[0]
        extra = {"unit": "µm" if unit == "micron" else unit if unit in NIFTI_UNITS else None, "channels": channels}
        extra["series"] = timed
        return VolumeFile(data, spacing, kind, image.header.copy(), image.affine.copy(), extra)
    if kind == "tiff":
        tifffile = _import("tifffile")
        with _library_quiet("tifffile"), tifffile.TiffFile(path) as tiff:
            series_axes = tiff.series[0].axes
            _check_whole(path, tiff)
            if series_axes == "YXS":  # an RGB picture, not a volume of 3 voxels' depth
                raise _one_image(path, tiff.series[0].shape, kind)
            data, channels = _zyx_channels_last(tiff.series[0].asarray(), series_axes, path)
            # Channels before the planes (OME-TIFF's CZYX), written back so.
            planes = [series_axes.index(axis) for axis in "ZQI" if axis in series_axes]
            first = channels and series_axes.index("C") < min(planes)
            imagej = tiff.imagej_metadata or {}
            page = tiff.pages[0]
            resolution = page.tags.get("XResolution"), page.tags.get("YResolution")
            spacing = [float(imagej.get("spacing", 1.0)), 1.0, 1.0]
            for axis, tag in zip((2, 1), resolution, strict=True):
                if tag is not None and tag.value[0]:
                    spacing[axis] = tag.value[1] / tag.value[0]
            unit = imagej.get("unit")
            names = None
            if tiff.is_ome:  # microscopes' files: the voxel size and the channels' names are in the OME-XML
                ome_spacing, unit, names = _ome_pixels(tiff.ome_metadata, spacing, unit)
                spacing = list(ome_spacing)
            elif not imagej and tiff.shaped_metadata:  # tifffile's own description, as written below
                spacing[0] = float(tiff.shaped_metadata[0].get("spacing", spacing[0]))
                unit = tiff.shaped_metadata[0].get("unit", unit)
        extra = {
            "imagej": bool(imagej),
            "imagej_display": {key: imagej[key] for key in IMAGEJ_DISPLAY if key in imagej},
            "ome": tiff.is_ome,
            "unit": unit,
            "channels": channels,
            "channels_first": first,
            "channel_names": names if channels and names and len(names) == data.shape[-1] else None,
            # kept for the TIFF written back: a lossless compression (as it is, with its predictor), BigTIFF
            "compression": page.compression.name if page.compression.name in LOSSLESS_TIFF else None,
            "predictor": page.predictor,
            "bigtiff": tiff.is_bigtiff,
        }
        return VolumeFile(data, tuple(spacing), kind, extra=extra)
    return VolumeFile(_load_npy(path), format=kind)


def _load_npy(path: Path) -> np.ndarray:
    """Return the array of a .npy file, its header checked against the file before any memory is taken.

    A header of 10^15 voxels asked numpy for petabytes. An .npz archive named .npy is refused
    (np.load goes by the content and returned the archive).
    """
    with open(path, "rb") as file:
        if file.read(4) == b"PK\x03\x04":
            raise VolumeRefusedError(
                f"{path}: a NumPy .npz archive (several arrays, zipped), named .npy; save the volume alone: "
                f"np.save('volume.npy', np.load('{path.name}')['NAME'])"
            )
        file.seek(0)
        version = np.lib.format.read_magic(file)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = read_header(file)
        if dtype.hasobject:  # pickled Python objects: their size is not the header's to say, nor are they numbers
            raise VolumeRefusedError(f"{path}: holds Python objects ({dtype}), not numbers; save an array of numbers")
        _check_declared(path, shape, dtype, path.stat().st_size - file.tell())
    return np.load(path, allow_pickle=False)


def _check_declared(path: Path, shape: tuple[int, ...], dtype: np.dtype, body: int | None) -> None:
    """Refuse a header whose array the file's ``body`` or this machine's memory cannot hold.

    ``body``: bytes after the header; None: unknown, compressed. Said before the reader asks for the
    memory (it failed with an empty MemoryError, or numpy's "Unable to allocate 3.55 PiB").
    """
    declared = math.prod(shape) * np.dtype(dtype).itemsize
    size = f"shape {tuple(shape)} of {np.dtype(dtype)}, {_bytes(declared)}"
    if body is not None and body < declared:
        raise VolumeRefusedError(
            f"{path}: its header declares an array of {size}, but the file holds {_bytes(body)} of data: "
            "it is truncated or its header is damaged; write the volume again"
        )
    memory = _memory()
    if memory is not None and declared > memory:
        raise VolumeRefusedError(
            f"{path}: its header declares an array of {size}, more than this machine's memory "
            f"({_bytes(memory)}); if the file is right, open it on a machine with more memory"
        )


def _memory() -> int | None:
    """Return this machine's physical memory in bytes, or None where the system does not say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def _bytes(count: int) -> str:
    """Return a byte count in words: "512 bytes", "3.2 MiB", "3.6 PiB"."""
    if count < 1024:
        return f"{count} bytes"
    exponent = min(int(math.log(count, 1024)), 6)
    return f"{count / 1024**exponent:.1f} {'KMGTPE'[exponent - 1]}iB"


@contextlib.contextmanager
def _library_quiet(name: str) -> Iterator[None]:
    """Hold back a library's logged warnings ("ImageJ series metadata invalid or corrupted file") while it reads.

    What is wrong with the file is said once, in this module's words.
    """
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _check_whole(path: Path, tiff: Any) -> None:
    """Refuse a stack holding fewer images than its header declares: ImageJ's "images", tifffile's "shape".

    tifffile reads a truncated one as its first image alone, which was then taken for one 2D image
    (and the user told to denoise it as an image).
    """
    page = tiff.pages[0]
    image = page.imagelength * page.imagewidth * page.samplesperpixel
    held = tiff.series[0].size // image
    imagej = int((tiff.imagej_metadata or {}).get("images", 0))
    shape = (tiff.shaped_metadata or ({},))[0].get("shape") if not imagej else None
    declared = imagej or (math.prod(shape) // image if shape else 0)
    if declared > held:
        header = "ImageJ header" if imagej else "description (tifffile's)"
        raise VolumeRefusedError(
            f"{path}: its {header} declares {declared} images, but the file holds {held} whole: it is "
            "truncated or damaged; write the volume again"
        )


def _ome_pixels(
    xml: str, spacing: list[float], unit: str | None
) -> tuple[tuple[float, ...], str | None, list[str] | None]:
    """(z, y, x) voxel size, its unit and the channels' names from OME-XML's first Pixels element.

    The size from PhysicalSizeZ, Y, X (``spacing`` and ``unit`` where it says nothing); the names
    from its Channel elements (None where one has none).
    """
    import xml.etree.ElementTree as ElementTree

    pixels = next((e for e in ElementTree.fromstring(xml).iter() if e.tag.endswith("}Pixels")), None)
    if pixels is None:
        return tuple(spacing), unit, None
    sizes = [float(pixels.get(f"PhysicalSize{axis}", spacing[k])) for k, axis in enumerate("ZYX")]
    names = [channel.get("Name") for channel in pixels if channel.tag.endswith("}Channel")]
    unit = pixels.get("PhysicalSizeXUnit", "µm" if "PhysicalSizeX" in pixels.attrib else unit)
    return tuple(sizes), unit, names if names and all(names) else None


def _zyx_channels_last(data: np.ndarray, axes: str, path: Path) -> tuple[np.ndarray, bool]:
    """Return a TIFF series' array with its channels moved last, and whether there were such channels.

    Channels: tifffile's axis "C", an ImageJ hyperstack's or an OME-TIFF's, next to a plane axis Z,
    Q or I. Samples ("S", RGB) are last already; a stack without a plane axis keeps its first axis
    as the planes. A series with several time points is refused (VolumeRefusedError).
    """
    sizes = dict(zip(axes, data.shape, strict=True))
    if sizes.get("T", 1) > 1 and not any(sizes.get(a, 1) > 1 for a in "ZQI"):  # a 2D time-lapse: a video
        raise VolumeRefusedError(
            f"{path}: a 2D time-lapse of {sizes['T']} frames ({axes}, shape {data.shape}), not a volume; the video "
            "filter denoises it with its frames before and after: from Python, nlmeans_studio.denoise(frames, "
            "time_axis=0) on its (T, Y, X) array, or save its frames as images (frame%04d.tif) for nlmeans-studio "
            "denoise"
        )
    if sizes.get("T", 1) > 1:
        raise VolumeRefusedError(
            f"{path}: a TIFF series of {sizes['T']} time points ({axes}, shape {data.shape}); the volume filter "
            "takes one 3D volume (split the time series into its volumes first)"
        )
    if sizes.get("C", 1) == 1 or not any(sizes.get(a, 1) > 1 for a in "ZQI"):
        return data, False
    data, axes = np.moveaxis(data, axes.index("C"), -1), axes.replace("C", "") + "C"
    kept = [size for axis, size in zip(axes, data.shape, strict=True) if size > 1 or axis in "YXC"]
    return data.reshape(kept), True
