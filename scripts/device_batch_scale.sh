#!/usr/bin/env bash
# On a 4-GPU machine: a batch of 8 clips of 1080p H.264 on 1, 2 and 4 GPUs (one Dask worker a GPU).
set -u
python3 - <<'PY'
import av, numpy as np, pathlib
from concurrent.futures import ProcessPoolExecutor
root = pathlib.Path("/tmp/scale_in"); root.mkdir(exist_ok=True)
def make(k):
    rng = np.random.default_rng(k)
    base = (np.indices((1080, 1920)).sum(0) % 256).astype(np.uint8)[..., None].repeat(3, -1)
    with av.open(str(root / f"clip{k}.mp4"), "w") as c:
        s = c.add_stream("libx264", rate=30, options={"preset": "ultrafast", "crf": "16"}); s.width, s.height, s.pix_fmt = 1920, 1080, "yuv420p"
        for i in range(60):
            f = np.clip(np.roll(base, 4 * i, axis=1).astype(np.int16) + rng.normal(0, 10, base.shape), 0, 255).astype(np.uint8)
            for p in s.encode(av.VideoFrame.from_ndarray(f, format="rgb24")): c.mux(p)
        for p in s.encode(): c.mux(p)
with ProcessPoolExecutor(8) as pool: list(pool.map(make, range(8)))
print("8 clips of 60 frames, 1080p H.264")
PY
opts="--h 10 --noise none --codec h264 --preset ultrafast --backend gpu --quiet"
for gpus in 0 0,1 0,1,2,3; do
  start=$(date +%s.%N)
  CUDA_VISIBLE_DEVICES=$gpus python3 -m nlmeans_studio.engine batch /tmp/scale_in --out /tmp/scale_out_$gpus $opts > /tmp/scale_$gpus.log 2>&1
  end=$(date +%s.%N)
  echo "GPUs $gpus: $(python3 -c "print(f'{$end-$start:.1f} s, {480/($end-$start):.0f} fps')")  $(grep -c ' done' /tmp/scale_$gpus.log) files done"
  grep -E "^scheduler|worker" /tmp/scale_$gpus.log | head -2
done
python3 - <<'PY'
import av, numpy as np
def frames(p):
    with av.open(p) as c: return np.stack([f.to_ndarray() for f in c.decode(c.streams.video[0])])
same = all((frames(f"/tmp/scale_out_0/clip{k}.mp4") == frames(f"/tmp/scale_out_0,1,2,3/clip{k}.mp4")).all() for k in range(8))
print("outputs on 1 and 4 GPUs identical:", same)
PY
