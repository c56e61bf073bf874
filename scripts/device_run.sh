#!/usr/bin/env bash
# Runs on the GPU machine (the device tool's `run`): GPU tests, then benchmarks, logs in $OUT.
# Usage: bash scripts/device_run.sh "PYTEST ARGS" "BENCH ARGS" ["BENCH ARGS" ...]
# Needs .bench/sample.npy (uint8 frames of the sample: the GPU machine has no PyAV) and, for
# --peers, the wheels of ../shared/tools/peer-wheels in .whl; for --pipeline, PyAV's cp312
# manylinux wheel in .avwhl (carried; .whl and .avwhl together exceed the carry limit).
set -u
source "$(dirname "$0")/device_env.sh"
out=${OUT:-/tmp/out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv | tee "$out/device.txt"
pytest_args=$1
shift
if [ -n "$pytest_args" ]; then
  eval python3 -m pytest -p no:cacheprovider "$pytest_args" 2>&1 | tail -n 60 | tee "$out/pytest.log"
fi
n=0
for bench_args in "$@"; do
  n=$((n + 1))
  python3 -m nlmeans_studio.engine bench --backend gpu --input .bench/sample.npy $bench_args 2>&1 | tee "$out/bench$n.log"
done
