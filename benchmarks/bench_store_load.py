"""Benchmark: the loading part of `report` over 10k and 100k records, by the loader and by the index.

    python benchmarks/bench_store_load.py [--shapes 2000x5,10000x1,20000x5,100000x1] [--repeat 5]

Goal (issue 13): the whole report under 1 s at 10k records and under 5 s at
100k, memory bounded; this measures the loading part of that budget. Records are
copied from real ones (``_records.py``, 6.2 KB mean). Each measurement is a fresh
process; the time is the loading alone (taken inside it, with the cyclic GC paused as
``report.render.render_site`` pauses it), the memory the process's peak RSS:

    loader        store.results.load_records + latest_by_cell + previous_by_cell
    index, cold   no index yet: build it, then as below
    index         report.load.reduce_records (the report's load): every record's key fields
                  from the index through store.reader.Settler (copies, conflicts), history per
                  cell, every latest line read back (results.json.gz is not written here)
    index, keys   StoreIndex.open + keys(): the latest key fields only (run's reuse check)
    index, stream StoreIndex.open + iter_shown() consumed one record at a time (bisect)
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import ROOT, env_with, load_average, measure, spread  # noqa: E402
from _records import fill, size_of  # noqa: E402

MODES = ("loader", "index, cold", "index", "index, keys", "index, stream")
GOALS = {10_000: 1.0, 100_000: 5.0}


def child(mode: str, root: Path) -> None:
    """Load ``root`` one way; print seconds and how many latest/previous records were found."""
    from repromatrix.report.load import reduce_records
    from repromatrix.store.index import INDEX_NAME, StoreIndex
    from repromatrix.store.results import latest_by_cell, load_records, previous_by_cell

    if mode == "index, cold":
        for suffix in ("", "-wal", "-shm"):
            Path(str(root / INDEX_NAME) + suffix).unlink(missing_ok=True)
    gc.disable()  # as report.render.render_site does around its load
    t0 = time.perf_counter()
    if mode == "loader":
        loaded = load_records([root])
        latest, previous = latest_by_cell(loaded.records), previous_by_cell(loaded.records)
        n = (len(latest), len(previous), len(loaded.records))
    elif mode in ("index, keys", "index, stream"):
        with StoreIndex.open(root) as index:
            keys = index.keys() if mode == "index, keys" else dict(index.iter_shown())
            n = (len(keys), 0, 0)
    else:
        with reduce_records([root]) as reduced:
            n = (len(reduced.latest), sum(1 for c in reduced.latest if reduced.previous(c)),
                 reduced.records)
    seconds = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{seconds:.4f} {rss:.1f} {n[0]} {n[1]} {n[2]}")


def bench_shape(work: Path, cells: int, runs: int, repeat: int) -> bool:
    root = work / f"store-{cells}x{runs}"
    n = fill(root, cells, runs)
    print(f"\n{n} records as {runs} run(s) of {cells} cells ({size_of(root) / 1e6:.0f} MB of JSONL)")
    base = measure([sys.executable, "-c", "import repromatrix.store.index, repromatrix.store.results"],
                   env_with(ROOT / "src"))
    print(f"  (a process that only imports them: peak RSS {base.peak_rss_mb:.0f} MB)")
    measure([sys.executable, __file__, "--child", "index", str(root)], env_with(ROOT / "src"))
    times: dict[str, list[float]] = {m: [] for m in MODES}
    rss: dict[str, list[float]] = {m: [] for m in MODES}
    counts: dict[str, str] = {}
    for _ in range(repeat):
        for mode in MODES:
            s = measure([sys.executable, __file__, "--child", mode, str(root)], env_with(ROOT / "src"))
            if s.rc != 0:
                raise SystemExit(f"{mode} failed:\n{s.output}")
            secs, peak, *found = s.output.split()
            times[mode].append(float(secs))
            rss[mode].append(float(peak))
            counts[mode] = "/".join(found)
    for mode in MODES:
        print(f"  {mode:14} {spread(times[mode])} s, peak RSS {spread(rss[mode], '{:.0f}')} MB "
              f"(latest/previous/records {counts[mode]})")
    goal = GOALS.get(n)
    med = sorted(times["index"])[len(times["index"]) // 2]
    if goal:
        print(f"  index/loader median time: {med / sorted(times['loader'])[repeat // 2]:.2f}x; "
              f"the report's whole budget is {goal:g} s")
    return True


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], Path(sys.argv[3]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="2000x5,10000x1,20000x5,100000x1",
                    help="CELLSxRUNS, comma-separated")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(load_average())
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp:
        for shape in args.shapes.split(","):
            cells, runs = (int(x) for x in shape.split("x"))
            bench_shape(Path(tmp), cells, runs, args.repeat)
    print(load_average())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
