"""Docker backend overhead: one stack with M repros through the harness vs a hand-written loop.

    python benchmarks/bench_docker_overhead.py [--rounds N] [--repros a,b,c]
        [--base-image python:3.11-slim=LOCAL] [--find-links DIR] [--ca-bundle PEM]

The harness runs the stack's M repros in ONE container (runner + probe + one process
per repro, result files streamed back). The loop is what one would write by hand:
``docker run --rm IMAGE python /repros/X.py`` once per repro, on the same image.
Both use an image that is already built (built first if missing, not timed).
Target: harness <= 1.0x the loop. Prints each round and the median ratio.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from repromatrix.config.catalog import load_catalog
from repromatrix.config.matrix import Matrix
from repromatrix.config.options import RunOptions
from repromatrix.engines.docker.daemon import connect
from repromatrix.model import Plan, Settings, Stack, StackGroup
from repromatrix.run.cells import prepare_plan, run_plan

ROOT = Path(__file__).resolve().parents[1]
STACK = Stack(id="pip-bench-torch2.13.0-cpu", kind="pip", python="3.11", torch="2.13.0",
              index="pypi")


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repros", default="", help="comma-separated ids (default: the whole catalog)")
    p.add_argument("--base-image", default="python:3.11-slim=repromatrix-local/bookworm-python:3.11")
    p.add_argument("--find-links", default="/tmp/repromatrix-test-wheelhouse")
    p.add_argument("--ca-bundle", default="/etc/ssl/certs/ca-certificates.crt")
    return p.parse_args()


def settings_from(args: argparse.Namespace) -> Settings:
    public, _, local = args.base_image.partition("=")
    ca = args.ca_bundle if args.ca_bundle and Path(args.ca_bundle).is_file() else None
    return Settings(base_images={public: local} if local else {}, ca_bundle=ca,
                    find_links=(args.find_links,) if args.find_links else (), packages=(),
                    shm_size="1g")


def matrix_for(settings: Settings) -> Matrix:
    repros = ROOT / "repros"
    return Matrix(ROOT / "matrix.yaml", settings, (STACK,), load_catalog(repros), repros)


def harness_once(group: StackGroup, settings: Settings, work: Path) -> tuple[float, int]:
    options = RunOptions(backend="docker", results=work / f"results-{time.time_ns()}", work_dir=work)
    t0 = time.perf_counter()
    summary = run_plan(matrix_for(settings), Plan((group,)), options, log=lambda _line: None)
    return time.perf_counter() - t0, len(summary.results)


def loop_once(tag: str, repros: tuple[str, ...]) -> float:
    t0 = time.perf_counter()
    for rid in repros:
        subprocess.run(["docker", "run", "--rm", "--network", "none", "--shm-size", "1g",
                        "-v", f"{ROOT / 'repros'}:/repros:ro", tag, "python", f"/repros/{rid}.py"],
                       check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> int:
    args = parse()
    settings = settings_from(args)
    repros = tuple(r for r in args.repros.split(",") if r) or tuple(load_catalog(ROOT / "repros"))
    group = StackGroup(STACK, repros)
    connect()
    with tempfile.TemporaryDirectory(prefix="repromatrix-bench-") as tmp:
        work = Path(tmp)
        options = RunOptions(backend="docker", results=work / "results", work_dir=work)
        [image] = prepare_plan(matrix_for(settings), Plan((group,)), options)
        if not image.ok:
            print(f"build failed: {image.reason}\n{image.log_tail}", file=sys.stderr)
            return 1
        print(f"image {image.handle} ({'cached' if image.cached else 'built'}); M={len(repros)} "
              f"repros: {', '.join(repros)}")
        ratios = []
        for i in range(args.rounds):
            h, n = harness_once(group, settings, work)
            loop = loop_once(image.handle, repros)
            ratios.append(h / loop)
            print(f"round {i + 1}: harness {h:6.2f}s ({n} records)  loop {loop:6.2f}s  "
                  f"ratio {h / loop:.2f}x")
        start = _timed(["docker", "run", "--rm", "--network", "none", image.handle, "true"])
        probe = _timed(["docker", "run", "--rm", "--network", "none", "-v",
                        f"{ROOT / 'repros'}:/repros:ro", image.handle, "python", "/repros/harness/runner.py",
                        "--probe", "/tmp/env.json"])
    print(f"median ratio harness/loop: {statistics.median(ratios):.2f}x (target <= 1.0x)")
    print(f"fixed costs: container start {start:.2f}s; container + environment probe {probe:.2f}s "
          f"(the harness pays one probe, the loop one container start per repro)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
