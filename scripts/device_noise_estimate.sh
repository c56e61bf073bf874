#!/usr/bin/env bash
# On a GPU machine (no ffmpeg tool there: the clip is made with PyAV): the noise estimate of 200 frames
# of 1080p H.264 on the host's CPUs, an older tree (.bench/old: git archive REV engine gui resources,
# unpacked) against this one, interleaved; the first round fills numba's cache.
set -u
source scripts/device_env.sh
out=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/device.txt"
nproc >> "$out/device.txt"
source scripts/old_tree.sh
old_tree_package .bench/old /tmp/ns_old
new=$PYTHONPATH; old=${PYTHONPATH/\/tmp\/ns/\/tmp\/ns_old}
python3 - <<'PY'
import av, numpy as np
rng = np.random.default_rng(1)
base = (np.indices((1080, 1920)).sum(0) % 256).astype(np.uint8)[..., None].repeat(3, -1)
noise = [rng.normal(0, 10, base.shape).astype(np.int16) for _ in range(4)]
with av.open("/tmp/clip1080.mp4", "w") as c:
    s = c.add_stream("libx264", rate=30, options={"preset": "ultrafast", "crf": "16"})
    s.width, s.height, s.pix_fmt = 1920, 1080, "yuv420p"
    for i in range(200):
        f = np.clip(np.roll(base, 4 * i, axis=1).astype(np.int16) + noise[i % 4], 0, 255).astype(np.uint8)
        for p in s.encode(av.VideoFrame.from_ndarray(f, format="rgb24")): c.mux(p)
    for p in s.encode(): c.mux(p)
PY
for tree in old new old new old new; do
  path=$new; [ $tree = old ] && path=$old
  start=$(date +%s.%N)
  PYTHONPATH=$path python3 -c "import sys; from nlmeans_studio.engine.cli.main import main; sys.exit(main(sys.argv[1:]))" estimate-noise /tmp/clip1080.mp4 --json > /tmp/e.json 2>/tmp/e.err
  end=$(date +%s.%N)
  echo "estimate 1080p 200 frames, $tree: $(python3 -c "print(f'{$end - $start:.2f} s')") $(cut -c1-60 /tmp/e.json) $(head -c 120 /tmp/e.err)" | tee -a "$out/estimate.txt"
done
