#!/usr/bin/env bash
# Fill a wheelhouse for scripts/gpu-evidence.sh, on a machine that reaches PyPI: the
# harness's own wheel (built from this checkout) and every runtime dependency it needs, as
# binary wheels for the GPU machine's Python (CPython 3.12, manylinux x86-64 by default).
# Left out: torch, torchvision, triton and nvidia-* (the GPU machine's torch stays as it
# is) and numpy (pandas needs it; torchvision and onnx, which the repros run, need it too,
# so the GPU machine's interpreter has it: the evidence script checks). What is left out
# is written to DIR/provided.txt, the Python version to DIR/python-version.
#
# Usage: scripts/gpu-wheelhouse.sh [--python PY | --python-version X.Y] [--platform TAG] [DIR]
#   --python PY          take the Python version from this interpreter (the one the
#                        evidence will run on)
#   --python-version X.Y default 3.12
#   --platform TAG       the newest manylinux tag the machine takes (default
#                        manylinux_2_28_x86_64: torch's own wheels need glibc 2.28); older
#                        manylinux tags are accepted too
#   DIR                  default .gpu-wheelhouse/ at the top of the checkout (git ignores it)
# Ends by printing the folder's size; fails when it is over 20 MB (the GPU machine gets the
# working tree and this folder, 64 MiB in all).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
limit=$((20 * 1000 * 1000))
left_out_re='^(torch|torchvision|triton|numpy|nvidia-.*)$'  # normalised names
usage() { sed -n '10,20s/^# \{0,1\}//p' "$0" >&2; exit 2; }

version="" python="" platform=manylinux_2_28_x86_64 dir=""
while [ $# -gt 0 ]; do
  case $1 in
    --python) python=${2:?--python needs an interpreter}; shift 2 ;;
    --python-version) version=${2:?--python-version needs X.Y}; shift 2 ;;
    --platform) platform=${2:?--platform needs a tag}; shift 2 ;;
    -h|--help) usage ;;
    -*) echo "gpu-wheelhouse: unknown option $1" >&2; usage ;;
    *) [ -z "$dir" ] || usage; dir=$1; shift ;;
  esac
done
if [ -n "$python" ]; then
  [ -z "$version" ] || { echo "gpu-wheelhouse: give --python or --python-version, not both" >&2; exit 2; }
  version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])') \
    || { echo "gpu-wheelhouse: --python $python does not run" >&2; exit 2; }
fi
version=${version:-3.12}
[[ $version =~ ^3\.[0-9]+$ ]] || { echo "gpu-wheelhouse: Python version '$version' is not X.Y" >&2; exit 2; }
[[ $platform =~ ^manylinux_2_([0-9]+)_x86_64$ ]] \
  || { echo "gpu-wheelhouse: --platform '$platform' is not manylinux_2_N_x86_64" >&2; exit 2; }
glibc=${BASH_REMATCH[1]}
dir=${dir:-$root/.gpu-wheelhouse}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
abi=cp${version/./}
# every manylinux tag up to the given one: older pips do not widen a tag by themselves
platforms=(--platform manylinux2014_x86_64 --platform manylinux2010_x86_64 --platform manylinux1_x86_64)
for ((n = glibc; n >= 17; n--)); do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
target=(--only-binary=:all: --python-version "$version" --implementation cp --abi "$abi" "${platforms[@]}")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pip=(python3 -m pip)
if ! python3 -m pip --version >/dev/null 2>&1; then  # a venv made without pip (uv's, nox's)
  python3 -m venv "$tmp/pip" || { echo "gpu-wheelhouse: python3 has no pip and cannot make a venv with it" >&2; exit 2; }
  pip=("$tmp/pip/bin/python" -m pip)
fi
rm -f "$dir"/*.whl "$dir/provided.txt" "$dir/python-version"

echo "== the harness's wheel (from $root)"
# from a copy of what the wheel is made of (pyproject's readme and package-dir folders, as
# git sees them: no build/ left over from an earlier build, no __pycache__)
src=(pyproject.toml README.md src repros images report)
mkdir "$tmp/src"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git -C "$root" ls-files -z --cached --others --exclude-standard -- "${src[@]}" \
    | (cd "$root" && xargs -0 cp --parents -t "$tmp/src")
else
  (cd "$root" && cp -r "${src[@]}" "$tmp/src/")
fi
"${pip[@]}" wheel --no-deps --quiet --wheel-dir "$tmp/harness" "$tmp/src"
cp "$tmp"/harness/repromatrix-*.whl "$dir/"
wheel=$(echo "$dir"/repromatrix-*.whl)

echo "== its dependencies for CPython $version ($platform and older)"
"${pip[@]}" install --dry-run --ignore-installed --quiet --target "$tmp/none" \
  --report "$tmp/resolved.json" "${target[@]}" "$wheel"
python3 - "$tmp/resolved.json" "$left_out_re" "$tmp/pins.txt" "$dir/provided.txt" <<'EOF'
import json, re, sys
report, left_out, pins, provided = sys.argv[1:]
keep, skip = [], []
for item in json.load(open(report))["install"]:
    name = re.sub(r"[-_.]+", "-", item["metadata"]["name"]).lower()
    if name == "repromatrix":
        continue
    (skip if re.fullmatch(left_out, name) else keep).append(f"{name}=={item['metadata']['version']}")
open(pins, "w").write("".join(p + "\n" for p in keep))
open(provided, "w").write("".join(p.split("==")[0] + "\n" for p in skip))
print("left to the GPU machine's interpreter:", ", ".join(skip) or "nothing")
EOF
"${pip[@]}" download --no-deps --quiet --dest "$dir" "${target[@]}" -r "$tmp/pins.txt"
echo "$version" > "$dir/python-version"

find "$dir" -maxdepth 1 -type f -printf '  %10s  %f\n' | sort -k2
size=$(find "$dir" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
echo "$dir: $size bytes ($(awk -v s="$size" 'BEGIN {printf "%.1f", s / 1e6}') MB; limit 20 MB)"
if [ "$size" -gt "$limit" ]; then
  echo "gpu-wheelhouse: $dir is over 20 MB" >&2
  exit 1
fi
