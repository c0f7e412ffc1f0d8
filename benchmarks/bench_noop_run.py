"""Benchmark: a no-op `repromatrix run` (every cell current) against stores of 10k and 100k records.

    python benchmarks/bench_noop_run.py [--python PY] [--sizes 10000,100000] [--repeat 5]
                                        [--baseline REV]

Goal (issue 13): under 0.5 s and flat in store size. One real run of the five
repros with ``--backend local --python PY`` (torch 2.14.1 by default) records the
current cells; the store is then filled with history copied from real records
(``_records.py``): older runs of the same five cells and other cells' runs, up to
each size. Each timed run is a fresh ``python -m repromatrix.cli run`` process:
wall time and its peak RSS. The first run after the history arrives builds the
index (reported apart); the timed runs are the steady state. With ``--baseline``,
the same command from that revision's tree (before the index) runs alternately.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import ROOT, env_with, load_average, measure, spread  # noqa: E402
from _measure import export as unpack  # noqa: E402
from _records import fill, size_of  # noqa: E402

T214 = ROOT / ".venvs" / "t214" / "bin" / "python"
GOAL_S = 0.5


def export(rev: str, dest: Path) -> Path:
    """The harness (``src``, ``repros``, ``matrix.yaml``) of revision ``rev``, unpacked in ``dest``.
    Its matrix sits beside its own repros, so its cache keys are the working tree's."""
    # pyproject.toml: what tells a later harness it runs from a checkout (its repros/ beside)
    return unpack(rev, dest, ["src", "repros", "matrix.yaml", "pyproject.toml"])


def run_cmd(python: str, results: Path, tree: Path = ROOT) -> list[str]:
    return [sys.executable, "-m", "repromatrix.cli", "run", "--matrix", str(tree / "matrix.yaml"),
            "--backend", "local", "--python", python, "--results", str(results)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=str(T214), help="the interpreter of the local stack")
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--baseline", metavar="REV", help="also time this revision (e.g. 993cbdf)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-noop-") as tmp:
        work = Path(tmp)
        trees = {"index": ROOT}
        if args.baseline:
            trees[f"before ({args.baseline})"] = export(args.baseline, work / "baseline")
        seed = work / "seed"
        first = measure(run_cmd(args.python, seed), env_with(ROOT / "src"))
        if first.rc != 0 or "5 cell(s) run" not in first.output:
            print(first.output)
            raise SystemExit("the seeding run did not record the five cells")
        print(f"seeded: one real run of 5 repros with {args.python} ({first.seconds:.1f} s)")
        print(load_average())
        for size in sizes:
            ok &= bench_size(work, seed, size, trees, args)
        print(load_average())
    return 0 if ok else 1


def bench_size(work: Path, seed: Path, size: int, trees: dict[str, Path],
               args: argparse.Namespace) -> bool:
    store = work / f"store-{size}"
    subprocess.run(["cp", "-r", str(seed), str(store)], check=True)
    history = 20  # older runs of the five planned cells, with other cache keys
    n = fill(store, 5, history, prefix="old", host="older") + fill(
        store, (size - 5 - 5 * history) // 5, 5, prefix="hist")
    n += 5
    mb = size_of(store) / 1e6
    print(f"\n{n} records ({mb:.0f} MB of JSONL)")
    cold = measure(run_cmd(args.python, store), env_with(ROOT / "src"))
    _check(cold.output)
    print(f"  index: first run after the history arrived (builds the index): "
          f"{cold.seconds:.2f} s, peak RSS {cold.peak_rss_mb:.0f} MB")
    samples: dict[str, list] = {name: [] for name in trees}
    for _ in range(args.repeat):
        for name, tree in trees.items():
            s = measure(run_cmd(args.python, store, tree), env_with(tree / "src"))
            _check(s.output)
            samples[name].append(s)
    for name, got in samples.items():
        print(f"  {name}: no-op run {spread([s.seconds for s in got])} s "
              f"(min/median/max of {len(got)}), peak RSS {spread([s.peak_rss_mb for s in got], '{:.0f}')} MB")
    med = sorted(s.seconds for s in samples["index"])[len(samples["index"]) // 2]
    verdict = "OK" if med < GOAL_S else "MISSED"
    print(f"  [{verdict}: goal < {GOAL_S} s, flat in store size]")
    return med < GOAL_S


def _check(output: str) -> None:
    if "0 cell(s) run" not in output or "5 reused" not in output:
        print(output)
        raise SystemExit("not a no-op run: the five cells should all be reused")


if __name__ == "__main__":
    raise SystemExit(main())
