"""Benchmark: `report` at issue 13's sizes, with records copied from real ones.

    python benchmarks/bench_report.py [--repeat 5] [--large-repeat 3] [--skip-large] [--browser]

Shapes (issue 13's table): 10k records as 5 runs of 2k cells, 10k distinct cells
(goal < 1 s each); 100k records as 5 runs of 20k cells, 100k distinct cells (goal
< 5 s; page size and memory bounded). Records are the ten real records in
``benchmarks/data/real-records.jsonl`` (a run of the five repros on torch 2.14.1 and
2.13.0, ~5.7 KB each), copied with new stack ids, run ids, times and statuses.

Each render runs in a fresh process (so its peak RSS is its own); writing the store is
not timed. Prints min/median/max seconds, peak RSS, index.html size, the data chunks'
size and the whole site. ``--browser`` also times the 50 x 10 published matrix in
chromium: load, then a click until the drawer shows the cell.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "benchmarks" / "data" / "real-records.jsonl"
STATUSES = ["pass", "fail", "error", "crash", "timeout", "skip", "broken"]
CHILD = """
import resource, sys, time
sys.path.insert(0, {src!r})
from pathlib import Path
from repromatrix.report.render import render_site
t0, c0 = time.perf_counter(), time.process_time()
summary = render_site([Path({store!r})], Path({out!r}))
took, cpu = time.perf_counter() - t0, time.process_time() - c0
print(took, cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, summary.records, summary.cells)
"""


def templates() -> list[str]:
    return [line for line in REAL.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_store(root: Path, stacks: int, repros: int, runs: int, *, current: bool = False) -> int:
    """stacks x repros cells, ``runs`` runs each; record r of a run copies real record r % 10,
    as recorded (schema 2: every read upgrades it) or, with ``current``, in the schema the
    harness writes today (what a store of new runs holds)."""
    reals = [json.loads(line) for line in templates()]
    if current:
        from repromatrix.store.record import Result

        reals = [Result.from_dict(r).to_dict() for r in reals]
    written = 0
    for run in range(runs):
        path = root / "bench" / f"run-{run}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        day = f"2026-10-{run + 1:02d}"
        with open(path, "w", encoding="utf-8") as fh:
            for s in range(stacks):
                sid = f"pip-torch2.{s // 100}.{s % 100}-bench{s}"
                for r in range(repros):
                    rec = dict(reals[(s * repros + r) % len(reals)])
                    repro = f"{rec['repro']}_{r}"
                    rec.update(run_id=f"run-{run}", repro=repro, cell=f"{sid}--{repro}",
                               status=STATUSES[(s * 7 + r * 3 + run) % 7],
                               stack={**rec["stack"], "id": sid, "torch": f"2.{s // 100}.{s % 100}"},
                               started_at=f"{day}T00:00:00+00:00", finished_at=f"{day}T00:01:00+00:00")
                    fh.write(json.dumps(rec, sort_keys=True) + "\n")
                    written += 1
    return written


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def render_once(store: Path, out: Path) -> tuple[float, float, int, int, int]:
    """(wall s, CPU s, peak RSS bytes, records, cells) of one render in a fresh process."""
    code = CHILD.format(src=str(ROOT / "src"), store=str(store), out=str(out))
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    took, cpu, rss, records, cells = done.stdout.split()
    return float(took), float(cpu), int(rss), int(records), int(cells)


def bench(name: str, stacks: int, repros: int, runs: int, repeat: int, goal: float, tmp: Path) -> bool:
    store = tmp / f"store-{name}"
    n = write_store(store, stacks, repros, runs)
    store_mb = folder_size(store) / 1e6
    times, cpus, peak = [], [], 0
    out = tmp / f"site-{name}"
    for _ in range(repeat):
        took, cpu, rss, records, cells = render_once(store, out)
        times.append(took)
        cpus.append(cpu)
        peak = max(peak, rss)
    index = (out / "index.html").stat().st_size
    data = folder_size(out / "data")
    raw = sum(p.stat().st_size for p in out.glob("results.json*"))  # (.gz since 2026-11-29)
    site = folder_size(out)
    ok = statistics.median(times) < goal
    load = os.getloadavg()[0]
    print(f"{name}: {n} records ({runs} run(s) x {cells} cells; store {store_mb:.0f} MB) -> "
          f"render min/median/max {min(times):.2f}/{statistics.median(times):.2f}/{max(times):.2f} s "
          f"(n={repeat}; CPU min/median {min(cpus):.2f}/{statistics.median(cpus):.2f} s); "
          f"peak RSS {peak / 1e6:.0f} MB; index.html {index / 1e6:.2f} MB "
          f"({index / cells:.0f} B/cell); data chunks {data / 1e6:.1f} MB; results.json.gz "
          f"{raw / 1e6:.0f} MB; site {site / 1e6:.0f} MB "
          f"[{'OK' if ok else 'MISSED'}: goal < {goal:g} s] (load {load:.1f})",
          flush=True)
    shutil.rmtree(store)
    shutil.rmtree(out)
    return ok


def browser_timing(tmp: Path, repeat: int) -> None:
    """The 50 x 10 published matrix (3 runs of history) in chromium: load, then click -> drawer."""
    from playwright.sync_api import sync_playwright

    store = tmp / "store-browser"
    write_store(store, 50, 10, 3)
    out = tmp / "site-browser"
    render_once(store, out)
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
    loads, clicks = [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                     args=args)
        for _ in range(repeat):
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            t0 = time.perf_counter()
            page.goto((out / "index.html").as_uri())
            page.wait_for_load_state("load")
            loads.append(time.perf_counter() - t0)
            cell = page.locator("#matrix td.cell[data-cell] a").nth(255)
            cid = cell.evaluate("a => a.closest('td').dataset.cell")
            t0 = time.perf_counter()
            cell.click()
            page.wait_for_function("id => document.getElementById('d-title').textContent === id "
                                   "&& !document.getElementById('drawer').hidden", arg=cid)
            clicks.append(time.perf_counter() - t0)
            page.close()
        browser.close()
    total = [a + b for a, b in zip(loads, clicks, strict=True)]
    print(f"browser, 50 x 10 published matrix: load min/median/max {min(loads):.2f}/"
          f"{statistics.median(loads):.2f}/{max(loads):.2f} s; click -> drawer "
          f"{min(clicks) * 1000:.0f}/{statistics.median(clicks) * 1000:.0f}/{max(clicks) * 1000:.0f} ms; "
          f"index.html {(out / 'index.html').stat().st_size / 1e3:.0f} KB "
          f"[{'OK' if statistics.median(total) < 1 else 'MISSED'}: goal interactive < 1 s]")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="renders per 10k shape")
    ap.add_argument("--large-repeat", type=int, default=3, help="renders per 100k shape")
    ap.add_argument("--skip-large", action="store_true", help="only the 10k shapes")
    ap.add_argument("--browser", action="store_true", help="also time the 50 x 10 page in chromium")
    args = ap.parse_args()
    shapes = [("10k records, 5 runs x 2k cells", 200, 10, 5, args.repeat, 1.0),
              ("10k distinct cells", 1000, 10, 1, args.repeat, 1.0)]
    if not args.skip_large:
        shapes += [("100k records, 5 runs x 20k cells", 2000, 10, 5, args.large_repeat, 5.0),
                   ("100k distinct cells", 10000, 10, 1, args.large_repeat, 5.0)]
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        results = [bench(name, s, r, n, rep, goal, Path(tmp)) for name, s, r, n, rep, goal in shapes]
        if args.browser:
            browser_timing(Path(tmp), args.repeat)
    return 0 if all(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
