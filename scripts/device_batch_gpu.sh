#!/usr/bin/env bash
# On the GPU machine: the batch on the GPU (one Dask worker pinned to the GPU) against denoise.
set -u
python3 - <<'PY'
import av, numpy as np, pathlib
root = pathlib.Path("/tmp/batch_in"); (root / "sub").mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(1)
for name in ("one.mkv", "sub/two.mkv", "three.mkv"):
    with av.open(str(root / name), "w") as c:
        s = c.add_stream("ffv1", rate=25); s.width, s.height, s.pix_fmt = 640, 360, "yuv420p"
        base = rng.integers(0, 255, (360, 640, 3), dtype=np.uint8)
        for i in range(24):
            f = np.clip(base.astype(np.int16) + rng.normal(0, 12, base.shape), 0, 255).astype(np.uint8)
            for p in s.encode(av.VideoFrame.from_ndarray(f, format="rgb24")): c.mux(p)
        for p in s.encode(): c.mux(p)
PY
opts="--h 12 --codec ffv1 --backend gpu"
time python3 -m nlmeans_studio.engine batch /tmp/batch_in --out /tmp/batch_out $opts 2>&1 | tail -12
for name in one.mkv sub/two.mkv three.mkv; do
  python3 -m nlmeans_studio.engine denoise /tmp/batch_in/$name /tmp/ref_${name//\//_} $opts --quiet
done
python3 - <<'PY'
import av, numpy as np
def frames(p):
    with av.open(p) as c: return np.stack([f.to_ndarray() for f in c.decode(c.streams.video[0])])
for name in ("one.mkv", "sub/two.mkv", "three.mkv"):
    a, b = frames(f"/tmp/batch_out/{name}"), frames("/tmp/ref_" + name.replace("/", "_"))
    print(name, a.shape, "identical to denoise" if a.shape == b.shape and (a == b).all() else f"DIFFERENT max {np.abs(a.astype(int)-b).max()}")
PY
