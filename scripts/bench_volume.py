"""Times the volume filter on the study's setting (DESIGN.md §6): a random float32 volume, search
11^3, patch 3^3, exponential weights, on one GPU and on several (``--devices 0 1``).

Prints each kernel's GPU time on one device (CUDA events, the padded slab already on the GPU;
``volume_tiled`` and ``volume_direct`` by default, and their largest difference), the tiled
kernel's time with the other weightings and centre weights,
the whole ``denoise_volume`` call (host padding, copies, slabs) per device set, the ratio to the
arithmetic floor (16 FLOP per voxel per offset pair at the GPU's fp32 peak) and, with several
devices, whether their result equals one GPU's.

    python scripts/bench_volume.py --size 512 --devices 0 1 --peak-tflops 63

To compare two versions in one device call, run this script under each tree's engine in turn
(``cd OLD && source scripts/device_env.sh && python3 NEW/scripts/bench_volume.py ...``, then the
same in NEW): one method for both, and the kernels compile per source, so the two never share a
cached kernel. Options older engines lack (``--layouts`` with offsets) apply to the new one only.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from nlmeans_studio.engine import denoise_volume
from nlmeans_studio.engine.filters.volume_gpu import gpu_slab_filters, tiled_layout, volume_launcher
from nlmeans_studio.engine.gpu.device import device_attributes
from nlmeans_studio.engine.gpu.slabs import filter_in_slabs
from nlmeans_studio.engine.volume.denoise import padded_volume
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

    function = kernel_function(cupy, name, "volume.cu")
    resources = f"{getattr(function, 'num_regs', '?')} registers, {getattr(function, 'local_size_bytes', '?')} B local"
    return best, f"{name}: {resources}"


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
        print(f"kernel {kind}, one GPU: {seconds * 1e3:.1f} ms = {seconds / floor:.1f} x the floor ({name})")
        outputs[kind] = out
    if len(outputs) > 1:
        first, *others = outputs.values()
        for kind, out in zip(arguments.kernels[1:], others, strict=True):
            difference = float(cupy.abs(out - first).max())
            print(f"max |{kind} - {arguments.kernels[0]}| over the volume: {difference:.2e}")
    first = outputs[arguments.kernels[0]]
    del outputs
    shared_limit = device_attributes(cupy, 0)[0]
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
    for weighting, center in (("exponential", "max"), ("bisquare", "one"), ("bisquare", "max")):
        other = VolumeParams.checked(options["h"], 1, 5, weighting, center)
        out = cupy.empty((size, size, size, 1), dtype=cupy.float32)
        seconds, name = kernel_seconds(cupy, source, out, other, arguments.repeats, "auto")
        print(f"kernel auto, {weighting} / centre {center}: {seconds * 1e3:.1f} ms = {seconds / floor:.1f} x ({name})")
    del source, out
    if arguments.kernels_only:
        return
    results = {}
    padded = padded_volume(volume[..., np.newaxis], params.pad)

    def slab_of(start: int, stop: int) -> np.ndarray:
        return padded[start : stop + 2 * params.pad[0]]

    for devices in ([arguments.devices[0]], arguments.devices) if len(arguments.devices) > 1 else ([0],):
        denoise_volume(volume[:32], backend="gpu", devices=devices, **options)  # compile on each device
        filters, _ = gpu_slab_filters((*volume.shape, 1), params, devices)
        best = math.inf
        for _ in range(arguments.repeats):
            start = time.perf_counter()
            filter_in_slabs(slab_of, (*volume.shape, 1), params, len(devices), filters)
            best = min(best, time.perf_counter() - start)
        print(f"slabs on GPUs {devices}: {best:.3f} s (copies to and from the GPUs included, host padding not)")
        for _ in range(arguments.whole_calls):
            start = time.perf_counter()
            results[len(devices)] = denoise_volume(volume, backend="gpu", devices=devices, **options)
            print(f"denoise_volume on GPUs {devices}: {time.perf_counter() - start:.3f} s (host padding included)")
    if len(results) > 1:
        equal = np.array_equal(results[1], results[len(arguments.devices)])
        print(f"{len(arguments.devices)} GPUs equal one GPU bit for bit: {equal}")


if __name__ == "__main__":
    main()
