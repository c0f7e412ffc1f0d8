#!/usr/bin/env bash
# Run every repro of the catalog on this machine's interpreter (its own torch, on GPU 0)
# and leave the evidence in OUTDIR: the records (OUTDIR/results), the rendered page
# (OUTDIR/site), the matrix file they were made with (OUTDIR/matrix.yaml) and the machine's
# facts (OUTDIR/facts.txt: nvidia-smi, Python, torch, timings). Needs no network: the
# harness is installed from the wheelhouse scripts/gpu-wheelhouse.sh made (carried here
# with the checkout) into a throw-away venv that sees the interpreter's packages
# (--system-site-packages); nothing is installed into the interpreter itself.
#
# Usage: scripts/gpu-evidence.sh [--python PY] [--wheelhouse DIR] [--id STACK-ID] OUTDIR
#   --python PY       the interpreter with torch (default python3)
#   --wheelhouse DIR  default .gpu-wheelhouse/ at the top of the checkout
#   --id STACK-ID     the stack's id in the records (default gpu-<GPU model>-torch<version>,
#                     or cpu-torch<version> where no GPU answers)
# Time: each repro is stopped at GPU_EVIDENCE_TIMEOUT seconds (default 180), the whole run
# at GPU_EVIDENCE_STACK_TIMEOUT (default 400): with the install and the page, under 8 minutes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
started=$SECONDS
repro_timeout=${GPU_EVIDENCE_TIMEOUT:-180}
stack_timeout=${GPU_EVIDENCE_STACK_TIMEOUT:-400}
usage() { sed -n '10,16s/^# \{0,1\}//p' "$0" >&2; exit 2; }
die() { echo "gpu-evidence: $*" >&2; exit 2; }

python=python3 wheelhouse=$root/.gpu-wheelhouse id="" out=""
while [ $# -gt 0 ]; do
  case $1 in
    --python) python=${2:?--python needs an interpreter}; shift 2 ;;
    --wheelhouse) wheelhouse=${2:?--wheelhouse needs a folder}; shift 2 ;;
    --id) id=${2:?--id needs a stack id}; shift 2 ;;
    -h|--help) usage ;;
    -*) echo "gpu-evidence: unknown option $1" >&2; usage ;;
    *) [ -z "$out" ] || usage; out=$1; shift ;;
  esac
done
[ -n "$out" ] || usage

# ---- every check before any work
python=$(command -v "$python") || die "--python: '$python' is not found"
python=$(cd "$(dirname "$python")" && pwd)/$(basename "$python")  # absolute, links kept
[ -d "$wheelhouse" ] || die "no wheelhouse at $wheelhouse: run scripts/gpu-wheelhouse.sh where PyPI is reachable"
wheelhouse=$(cd "$wheelhouse" && pwd)
shopt -s nullglob
wheels=("$wheelhouse"/repromatrix-*.whl)
[ ${#wheels[@]} -eq 1 ] || die "$wheelhouse holds ${#wheels[@]} repromatrix wheels, not one: run scripts/gpu-wheelhouse.sh again"
have=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])') || die "$python does not run"
want=$(cat "$wheelhouse/python-version" 2>/dev/null) || die "$wheelhouse/python-version is missing: run scripts/gpu-wheelhouse.sh again"
[ "$have" = "$want" ] || die "$python is Python $have, the wheelhouse is for $want: scripts/gpu-wheelhouse.sh --python-version $have"
while read -r pkg; do
  [ -z "$pkg" ] || "$python" -c 'import importlib.metadata as m, sys; m.version(sys.argv[1])' "$pkg" 2>/dev/null \
    || die "$python lacks $pkg, which the wheelhouse leaves to the interpreter (see scripts/gpu-wheelhouse.sh): install it there"
done < "$wheelhouse/provided.txt"
mkdir -p "$out"
out=$(cd "$out" && pwd)
[ ! -e "$out/results" ] || die "$out/results exists: give an empty OUTDIR (nothing recorded is overwritten)"
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}  # GPU 0

echo "== facts of this machine ($out/facts.txt)"
facts=$out/facts.txt
{
  echo "date (UTC): $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "kernel: $(uname -srm)"
  echo "cpus: $(nproc)"
  echo "memory: $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo 2>/dev/null)"
  echo "interpreter: $python"
  echo "CUDA_VISIBLE_DEVICES: $CUDA_VISIBLE_DEVICES"
  "$python" - <<'EOF'
import importlib.metadata as m
import sys
print("python:", sys.version.replace("\n", " "))
for name in ("torch", "torchvision", "torch_tensorrt", "tensorrt", "onnx", "onnxscript", "numpy"):
    try:
        print(f"{name}: {m.version(name)}")
    except m.PackageNotFoundError:
        print(f"{name}: absent")
try:
    import torch
    print("torch.version.cuda:", torch.version.cuda)
    print("cudnn:", torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None)
    print("cuda available:", torch.cuda.is_available())
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        print(f"device {i}: {p.name}, capability {p.major}.{p.minor}, {p.total_memory / 2**30:.0f} GiB")
except Exception as e:  # the facts are written whatever torch does
    print("torch probe failed:", type(e).__name__, e)
EOF
  if command -v nvidia-smi >/dev/null; then
    echo; echo "nvidia-smi:"; timeout 60 nvidia-smi 2>&1 || true
  else
    echo "nvidia-smi: absent"
  fi
} > "$facts"
cat "$facts"

if [ -z "$id" ]; then
  gpu=$(sed -n 's/^device 0: \([^,]*\),.*/\1/p' "$facts")  # the GPU torch sees first
  torch=$(sed -n 's/^torch: //p' "$facts")
  slug=$(echo "${gpu#NVIDIA }" | tr '[:upper:]' '[:lower:]' | tr -cs 'a-z0-9.' '-' | sed 's/^-*//; s/-*$//')
  id=$([ -n "$slug" ] && echo "gpu-$slug" || echo cpu)-torch$torch
fi
echo "stack id: $id" >> "$facts"

echo "== the harness from $wheelhouse (no index)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pip=("$work/venv/bin/python" -m pip)
if ! "$python" -m venv --system-site-packages "$work/venv" > "$work/venv.log" 2>&1; then
  # no ensurepip (Debian's python3 without python3-venv): the interpreter's own pip installs
  rm -rf "$work/venv"
  "$python" -m venv --system-site-packages --without-pip "$work/venv"
  "$python" -m pip --version > /dev/null 2>&1 \
    || { cat "$work/venv.log" >&2; die "$python makes no venv with pip and has no pip of its own"; }
  pip=("$python" -m pip --python "$work/venv/bin/python")
fi
# an interpreter that is itself a venv: its packages are seen as a plain interpreter's are
"$python" - "$work/venv" <<'EOF'
import glob, site, sys
if sys.prefix != sys.base_prefix:
    (pth,) = glob.glob(sys.argv[1] + "/lib/python*/site-packages")
    open(pth + "/_interpreter.pth", "w").write("".join(p + "\n" for p in site.getsitepackages()))
EOF
"${pip[@]}" install --isolated --no-index --find-links "$wheelhouse" \
  --disable-pip-version-check --quiet "${wheels[0]}" > "$out/install.log" 2>&1 \
  || { cat "$out/install.log" >&2
       die "installing the harness from $wheelhouse failed (above): is a package it leaves to the interpreter ($wheelhouse/provided.txt) too old there?"; }
repromatrix=$work/venv/bin/repromatrix
echo "harness: $("$repromatrix" --version)" | tee -a "$facts"

cat > "$out/matrix.yaml" <<EOF
# Written by scripts/gpu-evidence.sh: every repro of the catalog on this machine's
# interpreter, as it is (facts.txt beside this file).
repros: all
stacks:
  - {kind: local, id: "$id", interpreter: "$python"}
EOF

echo "== every repro on $python (each at most ${repro_timeout}s, all at most ${stack_timeout}s)"
rc=0
"$repromatrix" run --matrix "$out/matrix.yaml" --all --results "$out/results" \
  --timeout "$repro_timeout" --stack-timeout "$stack_timeout" || rc=$?
echo "run: exit $rc, $((SECONDS - started)) s" | tee -a "$facts"

echo "== the page ($out/site)"
"$repromatrix" report --matrix "$out/matrix.yaml" --results "$out/results" --out "$out/site" || rc=$?
echo "done: exit $rc, $((SECONDS - started)) s in all" | tee -a "$facts"
exit "$rc"
