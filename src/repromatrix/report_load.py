"""The report's view of the results store: latest record per cell, per-cell history, streamed.

Flow: results store -> **report_load** -> report. The report needs the latest
record of each cell in full, and of every other record only its ``store.Entry``
(status, run, time: for "previous run", the per-cell timeline and the Atom feed).
Records are streamed through the store's one reader (``store.parse``, its
damaged-line policy, ``store.Settler`` for copies and conflicts); only the
current latest line per cell is kept as raw bytes, and ``Reduced.results`` turns
those into ``Result`` objects one at a time (letting each raw line go), so memory
grows with cells, not with history.

The raw lines of every usable record are copied into ``results.json`` as they
stream past (``report_raw.RawSink``), so the published data stays complete.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .result import Result
from .store import (
    Conflict,
    Entry,
    Settler,
    Skipped,
    Span,
    TimeKey,
    entry,
    history,
    iter_result_files,
    loads,
    parse_upgraded,
    time_key,
)


@dataclass
class _Latest:
    time: TimeKey
    raw: bytes


@dataclass
class Reduced:
    """What the report reads from the store."""

    latest: dict[str, _Latest] = field(default_factory=dict)   # raw latest line per cell
    seen: dict[str, list[Entry]] = field(default_factory=dict)  # every kept record per cell
    skipped: list[Skipped] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    records: int = 0

    def previous(self, cell: str) -> str:
        """The status of the cell's latest record from a run other than its latest run."""
        latest = self.latest[cell].time[2]
        older = [e for e in self.seen.get(cell, ()) if e.run_id != latest]
        return max(older, key=time_key).status if older else ""

    def result(self, cell: str) -> Result:
        """The latest record of ``cell``, parsed."""
        return Result.from_dict(loads(self.latest[cell].raw))

    def results(self) -> Iterator[tuple[str, Result]]:
        """Every cell's latest record, parsed one at a time; each raw line is released."""
        for cell, found in self.latest.items():
            rec = Result.from_dict(loads(found.raw))
            found.raw = b""
            yield cell, rec


class Sink(Protocol):
    """Where usable records go as they stream past (report_raw.RawSink)."""

    def add(self, raw: str | None, data: dict[str, Any]) -> None: ...


def reduce_records(paths: Iterable[Path | str], sink: Sink | None = None) -> Reduced:
    """Stream every record under ``paths``; keep the latest per cell and what history needs."""
    files, missing = iter_result_files(paths)
    out = Reduced(skipped=list(missing))
    settler = Settler()
    for path in files:
        _read(path, out, settler, sink)
    kept, out.conflicts = settler.finish()
    out.records = len(kept)
    for e in kept:
        out.seen.setdefault(e.cell, []).append(e)
    return out


def _read(path: Path, out: Reduced, settler: Settler, sink: Sink | None) -> None:
    name = str(path)
    try:
        with path.open("rb") as fh:
            number = 0
            for raw in iter(fh.readline, b""):
                number += 1
                if not raw.strip():
                    continue
                parsed = parse_upgraded(raw, name, number)
                if isinstance(parsed, Skipped):
                    out.skipped.append(parsed)
                    continue
                data, upgraded = parsed
                e = entry(data, raw, f"{name}:{number}")
                if not settler.add(e):
                    continue  # the same record shipped twice counts once
                if sink is not None:
                    sink.add(None if upgraded else raw.strip().decode("utf-8"), data)
                current = out.latest.get(e.cell)
                if current is None or time_key(e) > current.time:
                    out.latest[e.cell] = _Latest(time_key(e), raw)
    except OSError as exc:
        out.skipped.append(Skipped(name, 0, f"cannot read: {exc.strerror or exc}"))


def status_changes(reduced: Reduced, keep: Callable[[str], bool] = lambda cell: True,
                   limit: int = 200) -> list[tuple[str, Span, Span]]:
    """Every status change in the store, newest first: (cell, before, after)."""
    out: list[tuple[str, Span, Span]] = []
    for cell, seen in reduced.seen.items():
        if not keep(cell):
            continue
        spans, _ = history(seen, limit=limit)
        out.extend((cell, a, b) for a, b in zip(spans, spans[1:], strict=False))
    out.sort(key=lambda c: (c[2].first_at, c[0]), reverse=True)
    return out[:limit]
