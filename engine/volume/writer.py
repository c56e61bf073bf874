"""Writing a volume file (``write_volume``).

The source's grid (NIfTI header and affine, TIFF voxel size) and data type class kept, to a hidden
file renamed into place when complete (engine/media/staged_output.py), as ``denoise`` writes videos.
Reading is in ``io``.
"""

from __future__ import annotations

import errno
import gzip
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from ..media.staged_output import OutputBusyError, StagedOutput
from ..shared_params import check_choice
from .checks import SPATIAL_ORDERS, x_and_z_swapped
from .io import NIFTI_UNITS, VolumeFile, _bytes, _import, check_volume_output, volume_format

OME_SUFFIXES = (".ome.tif", ".ome.tiff")  # TIFF names that ask for an OME-TIFF
# The float types a format stores (.npy: every one); a float source of another is written as float32.
FLOAT_TYPES = {"nifti": (np.float32, np.float64), "tiff": (np.float16, np.float32, np.float64)}
# Length units as files name them (ImageJ "micron", OME "µm", NIfTI's codes as nibabel names them), in metres.
METRES = {
    "m": 1.0,
    "meter": 1.0,
    "cm": 1e-2,
    "mm": 1e-3,
    "µm": 1e-6,
    "\\u00B5m": 1e-6,
    "um": 1e-6,
    "micron": 1e-6,
    "nm": 1e-9,
}
OME_UNITS = {1.0: "m", 1e-2: "cm", 1e-3: "mm", 1e-6: "µm", 1e-9: "nm"}  # OME-XML's symbols, by length
IMAGEJ_TYPES = (np.uint8, np.uint16, np.float32)  # the data types an ImageJ stack holds


def lost_in(path: str | Path, like: VolumeFile) -> str:
    """Return what of ``like``'s grid a file at ``path`` cannot keep, for a note ("" where nothing)."""
    kind = volume_format(path)
    if kind == "npy" and like.format != "npy":
        return "a .npy file keeps no voxel size" + (" nor the NIfTI affine" if like.format == "nifti" else "")
    if kind == "tiff" and like.format == "nifti":
        return "a TIFF keeps the voxel size but not the NIfTI affine (orientation and origin): write .nii.gz to keep it"
    unit = like.extra.get("unit")
    if kind == "nifti" and like.format != "nifti" and unit and unit not in METRES:
        return f"a NIfTI has no code for the unit {unit!r}: the voxel size is written without a unit"
    return ""


def stored_type(filtered: np.ndarray, dtype: np.dtype, kind: str) -> np.ndarray:
    """Return ``filtered`` (float32) in the source's data type ``dtype`` as a ``kind`` file holds it.

    Integers rounded and clipped to its range, floating point in ``dtype`` where ``kind`` stores it
    (float64 stays float64), else float32.
    """
    dtype = np.dtype(dtype)
    if dtype.kind in "iub":
        limits = np.iinfo(dtype) if dtype.kind != "b" else np.iinfo(np.uint8)
        return np.clip(np.rint(filtered), limits.min, limits.max).astype(dtype)
    if dtype.kind == "f" and (kind == "npy" or dtype in FLOAT_TYPES[kind]):
        return filtered.astype(dtype, copy=False)
    return filtered.astype(np.float32, copy=False)


def _source_type(like: VolumeFile) -> np.dtype:
    """Return the data type ``like``'s file stored.

    A NIfTI's own, where nibabel scaled its integers to float64 (scl_slope / scl_inter) float32, as
    values with a scaling come back.
    """
    if like.format == "nifti" and like.header is not None and like.data.dtype.kind == "f":
        stored = like.header.get_data_dtype()
        return stored if stored.kind == "f" else np.dtype(np.float32)
    return like.data.dtype


def write_volume(
    path: str | Path, data: np.ndarray, like: VolumeFile, *, overwrite: bool = False, axes: str = "zyx"
) -> None:
    """Write ``data`` (float32, the shape of ``like.data``) to ``path`` in ``like``'s data type class and grid.

    The file is written under a hidden name beside ``path`` and renamed into place when
    complete; without ``overwrite`` an existing ``path`` is refused (FileExistsError).

    Parameters
    ----------
    path : str or Path
        The output; its suffix (.nii, .nii.gz, .tif, .tiff, .npy) chooses the format, which may
        differ from ``like``'s.
    data : numpy.ndarray
        The filtered volume (``denoise_volume``'s float32), in the source's units. Stored in
        the source's data type: integers rounded and clipped to its range, floating point in
        its float type where the output format holds it (.npy every one, NIfTI float32 and
        float64, TIFF float16 to float64), else float32; a NIfTI with a scaling as float32.
    like : VolumeFile
        The source as ``read_volume`` read it: its data type class and voxel size are kept, its
        header and affine where a NIfTI is written as NIfTI, its ImageJ metadata in TIFF.
    overwrite : bool
        Replace an existing ``path``.
    axes : {"zyx", "xyz"}
        The order of ``data``'s three spatial axes: "xyz" for nibabel's ``get_fdata()`` order (as
        ``denoise_volume(..., axes="xyz")`` gives it back).

    Raises
    ------
    FileExistsError
        ``path`` exists and ``overwrite`` is False.
    ValueError
        ``data`` not of ``like.data``'s shape in ``axes``' order (a volume in the other order is
        named); an unknown suffix; not a regular file; a folder missing or read-only.
    OSError
        The file cannot be written (a full disk); the message names ``path``.
    ImportError
        nibabel (NIfTI) or tifffile (TIFF) is not installed.
    """
    path = Path(path)
    data = _in_zyx_order(np.asarray(data), like, axes)
    kind = check_volume_output(path, overwrite=overwrite)
    values = stored_type(data, _source_type(like), kind)
    staged = None
    try:
        staged = StagedOutput(path, sequence=False, overwrite=overwrite)
        with open(staged.staged, "wb") as file:
            if kind == "nifti":
                file.write(_nifti_bytes(values, like, compressed=path.name.lower().endswith(".gz")))
            elif kind == "tiff":
                _write_tiff(file, values, like, ome=path.name.lower().endswith(OME_SUFFIXES))
            else:
                np.save(file, values, allow_pickle=False)
        staged.publish()
    except BaseException as error:
        if staged is not None:
            staged.discard()
        if isinstance(error, OSError) and not isinstance(error, (FileExistsError, OutputBusyError)):
            # A full disk, say: named by the output, not by the hidden file it was written as.
            raise OSError(_write_failure(path, error, values.nbytes)) from error
        raise


def _in_zyx_order(data: np.ndarray, like: VolumeFile, axes: str) -> np.ndarray:
    """Return ``data`` (its spatial axes in ``axes``' order) in (z, y, x) order, as ``like.data`` holds it.

    ValueError where its shape is not ``like.data``'s: written with that header, its voxels would
    land scrambled. One in the other order is named.
    """
    swap = x_and_z_swapped(data.ndim, 3 if data.ndim == 4 else None)  # channels or time: last
    in_zyx = data.transpose(swap) if check_choice("axes", axes, SPATIAL_ORDERS) == "xyz" else data
    if in_zyx.shape == like.data.shape:
        return in_zyx
    hint = ""
    if in_zyx.transpose(swap).shape == like.data.shape:
        other = "xyz" if axes == "zyx" else "zyx"
        hint = f"; in ({', '.join(other)}) order it has that shape: pass axes={other!r}"
    raise ValueError(
        f"data of shape {data.shape} ({', '.join(axes)}) is not the source volume's shape (z, y, x) "
        f"{like.data.shape}{hint}"
    )


def _write_failure(path: Path, error: OSError, needed: int) -> str:
    """Why writing ``needed`` bytes to ``path`` failed, in words a person can act on.

    Numpy's writer loses the system's reason ("44800 requested and 16352 written", no errno): a
    short write where the folder has less free space than the volume is a full disk too.
    """
    free = shutil.disk_usage(path.parent).free
    if error.errno in (errno.ENOSPC, errno.EDQUOT) or (error.errno is None and free < needed):
        return (
            f"{path}: the disk is full: the volume needs {_bytes(needed)} and {_bytes(free)} are free there; "
            "free some space or write it to another disk"
        )
    if error.errno == errno.EFBIG or error.errno is None:
        return (
            f"{path}: the system refused to make the file {_bytes(needed)} long (a file size limit: ulimit -f, "
            "or the file system's largest file); raise the limit or write it to another disk"
        )
    return f"{path}: writing failed: {error.strerror or error}"


def _nifti_bytes(values: np.ndarray, like: VolumeFile, *, compressed: bool) -> bytes:
    """Return the NIfTI file of ``values``.

    A time series (``like.extra["series"]``) as (X, Y, Z, T); channels as NIfTI stores
    vector-valued voxels, (X, Y, Z, 1, C) with the intent "vector" (a NIfTI source's own intent
    kept), not as the time axis; in a NIfTI source's shape ((X, Y, Z, 1) stays so).
    """
    nibabel = _import("nibabel")
    if values.ndim == 3:
        voxels = values.transpose(2, 1, 0)
    elif like.extra.get("series"):  # (Z, Y, X, T) back to (X, Y, Z, T)
        voxels = values.transpose(2, 1, 0, 3)
    else:
        voxels = values.transpose(2, 1, 0, 3)[:, :, :, np.newaxis]
    if like.header is not None and like.format == "nifti":
        header = like.header.copy()
        header.set_data_dtype(values.dtype)
        kind = nibabel.Nifti2Image if isinstance(header, nibabel.Nifti2Header) else nibabel.Nifti1Image  # as read
        image = kind(voxels.reshape(header.get_data_shape()), like.affine, header)
    else:
        unit, scale = _nifti_unit(like.extra.get("unit"))
        image = nibabel.Nifti1Image(voxels, np.diag([*(size * scale for size in like.spacing[::-1]), 1.0]))
        if unit:
            image.header.set_xyzt_units(xyz=unit)
        if values.ndim == 4:
            image.header.set_intent("vector")
    image.header.set_slope_inter(1.0, 0.0)  # the values are written as they are
    raw = image.to_bytes()
    return gzip.compress(raw, mtime=0) if compressed else raw


def _nifti_unit(unit: str | None) -> tuple[str | None, float]:
    """Return the NIfTI length code for a file's ``unit`` (nibabel's name) and the factor to it.

    The factor converts voxel sizes to it: the unit's own where NIfTI codes it, else mm from
    centimetres and µm from nanometres; (None, 1) for an unknown unit.
    """
    if unit not in METRES:
        return None, 1.0
    metres = METRES[unit]
    code = next((name for name, length in NIFTI_UNITS.items() if length == metres), None)
    if code is None:
        code = "mm" if metres > NIFTI_UNITS["mm"] else "micron"
    return code, metres / NIFTI_UNITS[code]


def _write_tiff(file: Any, values: np.ndarray, like: VolumeFile, *, ome: bool = False) -> None:
    """Write an OME-TIFF, an ImageJ stack or a plain TIFF, as the source and the name ask.

    An OME-TIFF where asked (``ome``: the name ends in .ome.tif) or the source was one, an ImageJ
    stack where the source was one or has a length unit (a NIfTI's: Fiji then reads the voxel size)
    and ImageJ takes the data type and the samples, an OME-TIFF again where there is a unit ImageJ
    cannot carry with the data (int16 MRI: Fiji reads OME's voxel size through Bio-Formats), else a
    plain TIFF with tifffile's description (no absolute unit in its resolution tags; the axes where
    there are channels, which it would otherwise read as planes); each with the voxel size, samples
    in each pixel and channels before or after the planes as the source had them.
    """
    tifffile = _import("tifffile")
    spacing_z, spacing_y, spacing_x = like.spacing
    channels = values.ndim == 4 and like.extra.get("channels", False)  # an axis of their own, not RGB samples
    samples = values.ndim == 4 and not channels
    unit = like.extra.get("unit")
    # Samples in an ImageJ stack: 8-bit RGB, or 4 (tifffile refuses 2, and RGB of 16 bits)
    rgb = samples and values.shape[3] == 3
    imagej_samples = not samples or values.shape[3] == 4 or (rgb and values.dtype == np.uint8)
    imagej = values.dtype in IMAGEJ_TYPES and imagej_samples
    ome = ome or like.extra.get("ome") or (unit is not None and not imagej)
    first = channels and ome and like.extra.get("channels_first", False)
    axes = ("CZYX" if first else "ZCYX") if channels else "ZYXS" if samples else "ZYX"
    resolution = (1.0 / spacing_x, 1.0 / spacing_y)  # pixels a unit
    if ome:
        sizes = {"PhysicalSizeZ": spacing_z, "PhysicalSizeY": spacing_y, "PhysicalSizeX": spacing_x}
        symbol = OME_UNITS.get(METRES.get(unit), unit)  # "um", ImageJ's and NIfTI's "micron": "µm"
        units = {f"PhysicalSize{axis}Unit": symbol for axis in "ZYX"} if unit else {}
        names = like.extra.get("channel_names")
        named = {"Channel": {"Name": list(names)}} if channels and names and len(names) == values.shape[3] else {}
        options = {"ome": True, "metadata": {"axes": axes, **sizes, **units, **named}}
        # The TIFF tags agree with the OME-XML: pixels a centimetre where the unit is a length (a
        # reader of the tags alone took tifffile's default inch: 2540 µm for 0.1 µm), else no unit.
        if unit in METRES:
            resolution = (0.01 / (spacing_x * METRES[unit]), 0.01 / (spacing_y * METRES[unit]))
        options["resolutionunit"] = "CENTIMETER" if unit in METRES else "NONE"
    elif (like.extra.get("imagej") or unit) and imagej:
        display = like.extra.get("imagej_display", {})  # Fiji's composite, colours, ranges, labels and notes
        metadata = {"spacing": spacing_z, "axes": axes, **({"unit": unit} if unit else {}), **display}
        options = {"imagej": True, "metadata": metadata}
    else:
        metadata = {"spacing": spacing_z, **({"unit": unit} if unit else {}), **({"axes": axes} if channels else {})}
        options = {"metadata": metadata, "resolutionunit": "NONE"}
    tifffile.imwrite(
        file,
        values.transpose((3, 0, 1, 2) if first else (0, 3, 1, 2)) if channels else values,
        resolution=resolution,
        photometric="rgb" if rgb else "minisblack",
        planarconfig="contig" if samples else None,  # else tifffile takes (X, S) for the planes of 2 samples
        **_packed_as(like, tifffile, imagej="imagej" in options),
        **options,
    )


def _packed_as(like: VolumeFile, tifffile: Any, *, imagej: bool) -> dict[str, Any]:
    """Return how the TIFF written back is packed: as its TIFF source, compressed where losslessly.

    Its compression and predictor, and BigTIFF but for an ImageJ stack (which ImageJ reads from
    classic TIFF alone): a microscopist's 548 KB zlib stack came back as 790 KB uncompressed.
    """
    name = like.extra.get("compression")
    packed: dict[str, Any] = {"bigtiff": bool(like.extra.get("bigtiff")) and not imagej}
    if name:
        packed["compression"] = tifffile.COMPRESSION[name]
        packed["predictor"] = like.extra.get("predictor", 1) != 1
    return packed
