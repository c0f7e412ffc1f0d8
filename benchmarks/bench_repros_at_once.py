"""Benchmark: one stack's repros one at a time against several at once (the runner's --parallel).

    python benchmarks/bench_repros_at_once.py --python PY [--parallel N] [--repeat R]

Runs the harness's runner over the catalog's CPU-decided repros on the interpreter ``PY``
(e.g. torch 2.14.1 with torchvision, onnx and onnxscript), ``--parallel 1`` and ``--parallel N``
alternately, each into a fresh folder, and prints the wall times and whether both ways gave
every repro the same status (they must).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import ROOT, load_average, measure, spread  # noqa: E402

CPU_REPROS = ("export_dynamic_shapes_var_kwargs", "onnx_ts_rshift_signed",
              "onnx_dynamic_axes_names_dropped", "onnx_export_fallback_removed",
              "pt2e_quant_removed", "tv_masks_to_boxes_empty")


def one_run(python: str, parallel: int, out: Path) -> tuple[float, dict[str, str]]:
    cmd = [python, str(ROOT / "repros" / "harness" / "runner.py"), "--out", str(out),
           "--repros", ",".join(CPU_REPROS), "--parallel", str(parallel)]
    sample = measure(cmd)
    if sample.rc:
        raise SystemExit(f"runner exited {sample.rc}:\n{sample.output[-2000:]}")
    return sample.seconds, {r: json.loads((out / f"{r}.json").read_text())["status"]
                            for r in CPU_REPROS}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", required=True, help="a torch interpreter")
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    times: dict[int, list[float]] = {1: [], args.parallel: []}
    statuses: dict[int, dict[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            for n in times:
                seconds, got = one_run(args.python, n, Path(tmp) / f"{n}-{i}")
                times[n].append(seconds)
                statuses.setdefault(n, got)
                if got != statuses[n]:
                    raise SystemExit(f"--parallel {n} gave other statuses on run {i}: {got}")
    print(load_average())
    for n, values in times.items():
        print(f"--parallel {n}: {spread(values)} s (min / median / max of {args.repeat}), "
              f"{len(CPU_REPROS)} repros")
    same = statuses[1] == statuses[args.parallel]
    print("same statuses both ways:", same, statuses[1])
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
