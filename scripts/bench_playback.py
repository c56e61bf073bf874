"""Playback throughput: the window's render-ahead (engine.video.playback.RenderAhead) without Qt.

    python3 scripts/bench_playback.py [--input .bench/sample720.npy] [--frames 240] [--backend auto]
        [--synthetic-noise 25,0] [--ahead 32]

A producer thread renders ahead as the window's worker does, and the consumer takes frame i as
soon as it is there, with no clock: the fastest play the engine allows. It checks that every
frame arrives, in order. The frames are the sample clip's (PyAV) or a .npy of uint8
(T, H, W, 3) frames (for machines without PyAV), repeated to ``--frames``. One line per
synthetic noise sigma (0: the clip as decoded, as a noisy camera clip plays; 25: the sample as
the window opens it): frames shown per second, the render-ahead's own rate, and the engine's
median ms per frame. The parameters are the window's defaults (B = 4, A = 3, Dp = Df = 1) with h
from the noise.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Iterator

import numpy as np

from nlmeans_studio.engine import NLMParams, suggest_h
from nlmeans_studio.engine.video.playback import DEFAULT_AHEAD, RenderAhead
from nlmeans_studio.engine.video.preview import Previewer, SyntheticNoise
from nlmeans_studio.engine.video.sample import load_clean_frames

WARM_UP_FRAMES = 6  # compile the kernels, allocate the buffers


class LoopedFrames:
    """``frames`` repeated to ``count`` frames, as a FrameSource."""

    def __init__(self, frames: np.ndarray, count: int) -> None:
        self._frames, self._count = frames, count

    def __len__(self) -> int:
        return self._count

    def frame(self, index: int) -> np.ndarray:
        return self._frames[index % len(self._frames)]

    def frames(self, start: int = 0) -> Iterator[np.ndarray]:
        return (self.frame(index) for index in range(start, self._count))


def play(previewer: Previewer, params: NLMParams, noise: SyntheticNoise | None, count: int, ahead: int) -> dict:
    """Render ``count`` frames ahead on a thread and take each as soon as it is rendered."""
    playback = RenderAhead(previewer, params, noise, 0, count, ahead=ahead)
    failure: list[BaseException] = []

    def render() -> None:
        try:
            while not playback.done:
                if not playback.render_next():
                    time.sleep(0.0005)  # full: the consumer has not taken a frame yet
        except BaseException as error:  # reported by the consumer
            failure.append(error)
        finally:
            playback.close()

    producer = threading.Thread(target=render, name="render-ahead")
    started = time.perf_counter()
    producer.start()
    shown, engine_ms = [], []
    while len(shown) < count and not failure:
        preview = playback.take(len(shown))
        if preview is None:
            time.sleep(0.0002)
            continue
        shown.append(preview.index)
        engine_ms.append(preview.engine_ms)
    seconds = time.perf_counter() - started
    producer.join()
    if failure:
        raise failure[0]
    assert shown == list(range(count)), "a frame was skipped or came out of order"
    return {
        "shown fps": count / seconds,
        "render-ahead fps": playback.frames_per_second,
        "engine ms (median)": statistics.median(engine_ms),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", default=None, help="a .npy of uint8 (T, H, W, 3) frames (default: the sample)")
    parser.add_argument("--frames", type=int, default=240)
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--synthetic-noise", default="25,0", help="sigmas in levels, comma-separated")
    parser.add_argument("--ahead", type=int, default=DEFAULT_AHEAD)
    args = parser.parse_args()
    if args.input is not None and args.input.endswith(".npy"):
        clip = np.load(args.input)
    else:
        clip = np.rint(load_clean_frames(args.input, 24, 720, 1280) * 255).astype(np.uint8)
    source = LoopedFrames(clip, args.frames)
    previewer = Previewer(source, args.backend)
    height, width = clip.shape[1:3]
    print(f"# render-ahead playback, {width}x{height} RGB uint8, {args.frames} frames ({len(clip)} distinct)")
    print(f"# {previewer.denoiser.backend} on {previewer.denoiser.device_name}; ahead = {args.ahead} frames")
    for sigma in (float(text) for text in args.synthetic_noise.split(",")):
        noise = SyntheticNoise(sigma) if sigma > 0 else None
        params = NLMParams(h=suggest_h(SyntheticNoise(sigma or 25).estimate(), NLMParams(h=1)))
        play(previewer, params, noise, WARM_UP_FRAMES, args.ahead)
        figures = play(previewer, params, noise, args.frames, args.ahead)
        label = f"synthetic noise {sigma:g}" if noise else "no synthetic noise"
        line = ", ".join(f"{name} {value:.1f}" for name, value in figures.items())
        print(f"{label} (h {params.h:.1f}): {line}; every frame shown in order")


if __name__ == "__main__":
    main()
