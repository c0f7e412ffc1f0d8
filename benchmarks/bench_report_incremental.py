"""Benchmark: `report` from the store index, cold and after one new record, beside a full re-render.

    python benchmarks/bench_report_incremental.py [--repeat 3] [--baseline REV] [--skip-large]
                                                  [--older]

Issue 23's goals, measured side by side in one run: a cold render (into an empty
folder) of 10k distinct cells (< 1 s) and of 100k records, 10k cells x 10 runs (< 5 s);
a re-render into the same folder after one new record beside 100k records (< 0.5 s);
peak RSS < 500 MB at 100k. Stores are ``bench_report.write_store``'s (copies of real
records). The store's index is brought up to date before the timed renders (a real
store's index is kept current by each append); its first build is timed apart. The
first render makes every cell's pieces and keeps them (in the store's index before the
report kept its own cache; then in ``out/.render-cache.sqlite``; since a5672bc beside the
store's index, ``report.cache``): a cold render is a full render into a folder holding
nothing of a page, where a tree with a report cache finds the first render's (a copy of it
``CACHE`` for a tree that kept it in ``out``; since a5672bc, the store's own, and it copies
the chunks and the box's data from the first render's folder).
``--baseline REV`` renders the same stores with that revision's tree (default:
``FULL_RERENDER``, which re-renders everything every time). Each render is a fresh
process (wall time and its own peak RSS), from bytecode compiled beforehand for every
tree alike, as an installed harness runs (a machine that sets PYTHONDONTWRITEBYTECODE
would otherwise compile the harness's sources in every process: 0.1 s of each render).
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

from _measure import ROOT, env_with, load_average, measure, spread  # noqa: E402
from _measure import export as unpack  # noqa: E402
from bench_report import write_store  # noqa: E402

# Each snippet runs against the tree under test, which may be a revision from before the
# package moved into folders by stage (report.py, results.py, result.py at the top).
RENDER = ("import sys\nfrom pathlib import Path\n"
          "try:\n    from repromatrix.report.render import render_site\n"
          "except ImportError:\n    from repromatrix.report import render_site\n"
          "s = render_site([Path(sys.argv[1])], Path(sys.argv[2])); print(s.records, s.cells, "
          "len(getattr(s, 'rewritten', ())))")
APPEND = ("import json, sys\n"
          "try:\n    from repromatrix.store.record import Result\n"
          "    from repromatrix.store.results import ResultStore\n"
          "except ImportError:\n    from repromatrix.result import Result\n"
          "    from repromatrix.results import ResultStore\n"
          "ResultStore(sys.argv[1]).append(Result.from_dict(json.loads(sys.argv[2])))")
FULL_RERENDER = "e29dc51"  # the streaming loader, every file written on every render (issue 13)
CACHE = ".render-cache.sqlite"  # the report's cache beside its page (report.cache), where kept
INDEX = ("import sys; from repromatrix.store.index import StoreIndex; "
         "StoreIndex.open(sys.argv[1]).close()")


def export(rev: str, dest: Path) -> Path:
    """The harness of revision ``rev`` (``src`` and the page's ``report`` folder) in ``dest``."""
    # pyproject.toml and the runner (repros/harness/runner.py; repros/runner.py before the
    # harness had its own folder): what tells a harness it runs from a checkout
    # (and so reads the page's templates from report/)
    wanted = [p for p in ("src", "report", "pyproject.toml", "repros/runner.py",
                          "repros/harness/runner.py")
              if subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{rev}:{p}"],
                                capture_output=True).returncode == 0]
    return unpack(rev, dest, wanted)


def render(src: Path, store: Path, out: Path) -> tuple[float, float, str]:
    sample = measure([sys.executable, "-c", RENDER, str(store), str(out)], env_with(src))
    if sample.rc != 0:
        raise SystemExit(sample.output)
    if sample.output.split()[0] == "0":
        raise SystemExit(f"{src} rendered no record of {store}: the figures would mean nothing")
    return sample.seconds, sample.peak_rss_mb, sample.output.strip()


def new_record(store: Path, n: int) -> str:
    """A record of one existing cell in a new run, finished after everything in the store."""
    first = next((store / "bench").glob("run-0.jsonl")).open(encoding="utf-8").readline()
    rec = json.loads(first)
    rec.update(run_id=f"run-new-{n:03d}", status="crash" if n % 2 else "pass",
               started_at=f"2026-12-{n % 28 + 1:02d}T00:00:00+00:00",
               finished_at=f"2026-12-{n % 28 + 1:02d}T00:01:00+00:00")
    return json.dumps(rec)


def show(label: str, what: str, times: list[float], rss: list[float], goal: float | None,
         extra: str = "") -> bool:
    """Print one line of figures; whether the median meets ``goal`` (None: no goal)."""
    good = goal is None or statistics.median(times) < goal
    verdict = "" if goal is None else f" [{'OK' if good else 'MISSED'}: goal < {goal:g} s]{extra}"
    print(f"  {label}: {what} min/median/max {spread(times)} s, peak RSS "
          f"{spread(rss, '{:.0f}')} MB{verdict}", flush=True)
    return good


def bench(name: str, stacks: int, runs: int, args: argparse.Namespace, trees: dict[str, Path],
          tmp: Path, goal_cold: float, goal_again: float | None) -> bool:
    print(f"\n{name}: {stacks * 10 * runs} records ({runs} run(s) x {stacks * 10} cells)",
          flush=True)
    ok = True
    for number, (label, src) in enumerate(trees.items()):
        ours = label == "index"
        store = tmp / f"store-{name}-{number}"
        # each tree reads records in the schema its own harness writes (an older harness
        # skips records of a newer schema, and would render nothing)
        warm = ours or args.baseline != FULL_RERENDER  # a tree that keeps the cells' pieces
        write_store(store, stacks, 10, runs, current=warm and not args.older)
        if warm:
            built = measure([sys.executable, "-c", INDEX, str(store)], env_with(src / "src"))
            print(f"  first index build {built.seconds:.2f} s, peak RSS {built.peak_rss_mb:.0f} MB "
                  "(not in the figures below)", flush=True)
        first = tmp / f"site-{name}-{number}-first"
        if warm:  # the first render of a store makes every cell's pieces and keeps them
            took, peak, _ = render(src / "src", store, first)
            print(f"  first render (every cell's pieces made and kept) {took:.2f} s, peak RSS "
                  f"{peak:.0f} MB (not in the figures below)", flush=True)
        cold, rss = [], []
        for i in range(args.repeat):
            out = tmp / f"site-{name}-{number}-{i}"
            if (first / CACHE).exists():  # the report's cache, warm, beside no page
                out.mkdir()
                shutil.copy(first / CACHE, out / CACHE)
            took, peak, _ = render(src / "src", store, out)
            cold.append(took)
            rss.append(peak)
            if i:
                shutil.rmtree(out)
        ok &= show(label, "cold render", cold, rss, goal_cold if ours else None)
        if goal_again is not None:
            again, rss, wrote = [], [], ""
            for i in range(args.repeat):
                added = measure([sys.executable, "-c", APPEND, str(store), new_record(store, i)],
                                env_with(src / "src"))
                if added.rc != 0:
                    raise SystemExit(added.output)
                took, peak, summary = render(src / "src", store, tmp / f"site-{name}-{number}-0")
                again.append(took)
                rss.append(peak)
                wrote = summary.split()[-1]
            ok &= show(label, "one new record, render into the same folder", again, rss,
                       goal_again if ours else None, f"; files rewritten: {wrote}")
        shutil.rmtree(store)
        for site in tmp.glob(f"site-{name}-{number}-*"):
            shutil.rmtree(site)
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", metavar="REV", default=FULL_RERENDER,
                    help="the revision whose full re-render is timed beside (default: "
                         f"{FULL_RERENDER}, the last tree that re-rendered everything every time)")
    ap.add_argument("--skip-large", action="store_true", help="only the 10k shape")
    ap.add_argument("--older", action="store_true",
                    help="stores written in the previous schema, every record upgraded when "
                         "read (a store older than the harness reading it)")
    args = ap.parse_args()
    print(load_average(), flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-report-inc-") as name:
        tmp = Path(name)
        kind = "full re-render" if args.baseline == FULL_RERENDER else "baseline"
        trees = {"index": ROOT, f"{kind} ({args.baseline})": export(args.baseline,
                                                                    tmp / "baseline")}
        for src in trees.values():  # bytecode for each tree, as an installed harness has
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(src / "src")],
                           check=True, capture_output=True)
        ok = bench("10k distinct cells", 1000, 1, args, trees, tmp, 1.0, None)
        if not args.skip_large:
            ok &= bench("100k records", 1000, 10, args, trees, tmp, 5.0, 0.5)
    print(load_average())
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
