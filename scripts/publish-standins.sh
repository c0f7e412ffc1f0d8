#!/usr/bin/env bash
# Run the stand-in lane over every stack of results/published/matrix.yaml, one
# environment at a time (each ~4 GB), deleting each environment and its download
# cache after its cells are recorded (disk), then write the README's table of them
# (scripts/published-table.py). Usage: scripts/publish-standins.sh [STACK-GLOB...]
# (PUBLISH_RESULTS: another results folder, e.g. for a second run beside this one; its
# <host>/<run>.jsonl files are then copied into results/published/<host>/)
set -euo pipefail
cd "$(dirname "$0")/.."
matrix=results/published/matrix.yaml
work=${PUBLISH_WORK:-$(mktemp -d /tmp/repromatrix-publish.XXXXXX)}
mapfile -t stacks < <(repromatrix plan --matrix "$matrix" --all | awk 'NR>1 && / pip /{sub(/--.*/, "", $1); if (!seen[$1]++) print $1}')
for stack in "${stacks[@]}"; do
  if [ $# -gt 0 ]; then
    keep=0; for glob in "$@"; do [[ $stack == $glob ]] && keep=1; done
    [ $keep = 1 ] || continue
  fi
  echo "== $stack ($(date -u +%H:%M:%S))"
  REPROMATRIX_VENV_DIR="$work/venvs" UV_CACHE_DIR="$work/uv" \
    repromatrix run --matrix "$matrix" --all -k "$stack" --backend venv --standin tensorrt \
    --results "${PUBLISH_RESULTS:-results/published}" || echo "!! $stack: run exited $?"
  rm -rf "$work/venvs" "$work/uv"
done
rmdir "$work" 2>/dev/null || true
python3 scripts/published-table.py --write  # the README's table, from the records
