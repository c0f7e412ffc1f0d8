"""Benchmark: the local backend against the bare runner on the same interpreter.

    python benchmarks/bench_local_overhead.py [--python PY] [--rounds 5]

Goal (issue 13): ``repromatrix run --backend local --python PY --rerun`` with the
five repros takes at most 1.05x ``PY repros/harness/runner.py --out DIR --repros ...`` (the
same runner: one environment probe, one process per repro). Each round runs both,
the order alternating between rounds; the ratio is taken per round. The harness's
fixed cost (process start, matrix, fingerprint, index) is shown by a no-op run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import ROOT, env_with, load_average, measure, spread  # noqa: E402

T214 = ROOT / ".venvs" / "t214" / "bin" / "python"
REPROS = ("deform_conv2d_device", "dynamic_unet_shapes", "onnx_export_device",
          "torchscript_device_mix", "ts_device_gpu_id")
GOAL = 1.05


def harness(python: str, results: Path, rerun: bool = True) -> list[str]:
    cmd = [sys.executable, "-m", "repromatrix.cli", "run", "--matrix", str(ROOT / "matrix.yaml"),
           "--backend", "local", "--python", python, "--results", str(results)]
    return cmd + ["--rerun"] if rerun else cmd


def direct(python: str, out: Path) -> list[str]:
    return [python, str(ROOT / "repros" / "harness" / "runner.py"), "--out", str(out),
            "--repros", ",".join(REPROS)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=str(T214))
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    env = env_with(ROOT / "src")
    print(load_average())
    with tempfile.TemporaryDirectory(prefix="bench-local-") as tmp:
        results = Path(tmp) / "results"
        h_times, d_times, ratios = [], [], []
        for i in range(args.rounds):
            order = ("h", "d") if i % 2 == 0 else ("d", "h")
            got = {}
            for which in order:
                if which == "h":
                    s = measure(harness(args.python, results), env)
                    if s.rc != 0 or "5 cell(s) run" not in s.output:
                        raise SystemExit(f"harness run failed:\n{s.output}")
                else:
                    s = measure(direct(args.python, Path(tmp) / f"direct-{i}"), env)
                    done = [r for r in REPROS if (Path(tmp) / f"direct-{i}" / f"{r}.json").is_file()]
                    if s.rc != 0 or len(done) != 5:
                        raise SystemExit(f"runner failed:\n{s.output}")
                got[which] = s.seconds
            h_times.append(got["h"])
            d_times.append(got["d"])
            ratios.append(got["h"] / got["d"])
            print(f"round {i + 1}: harness {got['h']:.2f} s, runner {got['d']:.2f} s, "
                  f"ratio {ratios[-1]:.3f}x")
        noop = [measure(harness(args.python, results, rerun=False), env).seconds for _ in range(5)]
    print(f"harness {spread(h_times)} s; runner {spread(d_times)} s (min/median/max of {args.rounds})")
    print(f"ratio harness/runner per round: {spread(ratios, '{:.3f}')}x; "
          f"median {statistics.median(ratios):.3f}x "
          f"[{'OK' if statistics.median(ratios) <= GOAL else 'MISSED'}: goal <= {GOAL}x]")
    print(f"ratio of the medians {statistics.median(h_times) / statistics.median(d_times):.3f}x, "
          f"of the minimums {min(h_times) / min(d_times):.3f}x")
    print(f"the harness's fixed cost, as a no-op run of the same command: {spread(noop)} s")
    print(load_average())
    return 0 if statistics.median(ratios) <= GOAL else 1


if __name__ == "__main__":
    raise SystemExit(main())
