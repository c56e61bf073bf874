"""The fully 3D filter of DESIGN.md §6: ``denoise_volume`` and its parameters, validated once.

A slab of output planes [z0, z1) reads its padded planes, ``padded_volume(data, pad, (z0, z1))``:
(z1 - z0 + 2 pz, C, Y + 2 py, X + 2 px) float32 with p = A + B per axis, mirrored at the
volume's ends, in the layout both backends read (a plane's channels together, rows contiguous).
With its own halo of A + B planes on either side, each slab filters independently and their
union equals one pass (engine/volume/slabs.py). On the CPU slabs are padded as they are filtered,
never the whole volume at once: half the host memory, and faster
(docs/bench/2026-11-26-figures-from-docstrings.md). On the GPU only a slab's own planes and its
z halo cross the bus, unpadded, and the GPU mirrors them into the same padded slab
(engine/volume/filter_gpu.py's ``SlabPipeline``). Each device's slabs double in thickness
from THINNEST_SLAB planes to the middle of its share and halve again to its end, so that the
next slab's upload and the previous one's download overlap the GPU's filtering of the current
one and only the thin first upload and last download are waited for; the result does not change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..backend import check_devices, resolve_backend, resolve_devices
from ..memory import require_cpu_room, says_what_to_lower
from ..shared_params import check_choice, check_int
from .checks import (
    SPATIAL_ORDERS,
    all_finite,
    channels_note,
    check_channels,
    filled_outside,
    fourth_axis,
    require_finite,
    x_and_z_swapped,
)
from .mask import checked_mask, mask_boxes, with_halo
from .noise import automatic_channel_mode, suggested_strengths
from .params import CHANNEL_MODES, Radii, VolumeParams, channel_strengths
from .rician import NOISE_MODELS, checked_sigmas, estimated_sigmas, remove_bias
from .slabs import mirrored_indices

Progress = Callable[[int, int], None]  # (work done, work in all)
MASK_BOX_PLANES = 16  # planes of a box a mask is filtered in on the CPU (engine/volume/mask.py)
THINNEST_SLAB = 16  # planes: a GPU's first and last slab, whose upload and download it waits for
# float32 copies of a volume a CPU run adds at its peak, in one slab: the padded slab, the
# accumulators (C + 2), the result, the output (124 MB for a 15 MB volume measured), the file's.
CPU_VOLUME_COPIES = 10


@says_what_to_lower("crop the volume")
def checked_volume(volume: object, params: VolumeParams, finite: bool = True) -> np.ndarray:
    """``volume`` as a float32 (Z, Y, X, C) array, or ValueError saying what is wrong.

    Finite unless ``finite`` is False (the caller checks that later).
    """
    if hasattr(volume, "get_fdata"):  # a nibabel image: its voxels are an attribute, in (x, y, z) order
        raise ValueError(
            "volume is a nibabel image, not an array: pass image.get_fdata() with axes='xyz', or read_volume(path).data"
        )
    array = np.asarray(volume)
    if array.ndim not in (3, 4):
        raise ValueError(
            f"volume must be a (Z, Y, X) or (Z, Y, X, C) array, got {array.ndim} dimensions of shape {array.shape}"
        )
    if array.dtype.kind == "c":
        raise ValueError(
            f"volume must hold real numbers, got dtype {array.dtype}: take the magnitude first (numpy.abs(volume); "
            "fslcomplex -realabs for a file)"
        )
    if array.dtype.names is not None:  # RGB24 voxels, as a structured type
        raise ValueError(
            f"volume must hold real numbers, got voxels of fields {', '.join(array.dtype.names)}: give them as a "
            "channel axis, numpy.stack([volume[name] for name in volume.dtype.names], axis=-1)"
        )
    if array.dtype.kind not in "biuf":
        raise ValueError(f"volume must hold real numbers, got dtype {array.dtype}")
    check_channels(array.shape)
    data = array.astype(np.float32, copy=False)
    if data.ndim == 3:
        data = data[..., np.newaxis]
    if data.shape[3] == 0:
        raise ValueError(f"volume must have at least one channel, got shape {array.shape}")
    if data.size == 0:
        raise ValueError(f"volume of shape {array.shape} holds no voxels: give one of at least one voxel an axis")
    least = [a + b + 1 for a, b in zip(params.search_radius, params.patch_radius, strict=True)]
    short = [axis for axis, size, need in zip("zyx", data.shape[:3], least, strict=True) if size < need]
    if short:
        thin = [axis for axis, size in zip("zyx", data.shape[:3], strict=True) if size < 3]
        radii = ",".join("0" if axis in thin else str(r) for axis, r in zip("zyx", params.search_radius, strict=True))
        patch = ",".join("0" if axis in thin else str(r) for axis, r in zip("zyx", params.patch_radius, strict=True))
        slices = (
            f"; {' and '.join(thin)} {'holds' if len(thin) == 1 else 'hold'} 1 or 2 voxels: radii 0 there "
            f"(search radius {radii}, patch radius {patch}), and h given, as the noise estimate needs 3 voxels "
            "an axis"
            if thin
            else ""
        )
        raise ValueError(
            f"volume of shape {array.shape} is smaller than the filter's window: Z, Y, X = {data.shape[:3]}"
            f"{channels_note(array.shape)}, and each must be at least search_radius + patch_radius + 1 = "
            f"{tuple(least)}; lower the radii along {' and '.join(short)} (radii per axis are z, y, x){slices}"
        )
    if finite:
        require_finite(data)
    return data


def cpu_filter_compiles() -> bool:
    """Whether the volume's CPU filter's first call compiles it (it loads numba).

    numba's cache holds no build of its current code for this machine.
    """
    from . import filter_cpu

    return not filter_cpu.compiled()


def filter_compiles(backend: str = "auto") -> bool:
    """Whether the first volume filtered on ``backend`` waits for the CPU filter to compile.

    See ``engine.filter_compiles``.
    """
    return resolve_backend(backend) == "cpu" and cpu_filter_compiles()


def require_cpu_room_for(data: np.ndarray) -> None:
    """MemoryError, saying what to lower, where filtering ``data`` on the CPU would not fit.

    Would not fit this process's address-space limit (``memory.require_cpu_room``).
    """
    require_cpu_room(CPU_VOLUME_COPIES * 4 * data.size, compiles=cpu_filter_compiles, smaller="crop the volume")


def padded_volume(
    data: np.ndarray,
    pad: tuple[int, int, int],
    planes: tuple[int, int] | None = None,
    rows: tuple[int, int] | None = None,
    columns: tuple[int, int] | None = None,
) -> np.ndarray:
    """(Z, Y, X, C) float32 mirrored by ``pad`` (np.pad mode="reflect") into the (Zp, C, Yp, Xp) layout.

    With ``planes``, ``rows`` or ``columns`` (start, stop), only the padded voxels the output
    voxels in those ranges read: a slab's or a box's, its surroundings as they are inside the
    volume and mirrored only past its ends, without mirroring the whole volume.
    """
    padded = data
    for axis, (wanted, width) in enumerate(zip((planes, rows, columns), pad, strict=True)):
        start, stop = wanted if wanted is not None else (0, data.shape[axis])
        padded = np.take(padded, mirrored_indices(start - width, stop + width, data.shape[axis]), axis=axis)
    return np.ascontiguousarray(padded.transpose(0, 3, 1, 2))


def denoise_volume(
    volume: np.ndarray,
    *,
    h: float | Sequence[float] | None = None,
    patch_radius: Radii = 1,
    search_radius: Radii = 5,
    weighting: str = "exponential",
    center_weight: str = "one",
    backend: str = "auto",
    devices: Sequence[int] | str | None = None,
    slabs: int | None = None,
    progress: Progress | None = None,
    channels: str = "auto",
    out: np.ndarray | None = None,
    threads: int | None = None,
    mask: np.ndarray | None = None,
    channel_axis: int | None = None,
    series_axis: int | None = None,
    noise_model: str = "gaussian",
    sigma: float | Sequence[float] | None = None,
    axes: str = "zyx",
) -> np.ndarray:
    """Denoise a volume with the fully 3D Non-Local Means filter of DESIGN.md §6.

    Parameters
    ----------
    volume : (Z, Y, X) array_like, or 4D with ``channel_axis`` or ``series_axis``
        Real, finite voxels in their own units (MRI and microscopy have no fixed range). A 4D
        array's extra axis must be named: channels (at most CHANNELS_MAX, 16) or a series.
    h : float, one float a channel, or None
        Strength in the volume's intensity units: u = D / h^2 with D the patch's mean squared
        difference. For Gaussian noise of standard deviation sigma, exponential weights work
        near h = 1.1 sigma with 3^3 patches and 2.2 sigma with patches of one voxel
        (``suggest_volume_h``). One a channel where the channels are filtered separately (each
        from its own noise). None (the default): automatic, as ``denoise-volume`` without
        ``--h``: ``suggest_volume_h`` of ``estimate_volume_noise`` for these settings, each
        channel's own where they are filtered separately.
    patch_radius : int or (z, y, x) ints
        B in voxels, 0..8: patches are (2Bz+1)(2By+1)(2Bx+1). A triple serves anisotropic voxels.
    search_radius : int or (z, y, x) ints
        A in voxels, 0..16: the window is (2Az+1)(2Ay+1)(2Ax+1) offsets; the cost grows with it.
    weighting : {"exponential", "bisquare"}
        exp(-u) (Buades) or Tukey's bisquare (1 - u)^2.
    center_weight : {"one", "max"}
        Weight of the voxel itself: 1, or the largest weight of the other offsets.
    backend : {"auto", "cpu", "gpu"}
        numba on the CPU or the CUDA kernel (engine/backend.py chooses for "auto").
    devices : sequence of int, "all" or None
        GPUs to spread the volume over, in slabs along z (GPU backend only); None: the current one.
    slabs : int or None
        Split into at least this many slabs along z (each with a halo of Az + Bz planes); None:
        one on the CPU; on the GPU, each device's share in slabs doubling from THINNEST_SLAB
        planes and halving again (the next slab is uploaded while the GPU filters), more where a
        slab would not fit a GPU's memory.
        The result does not depend on it.
    progress : callable or None
        Called with (work done, work in all) as the filter goes: offset pairs on the CPU, planes
        on the GPU.
    channels : {"auto", "together", "separately"}
        Together, the patch distance sums the channels (DESIGN.md §6; channels of one structure,
        such as RGB); separately, each channel is filtered as a volume of its own (fluorescence
        channels, which image different structures: together, one channel's edges keep the
        other's noise). The same for one channel. "auto" (the default): separately with one h a
        channel, together with one h, and without h separately where the channels' noise differs
        by more than 1.5 times (``automatic_channel_mode``: one h from their pooled noise blurs
        the quieter channel), else together.
    out : numpy.ndarray or None
        Where to write the result: a C-contiguous float32 array of ``volume``'s shape, apart from
        it (volumes of one shape filtered in turn reuse one, and the GPU's copies out do not
        fault a new array's pages in: a little faster on two GPUs, no change on one;
        docs/bench/2026-11-25-thirteenth-session.md). None: a new array.
    threads : int or None
        CPU threads of numba's pool this call uses, 1..NUMBA_NUM_THREADS (one a CPU by default);
        None: all of them. The result does not depend on it; the GPU backend ignores it. Idle
        threads sleep between launches rather than spin (OMP_WAIT_POLICY=passive unless set),
        leaving the cores to other work (engine/cpu/threads.py).
    mask : (Z, Y, X) array_like of bool, 0/1 (or integers of 0 and one value, Fiji's 0/255), or None
        The voxels to denoise: those outside come back as they went in, bit for bit (as float32).
        Only boxes around the mask's voxels (with their halos of A + B voxels) are filtered, so
        a mask of a small part of the volume costs a small part of the time; the voxels inside
        are those of the whole volume's filter. None: every voxel. A series' volumes share it.
        NaN and infinite voxels outside it pass through as well; the filter's patches near its
        edge and the noise estimate (h None) read them as 0. Inside it they are refused.
    channel_axis : int or None
        The axis of a 4D ``volume`` that holds its channels (3 or -1 for (Z, Y, X, C)), filtered
        as ``channels`` says; the result keeps the axis where it was.
    series_axis : int or None
        The axis of a 4D ``volume`` along which it is a series of (Z, Y, X) volumes (time points:
        3 or -1 for (Z, Y, X, T), as nibabel's (X, Y, Z, T) transposed to (2, 1, 0, 3) gives it),
        each filtered on its own: with h None, each from its own noise estimate (the noise may
        drift over a run), else each with ``h``.
    noise_model : {"gaussian", "rician"}
        Rician for MRI magnitude images: the filter averages the squared magnitudes and returns
        sqrt(max(mean - 2 sigma^2, 0)), which removes the Rician floor (about 1.25 sigma in the
        background, where the Gaussian model leaves it), as DIPY's ``nlmeans(rician=True)``
        (engine/volume/rician.py). CPU only: "auto" runs it there.
    sigma : float, one float a channel, or None
        The Rician noise's sigma in the volume's units (the Gaussian noise of each of the
        magnitude's real and imaginary parts); None: ``estimate_volume_noise``'s, which leaves
        the background out. Used by the Rician model only.
    axes : {"zyx", "xyz"}
        The order of ``volume``'s three spatial axes (and ``mask``'s): "xyz" for nibabel's
        ``get_fdata()`` order. Radii triples are (z, y, x) either way, so they land on the axes
        they name; the result comes back in ``volume``'s order.

    Returns
    -------
    numpy.ndarray
        float32, the shape of ``volume``: ``out`` where given.

    Raises
    ------
    ValueError
        A bad parameter, a volume that is not 3D or 4D, has more than 16 channels, has NaN or
        infinite voxels (inside the mask, with one), or is smaller than A + B + 1 on an axis, an
        ``out`` that cannot hold the result, a mask not of the volume's (Z, Y, X) shape or not
        0/1; with h None, a volume too small (under 3 voxels an axis) or too flat (constant) to
        estimate its noise. The message says which and how to fix it.
    BackendUnavailableError
        backend="gpu" (or devices given) where CuPy or a GPU is missing.
    MemoryError
        On the CPU, a run that would not fit the process's address-space limit (``ulimit -v``),
        said before it starts, or memory that ran out mid-run; the message says what to lower.

    Notes
    -----
    Coordinates outside the volume are mirrored without repeating the edge, on all three axes.
    Exponential weights are relative to the smallest u of the window (exp(-(u - u_min))), so
    no weight underflows whatever h. MRI magnitude noise is Rician: Gaussian only where the
    signal is well above the noise (see ``estimate_volume_noise``).
    """
    given = np.asarray(volume)
    if axes not in SPATIAL_ORDERS:  # before the 4D refusal, which names no axes= ("zcyx" heard of channel_axis alone)
        raise ValueError(
            f"axes orders the three spatial axes, 'zyx' or 'xyz', got {axes!r}; a 4D array's other axis is named by "
            "channel_axis= (channels) or series_axis= (time points)"
        )
    role = fourth_axis(given.shape, channel_axis=channel_axis, series_axis=series_axis)
    settings = {"patch_radius": patch_radius, "search_radius": search_radius, "weighting": weighting}
    settings |= {"center_weight": center_weight, "backend": backend, "devices": devices, "slabs": slabs}
    settings |= {"channels": channels, "threads": threads, "mask": mask, "h": h}
    settings |= {"noise_model": check_choice("noise_model", noise_model, NOISE_MODELS), "sigma": sigma}
    rician = noise_model == "rician"
    if axes == "xyz":  # to (z, y, x) and back: the same swap of x and z
        order = x_and_z_swapped(given.ndim, None if role is None else role[1])
        settings |= {"mask": None if mask is None else np.asarray(mask).transpose(2, 1, 0)}
        settings |= {"channel_axis": channel_axis, "series_axis": series_axis}
        swapped = np.ascontiguousarray(given.transpose(order))
        return _returned(denoise_volume(swapped, progress=progress, **settings).transpose(order), given, out)
    if sigma is not None and not rician:
        raise ValueError("sigma is the Rician model's (noise_model='rician'); the Gaussian model's strength is h alone")
    if role is not None and role[0] == "series":
        return _each_volume(given, role[1], progress, out, **settings)
    if role is not None and role[1] != 3:  # channels go last, and come back to their axis
        moved = np.ascontiguousarray(np.moveaxis(given, role[1], -1))
        result = np.moveaxis(denoise_volume(moved, progress=progress, channel_axis=3, **settings), -1, role[1])
        return _returned(result, given, out)
    if mask is not None and given.ndim in (3, 4) and not all_finite(given):
        inside = checked_mask(mask, given.shape[:3])
        channel_axis = 3 if given.ndim == 4 else None
        result = denoise_volume(
            filled_outside(given, inside), progress=progress, out=out, channel_axis=channel_axis, **settings
        )
        result[~inside] = given[~inside]  # the NaN and infinities outside, read as 0, back as they were
        return result
    count = given.shape[3] if given.ndim == 4 else 1
    # The volume is checked before the estimate: its refusals say to give h, which helps only there.
    radii = VolumeParams.checked(1.0, patch_radius, search_radius, weighting, center_weight)
    data = checked_volume(volume, radii, finite=False)
    if h is None:
        require_finite(data)
    if check_choice("channels", channels, ("auto", *CHANNEL_MODES)) == "auto":
        channels = automatic_channel_mode(data, h)
    if h is None:
        h = suggested_strengths(given, channels, weighting, center_weight=center_weight, patch_radius=patch_radius)
    strengths = channel_strengths(h, count, channels)
    for strength in strengths:
        params = VolumeParams.checked(strength, patch_radius, search_radius, weighting, center_weight)
    if rician:
        if backend == "gpu" or devices is not None:
            raise ValueError("noise_model='rician' runs on the CPU: use backend='cpu' or 'auto', without devices")
        backend = "cpu"
        sigmas = checked_sigmas(estimated_sigmas(data, channels) if sigma is None else sigma, count)
        settings |= {"sigma": [float(value) for value in sigmas]}
    rician_sigmas = sigmas if rician else None
    if out is not None:
        check_out(out, given)
    if slabs is not None:
        check_int("slabs", slabs, 1 << 20)
    if threads is not None:
        from ..cpu.threads import check_threads

        check_threads(threads)
    chosen = _chosen_backend(backend, devices)
    if channels == "separately" and count > 1:
        return _each_channel(
            data,
            strengths,
            progress,
            np.empty(given.shape, dtype=np.float32) if out is None else out,
            patch_radius=patch_radius,
            search_radius=search_radius,
            weighting=weighting,
            center_weight=center_weight,
            backend=chosen,
            devices=devices,
            slabs=slabs,
            threads=threads,
            noise_model=noise_model,
            sigmas=sigmas if rician else None,
            mask=mask,
        )
    target = None if out is None else out.reshape(data.shape)  # a view: (Z, Y, X, C) written into ``out``
    if mask is not None:
        inside = checked_mask(mask, data.shape[:3])
        result = np.empty(given.shape, dtype=np.float32) if out is None else out
        if chosen == "cpu":
            require_finite(data)
            require_cpu_room_for(data)
            _filter_inside_on_cpu(data, inside, params, result.reshape(data.shape), progress, threads, rician_sigmas)
        else:
            settings |= {"h": strengths[0], "backend": chosen, "mask": None}
            _filter_inside(data, inside, params.pad, result.reshape(data.shape), progress, **settings)
        return result
    if chosen == "cpu":
        require_finite(data)  # the GPU checks each slab's planes as it pads them (SlabPipeline)
        require_cpu_room_for(data)
        planar = _filter_on_cpu(data, params, slabs or 1, progress, target, threads, rician_sigmas)
    else:
        from . import slabs as slab_module
        from .filter_gpu import gpu_slab_filters

        filters, least_slabs = gpu_slab_filters(data.shape, params, resolve_devices(devices))
        least = max(slabs or 1, least_slabs, len(filters))
        fitting = max(stop - start for start, stop in slab_module.split_range(data.shape[0], least_slabs))
        ranges = slab_module.tapered_ranges(
            data.shape[0], len(filters), least=least, thinnest=THINNEST_SLAB, thickest=fitting
        )
        if max(stop - start for start, stop in ranges) > fitting:  # rounded past what memory holds
            ranges = slab_module.split_range(data.shape[0], max(least, len(ranges)))
        thickest = max(stop - start for start, stop in ranges)
        runners = [_set_up_on_its_thread(make, data, params, thickest) for make in filters]
        planar = slab_module.run_in_slabs(data.shape, ranges, runners, progress, target)
    if out is not None:
        return out
    result = planar if given.ndim == 4 else planar[..., 0]
    return np.ascontiguousarray(result)


@says_what_to_lower("use fewer threads (NUMBA_NUM_THREADS, one a CPU by default), crop the volume or use more slabs")
def _filter_on_cpu(
    data: np.ndarray,
    params: VolumeParams,
    slabs: int,
    progress: Progress | None,
    target: np.ndarray | None,
    threads: int | None = None,
    rician: np.ndarray | None = None,
) -> np.ndarray:
    """``denoise_volume`` of (Z, Y, X, C) ``data`` on the CPU, into ``target`` or a new array.

    In ``slabs`` slabs padded as they are filtered (the next read on a thread of its own), on
    ``threads`` of numba's threads (None: all); with ``rician``, each channel's sigma, the
    squared magnitudes averaged and their bias removed (engine/volume/rician.py).
    """
    from ..cpu.threads import cpu_threads
    from . import slabs as slab_module

    count = len(slab_module.split_range(data.shape[0], slabs))
    finished = [0]

    def read_slab(start: int, stop: int) -> np.ndarray:
        return padded_volume(data, params.pad, (start, stop))

    def cpu_filter(slab: np.ndarray, slab_params: VolumeParams, first_plane: int) -> np.ndarray:
        result = _filtered_on_cpu(slab, slab_params, _counted(progress, finished[0], count), rician)
        finished[0] += 1
        return result

    with cpu_threads(threads):  # one filter: its launches run on this thread
        return slab_module.filter_in_slabs(read_slab, data.shape, params, count, [cpu_filter], output=target)


def _counted(progress: Progress | None, before: int, parts: int) -> Callable[[int, int], None]:
    """Part ``before`` of ``parts``' (done, total) as ``progress`` of the whole (a no-op without one)."""

    def part_progress(done: int, total: int) -> None:
        if progress is not None:
            progress(before * total + done, parts * total)

    return part_progress


def _filtered_on_cpu(
    padded: np.ndarray, params: VolumeParams, on_offset: Callable[[int, int], None], rician: np.ndarray | None
) -> np.ndarray:
    """Return ``filter_padded_cpu`` of a padded slab or box.

    With ``rician`` sigmas, of its squared magnitudes with their bias removed (engine/volume/rician.py).
    """
    from .filter_cpu import filter_padded_cpu

    if rician is None:
        return filter_padded_cpu(padded, params, on_offset)
    return remove_bias(filter_padded_cpu(padded, params, on_offset, np.square(padded)), rician)


@says_what_to_lower("use fewer threads (NUMBA_NUM_THREADS, one a CPU by default) or crop the volume")
def _filter_inside_on_cpu(
    data: np.ndarray,
    inside: np.ndarray,
    params: VolumeParams,
    result: np.ndarray,
    progress: Progress | None,
    threads: int | None,
    rician: np.ndarray | None,
) -> None:
    """Write (Z, Y, X, C) ``data`` into ``result``, its voxels ``inside`` filtered, on the CPU.

    Each thin box of engine/volume/mask.py (MASK_BOX_PLANES) is padded with its surroundings
    (``padded_volume``) and only its own voxels are filtered: the mask's share of the volume costs
    about that share of the time, not that of a box around it.
    """
    from ..cpu.threads import cpu_threads

    result[...] = data
    boxes = mask_boxes(inside, params.pad, thickest=MASK_BOX_PLANES)
    with cpu_threads(threads):
        for number, box in enumerate(boxes):
            padded = padded_volume(data, params.pad, *((part.start, part.stop) for part in box))
            filtered = _filtered_on_cpu(padded, params, _counted(progress, number, len(boxes)), rician)
            chosen = inside[box]
            result[box][chosen] = filtered[chosen]


def _filter_inside(
    data: np.ndarray,
    inside: np.ndarray,
    pad: tuple[int, int, int],
    result: np.ndarray,
    progress: Progress | None,
    **settings: Any,
) -> None:
    """Write (Z, Y, X, C) ``data`` into ``result``, its voxels ``inside`` filtered on the GPU (``mask``).

    Each box of engine/volume/mask.py is filtered with its halo; ``progress`` counts the boxes' work in turn.
    """
    result[...] = data
    boxes = mask_boxes(inside, pad)
    for number, box in enumerate(boxes):
        halo = with_halo(box, pad, inside.shape)
        box_progress = _counted(progress, number, len(boxes))
        filtered = denoise_volume(np.ascontiguousarray(data[halo]), progress=box_progress, channel_axis=3, **settings)
        inner = tuple(
            slice(part.start - grown.start, part.stop - grown.start) for part, grown in zip(box, halo, strict=True)
        )
        chosen = inside[box]
        result[box][chosen] = filtered[inner][chosen]


def _returned(result: np.ndarray, given: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """Return ``result`` (the filtered volume, a view in ``given``'s axes) in ``out``, or as a new contiguous array."""
    if out is None:
        return np.ascontiguousarray(result)
    check_out(out, given)
    out[...] = result
    return out


def _each_volume(
    series: np.ndarray, axis: int, progress: Progress | None, out: np.ndarray | None, **settings: Any
) -> np.ndarray:
    """``denoise_volume`` of each (Z, Y, X) volume of a 4D ``series`` along ``axis`` on its own.

    Into ``out`` where given, else a new array; ``progress`` counts the volumes' work in turn.
    """
    if out is not None:
        check_out(out, series)
    result = np.empty(series.shape, dtype=np.float32) if out is None else out
    volumes, targets = np.moveaxis(series, axis, 0), np.moveaxis(result, axis, 0)
    for number, one in enumerate(volumes):

        def volume_progress(done: int, total: int, before: int = number) -> None:
            if progress is not None:
                progress(before * total + done, len(volumes) * total)

        targets[number] = denoise_volume(np.ascontiguousarray(one), progress=volume_progress, **settings)
    return result


def _each_channel(
    volume: np.ndarray,
    strengths: list,
    progress: Progress | None,
    result: np.ndarray,
    sigmas: np.ndarray | None = None,
    **settings: Any,
) -> np.ndarray:
    """``denoise_volume`` of each channel of a (Z, Y, X, C) volume on its own, with its own h, into ``result``.

    With its own Rician ``sigmas`` where given; ``progress`` counts the channels' work in turn.
    """
    count = len(strengths)
    for channel, strength in enumerate(strengths):

        def channel_progress(done: int, total: int, before: int = channel) -> None:
            if progress is not None:
                progress(before * total + done, count * total)

        one = np.ascontiguousarray(volume[..., channel])
        sigma = None if sigmas is None else float(sigmas[channel])
        result[..., channel] = denoise_volume(one, h=strength, sigma=sigma, progress=channel_progress, **settings)
    return result


def check_out(out: object, volume: np.ndarray) -> None:
    """ValueError unless ``out`` can take ``denoise_volume``'s result for ``volume``.

    A C-contiguous, writeable float32 array of its shape that shares no memory with it (the input is
    read while the output is written, slab by slab).
    """
    if not isinstance(out, np.ndarray) or out.dtype != np.float32 or out.shape != volume.shape:
        described = f"{out.dtype} {out.shape}" if isinstance(out, np.ndarray) else type(out).__name__
        raise ValueError(f"out must be a float32 array of the volume's shape {volume.shape}, got {described}")
    if not (out.flags.c_contiguous and out.flags.writeable):
        raise ValueError("out must be a C-contiguous, writeable array (numpy.empty_like(volume, numpy.float32))")
    if np.may_share_memory(out, volume):
        raise ValueError("out must not share memory with the volume: the input is read while the output is written")


def _set_up_on_its_thread(make: Callable[..., Any], *arguments: object) -> Callable[..., None]:
    """Return a slab runner that makes its device's pipeline (buffers, streams) on the runner's own thread.

    It makes it when it starts, so that several devices set up at once.
    """
    return lambda ranges, output, finished: make(*arguments).run(ranges, output, finished)


def _chosen_backend(backend: str, devices: object) -> str:
    """Return the backend ``denoise_volume`` runs on: the GPU wherever ``devices`` are given (checked first)."""
    if check_devices(devices) is not None and backend == "cpu":
        raise ValueError("devices selects GPUs: use backend='gpu' or 'auto' with it, or leave it None")
    resolve_devices(devices)
    return resolve_backend("gpu" if devices is not None and backend == "auto" else backend)


def denoise_volume_slice(
    volume: np.ndarray,
    index: int,
    *,
    axis: int = 0,
    h: float | Sequence[float],
    patch_radius: Radii = 1,
    search_radius: Radii = 5,
    weighting: str = "exponential",
    center_weight: str = "one",
    backend: str = "auto",
    channels: str = "together",
) -> np.ndarray:
    """One plane of ``denoise_volume(volume, ...)``, filtering only the slab around it: a preview.

    Parameters
    ----------
    volume, h, patch_radius, search_radius, weighting, center_weight, backend, channels
        As ``denoise_volume``; radii are (z, y, x) of ``volume`` whatever ``axis``.
    index : int
        The plane, 0 .. volume.shape[axis] - 1.
    axis : {0, 1, 2}
        The axis the plane is normal to: 0 (z, axial in RAS-oriented NIfTI), 1 (y) or 2 (x).

    Returns
    -------
    numpy.ndarray
        float32, the plane ``np.take(denoise_volume(volume, ...), index, axis)``; only the
        2 (Az + Bz) + 1 planes around it (along ``axis``) are read and filtered.

    Raises
    ------
    ValueError
        As ``denoise_volume``, and an axis or index out of range.
    BackendUnavailableError
        backend="gpu" where CuPy or a GPU is missing.
    """
    given = np.asarray(volume)
    strengths = channel_strengths(h, given.shape[3] if given.ndim == 4 else 1, channels)
    if channels == "separately" and len(strengths) > 1:
        settings = {"axis": axis, "patch_radius": patch_radius, "search_radius": search_radius}
        settings |= {"weighting": weighting, "center_weight": center_weight, "backend": backend}
        planes = [
            denoise_volume_slice(given[..., c], index, h=strength, **settings) for c, strength in enumerate(strengths)
        ]
        return np.stack(planes, axis=-1)
    params = VolumeParams.checked(strengths[0], patch_radius, search_radius, weighting, center_weight)
    check_int("axis", axis, 2)
    order = [axis] + [a for a in range(3) if a != axis]
    moved = VolumeParams(
        params.h,
        tuple(params.patch_radius[a] for a in order),
        tuple(params.search_radius[a] for a in order),
        params.weighting,
        params.center_weight,
    )
    data = checked_volume(volume, params)
    check_int("index", index, data.shape[axis] - 1)
    data = np.moveaxis(data, axis, 0)
    if _chosen_backend(backend, None) == "cpu":
        from .filter_cpu import filter_padded_cpu

        plane = filter_padded_cpu(padded_volume(data, moved.pad, (index, index + 1)), moved)[0]
    else:
        from .filter_gpu import gpu_slab_filters

        (make,), _ = gpu_slab_filters(data.shape, moved, None)
        planes = np.empty((1, *data.shape[1:]), dtype=np.float32)
        make(data, moved, 1).run([(index, index + 1)], planes, lambda start, stop: None, origin=index)
        plane = planes[0]
    return plane if np.asarray(volume).ndim == 4 else plane[..., 0]
