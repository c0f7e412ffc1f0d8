"""The report stage's raw data, published beside the page (caniuse publishes its data too).

    out/results.json   every usable record (streamed as it is loaded), what was skipped, conflicts
    out/results.csv    the latest record per cell, flattened, spreadsheet-safe
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from .store import Conflict, Skipped

_CSV_FORMULA = ("=", "+", "@", "\t", "\r")
CSV_COLUMNS = ["cell", "stack", "repro", "status", "expected", "contradicted", "signature",
               "workaround", "message", "duration", "exit", "image", "run_id", "host",
               "backend", "started_at", "finished_at", "previous", "versions", "scope"]


class RawSink:
    """Streams usable records into ``results.json``: ``{"generated_at", "records": [...],
    "skipped", "conflicts"}``, one record a line (the line as stored when its schema is current)."""

    def __init__(self, fh: IO[str], generated_at: str) -> None:
        self.fh, self.count = fh, 0
        fh.write('{"generated_at": ' + json.dumps(generated_at) + ',\n"records": [\n')

    def add(self, raw: str | None, data: Mapping[str, Any]) -> None:
        text = raw if raw is not None else json.dumps(data, ensure_ascii=False, default=str)
        self.fh.write((",\n" if self.count else "") + text)
        self.count += 1

    def close(self, skipped: list[Skipped], conflicts: list[Conflict]) -> None:
        tail = {
            "skipped": [{"file": s.file, "line": s.line, "reason": s.reason} for s in skipped],
            "conflicts": [{"run_id": c.run_id, "cell": c.cell, "sources": list(c.sources),
                           "statuses": list(c.statuses), "kept": c.kept,
                           "cache_key": c.cache_key} for c in conflicts],
        }
        self.fh.write("\n],\n" + json.dumps(tail, ensure_ascii=False)[1:] + "\n")


def write_csv(out: Path, site: Mapping[str, Any]) -> None:
    """results.csv: the latest record per cell."""
    stacks = {s["id"]: s for s in site["stacks"]}
    with open(out / "results.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(CSV_COLUMNS)
        own = CSV_COLUMNS[1:-2]
        for c in site["cells"].values():
            stack = stacks.get(c["stack"], {})
            writer.writerow([_csv_safe(c["id"]), *[_csv_safe(c[k]) for k in own],
                             _csv_safe(stack.get("full_label", "")), stack.get("scope", "")])


def _csv_safe(value: Any) -> Any:
    """Neutralise spreadsheet formulas in hostile text ('=cmd|...' -> "'=cmd|...")."""
    if isinstance(value, str) and value.startswith(_CSV_FORMULA):
        return "'" + value
    return value
