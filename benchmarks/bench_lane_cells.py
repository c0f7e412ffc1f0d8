"""Benchmark: stand-in lane cells where PYTHONDONTWRITEBYTECODE is set (CI machines, images).

    python benchmarks/bench_lane_cells.py [--repeat N] [--baseline REV]

Runs ``repromatrix run --backend venv --standin tensorrt --rerun`` on torch-tensorrt 2.4.0
(PyPI's build) for three repros whose stand-in stages each run in a child interpreter
(nine such stages), this tree and ``--baseline`` alternately, each a fresh process with
``PYTHONDONTWRITEBYTECODE=1``. Both trees use the same environment (built once, first, in
the user's venv cache); before this tree's first run its ``.pycache`` is emptied, so the
first figure includes writing the bytecode and the others read it.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import ROOT, env_with, load_average, measure, spread  # noqa: E402

MATRIX = """\
defaults:
  python: "3.11"
  packages: []
repros: [ts_device_gpu_id, deform_conv2d_device, dynamo_require_full_compilation_ignored]
stacks:
  - {kind: pip, torch: "2.4", torch_tensorrt: "2.4.0", index: pypi, tags: [default]}
"""


def run_cells(src: Path, work: Path, results: str) -> tuple[float, float, int, str]:
    """One rerun of the lane cells with the harness of ``src``: wall s, CPU s, rc, output."""
    cmd = [sys.executable, "-m", "repromatrix.cli", "run", "--matrix", str(work / "matrix.yaml"),
           "--backend", "venv", "--standin", "tensorrt", "--rerun", "--results", str(work / results)]
    sample = measure(cmd, env={**env_with(src), "PYTHONDONTWRITEBYTECODE": "1"}, cwd=src.parent)
    return sample.seconds, sample.cpu_s, sample.rc, sample.output


def environment(output: str) -> Path | None:
    """The environment the run used, from its "reusing environment DIR" line."""
    for line in output.splitlines():
        if "environment /" in line:
            return Path(line.split("environment ", 1)[1].split()[0])
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", help="a git revision to time alternately (a worktree of it)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rm-lane-bench-"))
    (work / "matrix.yaml").write_text(MATRIX)
    trees = {"this tree": ROOT / "src"}
    if args.baseline:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(work / "base"),
                        args.baseline], check=True, capture_output=True)
        trees[args.baseline] = work / "base" / "src"
    try:
        print(f"# {load_average()}")
        first = run_cells(ROOT / "src", work, "build")  # builds the environment if needed
        env = environment(first[3])
        if first[2] != 0 or env is None:
            print(first[3][-3000:])
            return 1
        shutil.rmtree(env / ".pycache", ignore_errors=True)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        for _ in range(args.repeat):
            for name, src in trees.items():
                wall, cpu, rc, out = run_cells(src, work, name.replace(" ", "-"))
                if rc != 0:
                    print(out[-3000:])
                    return 1
                times[name].append((wall, cpu))
        for name, runs in times.items():
            walls = ", ".join(f"{w:.1f}" for w, _ in runs)
            print(f"{name:>12}: wall {walls} s (in order); CPU {spread([c for _, c in runs], '{:.1f}')} s")
        print(f"# {load_average()}")
    finally:
        if args.baseline:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(work / "base")], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
