#!/usr/bin/env bash
# Source on the GPU machine (no pip install, no network): makes nlmeans_studio importable as a
# wheel installs it, and PyAV (.avwhl) and the peers (.whl) where their wheels were carried.
#     source scripts/device_env.sh && python3 scripts/bench_volume.py ...
# nlmeans_studio/{engine,gui,resources} as links to the checkout's folders, and vapoursynth to plugins/vapoursynth.
mkdir -p /tmp/ns/nlmeans_studio
for part in engine gui resources; do ln -sfn "$PWD/$part" "/tmp/ns/nlmeans_studio/$part"; done
ln -sfn "$PWD/plugins/vapoursynth" /tmp/ns/nlmeans_studio/vapoursynth
export PYTHONPATH=/tmp/ns PYTHONUNBUFFERED=1
if ls .avwhl/*.whl >/dev/null 2>&1; then  # PyAV, for --pipeline and the video tests
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .avwhl/*.whl
  export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  export PYTHONPATH=$PYTHONPATH:/tmp/site
  nv=$(python3 -c "import glob,sys;print(next(p for s in sys.path for p in glob.glob(s+'/nvidia/cu13/lib')))")
  for f in "$nv"/libnvrtc*.so*; do ln -sf "$f" /tmp/site/vapoursynth/plugins/vszipcu/; done
fi
