"""Benchmark: render the compatibility site from 10,000 records (target: under 2 s).

    python benchmarks/bench_report.py [--stacks 100] [--repros 20] [--runs 5] [--repeat 3]

Two shapes by default: 100 stacks x 20 repros x 5 runs (history, 2,000 cells on the
page) and 500 stacks x 20 repros x 1 run (10,000 cells on the page). Records carry
realistic stages, tracebacks and environment probes. Writing the store is not timed;
loading, pivoting, rendering and writing the site are.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from repromatrix.model import TRACEBACK_LIMIT, Status  # noqa: E402
from repromatrix.report import render_site  # noqa: E402
from repromatrix.result import SCHEMA_VERSION, Result  # noqa: E402
from repromatrix.results import ResultStore  # noqa: E402

STATUSES = [s.value for s in Status]
TRACEBACK = ("Traceback (most recent call last):\n"
             + "".join(f'  File "/opt/site-packages/torch_tensorrt/dynamo/_compiler.py", line {i}, '
                       f"in compile\n    return _compile_module(gm, inputs, settings)\n"
                       for i in range(20))
             + "RuntimeError: Expected all tensors to be on the same device, but found at least "
               "two devices, cuda:0 and cpu!\n")[-TRACEBACK_LIMIT:]


def record(stack: int, repro: int, run: int) -> dict:
    sid, rid = f"pip-torch2.{stack}.0", f"repro_{repro:02d}"
    status = STATUSES[(stack * 7 + repro * 3 + run) % len(STATUSES)]
    return {
        "schema_version": SCHEMA_VERSION, "run_id": f"run-{run}", "cell": f"{sid}--{rid}",
        "stack": {"id": sid, "kind": "pip", "torch": f"2.{stack}.0", "torchvision": f"0.{stack}.0",
                  "torch_tensorrt": f"2.{stack}.0", "python": "3.11", "cuda": "12.4"},
        "repro": rid, "repro_sha256": "0" * 64, "cache_key": f"{sid}-{rid}", "status": status,
        "stages": [{"name": n, "status": status if n == "run" else "pass", "duration_s": 1.5,
                    "message": f"{n} finished", "evidence": {"engines": 1}}
                   for n in ("eager", "export", "compile", "run", "workaround")],
        "signature": "device-mismatch" if status == "fail" else None,
        "workaround": "pass" if status == "fail" else None,
        "message": f"{status}: Expected all tensors to be on the same device (cell {sid}--{rid})",
        "traceback": TRACEBACK if status in ("fail", "error") else "",
        "duration_s": 12.0, "exit_code": 0, "signal": None,
        "env": {"python": "3.11.9", "torch": f"2.{stack}.0+cu124", "torchvision": f"0.{stack}.0",
                "torch_tensorrt": f"2.{stack}.0", "tensorrt": "10.3.0", "cuda": "12.4",
                "cudnn": "9.1.0", "driver": "560.35", "gpu": "NVIDIA L4", "torch_git_version": "abc"},
        "image": {"tag": f"repromatrix/{sid}:0123456789ab", "id": "sha256:" + "ab" * 32},
        "backend": "docker", "harness_version": "0.1.0", "host": "bench",
        "started_at": f"2026-11-{run + 1:02d}T00:00:00Z", "finished_at": f"2026-11-{run + 1:02d}T00:01:00Z",
    }


def bench(stacks: int, repros: int, runs: int, repeat: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore(Path(tmp) / "store")
        for run in range(runs):
            for s in range(stacks):
                for r in range(repros):
                    store.append(Result.from_dict(record(s, r, run)))
        best = float("inf")
        for i in range(repeat):
            t0 = time.perf_counter()
            summary = render_site([store.root], Path(tmp) / f"site{i}")
            best = min(best, time.perf_counter() - t0)
        size = (Path(tmp) / "site0" / "index.html").stat().st_size
    n = stacks * repros * runs
    print(f"{n} records ({stacks} stacks x {repros} repros x {runs} runs; {summary.cells} cells): "
          f"render {best:.2f} s (best of {repeat}); index.html {size / 1e6:.1f} MB "
          f"[{'OK' if best < 2.0 else 'SLOW'}: target < 2 s]")
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stacks", type=int)
    ap.add_argument("--repros", type=int, default=20)
    ap.add_argument("--runs", type=int)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if args.stacks or args.runs:
        shapes = [(args.stacks or 100, args.repros, args.runs or 5)]
    else:
        shapes = [(100, 20, 5), (500, 20, 1)]
    times = [bench(s, r, n, args.repeat) for s, r, n in shapes]
    return 0 if all(t < 2.0 for t in times) else 1


if __name__ == "__main__":
    raise SystemExit(main())
