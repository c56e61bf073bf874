"""How far nlmeans_studio.vapoursynth.NLMeans lies from nlm_ispc.NLMeans, with the same arguments.

On the clips of tests/engine/test_vapoursynth.py (64x48, 5 frames, white noise of sigma 10
levels): per case the largest and mean difference of the pixels a + s inside the edges, the share
off by more than 0.01 level, the largest difference within a + s of the edges, and, with our
default temporal_ends="truncate", the largest difference on the clip's first and last frames; then
the RMS error against the clean picture per frame for both temporal_ends. Needs Python >= 3.12 with
the peers extra: .venv312/bin/python scripts/notebooks/compare_vapoursynth_nlm_ispc.py
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "engine"))
import test_vapoursynth as cases  # the tests' clips and cases

from nlmeans_studio.vapoursynth import NLMeans

vs, core = cases.vs, cases.core
RGB_CASES = [("RGBS", "RGB", 0, 6.0, (1, 2, 2), False), ("RGB24", "RGB", 2, 20.0, (1, 2, 2), False)]


def differences() -> None:
    print("format     channels wmode d a s rclip | interior max, mean, share > 0.01 | border max | ends max (levels)")
    for name, channels, wmode, h, (d, a, s), guided in cases.PEER_CASES + RGB_CASES:
        fmt = core.get_video_format(getattr(vs, name))
        clip = cases.clip_of(cases.planes_of(1, fmt), fmt)
        rclip = cases.clip_of(cases.planes_of(2, fmt), fmt) if guided else None
        arguments = dict(d=d, a=a, s=s, h=h, channels=channels, wmode=wmode, rclip=rclip)
        theirs = cases.planes_from(core.nlm_ispc.NLMeans(clip, **arguments))
        clamped = cases.planes_from(NLMeans(clip, **arguments, backend="cpu", temporal_ends="clamp"))
        truncated = cases.planes_from(NLMeans(clip, **arguments, backend="cpu"))
        planes = {"Y": [0], "UV": [1, 2], "AUTO": [0]}.get(channels, [0, 1, 2])
        margin = a + s
        inside, border, ends = [], [], []
        for n in range(cases.FRAMES):
            for plane in planes:
                difference = np.abs(clamped[n][plane] - theirs[n][plane])
                edge = np.ones(difference.shape, bool)
                edge[margin:-margin, margin:-margin] = False
                inside.append(difference[~edge])
                border.append(difference[edge])
                if n in (0, cases.FRAMES - 1):
                    ends.append(np.abs(cases.interior(truncated[n][plane] - theirs[n][plane], margin)))
        inside, border, ends = (np.concatenate([x.ravel() for x in group]) for group in (inside, border, ends))
        print(
            f"{name:10s} {channels:8s} {wmode}     {d} {a} {s} {'yes' if guided else 'no':5s} | "
            f"{inside.max():.5f}, {inside.mean():.6f}, {np.mean(inside > 0.01):.2%} | "
            f"{border.max():.2f} | {ends.max():.2f}"
        )


def ends_against_clean() -> None:
    fmt = core.get_video_format(vs.GRAYS)
    frames = cases.planes_of(1, fmt)
    clip = cases.clip_of(frames, fmt)
    rows, columns = np.mgrid[0 : cases.HEIGHT, 0 : cases.WIDTH] / 10.0
    clean = [(0.5 + 0.3 * np.sin(columns + t / 4) * np.cos(rows)) * 255 for t in range(cases.FRAMES)]
    noisy = [np.sqrt(np.mean(cases.interior(frames[t][0] * 255 - clean[t], 4) ** 2)) for t in range(cases.FRAMES)]
    print("GRAYS, d=1 a=2 s=2 h=6, RMS error inside the edges per frame (levels); noisy:", np.round(noisy, 2))
    theirs = cases.planes_from(core.nlm_ispc.NLMeans(clip, d=1, a=2, s=2, h=6.0))
    outputs = {"nlm_ispc": theirs}
    for ends in ("truncate", "clamp"):
        outputs[ends] = cases.planes_from(NLMeans(clip, d=1, a=2, s=2, h=6.0, backend="cpu", temporal_ends=ends))
    for label, output in outputs.items():
        errors = [np.sqrt(np.mean(cases.interior(output[t][0] - clean[t], 4) ** 2)) for t in range(cases.FRAMES)]
        print(f"  {label:9s}", np.round(errors, 2))


if __name__ == "__main__":
    differences()
    ends_against_clean()
