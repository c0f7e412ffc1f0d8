"""The store's index stays small: records and cell histories only (the report keeps its own
cache beside its page, ``report.cache``), under 2 KB per record."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from repromatrix.store.index import INDEX_NAME, StoreIndex

DATA = Path(__file__).resolve().parents[1] / "data" / "results" / "every_status"
LIMIT = 2048  # bytes of index per record


def write_store(root: Path, cells: int, runs: int) -> int:
    """``cells`` x ``runs`` copies of the golden records under other cells and runs."""
    base = [json.loads(line) for path in sorted(DATA.rglob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    written = 0
    for run in range(runs):
        folder = root / "host"
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / f"run-{run}.jsonl").open("w", encoding="utf-8") as fh:
            for n in range(cells):
                rec = dict(base[n % len(base)])
                sid = f"pip-gen{n:05d}"
                rec.update(stack={**rec["stack"], "id": sid}, cell=f"{sid}--{rec['repro']}",
                           run_id=f"run-{run}", cache_key=f"{sid}-{run}",
                           status=("pass", "fail", "error")[(n + run) % 3],
                           started_at=f"2026-10-{run + 1:02d}T00:00:00+00:00",
                           finished_at=f"2026-10-{run + 1:02d}T00:01:00+00:00")
                fh.write(json.dumps(rec, sort_keys=True) + "\n")
                written += 1
    return written


def test_the_index_keeps_under_2_kb_per_record(tmp_path):
    records = write_store(tmp_path, 1000, 3)
    with StoreIndex.open(tmp_path) as index:
        assert len(index.keys()) == 1000 and index.kept_records() == records
    with sqlite3.connect(tmp_path / INDEX_NAME) as db:  # what WAL holds, in the file
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = sum(p.stat().st_size for p in tmp_path.glob(INDEX_NAME + "*"))
    assert size / records < LIMIT, f"{size / records:.0f} bytes of index per record"
    with sqlite3.connect(tmp_path / INDEX_NAME) as db:  # none of the report's tables
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master "
                                                 "WHERE type = 'table'")}
    assert not tables & {"summaries", "pieces", "bodies"}
