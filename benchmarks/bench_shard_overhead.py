"""Sharding overhead: the sum of N shard runs against one run of the same cells.

    python benchmarks/bench_shard_overhead.py [--shards 2] [--rounds 3]
        [--py214 .venvs/t214/bin/python] [--py213 .venvs/t213/bin/python]

The matrix is examples/cpu-only.yaml with its two stacks run as `local` stacks on
existing torch 2.14.1 / 2.13.0 interpreters (the same ids, so the same 10 cells; no
image or venv build, which a shard pays once per stack either way). Each round runs,
through the real command line and with fresh stores: one `run --all`, then
`run --shard K/N` for K = 1..N one after the other, then `report` over the N stores.
Overhead = (sum of shard times - one run) / one run: what splitting costs in machine
time (each shard loads the matrix, plans, probes its interpreters). The merge is timed
apart. Prints each round and the medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shards", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--py214", default=str(ROOT / ".venvs" / "t214" / "bin" / "python"))
    p.add_argument("--py213", default=str(ROOT / ".venvs" / "t213" / "bin" / "python"))
    return p.parse_args()


def local_matrix(dest: Path, pythons: dict[str, str]) -> Path:
    from repromatrix.config.matrix import load_matrix

    example = ROOT / "examples" / "cpu-only.yaml"
    doc = yaml.safe_load(example.read_text())
    doc["stacks"] = [{"kind": "local", "id": s.id, "interpreter": pythons[s.torch or ""]}
                     for s in load_matrix(example).stacks]
    path = dest / "cpu-local.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def timed(*args: str) -> float:
    env = {"PYTHONPATH": str(ROOT / "src")}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "repromatrix.cli", *args], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL, env={**os.environ, **env})
    return time.perf_counter() - start


def main() -> int:
    args = parse()
    ratios, merges = [], []
    with tempfile.TemporaryDirectory(prefix="bench-shard-") as tmp:
        base = Path(tmp)
        matrix = str(local_matrix(base, {"2.14.1": args.py214, "2.13.0": args.py213}))
        sel = ["--matrix", matrix, "--all", "--backend", "local"]
        for r in range(1, args.rounds + 1):
            one = timed("run", *sel, "--results", str(base / f"one-{r}"))
            shards = [timed("run", *sel, "--shard", f"{k}/{args.shards}",
                            "--results", str(base / f"r{r}-shard-{k}"))
                      for k in range(1, args.shards + 1)]
            stores = [str(base / f"r{r}-shard-{k}") for k in range(1, args.shards + 1)]
            merge = timed("report", "--results", *stores, "--out", str(base / f"site-{r}"))
            ratio = (sum(shards) - one) / one
            ratios.append(ratio)
            merges.append(merge)
            print(f"round {r}: one run {one:6.2f}s  {args.shards} shards "
                  f"{' + '.join(f'{s:.2f}' for s in shards)} = {sum(shards):6.2f}s  "
                  f"overhead {ratio:+.1%}  merge {merge:.2f}s")
    print(f"median overhead of {args.shards} shards: {statistics.median(ratios):+.1%} machine time; "
          f"median merge (report over {args.shards} stores): {statistics.median(merges):.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
