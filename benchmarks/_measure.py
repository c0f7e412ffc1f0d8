"""Timing and peak memory of child processes, and min/median/max summaries (benchmarks only)."""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Sample:
    seconds: float
    peak_rss_mb: float
    rc: int
    output: str
    cpu_s: float = 0.0  # user + system seconds of the process (its own, wait4)


def measure(cmd: Sequence[str], env: Mapping[str, str] | None = None,
            cwd: Path | None = None) -> Sample:
    """Run ``cmd``: its wall time and its own peak resident memory (``wait4``'s ru_maxrss)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, env=dict(env) if env else None,
                            cwd=str(cwd) if cwd else None)
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Sample(seconds, usage.ru_maxrss / 1024, proc.returncode, out.decode("utf-8", "replace"),
                  usage.ru_utime + usage.ru_stime)


def export(rev: str, dest: Path, paths: Sequence[str]) -> Path:
    """``paths`` of revision ``rev`` (``git archive``) unpacked in ``dest``, made here: a tree
    to run side by side with this one."""
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, *paths], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def spread(values: Sequence[float], fmt: str = "{:.2f}") -> str:
    """'min / median / max' of ``values``."""
    return " / ".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def env_with(src: Path) -> dict[str, str]:
    """The environment with ``src`` first on PYTHONPATH (a tree's harness, not the installed one)."""
    return {**os.environ, "PYTHONPATH": str(src)}


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"
