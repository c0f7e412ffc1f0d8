"""The report stage's raw data, published beside the page (caniuse publishes its data too).

    out/results.json   every loaded record, plus what the loader skipped and the conflicts
    out/results.csv    the latest record per cell, flattened, spreadsheet-safe
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .results import Loaded

_CSV_FORMULA = ("=", "+", "@", "\t", "\r")


def write_raw(out: Path, loaded: Loaded, site: Mapping[str, Any]) -> None:
    """results.json (every record + skipped + conflicts) and results.csv (latest per cell)."""
    payload = {
        "generated_at": site["generated_at"], "records": [r.to_dict() for r in loaded.records],
        "skipped": [{"file": s.file, "line": s.line, "reason": s.reason} for s in loaded.skipped],
        "conflicts": [{"run_id": c.run_id, "cell": c.cell, "sources": list(c.sources),
                       "statuses": list(c.statuses), "kept": c.kept, "cache_key": c.cache_key}
                      for c in loaded.conflicts],
    }
    # no indent: the C encoder is ~10x faster, and one record a line is what tools diff anyway
    text = json.dumps(payload, default=str, ensure_ascii=False)
    (out / "results.json").write_text(text, encoding="utf-8")
    columns = ["cell", "stack", "repro", "status", "expected", "contradicted", "signature",
               "workaround", "message", "duration", "exit", "image", "run_id", "host",
               "backend", "started_at", "finished_at", "previous", "versions"]
    versions = {s["id"]: s["label"] for s in site["stacks"]}
    with open(out / "results.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        for c in site["cells"].values():
            row = {**c, "cell": c["id"], "versions": versions.get(c["stack"], "")}
            writer.writerow([_csv_safe(row.get(k, "")) for k in columns])


def _csv_safe(value: Any) -> Any:
    """Neutralise spreadsheet formulas in hostile text ('=cmd|...' -> "'=cmd|...")."""
    if isinstance(value, str) and value.startswith(_CSV_FORMULA):
        return "'" + value
    return value
