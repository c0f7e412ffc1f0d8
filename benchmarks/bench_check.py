"""Benchmark: `repromatrix check`, from the shipped snapshot and against 100k-record stores.

    python benchmarks/bench_check.py [--repeat 5] [--shapes 20000x5,100000x1]

Goal: under 1 s a command, from the shipped snapshot and against a store of 100k records.
Each measurement is the whole command in a fresh process (``python -m repromatrix check``:
interpreter start, imports, reading the records, deciding, printing JSON), with the tree's
own harness first on PYTHONPATH. Stores are copies of the five real records of
``data/real_records.jsonl`` (torch 2.14.1, the five repros; ``_records.fill``) under new
stack and run ids: ``CELLSxRUNS`` is CELLS cells (CELLS / 5 stacks) recorded RUNS times.
"cold" is the first command on a store without its index (it builds the index: the store's
cost, paid once, by whichever command reads the store first); "warm" the ones after it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import ROOT, env_with, load_average, measure, spread  # noqa: E402
from _records import fill, size_of  # noqa: E402

PINS = ("torch==2.14.1", "torchvision==0.29.1")
REPORTED = ("torch==2.4.1", "torch-tensorrt==2.4.0", "torchvision==0.19.1")
GOAL = 1.0


def check(*args: str) -> tuple[float, float, dict]:
    """(wall s, CPU s, the JSON answer) of one `check` in a fresh process."""
    sample = measure([sys.executable, "-m", "repromatrix", "check", *args, "--format", "json"],
                     env=env_with(ROOT / "src"))
    if sample.rc not in (0, 1):
        raise SystemExit(f"check {' '.join(args)} exited {sample.rc}:\n{sample.output[-2000:]}")
    return sample.seconds, sample.cpu_s, json.loads(sample.output)


def report(name: str, walls: list[float], cpus: list[float], extra: str) -> bool:
    ok = sorted(walls)[len(walls) // 2] < GOAL
    print(f"{name}: wall min/median/max {spread(walls)} s, CPU {spread(cpus)} s (n={len(walls)})"
          f"; {extra} [{'OK' if ok else 'MISSED'}: goal < {GOAL:g} s]", flush=True)
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--shapes", default="20000x5,100000x1", help="CELLSxRUNS,...")
    args = ap.parse_args()
    print(load_average(), flush=True)
    results = []
    runs = [check(*REPORTED) for _ in range(args.repeat)]
    answer = runs[-1][2]
    results.append(report("snapshot (shipped)", [r[0] for r in runs], [r[1] for r in runs],
                          f"{answer['records']} cells, affected {answer['affected']}"))
    with tempfile.TemporaryDirectory() as tmp:
        for shape in args.shapes.split(","):
            cells, n_runs = (int(x) for x in shape.split("x"))
            store = Path(tmp) / f"store-{shape}"
            records = fill(store, cells, n_runs)
            cold = check(*PINS, "--results", str(store))
            runs = [check(*PINS, "--results", str(store)) for _ in range(args.repeat)]
            answer = runs[-1][2]
            results.append(report(
                f"store {records} records ({n_runs} run(s) x {cells} cells, "
                f"{size_of(store) / 1e6:.0f} MB), warm", [r[0] for r in runs], [r[1] for r in runs],
                f"cold (builds the index) {cold[0]:.2f} s; {answer['records']} cells read; "
                f"affected {answer['affected']}"))
    return 0 if all(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
