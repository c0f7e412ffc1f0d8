"""Benchmark: issue 42's four times of `repromatrix report`, this tree beside another, alternately.

    python benchmarks/bench_report_goals.py [--repeat 5] [--large-repeat 3] [--baseline REV]
                                            [--skip-large]

Each figure is the whole command as a user runs it (``python -m repromatrix.cli report
--results STORE --out OUT``, from the tree's own checkout, so its matrix and catalog),
bytecode compiled beforehand for both trees, each tree on its own copy of the same store
(``bench_report.write_store(STORE, 1000, 10, RUNS, current=True)``):

    10k no index        RUNS 1: no ``.index.sqlite`` and no report cache (a store restored
                        from a branch), into an empty folder                        < 3 s
    10k new --out       the same store indexed and rendered before, into an empty folder,
                        the folder rendered before still there                      < 1.5 s
    10k new --out, the earlier folder gone   (the same, that folder deleted first)
    100k no index       RUNS 10, as the first                                       < 10 s
    one new record      beside the 100k: one record of a new run appended
                        (``ResultStore.append``, a new run's file; a pass, then a crash),
                        into the folder rendered before, twice after each cold render < 0.5 s

The packaged table's environments (``check.page.environments``) stay in the user's cache
between runs, as they do for a user after a first render.

Prints min / median / max wall seconds, CPU (user + system) and peak RSS per tree.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import ROOT, Sample, env_with, load_average, measure, spread  # noqa: E402
from _measure import export as unpack  # noqa: E402
from bench_report import write_store  # noqa: E402

BASELINE = "c35fe34"  # the tree before the report's cache moved beside the store's index
DERIVED = (".index.sqlite*", ".render-cache.sqlite*")  # what a store restored from a branch lacks
APPEND = ("import json, sys\nfrom repromatrix.store.record import Result\n"
          "from repromatrix.store.results import ResultStore\n"
          "ResultStore(sys.argv[1]).append(Result.from_dict(json.loads(sys.argv[2])))")


def report(tree: Path, store: Path, out: Path) -> Sample:
    sample = measure([sys.executable, "-m", "repromatrix.cli", "report", "--results", str(store),
                      "--out", str(out)], env_with(tree / "src"), cwd=tree)
    if sample.rc != 0 or "(0 cells" in sample.output:
        raise SystemExit(f"{tree}: report failed:\n{sample.output}")
    return sample


def forget(store: Path) -> None:
    for pattern in DERIVED:
        for path in store.glob(pattern):
            path.unlink()


def new_record(store: Path, n: int) -> str:
    """A record of one existing cell in a new run, finished after everything in the store."""
    with (store / "bench" / "run-0.jsonl").open(encoding="utf-8") as fh:
        rec = json.loads(fh.readline())
    day = f"2026-12-{n % 28 + 1:02d}"
    rec.update(run_id=f"run-new-{n:03d}", status="crash" if n % 2 else "pass",
               started_at=f"{day}T00:00:00+00:00", finished_at=f"{day}T00:01:00+00:00")
    return json.dumps(rec)


def show(name: str, goal: float | None, found: dict[str, list[Sample]]) -> None:
    print(f"{name}:", flush=True)
    for label, samples in found.items():
        wall = [s.seconds for s in samples]
        met = "" if goal is None or label != "this tree" else \
            f"  [{'met' if statistics.median(wall) < goal else 'MISSED'}: < {goal:g} s]"
        print(f"  {label:>10}: wall {spread(wall)} s, CPU {spread([s.cpu_s for s in samples])} s, "
              f"peak RSS {spread([s.peak_rss_mb for s in samples], '{:.0f}')} MB{met}", flush=True)


def shape(runs: int, repeat: int, trees: dict[str, Path], tmp: Path, large: bool) -> None:
    stores = {}
    for n, label in enumerate(trees):
        stores[label] = tmp / f"store-{runs}-{n}"
        write_store(stores[label], 1000, 10, runs, current=True)
    cold: dict[str, list[Sample]] = {label: [] for label in trees}
    again: dict[str, list[Sample]] = {label: [] for label in trees}
    gone: dict[str, list[Sample]] = {label: [] for label in trees}
    added: dict[str, list[Sample]] = {label: [] for label in trees}
    for i in range(repeat):
        for n, (label, tree) in enumerate(trees.items()):  # alternately: the load falls on both
            store, first = stores[label], tmp / f"first-{n}"
            forget(store)
            shutil.rmtree(first, ignore_errors=True)
            cold[label].append(report(tree, store, first))
            if large:  # two new records, one at a time, rendered into the folder just made
                for k in range(2):
                    add = measure([sys.executable, "-c", APPEND, str(store),
                                   new_record(store, 2 * i + k)], env_with(tree / "src"))
                    if add.rc != 0:
                        raise SystemExit(add.output)
                    added[label].append(report(tree, store, first))
                continue
            out = tmp / f"again-{n}"
            shutil.rmtree(out, ignore_errors=True)
            again[label].append(report(tree, store, out))
            shutil.rmtree(out)
            shutil.rmtree(first)
            gone[label].append(report(tree, store, out))
            shutil.rmtree(out)
    size = "100k records" if large else "10k cells"
    show(f"{size}, no index", 10.0 if large else 3.0, cold)
    if large:
        show("one new record beside 100k, into the same folder", 0.5, added)
    else:
        show("10k indexed, new --out (the earlier folder kept)", 1.5, again)
        show("10k indexed, new --out (the earlier folder gone)", None, gone)
    for store in stores.values():
        shutil.rmtree(store)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--large-repeat", type=int, default=3)
    ap.add_argument("--baseline", metavar="REV", default=BASELINE)
    ap.add_argument("--skip-large", action="store_true", help="only the 10k shapes")
    args = ap.parse_args()
    print(load_average(), flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-report-goals-") as name:
        tmp = Path(name)
        base = unpack(args.baseline, tmp / "baseline",
                      ["src", "report", "repros", "matrix.yaml", "pyproject.toml"])
        trees = {"this tree": ROOT, args.baseline: base}
        for tree in trees.values():  # bytecode for each tree, as an installed harness has
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "src")],
                           check=True, capture_output=True)
        shape(1, args.repeat, trees, tmp, large=False)
        if not args.skip_large:
            shape(10, args.large_repeat, trees, tmp, large=True)
    print(load_average())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
