#!/usr/bin/env bash
# On the GPU machine, in one call: issue 37's device targets (scripts/device_tune_live.py): tune at 1080p
# for 25, 60, 120 and 240 fps against the whole grid's truth, and a 1080p live stream at 60 fps.
#     bash scripts/device_tune_live.sh                      # logs in $OUT (else /tmp/out)
# Needs PyAV's cp312 wheel in .avwhl (carried). Overrides, for a small run on the CPU:
#     PYTHON=.venv/bin/python SIZE=320x240 FPS_TARGETS="5 10" LIVE_FPS=25 BACKEND=cpu bash scripts/device_tune_live.sh
# LIMIT bounds the whole run in seconds (default 270; no grid window is begun after LIMIT - 30 s, so the
# verdicts are printed, on a part of the grid if need be); CODEC (default h264) is what the timed exports and the
# live output write; LIVE_PRESET (the live output's H.264 preset, default denoise's: medium); LIVE_SECONDS
# (default 10), LIVE_DF (default 0), CLIP (default "textured pan"), PLAYBACK (set: the windows timed as
# tune --playback times them, decoded and filtered, nothing encoded),
# TUNE_TIMEOUT (seconds one tune may take, default 75).
set -u
cd "$(dirname "$0")/.."
if [ -z "${PYTHON:-}" ]; then  # the GPU machine: nlmeans_studio and PyAV from the checkout and the wheels
  source scripts/device_env.sh
  PYTHON=python3
fi
out=${OUT:-/tmp/out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | tee "$out/device.txt"
targets=${FPS_TARGETS:-25 60 120 240}
limit=${LIMIT:-270}
timeout -k 10 "$limit" "$PYTHON" scripts/device_tune_live.py \
  --size "${SIZE:-1920x1080}" --targets "${targets// /,}" --backend "${BACKEND:-gpu}" --codec "${CODEC:-h264}" ${PLAYBACK:+--playback} \
  --live-fps "${LIVE_FPS:-60}" --live-seconds "${LIVE_SECONDS:-10}" --live-df "${LIVE_DF:-0}" \
  --live-preset "${LIVE_PRESET:-}" \
  --clip "${CLIP:-textured pan}" --tune-timeout "${TUNE_TIMEOUT:-75}" --deadline $((limit - 30)) --out "$out" \
  2>&1 | tee "$out/device_tune_live.log"
status=${PIPESTATUS[0]}
[ "$status" = 124 ] && echo "device_tune_live: stopped at LIMIT=$limit s; what was done is in $out/summary.txt"
exit "$status"
