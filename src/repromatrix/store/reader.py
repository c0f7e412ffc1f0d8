"""The one reader of the results store: scan JSONL, order records, find conflicts, history.

Flow: results files -> **store.reader** -> store.results (``load_records``), store.index (the
SQLite index), report.load (the page) and, through those, run's reuse check and bisect.
Every reader of ``<results>/<host>/<run id>.jsonl`` goes through these definitions:

- **one parser** (``parse``): a line is a record (upgraded through
  ``store.record.MIGRATIONS``) or a ``Skipped`` that says why not (not UTF-8, invalid
  JSON, a truncated last line with no newline (run interrupted?), not an object,
  an unknown schema version or a missing key). A damaged line is named and skipped,
  never fatal; ``scan`` walks a file line by line, so a large one is never held whole.
- **one order** (``time_key``, ``LATER_SQL``): a record is later when it finished
  later, then started later, then by run id (ISO strings compare as times).
- **one conflict rule** (``Settler``): identical copies of a record (the same run
  shipped twice, maybe written differently) count once; different records for one
  (run, cell, attempt) are a conflict and the later one is kept (attempts of a
  ``--repeat`` run are distinct records, never a conflict); different outcomes for
  a cell's latest cache key recorded in different stores (shards merged with
  ``report --results A B``) are a conflict too (``store_conflicts``).
- **one history** (``history``): a cell's records, oldest first, as spans of one status.

Records are summarised as ``Entry`` (key fields, a digest of the line, its source
``file:line``) so ordering, conflicts and history never need the whole record.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import operator
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from .record import REAL, STANDIN, Result, _problem, escaped, evidence_level, finite, migrate

try:  # a fast parser when installed; the standard library decides anything it refuses
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency
    _orjson = None

HISTORY_LIMIT = 50  # spans kept per cell (newest); older ones are counted
LATER_SQL = "finished_at DESC, started_at DESC, run_id DESC"  # time_key, newest first, in SQL
LINE_LIMIT = 16 * 1024 * 1024  # bytes of one line a reader holds; a longer one is skipped unread
TimeKey = tuple[str, str, str]


@dataclass(frozen=True)
class Skipped:
    """A line (or whole file, line 0) the loader could not use, and why."""

    file: str
    line: int
    reason: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.reason}"


@dataclass(frozen=True)
class Conflict:
    """Two or more different records for one (run, cell, attempt), or, with ``cache_key``,
    different outcomes for one (cell, cache key) from several stores; ``kept`` is the one used."""

    run_id: str
    cell: str
    sources: tuple[str, ...]
    statuses: tuple[str, ...]
    kept: str
    cache_key: str | None = None

    def __str__(self) -> str:
        if self.cache_key:
            return (f"{self.cell}: different outcomes for one cache key ({self.cache_key}) from "
                    f"several stores ({', '.join(self.sources)}; runs {self.run_id}); statuses "
                    f"{', '.join(self.statuses)}; kept {self.kept}")
        return (f"{self.cell} in run {self.run_id}: {len(self.sources)} different records "
                f"({', '.join(self.sources)}); statuses {', '.join(self.statuses)}; "
                f"kept {self.kept}")


class Entry(NamedTuple):
    """One usable record line, as ordering, conflicts and history need it.

    (A named tuple: a store of 100k records makes 100k of them.)
    """

    run_id: str
    cell: str
    attempt: int
    status: str
    cache_key: str | None
    finished_at: str
    started_at: str
    digest: str  # a hash of the line: the same digest, the same record
    source: str  # "file:line"
    evidence: str = ""  # result.evidence_level: "real", "standin" (TensorRT stood in) or ""


class Span(NamedTuple):
    """A stretch of consecutive records of one cell with the same status."""

    status: str
    runs: int
    first_run: str
    first_at: str
    last_run: str
    last_at: str
    evidence: str = ""  # the records' evidence level ("standin": TensorRT stood in)


# -- one parser -----------------------------------------------------------------------------

def loads(raw: bytes) -> Any:
    """JSON from bytes: orjson when it accepts them, else the standard library (which explains)."""
    return _loads(raw)[0]


def record_data(raw: bytes) -> Any:
    """``loads`` of a record line, with the numbers JSON cannot hold kept as text
    (``finite``) and text that cannot be UTF-8 escaped (``escaped``), as ``parse`` reads them."""
    obj, lenient = _loads(raw)
    return _readable(obj)[0] if lenient else obj


def _readable(obj: Any) -> tuple[Any, bool]:
    """A line only the standard library read (``_loads``) as every reader sees it: numbers
    JSON cannot hold as text (``finite``), lone surrogates as visible escapes (``escaped``:
    as the runner writes them, so an id or a text can go to SQLite, a page or a terminal);
    and whether that changed it."""
    changed = False
    if _nonfinite(obj):
        obj, changed = finite(obj), True
    fixed = escaped(obj)
    return fixed, changed or fixed != obj


def _loads(raw: bytes) -> tuple[Any, bool]:
    """``loads``, and whether the standard library read it (the only reader of the two that
    takes NaN and Infinity)."""
    if _orjson is not None:
        try:
            return _orjson.loads(raw), False
        except _orjson.JSONDecodeError:
            pass  # lone surrogates, NaN, huge ints, bad UTF-8: let json decide and explain
    return json.loads(raw.decode("utf-8")), True


def dumps(data: Any) -> bytes:
    """A record's JSON line (no newline), the one way an upgraded record is written back out:
    UTF-8 as it is, anything JSON lacks as its text."""
    if _orjson is not None:
        try:
            return _orjson.dumps(data, default=str)
        except (TypeError, _orjson.JSONEncodeError):
            pass  # a lone surrogate, a huge int: the standard library, escaping what it must
    return json.dumps(data, default=str, separators=(",", ":")).encode("utf-8")


def parse(raw: bytes, name: str, number: int) -> dict[str, Any] | Skipped:
    """One JSONL line as record data (upgraded to the current schema), or why it is not one.

    A line with no newline that does not parse is named as truncated: the last line
    of a file whose run was interrupted mid-write."""
    data = parse_upgraded(raw, name, number)
    return data if isinstance(data, Skipped) else data[0]


def _nonfinite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_nonfinite(v) for v in value.values())
    if isinstance(value, list):
        return any(_nonfinite(v) for v in value)
    return False


def parse_upgraded(raw: bytes, name: str, number: int) -> tuple[dict[str, Any], bool] | Skipped:
    """``parse``, also saying whether the record's line is not to be copied as it is: upgraded
    from an older schema, holding a number JSON cannot (``finite``; lines written before
    records were kept finite) or a lone surrogate (``escaped``; a record written by another
    tool than the runner)."""
    try:
        obj, lenient = _loads(raw)
    except UnicodeDecodeError:
        return Skipped(name, number, "not valid UTF-8")
    except ValueError as exc:
        truncated = not raw.endswith(b"\n")
        hint = "truncated last line (run interrupted?)" if truncated else "invalid JSON"
        return Skipped(name, number, f"{hint}: {exc}")
    if not isinstance(obj, dict):
        return Skipped(name, number, f"not a JSON object ({type(obj).__name__})")
    rewritten = False
    if lenient:
        obj, rewritten = _readable(obj)
    data = migrate(obj)
    problem = _problem(data)
    if problem:
        return Skipped(name, number, problem)
    return data, rewritten or obj.get("schema_version") != data["schema_version"]


def parse_line(raw: bytes, name: str, number: int) -> Result | Skipped:
    """One JSONL line as a Result, or the Skipped that says why it is not one."""
    data = parse(raw, name, number)
    return data if isinstance(data, Skipped) else record(data, name, number)


def record(data: dict[str, Any], name: str, number: int) -> Result | Skipped:
    """Parsed record data (``parse``) as a Result, or the Skipped that says why it is not one."""
    try:
        return Result.from_dict(data)
    except (ValueError, TypeError) as exc:
        return Skipped(name, number, str(exc))


def scan(fh: BinaryIO, name: str, number: int = 0, limit: int = -1
         ) -> Iterator[tuple[int, int, bytes, dict[str, Any] | Skipped]]:
    """Each non-blank line of ``fh`` from its position: (line number, byte offset, raw
    bytes, the record data or why it was skipped). ``number`` is the count of lines before;
    ``limit``: read at most this many bytes at a time (a longer line comes in pieces, each
    skipped as not JSON), so a file with no newline is never read whole; without it, a line
    over ``LINE_LIMIT`` is skipped unread (``read_lines``)."""
    offset = fh.tell()
    lines = iter(lambda: fh.readline(limit), b"") if limit > 0 else read_lines(fh)
    for raw in lines:
        number += 1
        if isinstance(raw, Overlong):
            start, offset = offset, offset + raw.size
            yield number, start, b"", Skipped(name, number, raw.reason())
            continue
        start, offset = offset, offset + len(raw)
        if raw.strip():
            yield number, start, raw, parse(raw, name, number)


class Overlong(NamedTuple):
    """A line longer than ``LINE_LIMIT``: its size in bytes, and whether a newline ended it
    (a line without one may still be being written)."""

    size: int
    complete: bool

    def reason(self) -> str:
        return f"a line of {self.size} bytes, over the {LINE_LIMIT}-byte limit: not read"


def read_lines(fh: BinaryIO) -> Iterator[bytes | Overlong]:
    """Each line of ``fh`` from its position, newline included; a line longer than
    ``LINE_LIMIT`` as an ``Overlong``, read through in pieces and never held whole (a file
    with no newline, a foreign file in a results folder)."""
    limit, readline = LINE_LIMIT, fh.readline
    while raw := readline(limit + 1):
        if len(raw) <= limit:
            yield raw
            continue
        size = len(raw)
        while not raw.endswith(b"\n"):
            raw = fh.readline(1 << 20)
            if not raw:
                break
            size += len(raw)
        yield Overlong(size, raw.endswith(b"\n"))


def digest(raw: bytes) -> str:
    """A hash of one record line (surrounding whitespace ignored)."""
    return hashlib.sha1(raw.strip()).hexdigest()


def entry(data: dict[str, Any], raw: bytes, source: str) -> Entry:
    """The Entry of one parsed record line."""
    attempt = data.get("attempt")
    key = data.get("cache_key")
    return Entry(data["run_id"], data["cell"],
                 attempt if isinstance(attempt, int) and not isinstance(attempt, bool) else 1,
                 data["status"], None if key is None else str(key),
                 str(data.get("finished_at") or ""), str(data.get("started_at") or ""),
                 digest(raw), source, evidence_level(data["status"], data.get("stages") or []))


def iter_result_files(paths: Iterable[Path | str]) -> tuple[list[Path], list[Skipped]]:
    """Expand files and folders (recursively, ``*.jsonl``) in a stable order.

    Folders whose name starts with a dot are not entered: they hold the run's work
    files (``.work``), never records (host folders are written without a leading dot).
    """
    files: list[Path] = []
    missing: list[Skipped] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            files.extend(walk_jsonl(p))
        elif p.is_file():
            files.append(p)
        else:
            missing.append(Skipped(str(p), 0, "no such file or directory"))
    unique: dict[Path, Path] = {}
    for f in files:
        unique.setdefault(f.resolve(), f)
    return list(unique.values()), missing


def walk_jsonl(root: Path) -> list[Path]:
    """Every ``*.jsonl`` file under ``root``, sorted, skipping dot-folders."""
    found: list[Path] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        base = Path(folder)
        found.extend(base / n for n in names if n.endswith(".jsonl") and (base / n).is_file())
    return sorted(found)


def line_at(source: str) -> bytes:
    """The raw line a ``file:line`` source names (rare path: comparing duplicate records)."""
    name, _, number = source.rpartition(":")
    with open(name, "rb") as fh:
        for n, raw in enumerate(fh, start=1):
            if n == int(number):
                return raw
    return b""


def canonical(raw: bytes) -> str:
    """A record line in one canonical form: two writers' spellings of one record compare equal."""
    try:
        return canonical_record(Result.from_dict(record_data(raw)))
    except (ValueError, TypeError):
        return raw.decode("utf-8", "replace")


def canonical_record(result: Result) -> str:
    """A Result in the canonical form ``canonical`` compares."""
    return json.dumps(result.to_dict(), sort_keys=True, default=str)


# -- one order ------------------------------------------------------------------------------

# Sort key for 'later' (of an Entry or a Result): finished_at, then started_at, then run id
# (ISO strings). An attrgetter, not a def: it is called for every record, often twice.
time_key: Callable[[Entry | Result], TimeKey] = operator.attrgetter("finished_at", "started_at",
                                                                    "run_id")


def latest_by_cell(entries: Iterable[Any]) -> dict[str, Any]:
    """The latest of each cell's records (Entries or Results), keyed by cell id."""
    out: dict[str, Any] = {}
    keys: dict[str, TimeKey] = {}
    for rec in entries:
        cell, key = rec.cell, time_key(rec)
        if cell not in keys or key > keys[cell]:
            out[cell], keys[cell] = rec, key
    return out


def previous_by_cell(entries: Iterable[Any]) -> dict[str, Any]:
    """For every cell with history, its latest record from a run other than its latest run."""
    recs = list(entries)
    last = latest_by_cell(recs)
    return latest_by_cell(r for r in recs if r.run_id != last[r.cell].run_id)


def latest_attempts(entries: Iterable[Any]) -> dict[str, list[Any]]:
    """Every attempt of each cell's latest run (one, unless the run used --repeat)."""
    recs = list(entries)
    last = latest_by_cell(recs)
    out: dict[str, list[Any]] = {}
    for r in recs:
        if r.run_id == last[r.cell].run_id:
            out.setdefault(r.cell, []).append(r)
    return {c: sorted(rs, key=lambda r: r.attempt) for c, rs in out.items()}


def flaky_counts(statuses: Iterable[str]) -> dict[str, int] | None:
    """``{status: count}`` when repeated attempts disagree (a flaky cell), else None."""
    counts: dict[str, int] = {}
    for status in statuses:
        counts[status] = counts.get(status, 0) + 1
    return counts if len(counts) > 1 else None


# -- one conflict rule ----------------------------------------------------------------------

class Settler:
    """Entries in, one per record out: copies dropped as they stream past, conflicts at the end.

    ``add`` says whether an entry is a new record (False: a copy of one already seen,
    by digest or, for differently written lines, by ``same`` on their canonical forms).
    """

    def __init__(self, canonical_of: Callable[[Entry], str] | None = None) -> None:
        self._canonical = canonical_of or (lambda e: canonical(line_at(e.source)))
        self._groups: dict[tuple[str, str, int], list[Entry]] = {}

    def add(self, e: Entry) -> bool:
        group = self._groups.setdefault((e.run_id, e.cell, e.attempt), [])
        if group and (any(g.digest == e.digest for g in group)
                      or any(self._canonical(g) == self._canonical(e) for g in group)):
            return False
        group.append(e)
        return True

    def finish(self) -> tuple[list[Entry], list[Conflict]]:
        """(the kept entry of each record, in order of first appearance; the conflicts)."""
        kept: list[Entry] = []
        conflicts: list[Conflict] = []
        for (run_id, cell, _), group in self._groups.items():
            win = group[0] if len(group) == 1 else max(group, key=time_key)
            if len(group) > 1:
                conflicts.append(Conflict(run_id=run_id, cell=cell,
                                          sources=tuple(g.source for g in group),
                                          statuses=tuple(g.status for g in group), kept=win.source))
            kept.append(win)
        self._groups.clear()
        return kept, conflicts + store_conflicts(kept)


@functools.lru_cache(maxsize=4096)
def store_of_file(name: str) -> str:  # ``name`` absolute: the cache outlives a chdir
    """The store a record file belongs to: the folder above ``<host>/<run>.jsonl``."""
    return str(Path(name).resolve().parent.parent)


def store_of(source: str) -> str:
    """The store a ``file:line`` source belongs to: the folder above ``<host>/<run>.jsonl``."""
    return store_of_file(os.path.abspath(source.rsplit(":", 1)[0]))


def stores_of(entries: Iterable[Entry]) -> set[str]:
    """The stores ``entries`` come from (``store_of``, worked out once per file)."""
    return {store_of_file(os.path.abspath(name))
            for name in {e.source.rsplit(":", 1)[0] for e in entries}}


def store_conflicts(entries: list[Entry]) -> list[Conflict]:
    """Cells whose latest cache key has different outcomes recorded in different stores.

    One store's history (a rerun with the same key) is history, not a conflict; two
    stores (shards, machines) disagreeing about one environment and one repro source
    are. ``broken`` records are left out: infrastructure, retried, never a verdict.
    """
    if len(stores_of(entries)) < 2:
        return []  # every record from one store: nothing to disagree with
    last = latest_by_cell(entries)
    groups: dict[str, list[Entry]] = {}
    for e in entries:
        if e.cache_key and e.cache_key == last[e.cell].cache_key and e.status != "broken":
            groups.setdefault(e.cell, []).append(e)
    out = []
    for cell, group in groups.items():
        if len(group) < 2 or len({e.status for e in group}) < 2 \
                or len({store_of(e.source) for e in group}) < 2:
            continue
        shown: dict[tuple[str, str], Entry] = {}
        for e in sorted(group, key=time_key):
            shown.setdefault((store_of(e.source), e.status), e)
        out.append(Conflict(
            run_id=", ".join(sorted({e.run_id for e in group})), cell=cell,
            sources=tuple(e.source for e in shown.values()),
            statuses=tuple(e.status for e in shown.values()),
            kept=last[cell].source, cache_key=str(last[cell].cache_key)))
    return out


# -- one cell's records, settled -----------------------------------------------------------

def outranks(e: Entry, evidence: str, time: TimeKey) -> bool:
    """Whether ``e`` replaces the shown record of its cell (of ``evidence``, finished at
    ``time``): the latest, except that a verdict from real TensorRT is never replaced by one
    decided with TensorRT stood in, and always replaces one."""
    if e.evidence != evidence and {e.evidence, evidence} == {REAL, STANDIN}:
        return e.evidence == REAL
    return time_key(e) > time


class CellHistory(NamedTuple):
    """One cell's records, settled: the record shown, the status of its latest other run,
    its timeline, its latest run's attempts when they disagree, how many records it kept,
    its conflicts, and the sources of the entries dropped as copies of another."""

    shown: Entry
    previous: str
    spans: list[Span]
    attempts: dict[str, int] | None
    kept: int
    conflicts: list[Conflict]
    copies: tuple[str, ...] = ()


def settle_cell(entries: Iterable[Entry], canonical_of: Callable[[Entry], str] | None = None
                ) -> CellHistory:
    """One cell's entries, in file and line order, through the store's conflict rule,
    ``outranks`` and ``timeline``: what the report shows of the cell, as it works it out
    for a whole store (``report.load``)."""
    settler = Settler(canonical_of)
    shown: Entry | None = None
    copies = []
    for e in entries:
        if not settler.add(e):
            copies.append(e.source)
        elif shown is None or outranks(e, shown.evidence, time_key(shown)):
            shown = e
    kept, conflicts = settler.finish()
    if shown is None:
        raise ValueError("settle_cell needs at least one entry")
    return CellHistory(shown, previous_status(kept, shown.run_id), timeline(kept),
                       run_attempts(kept, shown.run_id), len(kept), conflicts, tuple(copies))


def previous_status(kept: Iterable[Entry], run_id: str) -> str:
    """The status of the latest of a cell's records from a run other than ``run_id`` (the
    run of the record shown), "" when it has none."""
    older = [e for e in kept if e.run_id != run_id]
    return max(older, key=time_key).status if older else ""


def run_attempts(kept: Iterable[Entry], run_id: str) -> dict[str, int] | None:
    """``flaky_counts`` of a cell's records from run ``run_id`` (its repeated attempts)."""
    return flaky_counts(e.status for e in kept if e.run_id == run_id)


# -- one history ----------------------------------------------------------------------------

def history(entries: Iterable[Entry], limit: int = HISTORY_LIMIT) -> tuple[list[Span], int]:
    """A cell's timeline of status changes, oldest first (``timeline``). Returns the newest
    ``limit`` spans and how many were dropped."""
    return newest(timeline(entries), limit)


def timeline(entries: Iterable[Entry]) -> list[Span]:
    """Every span of a cell's records, oldest first: consecutive records with the same
    status and evidence level are one span."""
    spans: list[Span] = []
    for e in sorted(entries, key=time_key):
        at = e.finished_at or e.started_at
        if spans and (spans[-1].status, spans[-1].evidence) == (e.status, e.evidence):
            last = spans[-1]
            spans[-1] = Span(last.status, last.runs + 1, last.first_run, last.first_at, e.run_id, at,
                             e.evidence)
        else:
            spans.append(Span(e.status, 1, e.run_id, at, e.run_id, at, e.evidence))
    return spans


def newest(spans: list[Span], limit: int = HISTORY_LIMIT) -> tuple[list[Span], int]:
    """The newest ``limit`` of a ``timeline``'s spans, and how many were dropped."""
    dropped = max(0, len(spans) - limit)
    return spans[dropped:], dropped
