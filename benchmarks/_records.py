"""Results stores of any size, copied from real records (benchmarks only).

``data/real_records.jsonl`` holds the five records of one real run: the five
repros on torch 2.14.1 (CPU) through the local backend, 3.2 to 8.1 KB each
(6.2 KB mean), with their real stages, tracebacks and environment probes.
``fill`` replicates them under other stack ids and run ids, so a benchmark
store has the size and shape of a real one rather than of synthetic records.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

REAL = Path(__file__).resolve().parent / "data" / "real_records.jsonl"
STATUSES = ("pass", "fail", "error", "skip")


def real_records() -> list[dict]:
    return [json.loads(line) for line in REAL.read_text(encoding="utf-8").splitlines() if line]


def replicas(cells: int, runs: int, *, prefix: str = "hist") -> Iterator[tuple[str, dict]]:
    """``runs`` x ``cells`` records: (run id, record), run by run; cell i of run r is real
    record i % 5 under stack ``<prefix>-<i // 5>``, its status varying from run to run."""
    base = real_records()
    for run in range(runs):
        run_id = f"{prefix}-run-{run:04d}"
        day = f"2026-{1 + run // 28 % 12:02d}-{1 + run % 28:02d}"
        for i in range(cells):
            rec = dict(base[i % len(base)])
            sid = f"{prefix}-{i // len(base):05d}"
            rec["stack"] = {**rec["stack"], "id": sid}
            rec["cell"] = f"{sid}--{rec['repro']}"
            rec["run_id"] = run_id
            rec["cache_key"] = f"{sid}-{run:04d}"
            if (i + run) % 3 == 0:
                rec["status"] = STATUSES[(i + run) % len(STATUSES)]
            rec["started_at"] = f"{day}T01:00:00+00:00"
            rec["finished_at"] = f"{day}T01:{i % 60:02d}:{run % 60:02d}+00:00"
            yield run_id, rec


def fill(root: Path, cells: int, runs: int, *, prefix: str = "hist", host: str = "bench") -> int:
    """Write ``cells`` x ``runs`` replicated records under ``root/<host>/<run id>.jsonl``."""
    folder = root / host
    folder.mkdir(parents=True, exist_ok=True)
    current, fh, n = None, None, 0
    try:
        for run_id, rec in replicas(cells, runs, prefix=prefix):
            if run_id != current:
                if fh:
                    fh.close()
                current, fh = run_id, (folder / f"{run_id}.jsonl").open("w", encoding="utf-8")
            fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")
            n += 1
    finally:
        if fh:
            fh.close()
    return n


def size_of(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*.jsonl"))
