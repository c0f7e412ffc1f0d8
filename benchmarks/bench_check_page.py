"""Benchmark: the page's check data (every answer the box can look up) from the published records.

    python benchmarks/bench_check_page.py [--repeat 3] [--baseline REV]

``report`` writes ``data/verdicts.js``: ``check``'s whole answer (every bug, the smallest
upgrade) for each combination the compatibility table allows and each NGC release, made by
``check.page`` from the records' verdict rows. This times that step alone
(``report.verdicts.write_verdicts``) inside a ``repromatrix report --results
results/published`` into a new folder, for this tree and for revision ``--baseline`` (its
sources exported with ``git archive``), alternately, each in a fresh process.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import ROOT, env_with, spread  # noqa: E402
from _measure import export as unpack  # noqa: E402

BASELINE = "882dab1"
TIMED = """
import sys, time
from repromatrix.cli import main
import repromatrix.report.render as render
inner = render.write_verdicts
spent = []
def timed(*args, **kwargs):
    start = time.perf_counter()
    try:
        return inner(*args, **kwargs)
    finally:
        spent.append(time.perf_counter() - start)
render.write_verdicts = timed
try:
    main(["report", "--results", sys.argv[1], "--out", sys.argv[2]])
except SystemExit:
    pass
print("SECONDS", spent[0])
"""


def export(rev: str, dest: Path) -> Path:
    """The sources, templates and catalog of revision ``rev`` (with its ``pyproject.toml``:
    a checkout, which reads them from there)."""
    return unpack(rev, dest, ["src", "report", "repros", "matrix.yaml", "pyproject.toml"])


def once(tree: Path, out: Path) -> float:
    done = subprocess.run([sys.executable, "-c", TIMED, str(ROOT / "results" / "published"),
                           str(out)], cwd=tree, capture_output=True, text=True,
                          env=env_with(tree / "src"))
    line = next((x for x in done.stdout.splitlines() if x.startswith("SECONDS")), None)
    if line is None:
        raise SystemExit(f"{tree}: no timing\n{done.stdout}\n{done.stderr}")
    return float(line.split()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", default=BASELINE)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {args.baseline: export(args.baseline, Path(tmp) / "baseline"), "this tree": ROOT}
        times: dict[str, list[float]] = {label: [] for label in trees}
        for n in range(args.repeat):
            for label, tree in trees.items():
                times[label].append(once(tree, Path(tmp) / f"out-{n}-{len(times[label])}-{id(tree)}"))
        for label, values in times.items():
            print(f"{label:>12}: data/verdicts.js {spread(values)} s (min/median/max, n={len(values)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
