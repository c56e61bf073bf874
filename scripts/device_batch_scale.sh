#!/usr/bin/env bash
# On a 4-GPU machine (issue 35): a batch of 8 clips of 1080p H.264 (FRAMES frames each, default 200),
# and one 4K H.264 clip (LONG_FRAMES, default 240, a keyframe a second) cut into segments of a
# second, each on 1, 2 and 4 GPUs (one Dask worker a GPU; SETS="0 0,1,2,3" for 1 and 4 alone). OLD=DIR runs the tree in DIR (an
# `git archive REV engine gui resources` unpacked) after this one, on 4 GPUs and 1, in turn.
#     source scripts/device_env.sh && bash scripts/device_batch_scale.sh
set -u
FRAMES=${FRAMES:-200}
LONG_FRAMES=${LONG_FRAMES:-240}
SETS=${SETS:-"0 0,1 0,1,2,3"}
python3 - <<PY
import av, numpy as np, pathlib
from concurrent.futures import ProcessPoolExecutor

def clip(path, size, frames, seed, options):
    rng = np.random.default_rng(seed)
    height, width = size
    base = (np.indices(size).sum(0) % 256).astype(np.uint8)[..., None].repeat(3, -1)
    noise = [rng.normal(0, 10, base.shape).astype(np.int16) for _ in range(4)]
    pathlib.Path(path).parent.mkdir(exist_ok=True)
    with av.open(path, "w") as c:
        s = c.add_stream("libx264", rate=30, options={"preset": "ultrafast", "crf": "16", **options})
        s.width, s.height, s.pix_fmt = width, height, "yuv420p"
        for i in range(frames):
            f = np.clip(np.roll(base, 4 * i, axis=1).astype(np.int16) + noise[i % 4], 0, 255).astype(np.uint8)
            for p in s.encode(av.VideoFrame.from_ndarray(f, format="rgb24")): c.mux(p)
        for p in s.encode(): c.mux(p)

with ProcessPoolExecutor(9) as pool:
    jobs = [pool.submit(clip, f"/tmp/scale_in/clip{k}.mp4", (1080, 1920), $FRAMES, k, {}) for k in range(8)]
    jobs.append(pool.submit(clip, "/tmp/long4k/long.mp4", (2160, 3840), $LONG_FRAMES, 9, {"g": "30", "keyint_min": "30"}))
    [job.result() for job in jobs]
print("8 clips of $FRAMES frames at 1080p, one of $LONG_FRAMES frames at 4K, H.264")
PY
opts="--h 10 --noise none --codec h264 --preset ultrafast --backend gpu --quiet"
batch() {  # GPUS, INPUT, OUTPUT, FRAMES, [extra options]
  rm -rf "$3"
  local start end
  start=$(date +%s.%N)
  CUDA_VISIBLE_DEVICES=$1 python3 -m nlmeans_studio.engine batch "$2" --out "$3" $opts "${@:5}" > /tmp/scale.log 2>&1
  end=$(date +%s.%N)
  echo "GPUs $1: $(python3 -c "print(f'{$end - $start:.1f} s, {$4 / ($end - $start):.1f} fps')"), seconds a task:" \
    "$(grep -E ' (done|failed)' /tmp/scale.log | awk '{print $3}' | tr '\n' ' ')"
}
for gpus in $SETS; do echo -n "8 x 1080p, "; batch $gpus /tmp/scale_in /tmp/scale_out_$gpus $((8 * FRAMES)); done
for gpus in $SETS; do echo -n "4K in segments, "; batch $gpus /tmp/long4k /tmp/long_out $LONG_FRAMES --segment-seconds 1; done
if [ -n "${OLD:-}" ]; then
  source scripts/old_tree.sh
  old_tree_package "$OLD" /tmp/ns_old
  for gpus in 0,1,2,3 0; do
    echo -n "8 x 1080p, this tree, "; batch $gpus /tmp/scale_in /tmp/scale_out $((8 * FRAMES))
    echo -n "8 x 1080p, $OLD, "
    PYTHONPATH=${PYTHONPATH/\/tmp\/ns/\/tmp\/ns_old} batch $gpus /tmp/scale_in /tmp/scale_out $((8 * FRAMES))
  done
fi
python3 - <<'PY'
import av, numpy as np
def frames(p):
    with av.open(p) as c: return np.stack([f.to_ndarray() for f in c.decode(c.streams.video[0])])
same = all((frames(f"/tmp/scale_out_0/clip{k}.mp4") == frames(f"/tmp/scale_out_0,1,2,3/clip{k}.mp4")).all() for k in range(8))
print("8 x 1080p: outputs on 1 and 4 GPUs identical:", same)
PY
