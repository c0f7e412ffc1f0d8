"""Benchmark: the per-record Python work of a first report, in one process, tree against tree.

    python benchmarks/bench_cell_summaries.py [--repeat 5] [--baseline REV]

A first report of 10k cells parses every shown record again, makes its ``Result`` and its
summary (``report.cell.record_summary``), and the index works out each record's versions
(``rules.versions.record_versions``). The whole command's wall time on a shared two-core VM
swings by a third from run to run (bench_report_no_index.py), which hides a change of a few
percent; this times the steps themselves on the same 10k records (``bench_report.write_store``,
one run of 1000 stacks x 10 repros), CPU seconds of the process, the best of ``--repeat``,
the cyclic GC paused as the report pauses it. Each tree runs in its own process
(``--baseline REV``: that revision's ``src``, from ``git archive``), alternately.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import ROOT, env_with, export, load_average  # noqa: E402

STEPS = ("parse", "from_dict", "record_summary", "record_versions")

CHILD = r"""
import gc, json, sys, time
from repromatrix.store.lines import record_data
from repromatrix.store.record import Result
from repromatrix.report.cell import record_summary
from repromatrix.rules.versions import record_versions
lines = open(sys.argv[1], "rb").read().splitlines()
repeat = int(sys.argv[2])
gc.disable()
best = {}
for _ in range(repeat):
    t0 = time.process_time(); data = [record_data(raw) for raw in lines]
    t1 = time.process_time(); results = [Result.from_dict(d) for d in data]
    t2 = time.process_time(); [record_summary(r) for r in results]
    t3 = time.process_time(); [record_versions(d.get("env"), d["stack"]) for d in data]
    t4 = time.process_time()
    for step, took in zip(("parse", "from_dict", "record_summary", "record_versions"),
                          (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
        best[step] = min(best.get(step, took), took)
    del data, results
print(json.dumps(best))
"""


def timed(src: Path, records: Path, repeat: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(records), str(repeat)],
                         env=env_with(src), check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", default="eaf110b~1", help="revision to compare with")
    args = parser.parse_args()
    from bench_report import write_store

    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        write_store(store, 1000, 10, 1, current=True)
        records = store / "bench" / "run-0.jsonl"
        baseline = export(args.baseline, Path(tmp) / "base", ["src"]) / "src"
        trees = {"this tree": ROOT / "src", args.baseline: baseline}
        print(f"10k records ({records.stat().st_size / 1e6:.0f} MB), {load_average()}")
        best: dict[str, dict[str, float]] = {label: {} for label in trees}
        for _ in range(2):  # each tree twice, alternately; the best of all
            for label, src in trees.items():
                for step, took in timed(src, records, args.repeat).items():
                    best[label][step] = min(best[label].get(step, took), took)
        print(f"{'step (CPU s, best)':22}" + "".join(f"{label:>14}" for label in trees))
        for step in (*STEPS, "total"):
            row = [sum(b.values()) if step == "total" else b[step] for b in best.values()]
            print(f"{step:22}" + "".join(f"{v:14.3f}" for v in row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
