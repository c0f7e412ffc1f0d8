"""Benchmark: the whole `repromatrix report` on a store written as files, with no index yet.

    python benchmarks/bench_report_no_index.py [--repeat 3] [--baseline REV] [--skip-large]

A store restored from a git branch (the ``results`` branch of the matrix workflow) or
copied from shards holds its JSONL files and no ``.index.sqlite``: the first report
builds the index and makes every cell's pieces (no report cache either). Goals: 10k cells (one run) < 3 s and
100k records (10k cells x 10 runs) < 10 s, the index under 2 KB per record. Stores are
``bench_report.write_store``'s (copies of the ten real records, in today's schema, read
by both trees). Each render is a fresh ``python -m repromatrix.cli report --results STORE
--out OUT`` process run from the tree's own checkout (its matrix), into an empty folder,
after the store's index (and any render's files) are removed: wall time, CPU time (user
+ system) and peak RSS. ``--baseline REV`` (default a1cdc1f, the index that kept the
report's pieces) runs the same command from that revision's tree, alternately, on its
own copy of the same store.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import ROOT, env_with, load_average, measure, spread  # noqa: E402
from _measure import export as unpack  # noqa: E402
from bench_report import write_store  # noqa: E402

BASELINE = "a1cdc1f"
INDEX_LIMIT = 2048  # bytes of index per record


def export(rev: str, dest: Path) -> Path:
    """The harness of revision ``rev`` (its sources, page templates, repros and matrix)."""
    return unpack(rev, dest, ["src", "report", "repros", "matrix.yaml", "pyproject.toml"])


def size_of(folder: Path, pattern: str) -> int:
    return sum(p.stat().st_size for p in folder.rglob(pattern) if p.is_file())


def bench(name: str, stacks: int, runs: int, args: argparse.Namespace, trees: dict[str, Path],
          tmp: Path, goal: float) -> bool:
    records = stacks * 10 * runs
    print(f"\n{name}: {records} records ({runs} run(s) x {stacks * 10} cells)", flush=True)
    stores = {}
    for number, label in enumerate(trees):
        stores[label] = tmp / f"store-{name}-{number}"
        write_store(stores[label], stacks, 10, runs, current=True)
    print(f"  {size_of(stores[label], '*.jsonl') / 1e6:.0f} MB of records", flush=True)
    wall: dict[str, list[float]] = {label: [] for label in trees}
    cpu: dict[str, list[float]] = {label: [] for label in trees}
    rss: dict[str, list[float]] = {label: [] for label in trees}
    index: dict[str, int] = {}
    for _ in range(args.repeat):
        for label, tree in trees.items():  # alternately, so the machine's load falls on both
            store, out = stores[label], tmp / f"site-{name}"
            for path in [*store.glob(".index.sqlite*"), *store.glob(".render-cache.sqlite*")]:
                path.unlink()  # (the report's cache too: it lives beside the index since a5672bc)
            shutil.rmtree(out, ignore_errors=True)
            sample = measure([sys.executable, "-m", "repromatrix.cli", "report", "--results",
                              str(store), "--out", str(out)], env_with(tree / "src"), cwd=tree)
            if sample.rc != 0 or "(0 cells" in sample.output:
                raise SystemExit(f"{label} failed:\n{sample.output}")
            wall[label].append(sample.seconds)
            cpu[label].append(sample.cpu_s)
            rss[label].append(sample.peak_rss_mb)
            index[label] = size_of(store, ".index.sqlite*")
    ok = True
    for label in trees:
        ours = label == "this tree"
        per = index[label] / records
        good = statistics.median(wall[label]) < goal and per < INDEX_LIMIT
        verdict = f" [{'OK' if good else 'MISSED'}: goal < {goal:g} s, < 2 KB/record]" if ours else ""
        print(f"  {label}: wall {spread(wall[label])} s, CPU {spread(cpu[label])} s, peak RSS "
              f"{spread(rss[label], '{:.0f}')} MB; index {index[label] / 1e6:.1f} MB "
              f"({per:.0f} B/record){verdict}", flush=True)
        ok &= good or not ours
    for store in stores.values():
        shutil.rmtree(store)
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", metavar="REV", default=BASELINE,
                    help=f"the revision timed beside (default: {BASELINE})")
    ap.add_argument("--skip-large", action="store_true", help="only the 10k shape")
    args = ap.parse_args()
    print(load_average(), flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-report-no-index-") as name:
        tmp = Path(name)
        trees = {"this tree": ROOT, args.baseline: export(args.baseline, tmp / "baseline")}
        for src in trees.values():  # bytecode for each tree, as an installed harness has
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(src / "src")],
                           check=True, capture_output=True)
        ok = bench("10k distinct cells", 1000, 1, args, trees, tmp, 3.0)
        if not args.skip_large:
            ok &= bench("100k records", 1000, 10, args, trees, tmp, 10.0)
    print(load_average())
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
