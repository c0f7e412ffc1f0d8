"""Benchmark: the README's main command on a fresh machine, cold and warm.

    python benchmarks/bench_first_run.py [--cold-cache] [--keep DIR]

Goal (issue 25): on a 2-core CPU machine with PyPI reachable, the default-tagged stacks
end with site/index.html in under 20 minutes cold and under 5 s warm. It runs what
`nox -s matrix` runs (`repromatrix matrix` on the shipped matrix.yaml, default
selection) in three steps, each a fresh process with an empty environment cache
(``XDG_CACHE_HOME``, so no uv environment exists) and its own results folder:

1. ``repromatrix build``: the environments (what a cold machine downloads and installs);
2. ``repromatrix matrix``: the runs and the page (environments now cached);
3. ``repromatrix matrix`` again: the warm run (every cell current, only the page).

``--cold-cache`` also empties uv's package cache (every wheel downloaded again); without
it, wheels already in uv's cache are reused (a returning user). The figures, the cells'
statuses and what the closing summary says are printed for benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import ROOT, load_average, measure  # noqa: E402

COLD_GOAL_S = 20 * 60
WARM_GOAL_S = 5.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cold-cache", action="store_true", help="empty uv's package cache too")
    ap.add_argument("--keep", type=Path, help="work here and keep it (default: a temp folder)")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="rm-first-run-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache"), "PYTHONPATH": str(ROOT / "src")}
    if args.cold_cache:
        env["UV_CACHE_DIR"] = str(work / "uv-cache")
    out = ["--results", str(work / "results"), "--out", str(work / "site")]
    cli = [sys.executable, "-m", "repromatrix.cli"]
    print(f"# {load_average()}; work folder {work}")
    steps = [("environments (build)", [*cli, "build"]),
             ("runs + page (matrix)", [*cli, "matrix", *out]),
             ("warm (matrix again)", [*cli, "matrix", *out])]
    total = 0.0
    for name, cmd in steps:
        sample = measure(cmd, env=env, cwd=ROOT)
        total += sample.seconds if not name.startswith("warm") else 0.0
        print(f"{name:24} {sample.seconds:8.1f} s  rc {sample.rc}  peak RSS {sample.peak_rss_mb:.0f} MB")
        if sample.rc != 0:
            print(sample.output[-4000:])
        last = sample
    print(f"cold total (build + matrix): {total:.1f} s (goal < {COLD_GOAL_S} s); "
          f"warm: {last.seconds:.2f} s (goal < {WARM_GOAL_S} s)")
    statuses: dict[str, str] = {}
    for path in (work / "results").rglob("*.jsonl"):
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            statuses[rec["cell"]] = f"{rec['status']} ({rec.get('backend') or 'no engine'})"
    for cell, status in sorted(statuses.items()):
        print(f"  {cell}: {status}")
    print("closing summary of the warm run:")
    print("\n".join(line for line in last.output.splitlines()
                    if line.startswith(("decided here", "  ", "engine "))))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
