#!/usr/bin/env bash
# Source, then `old_tree_package OLD DEST`: DEST/nlmeans_studio becomes an older version of the
# package, for PYTHONPATH=DEST, to time it beside this checkout. OLD holds that version's engine/,
# gui/ and resources/ (git archive REV engine gui resources | tar -x -C OLD).
old_tree_package() {
  local old dest part
  old=$(realpath "$1")
  dest=$2
  mkdir -p "$dest/nlmeans_studio"
  for part in engine gui resources; do ln -sfn "$old/$part" "$dest/nlmeans_studio/$part"; done
  cp package/__init__.py "$dest/nlmeans_studio/__init__.py"
}
