"""A real bisect: where did fake-mode convolution start checking devices?

    python benchmarks/bisect_conv_device.py [--good 2.10.0] [--bad 2.14.1]
        [--venvs DIR] [--results DIR]

Runs ``repromatrix bisect --repro onnx_export_device --stage
fake_export_conv_mixed --backend venv`` (torch CUDA wheels from PyPI, no
torchvision / torch-tensorrt: CPU-only machines can run it) twice:

1. cold: fresh environment and results folders, so every probe builds a uv
   environment (downloads come from uv's own cache when it has them) and
   runs the repro;
2. warm: the same command again, which must reuse every recorded probe and
   build nothing.

(On torch 2.9.x an earlier stage of the repro aborts the process, so the
stage never runs there: ``--good 2.9.0`` stops at the bound check.)

Prints each run's progress lines, wall time and probe count, the search
bound (ceil(log2 n) + 2 for n candidates) and the final report. The
recorded output lives in benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from repromatrix.bisect.candidates import axis_versions

ROOT = Path(__file__).resolve().parents[1]


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--good", default="2.10.0")
    p.add_argument("--bad", default="2.14.1")
    p.add_argument("--venvs", type=Path, help="environment cache (default: a fresh temporary folder)")
    p.add_argument("--results", type=Path, help="results store (default: a fresh temporary folder)")
    return p.parse_args()


def bisect(args: argparse.Namespace, venvs: Path, results: Path, *extra: str) -> tuple[int, str, str, float]:
    cmd = [sys.executable, "-m", "repromatrix.cli", "bisect", "--repro", "onnx_export_device",
           "--stage", "fake_export_conv_mixed", "--good", args.good, "--bad", args.bad,
           "--backend", "venv", "--base", "torchvision=none", "--base", "torch_tensorrt=none",
           "--results", str(results), *extra]
    env = {**os.environ, "REPROMATRIX_VENV_DIR": str(venvs)}
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr, time.monotonic() - t0


def main() -> int:
    args = parse()
    tmp = Path(tempfile.mkdtemp(prefix="bisect-bench-"))
    venvs, results = args.venvs or tmp / "venvs", args.results or tmp / "results"
    versions = axis_versions("torch")
    n = versions.index(args.bad) - versions.index(args.good) + 1
    print(f"torch {args.good} .. {args.bad}: {n} candidates; bound ceil(log2 {n}) + 2 = "
          f"{math.ceil(math.log2(n)) + 2} probes")
    for label in ("cold", "warm"):
        rc, out, err, wall = bisect(args, venvs, results, "--json")
        if rc != 0:
            print(err[-3000:], file=sys.stderr)
            print(f"{label}: exit {rc}")
            return rc
        data = json.loads(out)
        probes = data["probes"]
        built = err.count("building environment")
        ran = err.count("running 1 repro")
        print(f"\n{label} run: {wall:.1f} s wall, {len(probes)} probes, {built} environments built, "
              f"{ran} cells run, {sum(p['reused'] for p in probes)} reused")
        for line in err.splitlines():
            if not line.startswith("    "):
                print("  " + line)
        print(f"  result: {data['result']}: last good {data['last_good']['version']}, "
              f"first bad {data['first_bad']['version']}")
    _, report, _, _ = bisect(args, venvs, results)
    print("\nreport (third run, text form):\n")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
