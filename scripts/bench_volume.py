"""Times the volume filter on the study's setting (DESIGN.md §6): a random float32 volume, search
11^3, patch 3^3, exponential weights, on one GPU and on several (``--devices 0 1``).

Prints each kernel's GPU time on one device (CUDA events, the padded slab already on the GPU;
``volume_tiled`` and ``volume_direct`` by default, and their largest difference, and a SHA-1 of
each one's output), ``--without-strip``: the tiled kernel's whole tiles alone (its last columns
not in the strip), the tiled kernel's time with the other weightings and centre weights (unless
--no-other-weightings),
the whole ``denoise_volume`` call (validation, copies, padding, slabs) per device set with a
SHA-1 of its result (equal digests: equal volumes, bit for bit, also across trees), the ratio to
the arithmetic floor (16 FLOP per voxel per offset pair at the GPU's fp32 peak) and, with
several devices, the kernels' wall time with one slab a device filtered at once (the slabs already
on the GPUs) against one GPU's, and whether their results equal one GPU's. ``--slab-counts``
times the whole call on one GPU with at least that many slabs.

    python scripts/bench_volume.py --size 512 --devices 0 1 --peak-tflops 63

To compare two versions in one device call, run this script under each tree's engine in turn
(``cd OLD && source scripts/device_env.sh && python3 NEW/scripts/bench_volume.py ...``, then the
same in NEW): one method for both, and the kernels compile per source, so the two never share a
cached kernel. Options older engines lack (``--layouts`` with offsets) apply to the new one only.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import math
import time

import numpy as np

from nlmeans_studio.engine import denoise_volume
from nlmeans_studio.engine.gpu.device import device_attributes
from nlmeans_studio.engine.volume import denoise
from nlmeans_studio.engine.volume.denoise import padded_volume
from nlmeans_studio.engine.volume.filter_gpu import tiled_layout, volume_launcher
from nlmeans_studio.engine.volume.params import VolumeParams


def kernel_seconds(cupy, source, out, params: VolumeParams, repeats: int, kind: str, layout=None) -> tuple[float, str]:
    """Best GPU time of one kernel (``kind``: "tiled", "direct", "auto"; ``layout``: the tiled
    one's, if not its own) over the whole padded volume ``source``, already on the device, and
    its template instance with its registers."""
    name, launch = volume_launcher(cupy, params, out.shape, kind, layout)
    best = math.inf
    for _ in range(repeats + 1):  # the first compiles and warms up
        out.fill(math.nan)
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        launch(source, out)
        stop.record()
        stop.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    from nlmeans_studio.engine.gpu.device import kernel_function

    described = []
    for instance in name.split(" + "):  # the tiled kernel and its strip's
        function = kernel_function(cupy, instance, "volume.cu")
        registers, local = getattr(function, "num_regs", "?"), getattr(function, "local_size_bytes", "?")
        described.append(f"{instance}: {registers} registers, {local} B local")
    return best, " + ".join(described)


def concurrent_kernel_seconds(cupy, volume: np.ndarray, params: VolumeParams, devices: list[int], repeats: int):
    """Best wall time of the kernels filtering ``volume`` split along z into one slab per device
    (each padded slab already on its GPU), launched on every device at once and waited for; and
    the stitched (Z, Y, X, 1) output on the host. The GPU-side scaling, without the copies."""
    from nlmeans_studio.engine.volume.slabs import split_range

    runs = []
    for device, (start, stop) in zip(devices, split_range(volume.shape[0], len(devices)), strict=True):
        with cupy.cuda.Device(device):
            source = cupy.asarray(padded_volume(volume[..., np.newaxis], params.pad, (start, stop)))
            out = cupy.empty((stop - start, *volume.shape[1:], 1), dtype=cupy.float32)
            _, launch = volume_launcher(cupy, params, out.shape, "tiled")
            runs.append((device, start, source, out, launch))
    best = math.inf
    for _ in range(repeats + 1):  # the first compiles and warms up
        for device, *_ in runs:
            cupy.cuda.Device(device).synchronize()
        begin = time.perf_counter()
        for device, start, source, out, launch in runs:
            with cupy.cuda.Device(device):
                launch(source, out, start)
        for device, *_ in runs:
            cupy.cuda.Device(device).synchronize()
        best = min(best, time.perf_counter() - begin)
    stitched = np.concatenate([cupy.asnumpy(out) for *_, out, _ in runs])
    return best, stitched


def digest(cupy, out) -> str:
    """The start of a kernel output's SHA-1: equal digests, equal volumes bit for bit (also across trees)."""
    return hashlib.sha1(cupy.asnumpy(out).tobytes()).hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--devices", type=int, nargs="*", default=[0])
    parser.add_argument("--peak-tflops", type=float, default=63.0, help="the GPU's fp32 peak (H100 SXM: about 63)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--kernels", nargs="+", default=["tiled", "direct"], help="volume_launcher kinds to time")
    parser.add_argument(
        "--layouts",
        nargs="*",
        default=[],
        help="tiled layouts to time too, [WEIGHTING/CENTRE:]PLANESxROWSxCOLUMNSxWARPS[xOFFSETS] "
        "(exponential/one by default, then compared with the first kernel's volume)",
    )
    parser.add_argument("--whole-calls", type=int, default=1, help="whole denoise_volume calls to time (each printed)")
    parser.add_argument("--kernels-only", action="store_true", help="stop after the kernels (for a profiler)")
    parser.add_argument(
        "--into-out", action="store_true", help="time the whole calls writing into an array written before (out=) too"
    )
    parser.add_argument(
        "--without-strip", action="store_true", help="time the tiled layout without its strip too (whole tiles only)"
    )
    parser.add_argument("--no-other-weightings", action="store_true", help="time only the exponential / one kernel")
    parser.add_argument(
        "--slab-counts", type=int, nargs="*", default=[], help="whole calls on one GPU with at least these slabs"
    )
    arguments = parser.parse_args()
    import cupy

    size = arguments.size
    volume = np.random.default_rng(0).random((size, size, size), dtype=np.float32)
    options = dict(h=0.3, patch_radius=1, search_radius=5, weighting="exponential")
    params = VolumeParams.checked(options["h"], 1, 5, "exponential", "one")
    pairs = (11**3 - 1) // 2
    floor = 16 * size**3 * pairs / (arguments.peak_tflops * 1e12)
    print(f"{cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}, {size}^3, search 11^3, patch 3^3")
    print(f"floor: {floor * 1e3:.1f} ms (16 FLOP x {pairs} pairs per voxel at {arguments.peak_tflops:g} TFLOP/s)")
    source = cupy.asarray(padded_volume(volume[..., np.newaxis], params.pad))
    outputs = {}
    for kind in arguments.kernels:
        out = cupy.empty((size, size, size, 1), dtype=cupy.float32)
        seconds, name = kernel_seconds(cupy, source, out, params, arguments.repeats, kind)
        print(
            f"kernel {kind}, one GPU: {seconds * 1e3:.1f} ms = {seconds / floor:.1f} x the floor ({name}; output "
            f"sha1 {digest(cupy, out)})"
        )
        outputs[kind] = out
    if len(outputs) > 1:
        first, *others = outputs.values()
        for kind, out in zip(arguments.kernels[1:], others, strict=True):
            difference = float(cupy.abs(out - first).max())
            print(f"max |{kind} - {arguments.kernels[0]}| over the volume: {difference:.2e}")
    first = outputs[arguments.kernels[0]]
    del outputs
    shared_limit = device_attributes(cupy, 0)[0]
    if arguments.without_strip:
        layout = dataclasses.replace(tiled_layout(params, 1, shared_limit), strip=None)
        out = cupy.empty((size, size, size, 1), dtype=cupy.float32)
        seconds, name = kernel_seconds(cupy, source, out, params, arguments.repeats, "tiled", layout)
        difference = float(cupy.abs(out - first).max())
        print(
            f"kernel tiled without its strip: {seconds * 1e3:.1f} ms = {seconds / floor:.1f} x the floor ({name}, "
            f"max |this - {arguments.kernels[0]}| {difference:.2e}; output sha1 {digest(cupy, out)})"
        )
    for text in arguments.layouts:
        weighting, center, sizes = "exponential", "one", text
        if ":" in text:
            weighting_text, sizes = text.split(":")
            weighting, center = weighting_text.split("/")
        planes, rows, columns, warps, *offsets = (int(n) for n in sizes.split("x"))
        chosen = VolumeParams.checked(options["h"], 1, 5, weighting, center)
        layout = tiled_layout(chosen, 1, shared_limit, warps, [(planes, rows, columns)], *offsets)
        if layout is None:
            print(f"layout {text}: does not fit")
            continue
        out = cupy.empty((size, size, size, 1), dtype=cupy.float32)
        seconds, name = kernel_seconds(cupy, source, out, chosen, arguments.repeats, "tiled", layout)
        difference = f", max |this - {arguments.kernels[0]}| {float(cupy.abs(out - first).max()):.2e}"
        same = chosen == params
        print(
            f"kernel tiled, layout {text}: {seconds * 1e3:.1f} ms = {seconds / floor:.1f} x the floor ({name}"
            f"{difference if same else ''})"
        )
    del first
    others = () if arguments.no_other_weightings else (("exponential", "max"), ("bisquare", "one"), ("bisquare", "max"))
    for weighting, center in others:
        other = VolumeParams.checked(options["h"], 1, 5, weighting, center)
        out = cupy.empty((size, size, size, 1), dtype=cupy.float32)
        seconds, name = kernel_seconds(cupy, source, out, other, arguments.repeats, "auto")
        print(f"kernel auto, {weighting} / centre {center}: {seconds * 1e3:.1f} ms = {seconds / floor:.1f} x ({name})")
    del source, out
    if len(arguments.devices) > 1:
        alone, one = concurrent_kernel_seconds(cupy, volume, params, arguments.devices[:1], arguments.repeats)
        print(f"tiled kernel, wall time on GPU {arguments.devices[0]} (slab on the device): {alone * 1e3:.1f} ms")
        together, several = concurrent_kernel_seconds(cupy, volume, params, arguments.devices, arguments.repeats)
        print(
            f"tiled kernels on GPUs {arguments.devices} at once, one slab each with its halo (slabs on the "
            f"devices): {together * 1e3:.1f} ms, {alone / together:.2f}x one GPU; stitched equal to one GPU's "
            f"bit for bit: {np.array_equal(one, several)}"
        )
        del one, several
    if arguments.kernels_only:
        return
    results = {}

    def timed_calls(
        devices: list[int], label: str, calls: int, slabs: int | None = None, out: np.ndarray | None = None
    ) -> None:
        for _ in range(calls):
            start = time.perf_counter()
            results[len(devices)] = denoise_volume(
                volume, backend="gpu", devices=devices, slabs=slabs, out=out, **options
            )
            seconds = time.perf_counter() - start
            digest = hashlib.sha1(results[len(devices)].tobytes()).hexdigest()[:16]
            print(f"denoise_volume on GPUs {devices}{label}: {seconds:.3f} s (result sha1 {digest})")

    start = time.perf_counter()
    denoise.checked_volume(volume, params)
    print(f"checked_volume, finite check included (the host's, before a CPU call): {time.perf_counter() - start:.3f} s")
    for devices in ([arguments.devices[0]], arguments.devices) if len(arguments.devices) > 1 else ([0],):
        denoise_volume(volume[:32], backend="gpu", devices=devices, **options)  # compile on each device
        timed_calls(devices, "", arguments.whole_calls)
    for count in arguments.slab_counts:
        timed_calls([0], f", at least {count} slabs", 2, count)
    if len(results) > 1:
        equal = np.array_equal(results[1], results[len(arguments.devices)])
        print(f"{len(arguments.devices)} GPUs equal one GPU bit for bit: {equal}")
    if arguments.into_out:  # the result's pages written before: no page faults in the copies out
        out = np.zeros_like(volume)
        for devices in ([arguments.devices[0]], arguments.devices) if len(arguments.devices) > 1 else ([0],):
            timed_calls(devices, ", into out", arguments.whole_calls, out=out)


if __name__ == "__main__":
    main()
