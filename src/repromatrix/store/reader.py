"""The one reader of the results store: scan JSONL, order records, find conflicts, history.

Flow: results files -> **store.reader** -> store.results (``load_records``), store.index (the
SQLite index), report.load (the page) and, through those, run's reuse check and bisect.
Every reader of ``<results>/<host>/<run id>.jsonl`` goes through these definitions:

- **one parser** (``store.lines``: ``parse``, ``scan``): a line is a record or a
  ``Skipped`` that says why not; a damaged line is named and skipped, never fatal.
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
import operator
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from repromatrix.rules.verdict import REAL, STANDIN, evidence_level

from .lines import canonical, digest, line_at
from .record import Result

HISTORY_LIMIT = 50  # spans kept per cell (newest); older ones are counted
LATER_SQL = "finished_at DESC, started_at DESC, run_id DESC"  # time_key, newest first, in SQL
TimeKey = tuple[str, str, str]


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


def entry(data: dict[str, Any], raw: bytes, source: str) -> Entry:
    """The Entry of one parsed record line."""
    attempt = data.get("attempt")
    key = data.get("cache_key")
    return Entry(data["run_id"], data["cell"],
                 attempt if isinstance(attempt, int) and not isinstance(attempt, bool) else 1,
                 data["status"], None if key is None else str(key),
                 str(data.get("finished_at") or ""), str(data.get("started_at") or ""),
                 digest(raw), source, evidence_level(data["status"], data.get("stages") or []))


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
