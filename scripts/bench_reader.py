"""Benchmark of the reader on a long file: indexing, a second open, and random access.

Writes (once, into $TMPDIR/nlmeans-bench/) a one-hour 1080p H.264 file at a low bit rate, MP4 or MPEG-TS: 10 s
encoded with x264's defaults (B-frames, a keyframe every 250 frames), its packets muxed 360
times with shifted timestamps. Then prints the time to index it from scratch, to open it again
(the index comes from the cache), to decode one GOP sequentially, and to read random frames.

    .venv/bin/python scripts/bench_reader.py [--minutes 60] [--container mp4|ts] [--accesses 20]
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from nlmeans_studio.engine.media.reader import VideoReader

FOLDER = Path(tempfile.gettempdir()) / "nlmeans-bench"  # large: kept out of the repository (and .bench, which travels)
PIECE_SECONDS, RATE, GOP = 10, 25, 250


def _piece(path: Path) -> None:
    """10 s of 1080p moving texture, x264 defaults but the GOP, 'veryfast' at CRF 35."""
    rows, cols = np.mgrid[0:1080, 0:1920]
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=RATE)
        stream.width, stream.height, stream.pix_fmt = 1920, 1080, "yuv420p"
        stream.options = {"preset": "veryfast", "crf": "35", "x264-params": f"keyint={GOP}:min-keyint={GOP}"}
        for number in range(PIECE_SECONDS * RATE):
            luma = (128 + 60 * np.sin((cols + 4 * number) / 40) * np.cos((rows - 2 * number) / 30)).astype(np.uint8)
            frame = av.VideoFrame.from_ndarray(np.stack([luma, luma, 255 - luma], axis=-1), format="rgb24")
            frame.pts, frame.time_base = number, Fraction(1, RATE)
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))


def long_clip(minutes: int, container: str) -> Path:
    """The ``minutes``-long clip, written once."""
    path = FOLDER / f"long-{minutes}min-1080p.{container}"
    if path.exists():
        return path
    FOLDER.mkdir(exist_ok=True)
    piece = FOLDER / "piece-1080p.mp4"
    _piece(piece)
    with av.open(str(piece)) as source, av.open(str(path), "w") as target:
        video = source.streams.video[0]
        packets = [packet for packet in source.demux(video) if packet.size]
        stream = target.add_stream_from_template(video)
        step = round(PIECE_SECONDS / video.time_base)
        for repeat in range(minutes * 60 // PIECE_SECONDS):
            for packet in packets:
                copy = av.Packet(bytes(packet))
                copy.pts, copy.dts = packet.pts + repeat * step, packet.dts + repeat * step
                copy.time_base, copy.stream = video.time_base, stream
                copy.is_keyframe = packet.is_keyframe
                target.mux(copy)
    piece.unlink()
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--container", choices=("mp4", "ts"), default="mp4")
    parser.add_argument("--accesses", type=int, default=20)
    args = parser.parse_args()
    path = long_clip(args.minutes, args.container)
    print(f"{path.name}: {path.stat().st_size / 2**20:.0f} MiB")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["NLMEANS_CACHE_DIR"] = cache
        started = time.perf_counter()
        reader = VideoReader(path)
        indexed = time.perf_counter() - started
        count = reader.info.frame_count
        print(f"index from scratch: {indexed:.2f} s for {count} frames ({reader.info.duration / 60:.1f} min)")
        reader.close()
        started = time.perf_counter()
        reader = VideoReader(path)
        print(f"second open (index from the cache): {time.perf_counter() - started:.3f} s")
        started = time.perf_counter()
        for _ in zip(range(GOP), reader.frames(count // 2), strict=False):
            pass
        gop = time.perf_counter() - started
        print(f"one GOP ({GOP} frames) decoded sequentially from the middle: {gop:.2f} s")
        rng = random.Random(0)
        times = []
        for index in (rng.randrange(count) for _ in range(args.accesses)):
            started = time.perf_counter()
            reader.frame(index)
            times.append(time.perf_counter() - started)
        print(
            f"random access, {args.accesses} frames: median {np.median(times):.2f} s, worst {max(times):.2f} s "
            f"({max(times) / gop:.2f} GOP decodes)"
        )
        reader.close()


if __name__ == "__main__":
    main()
