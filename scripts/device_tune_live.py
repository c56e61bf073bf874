"""Issue 37's device targets in one run: ``tune`` per target rate against the whole grid's truth, then a live stream.

    python3 scripts/device_tune_live.py [--size 1920x1080] [--targets 25,60,120,240] [--backend gpu]
        [--codec h264] [--live-fps 60] [--live-seconds 10] [--live-df 0] [--out /tmp/out]

``scripts/device_tune_live.sh`` runs it on the GPU machine with its time bounded. Steps:

1. A clip with its clean frames known (``study_tune_for_fps.make_clip``, "textured pan" by default: a
   camera panning over grain, blobs, shading and sharp-edged patches), noise of sigma 15 levels,
   written uncompressed (.nut): the exports' times are then the filter's and the encoder's, not
   FFV1's decoding (960x540 at 15 fps on the loaded 2-core machine this was written on).
2. ``nlmeans-studio tune CLIP --fps N --backend B --codec C --json`` per target, as a user runs it.
3. A live stream: y4m frames of the noisy clip (back and forth), paced at ``--live-fps`` by this
   script for ``--live-seconds``, piped into ``denoise - OUT --live`` with the window and strengths the
   tune chose for the live rate (or the nearest target below it), Df ``--live-df`` (0: the live
   default, zero delay). Its summary line gives frames written, dropped and the latency median / p95
   (a frame's decoding to its denoised frame at the encoder); the output's frames are counted and
   checked to be in order.
4. The whole grid timed as the tune times a window and scored against the clean frames
   (``study_tune_for_fps.score_grid``); per target, the tune's choice at its own strengths against
   the best window reaching the target at its best strengths (of FACTORS on SURE's): pass where the gap is at most
   GAP_DB and the choice's fps (the tune's timing) at least the target.

Everything said goes to standard output and to OUT/summary.txt; each command's output to OUT.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import av
import numpy as np
import study_tune_for_fps as study

from nlmeans_studio.engine import NLMParams, psnr
from nlmeans_studio.engine.video.default_filter import FilterChoice

GAP_DB = 0.3  # issue 37: the choice's true PSNR within this of the best window reaching the target
# Each window's best strengths: factors on SURE's; 3 of the study's 7 to save time (in its 48 windows
# SURE's strengths were the best of the 7, docs/bench/2026-11-26-tune-for-fps.md).
FACTORS = np.geomspace(0.8, 1.25, 3)
GRID_WINDOWS = 24  # the study's grid: A 1..8 with Dp = Df = 0, 1, 2
VERDICT_SECONDS = 15.0  # what the verdicts take after the grid (the chosen windows' true PSNR)
SUMMARY = re.compile(
    r"denoised (?P<frames>\d+) frames live in (?P<seconds>[\d.]+) s \((?P<fps>[\d.]+) fps\), (?P<dropped>\d+) "
    r"dropped; latency median (?P<median>\d+) ms, p95 (?P<p95>\d+) ms; on the (?P<where>.*) ->"
)
started = time.perf_counter()


def say(out: Path, line: str = "") -> None:
    """Print ``line`` with the seconds since the start, and add it to OUT/summary.txt."""
    stamped = f"[{time.perf_counter() - started:6.1f} s] {line}" if line else ""
    print(stamped, flush=True)
    with open(out / "summary.txt", "a") as summary:
        summary.write(stamped + "\n")


def engine_command(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "nlmeans_studio.engine", *arguments]


def run_tune(clip: Path, target: float, args: argparse.Namespace) -> dict | None:
    """``tune --json`` for ``target``: its JSON (``chosen`` None where no window reached it), None where it failed."""
    command = (
        engine_command(
            "tune", str(clip), "--fps", f"{target:g}", "--backend", args.backend, "--codec", args.codec, "--json"
        )
        + (["--playback"] if args.playback else [])
        + (["--live"] if args.live_tune else [])
    )
    began = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.tune_timeout)
    except subprocess.TimeoutExpired:
        say(args.out, f"tune {target:g} fps: no answer within {args.tune_timeout:g} s")
        return None
    (args.out / f"tune-{target:g}.json").write_text(done.stdout)
    (args.out / f"tune-{target:g}.log").write_text(done.stderr)
    last = done.stderr.strip().splitlines()[-1:] or [""]
    try:
        result = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        say(args.out, f"tune {target:g} fps: status {done.returncode}, no JSON: {last[0]}")
        return None
    seconds = time.perf_counter() - began
    chosen = result["chosen"]
    if chosen is None:
        say(args.out, f"tune {target:g} fps ({seconds:.0f} s): none reached: {last[0]}")
    else:
        say(args.out, f"tune {target:g} fps ({seconds:.0f} s): chose {described(chosen)} at {chosen['fps']} fps")
    return result


def described(row: dict) -> str:
    """A JSON row's window and strengths in the paper's symbols."""
    window = f"A {row['search_radius']}, Dp {row['frames_past']}, Df {row['frames_future']}, B {row['patch_radius']}"
    if row["luma_chroma"] is not None:
        return f"{window}, h_Y {row['luma_chroma'][0]:.2f}, h_UV {row['luma_chroma'][1]:.2f}"
    return f"{window}, h {row['h']:.2f}"


def y4m_frames(noisy: np.ndarray) -> tuple[bytes, list[bytes]]:
    """The y4m header (4:2:0, no rate: the sender paces) and each frame's planes, of 0..1 RGB frames."""
    height, width = noisy.shape[1:3]
    frames = []
    for frame in noisy:
        rgb = av.VideoFrame.from_ndarray(np.rint(frame * 255).astype(np.uint8), format="rgb24")
        frames.append(b"FRAME\n" + rgb.reformat(format="yuv420p").to_ndarray().tobytes())
    return f"YUV4MPEG2 W{width} H{height} F{{rate}}:1 Ip A1:1 C420jpeg\n".encode(), frames


def send_paced(stream, header: bytes, frames: list[bytes], rate: int, seconds: float, sent: list[int]) -> None:
    """Write ``frames`` back and forth to ``stream`` at ``rate`` a second for ``seconds``, then close it."""
    order = list(range(len(frames))) + list(range(len(frames) - 2, 0, -1))
    try:
        stream.write(header.replace(b"{rate}", str(rate).encode()))
        began = time.perf_counter()
        for index in range(round(rate * seconds)):
            time.sleep(max(0.0, began + index / rate - time.perf_counter()))
            stream.write(frames[order[index % len(order)]])
            stream.flush()
            sent[0] += 1
    except BrokenPipeError:
        pass
    finally:
        with contextlib.suppress(BrokenPipeError):
            stream.close()


def run_live(noisy: np.ndarray, chosen: dict, args: argparse.Namespace) -> None:
    """The paced y4m stream into ``denoise - OUT --live`` with ``chosen``'s window; its summary said."""
    output = args.out / "live.mkv"
    strengths = (  # Y'CbCr strengths say the whole filter: no noise estimate on the stream's first frames
        ["--luma-chroma", f"{chosen['luma_chroma'][0]:.2f},{chosen['luma_chroma'][1]:.2f}", "--noise", "none"]
        if chosen["luma_chroma"] is not None
        else ["--h", f"{chosen['h']:.2f}"]
    )
    command = engine_command(
        "denoise", "-", str(output), "--live", "--overwrite", "--backend", args.backend, "--codec", args.codec,
        "--search-radius", str(chosen["search_radius"]), "--frames-past", str(chosen["frames_past"]),
        "--frames-future", str(args.live_df), "--patch-radius", str(chosen["patch_radius"]), *strengths,
        *(["--preset", args.live_preset] if args.live_preset else []),
    )  # fmt: skip
    say(args.out, f"live: {' '.join(command[3:])}")
    header, frames = y4m_frames(noisy)
    lines: list[str] = []
    sent = [0]
    with open(args.out / "live.log", "w") as log:
        child = subprocess.Popen(command, stdin=subprocess.PIPE, stderr=subprocess.PIPE, stdout=log)
        opened = threading.Event()

        def read_stderr() -> None:
            for raw in child.stderr:
                line = raw.decode(errors="replace").rstrip()
                lines.append(line)
                log.write(line + "\n")
                log.flush()
                if line.startswith("live: opening"):  # warmed up: the sender may start
                    opened.set()

        reader = threading.Thread(target=read_stderr, daemon=True)
        reader.start()
        if not opened.wait(args.live_start_timeout):
            say(args.out, f"live: the command did not open its input within {args.live_start_timeout:g} s")
        sender = threading.Thread(
            target=send_paced, args=(child.stdin, header, frames, args.live_fps, args.live_seconds, sent), daemon=True
        )
        sender.start()
        sender.join(args.live_seconds + 30)
        try:
            status = child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            status = f"killed 30 s after the stream's end (status {child.wait()})"
        reader.join(5)
    found = next((SUMMARY.search(line) for line in lines if SUMMARY.search(line)), None)
    if found is None:
        say(args.out, f"live: status {status}, no summary line; its last lines: {lines[-3:]}")
        return
    count, in_order = written_frames(output)
    frame_time_ms = 1000 / args.live_fps
    median, p95 = int(found["median"]), int(found["p95"])
    order = "in order" if in_order else "NOT IN ORDER"
    say(
        args.out,
        f"live {noisy.shape[2]}x{noisy.shape[1]} at {args.live_fps} fps for {args.live_seconds:g} s: frames in "
        f"{sent[0]}, out {found['frames']} ({count} in the file, {order}), dropped {found['dropped']}; latency median "
        f"{median} ms, p95 {p95} ms; on the {found['where']}; status {status}",
    )
    limit = 2 * frame_time_ms
    verdicts = [f"median {'PASS' if median < limit else 'FAIL'}", f"p95 {'PASS' if p95 < limit else 'FAIL'}"]
    say(args.out, f"live latency target, under 2 frame times ({limit:.0f} ms): {', '.join(verdicts)}")


def written_frames(path: Path) -> tuple[int, bool]:
    """Frames in ``path`` (its packets, not decoded) and whether their times rise."""
    try:
        with av.open(str(path)) as container:
            times = [p.pts for p in container.demux(container.streams.video[0]) if p.pts is not None]
    except (av.error.FFmpegError, OSError):
        return 0, False
    return len(times), times == sorted(times) and len(set(times)) == len(times)


def live_tune(tunes: dict[float, dict | None], live_fps: float) -> dict | None:
    """The choice of the tune for ``live_fps``, else of the highest target below it that reached its rate."""
    usable = {target: result["chosen"] for target, result in tunes.items() if result and result["chosen"]}
    at_least = [target for target in usable if target >= live_fps]
    if at_least:
        return usable[min(at_least)]
    return usable[max(usable)] if usable else None


def verdicts(tunes: dict[float, dict | None], rows: dict, clean: np.ndarray, noisy: np.ndarray, args) -> None:
    """Per target: the tune's choice and its true PSNR against the best window reaching the target."""
    say(args.out, "")
    say(
        args.out,
        "| target fps | chosen | its fps (tune; grid) | its true dB | best reaching | its true dB | gap dB | verdict |",
    )
    say(args.out, "|---|---|---|---|---|---|---|---|")
    for target, result in tunes.items():
        if result is None:
            say(args.out, f"| {target:g} | tune failed (see tune-{target:g}.log) | | | | | | FAIL |")
            continue
        tune_rates: dict = {}
        for row in result["candidates"]:
            key = study.window_key(window_of(row))
            tune_rates[key] = max(tune_rates.get(key, 0.0), row["fps"])
        reached = study.reaching(rows, target, tune_rates)
        best = max(reached, key=lambda row: row["best"], default=None)
        best_text = "none" if best is None else f"{window_text(best['window'])} | {best['best']:.2f}"
        chosen = result["chosen"]
        if chosen is None:
            fastest = max(row["fps"] for row in result["candidates"])
            grid_fastest = max((row["fps"] for row in rows.values()), default=0.0)
            say(
                args.out,
                f"| {target:g} | none reached (fastest {fastest:.1f}; grid's {grid_fastest:.1f}) | | | {best_text} | | "
                f"{'FAIL: the grid has one' if best else 'FAIL: no window reaches it'} |",
            )
            continue
        key = study.window_key(window_of(chosen))
        if key in rows:
            choice, grid_fps = as_tuned(rows[key]["choice"], chosen), f"{rows[key]['fps']:.1f}"
        elif chosen["luma_chroma"] is not None:  # a grid cut short by the deadline: the strengths say the filter
            choice, grid_fps = FilterChoice(window_of(chosen), tuple(chosen["luma_chroma"])), "not timed"
        else:
            say(args.out, f"| {target:g} | {described(chosen)} | {chosen['fps']:.1f} | not in the grid's part | | | |")
            continue
        chosen_true = study.true_psnr(choice, clean, noisy, args.backend)
        if best is None:
            verdict, gap_text = "UNDECIDED: no window of the grid's part reaches it", ""
        else:
            gap = best["best"] - chosen_true
            verdict, gap_text = ("PASS" if gap <= GAP_DB and chosen["fps"] >= target else "FAIL"), f"{gap:.2f}"
        if len(rows) < GRID_WINDOWS:
            verdict += f" (on {len(rows)} of the grid's {GRID_WINDOWS} windows)"
        say(
            args.out,
            f"| {target:g} | {described(chosen)} | {chosen['fps']:.1f}; {grid_fps} | {chosen_true:.2f} | "
            f"{best_text} | {gap_text} | {verdict} |",
        )


def window_of(row: dict):
    return NLMParams(
        search_radius=row["search_radius"],
        frames_past=row["frames_past"],
        frames_future=row["frames_future"],
        patch_radius=row["patch_radius"],
    )


def window_text(window) -> str:
    return f"A {window.search_radius}, Dp {window.frames_past}, Df {window.frames_future}"


def as_tuned(choice, chosen: dict):
    """The grid's choice for the window, with the strengths the tune printed."""
    if chosen["luma_chroma"] is not None:
        h_luma, h_chroma, matrix = chosen["luma_chroma"]
        return dataclasses.replace(choice, luma_chroma=(h_luma, h_chroma, matrix))
    return dataclasses.replace(choice, params=dataclasses.replace(choice.params, h=chosen["h"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="1920x1080", help="WIDTHxHEIGHT (default 1920x1080)")
    parser.add_argument("--targets", default="25,60,120,240", help="frames a second (default 25,60,120,240)")
    parser.add_argument("--backend", default="gpu")
    parser.add_argument("--codec", default="h264", help="what the timed exports and the live output write")
    parser.add_argument("--playback", action="store_true", help="windows timed as tune --playback times them")
    parser.add_argument(
        "--live-tune", action="store_true", help="windows timed as tune --live times them (zero delay, fed live)"
    )
    parser.add_argument("--clip", default="textured pan", help="a clip of study_tune_for_fps.clean_clip")
    parser.add_argument("--live-fps", type=int, default=60)
    parser.add_argument("--live-seconds", type=float, default=10.0)
    parser.add_argument("--live-df", type=int, default=0, help="the live run's future frames (default 0: zero delay)")
    parser.add_argument("--live-preset", default="", help="the live output's encoder preset (default denoise's)")
    parser.add_argument("--tune-timeout", type=float, default=75.0, help="seconds one tune may take")
    parser.add_argument("--live-start-timeout", type=float, default=60.0, help="seconds the live command may warm up")
    parser.add_argument("--skip-grid", action="store_true", help="no truth grid (tunes and the live run only)")
    parser.add_argument(
        "--deadline", type=float, default=math.inf, help="seconds after which no grid window is begun (default none)"
    )
    parser.add_argument("--out", default="/tmp/out")
    args = parser.parse_args()
    args.out = Path(args.out)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.txt").write_text("")
    width, height = (int(v) for v in args.size.split("x"))
    targets = [float(v) for v in args.targets.replace(" ", ",").split(",") if v]
    say(args.out, f"device_tune_live: {width}x{height}, targets {targets}, backend {args.backend}, codec {args.codec}")
    with tempfile.TemporaryDirectory(prefix="device-tune-") as folder:
        clip, clean, noisy = study.make_clip(args.clip, height, width, Path(folder), suffix=".nut")
        noisy_psnr = np.mean([psnr(truth, frame) for truth, frame in zip(clean, noisy, strict=True)])
        say(  # the noisy frames' own score checks the truth: sigma 15 alone is about 24.6 dB
            args.out,
            f"clip {args.clip!r}: {len(clean)} frames, sigma {study.SIGMA:g}, uncompressed; the noisy frames "
            f"score {noisy_psnr:.2f} dB against the clean",
        )
        tunes = {target: run_tune(clip, target, args) for target in targets}
        chosen = live_tune(tunes, args.live_fps)
        if chosen is None:
            say(args.out, "live: no tune reached a rate; not run")
        else:
            run_live(noisy, chosen, args)
        if args.skip_grid:
            return
        say(args.out, "grid: every window timed as the tune times it and scored against the clean frames")
        until = started + args.deadline - VERDICT_SECONDS

        def shown(row: dict) -> None:
            say(
                args.out,
                f"grid {window_text(row['window'])}: {row['fps']:.1f} fps, SURE {row['sure']:.2f} dB, "
                f"true {row['true']:.2f} dB (best h {row['best']:.2f})",
            )

        timed_codec = None if args.playback else args.codec  # None: played, as tune --playback times
        rows, sigma = study.score_grid(
            clip, clean, noisy, args.backend, timed_codec, factors=FACTORS, pseudo=False, shown=shown, until=until
        )
        whole = len(rows) == GRID_WINDOWS
        part = "" if whole else f" PARTIAL: {len(rows)} of {GRID_WINDOWS} windows by the deadline (--deadline)"
        say(args.out, f"grid done{part}; the clip's noise estimated at sigma {sigma:.1f}")
        verdicts(tunes, rows, clean, noisy, args)
    say(args.out, "done")


if __name__ == "__main__":
    main()
