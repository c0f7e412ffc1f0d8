"""The report's view of the results store: latest record per cell, per-cell history, streamed.

Flow: results store -> **report_load** -> report. The report needs the latest
record of each cell in full, and of every other record only its status, run
and time (for "previous run", the per-cell timeline and the Atom feed). So
records are streamed: each line is parsed and checked exactly as
``results.read_file`` does, its (cell, run, status, time) kept, and only the
current latest line per cell kept as raw bytes; ``Reduced.results`` turns them into
``Result`` objects one at a time (and lets each raw line go), so a report holds a
compact view per cell, never every record. Memory grows with cells, not with history.

``cell_history`` is the one place the per-cell timeline is computed: when the
store gets an index (latest + history queries), it is what switches to it.

The raw lines of every usable record are copied into ``results.json`` as they
stream past (``report_raw.RawSink``), so the published data stays complete.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .result import REAL, STANDIN, Result, _problem, evidence_level, migrate
from .results import Conflict, Skipped, iter_result_files, store_of

try:  # a fast parser when installed; the standard library decides anything it refuses
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency
    _orjson = None

HISTORY_LIMIT = 50  # status segments kept per cell (newest); older ones are counted
TimeKey = tuple[str, str, str]


@dataclass(frozen=True)
class Seen:
    """One record of a cell, as history needs it."""

    time: TimeKey  # (finished_at, started_at, run_id): "later" compares as in results.py
    run_id: str
    status: str
    evidence: str = ""  # result.evidence_level


@dataclass(frozen=True)
class Segment:
    """A stretch of consecutive runs of one cell with the same status."""

    status: str
    first_run: str
    first_at: str
    last_run: str
    last_at: str
    runs: int
    evidence: str = ""  # result.evidence_level of its records ("standin": TensorRT stood in)


@dataclass
class _Cell:
    time: TimeKey
    raw: bytes
    source: str
    evidence: str = ""  # result.evidence_level: a real verdict outranks a stand-in one


def _replaces(evidence: str, time: TimeKey, current: _Cell | None) -> bool:
    """Whether a record becomes its cell's shown one: the latest, except that a verdict from
    real TensorRT is never replaced by one decided with TensorRT stood in, and always
    replaces one."""
    if current is None:
        return True
    if {evidence, current.evidence} == {REAL, STANDIN}:
        return evidence == REAL
    return time > current.time


@dataclass
class Reduced:
    """What the report reads from the store."""

    latest: dict[str, _Cell] = field(default_factory=dict)   # raw latest line per cell
    seen: dict[str, list[Seen]] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    records: int = 0

    def previous(self, cell: str) -> str:
        """The status of the cell's latest record from a run other than its latest run."""
        latest = self.latest[cell].time[2]
        older = [s for s in self.seen.get(cell, ()) if s.run_id != latest]
        return max(older, key=lambda s: s.time).status if older else ""

    def result(self, cell: str) -> Result:
        """The latest record of ``cell``, parsed."""
        return Result.from_dict(_loads(self.latest[cell].raw))

    def results(self) -> Iterator[tuple[str, Result]]:
        """Every cell's latest record, parsed one at a time; each raw line is released."""
        for cell, found in self.latest.items():
            rec = Result.from_dict(_loads(found.raw))
            found.raw = b""
            yield cell, rec


def _loads(raw: bytes) -> Any:
    if _orjson is not None:
        try:
            return _orjson.loads(raw)
        except _orjson.JSONDecodeError:
            pass  # lone surrogates, NaN, huge ints, bad UTF-8: let json decide and explain
    return json.loads(raw.decode("utf-8"))


class Sink(Protocol):
    """Where usable records go as they stream past (report_raw.RawSink)."""

    def add(self, raw: str | None, data: dict[str, Any]) -> None: ...


class _Reducer:
    def __init__(self, sink: Sink | None) -> None:
        self.out = Reduced()
        self.sink = sink
        self.cells: dict[str, _Cell] = {}
        self.copies: dict[tuple[str, str, int], list[tuple[bytes, str, str, TimeKey]]] = {}
        self.keys: dict[str, list[tuple[str, str, str, str, TimeKey]]] = {}  # cell -> cache key, ...

    def line(self, name: str, number: int, raw: bytes, last: bool) -> None:
        try:
            obj = _loads(raw)
        except UnicodeDecodeError:
            self.out.skipped.append(Skipped(name, number, "not valid UTF-8"))
            return
        except ValueError as exc:
            hint = "truncated last line (run interrupted?)" if last else "invalid JSON"
            self.out.skipped.append(Skipped(name, number, f"{hint}: {exc}"))
            return
        if not isinstance(obj, dict):
            self.out.skipped.append(Skipped(name, number, f"not a JSON object ({type(obj).__name__})"))
            return
        data = migrate(obj)
        problem = _problem(data)
        if problem:
            self.out.skipped.append(Skipped(name, number, problem))
            return
        self.record(f"{name}:{number}", raw, obj, data)

    def record(self, source: str, raw: bytes, obj: dict[str, Any], data: dict[str, Any]) -> None:
        cell, run_id, status = data["cell"], data["run_id"], data["status"]
        time = (str(data.get("finished_at") or ""), str(data.get("started_at") or ""), run_id)
        digest = hashlib.blake2b(raw, digest_size=12).digest()
        attempt = data.get("attempt") if isinstance(data.get("attempt"), int) else 1
        copies = self.copies.setdefault((run_id, cell, attempt), [])
        if any(d == digest for d, *_ in copies):
            return  # the same record shipped twice counts once
        if copies and any(_canonical(_line_at(src)) == _canonical(raw) for _, src, *_ in copies):
            return  # the same record, written differently by another writer
        copies.append((digest, source, status, time))
        self.out.records += 1
        if self.sink is not None:
            same = obj.get("schema_version") == data.get("schema_version")
            self.sink.add(raw.decode("utf-8") if same else None, data)
        evidence = evidence_level(status, data.get("stages") or [])
        self.out.seen.setdefault(cell, []).append(Seen(time, run_id, status, evidence))
        if data.get("cache_key") and status != "broken":
            self.keys.setdefault(cell, []).append((str(data["cache_key"]), status, source, run_id, time))
        if _replaces(evidence, time, self.cells.get(cell)):
            self.cells[cell] = _Cell(time, raw, source, evidence)

    def finish(self) -> Reduced:
        for key, copies in self.copies.items():
            if len(copies) > 1:
                kept = max(copies, key=lambda c: c[3])
                self.out.conflicts.append(Conflict(
                    run_id=key[0], cell=key[1], sources=tuple(c[1] for c in copies),
                    statuses=tuple(c[2] for c in copies), kept=kept[1]))
                self._count_once(key[1], key[0], Seen(kept[3], key[0], kept[2]))
        self.out.conflicts.extend(self._store_conflicts())
        self.out.latest = self.cells
        self.copies.clear()
        self.keys.clear()
        return self.out

    def _store_conflicts(self) -> list[Conflict]:
        """Cells whose latest cache key has different outcomes in different stores (shards
        disagreeing about one environment); one store's reruns are history, not conflicts."""
        out = []
        for cell, entries in self.keys.items():
            latest = self.cells[cell]
            key = max(entries, key=lambda e: e[4])[0] if latest else None
            same = [e for e in entries if e[0] == key]
            if len({store_of(e[2]) for e in same}) < 2 or len({e[1] for e in same}) < 2:
                continue
            shown: dict[tuple[str, str], tuple[str, str, str, str, TimeKey]] = {}
            for e in sorted(same, key=lambda e: e[4]):
                shown.setdefault((store_of(e[2]), e[1]), e)
            out.append(Conflict(run_id=", ".join(sorted({e[3] for e in same})), cell=cell,
                                sources=tuple(e[2] for e in shown.values()),
                                statuses=tuple(e[1] for e in shown.values()),
                                kept=latest.source, cache_key=key))
        return out

    def _count_once(self, cell: str, run_id: str, kept: Seen) -> None:
        """A conflict counts as one record in history: the kept one."""
        seen = self.out.seen[cell]
        others = [s for s in seen if s.run_id != run_id]
        self.out.records -= len(seen) - len(others) - 1
        self.out.seen[cell] = [*others, kept]


def _line_at(source: str) -> bytes:
    """The raw line a ``file:line`` source names (rare path: comparing duplicate records)."""
    name, _, number = source.rpartition(":")
    return Path(name).read_bytes().split(b"\n")[int(number) - 1]


def _canonical(raw: bytes) -> str:
    try:
        return json.dumps(Result.from_dict(_loads(raw)).to_dict(), sort_keys=True, default=str)
    except (ValueError, TypeError):
        return raw.decode("utf-8", "replace")


def reduce_records(paths: Iterable[Path | str], sink: Sink | None = None) -> Reduced:
    """Stream every record under ``paths``; keep the latest per cell and what history needs."""
    files, missing = iter_result_files(paths)
    reducer = _Reducer(sink)
    reducer.out.skipped.extend(missing)
    for path in files:
        _read(path, reducer)
    return reducer.finish()


def _read(path: Path, reducer: _Reducer) -> None:
    name = str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        reducer.out.skipped.append(Skipped(name, 0, f"cannot read: {exc.strerror or exc}"))
        return
    lines = data.split(b"\n")
    last = len(lines)
    truncated = not data.endswith(b"\n")
    for number, raw in enumerate(lines, start=1):
        if raw.strip():
            reducer.line(name, number, raw, number == last and truncated)


def cell_history(seen: Iterable[Seen], limit: int = HISTORY_LIMIT) -> tuple[list[Segment], int]:
    """A cell's timeline of status changes, oldest first: consecutive runs with the same
    status are one segment. Returns the newest ``limit`` segments and how many were dropped."""
    segments: list[Segment] = []
    for s in sorted(seen, key=lambda s: s.time):
        at = s.time[0] or s.time[1]
        last = segments[-1] if segments else None
        if last is not None and (last.status, last.evidence) == (s.status, s.evidence):
            segments[-1] = Segment(last.status, last.first_run, last.first_at, s.run_id, at,
                                   last.runs + 1, s.evidence)
        else:
            segments.append(Segment(s.status, s.run_id, at, s.run_id, at, 1, s.evidence))
    dropped = max(0, len(segments) - limit)
    return segments[dropped:], dropped


def status_changes(reduced: Reduced, keep: Callable[[str], bool] = lambda cell: True,
                   limit: int = 200) -> list[tuple[str, Segment, Segment]]:
    """Every status change in the store, newest first: (cell, before, after)."""
    out: list[tuple[str, Segment, Segment]] = []
    for cell, seen in reduced.seen.items():
        if not keep(cell):
            continue
        segments, _ = cell_history(seen, limit=limit)
        out.extend((cell, a, b) for a, b in zip(segments, segments[1:], strict=False))
    out.sort(key=lambda c: (c[2].first_at, c[0]), reverse=True)
    return out[:limit]
