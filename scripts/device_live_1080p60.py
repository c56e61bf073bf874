"""Live 1080p60 on the GPU machine: a paced y4m stream into ``denoise - OUT --live``, twice (issue 37).

The "textured pan" clip at 1080p, 60 fps for SECONDS, the window of the journal (A 7, Dp 2, Df 0,
luma/chroma 7.19 / 6.13, H.264 at live's default preset); each run's frames, latency median and
95th percentile are printed (``device_tune_live.run_live``). The first run of a process loads the
kernels. Another tree: run it with PYTHONPATH pointing there (the command is a child process).

    source scripts/device_env.sh && python3 scripts/device_live_1080p60.py --out /tmp/out/live
"""

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import device_tune_live
import study_tune_for_fps as study

WINDOW = {"luma_chroma": (7.19, 6.13), "search_radius": 3, "frames_past": 2, "patch_radius": 1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="", help="a name printed before each run")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--out", default="/tmp/out/live")
    given = parser.parse_args()
    args = argparse.Namespace(
        out=Path(given.out), backend="gpu", codec="h264", live_df=0, live_preset="", live_fps=60,
        live_seconds=given.seconds, live_start_timeout=60.0,
    )  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        _, _, noisy = study.make_clip("textured pan", 1080, 1920, Path(folder), suffix=".nut")
        for run in range(given.runs):
            print(given.label, "run", run, flush=True)
            device_tune_live.run_live(noisy, WINDOW, args)


if __name__ == "__main__":
    main()
