#!/usr/bin/env bash
# Times `estimate-noise` (what `denoise` runs first with its defaults) on two clips the ffmpeg tool
# makes, this checkout against an older tree, interleaved, numba's cache warm for both.
# Usage: bash scripts/bench_noise_estimate.sh OLD_TREE [ROUNDS]
#   OLD_TREE: a folder with that version's engine/ gui/ resources/ (git archive COMMIT engine gui
#   resources | tar -x -C OLD_TREE); ROUNDS: old/new pairs per clip (default 2).
set -eu
source scripts/old_tree.sh
rounds=${2:-2}
python=${PYTHON:-.venv/bin/python}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
old_tree_package "$1" "$work/old"
# A test pattern at NTSC SD with noise, and 1080p with stronger noise, both H.264 as cameras write.
ffmpeg -loglevel error -f lavfi -i testsrc2=size=720x486:rate=30000/1001 -t 10 -vf noise=alls=10:allf=t \
  -c:v libx264 -preset veryfast -crf 18 -pix_fmt yuv420p "$work/sd.mp4"
ffmpeg -loglevel error -f lavfi -i "testsrc2=size=1920x1080:rate=25,noise=alls=12:allf=t" -t 4 \
  -c:v libx264 -preset veryfast -crf 20 -pix_fmt yuv420p "$work/hd.mp4"
estimate() {  # tree clip: prints seconds and the sigmas read
  local path=""
  [ "$1" = old ] && path=$work/old
  local start end
  start=$(date +%s.%N)
  PYTHONPATH=$path "$python" -c "import sys; from nlmeans_studio.engine.cli.main import main; sys.exit(main(sys.argv[1:]))" \
    estimate-noise "$2" --json > "$work/out.json"
  end=$(date +%s.%N)
  printf '%s %s %.2f s %s\n' "$1" "$(basename "$2")" "$(echo "$end - $start" | bc)" "$(cut -c1-40 "$work/out.json")"
}
for clip in "$work/sd.mp4" "$work/hd.mp4"; do
  estimate old "$clip" > /dev/null  # numba's cache filled for both trees
  estimate new "$clip" > /dev/null
  for _ in $(seq "$rounds"); do
    estimate old "$clip"
    estimate new "$clip"
  done
done
