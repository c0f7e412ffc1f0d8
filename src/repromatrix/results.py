"""The results store: append-only JSON-lines records, one per finished cell.

Flow: run -> **results** -> report. The run stage appends one record per cell
as soon as the cell is finished (flushed and fsynced, so a killed run loses at
most the cell in flight). The report stage loads any number of files and
folders (runs from several machines or shards) into one list, then picks the
latest record per cell and the previous one for change detection.

Loading never fails on bad data: a line that is not JSON, not a record, or of
an unknown ``schema_version`` is named (file, line, reason) and skipped; records
of older schema versions are upgraded (``Result.from_dict``). Two
different records for the same (run, cell) are reported as a conflict rather
than silently merged, and so are different outcomes for one cell and one cache
key recorded in different stores (shards that disagree about one environment).

Layout: ``<root>/<host>/<run_id>.jsonl``, and beside them ``<root>/.index.sqlite``
(``store_index``: latest record, cache key and history per cell, derived from the
files and rebuilt from them when missing or stale). Files are read line by line.
``<root>/.lock`` is held by the run writing into the folder (``locked``: a second run
waits, saying who holds it); ``<root>/.work/out/<run_id>`` holds a run's logs, pruned by
``prune_work``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from . import lock
from .result import Result

if TYPE_CHECKING:
    from .store_index import StoreIndex

_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]")
LOCK_NAME = ".lock"
RUN_DIR = re.compile(r"[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}")  # run.new_run_id()


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
    """Two or more different records for one (run, cell), or, with ``cache_key``, different
    outcomes for one (cell, cache key) from several stores; ``kept`` is the one used."""

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


@dataclass
class Loaded:
    """Everything a load produced: usable records, what was skipped, conflicts."""

    records: list[Result] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)


def safe_component(text: str, fallback: str = "unknown") -> str:
    """A filesystem-safe path component derived from ``text``."""
    cleaned = _UNSAFE.sub("_", str(text or "")).strip("._")
    return cleaned[:120] or fallback


class ResultStore:
    """Append-only store rooted at ``root``: ``root/<host>/<run_id>.jsonl``.

    Each append also updates the store's index (``store_index``) unless ``index`` is
    False; the index is derived, so when it cannot be written the record still is, and
    the index catches up the next time it is opened.
    """

    def __init__(self, root: Path | str, *, index: bool = True) -> None:
        self.root = Path(root)
        self._use_index = index
        self._index: StoreIndex | None = None

    def path_for(self, result: Result) -> Path:
        """The JSONL file a record belongs in."""
        host = safe_component(result.host, "unknown-host")
        run = safe_component(result.run_id, "unknown-run")
        return self.root / host / f"{run}.jsonl"

    def append(self, result: Result) -> Path:
        """Append one record as a single line; flush and fsync before returning."""
        record = result.to_dict()
        try:
            data = (json.dumps(record, ensure_ascii=False, sort_keys=True, default=str)
                    + "\n").encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: JSON escapes keep it, valid UTF-8
            data = (json.dumps(record, sort_keys=True, default=str) + "\n").encode("utf-8")
        path = self.path_for(result)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
            end = fh.tell()
        self._indexed(path, end - len(data), data, result)
        return path

    def _indexed(self, path: Path, offset: int, data: bytes, result: Result) -> None:
        if not self._use_index:
            return
        from .store_index import StoreIndex

        try:
            if self._index is None:
                self._index = StoreIndex(self.root)
            self._index.added(path, offset, data, result)
        except (sqlite3.Error, OSError):
            self._use_index = False  # the next StoreIndex.open catches up from the files

    def close(self) -> None:
        """Close the index connection (the files need no closing)."""
        if self._index is not None:
            self._index.close()
            self._index = None

    def load(self) -> Loaded:
        """Load everything under the store's root."""
        return load_records([self.root])

    def lock(self, wait: bool = True, *, run_id: str | None = None,
             on_wait: Callable[[str], None] | None = None) -> AbstractContextManager[lock.Holder]:
        """The store's lock (see ``locked``)."""
        return locked(self.root, wait=wait, run_id=run_id, on_wait=on_wait)


def locked(folder: Path | str, *, wait: bool = True, run_id: str | None = None,
           on_wait: Callable[[str], None] | None = None) -> AbstractContextManager[lock.Holder]:
    """Hold ``<folder>/.lock`` for a ``with`` block: one run per results folder.

    A second process waits (saying through ``on_wait``, default stderr, which run,
    pid, host holds it and since when), or with ``wait=False`` raises ResultsBusy
    (exit 3) naming the holder. Released however the holder exits.
    """
    return lock.hold(Path(folder) / LOCK_NAME, what=f"the results folder {folder}", wait=wait,
                     run_id=run_id, on_wait=on_wait)


def prune_work(work_dir: Path | str, *, keep: int = 3, current: str | None = None) -> list[Path]:
    """Remove ``<work_dir>/out/<run id>`` folders of finished runs; return what was removed.

    The ``keep`` newest (by run id, which starts with its UTC start time) stay, and
    ``current`` always stays; folders not named like a run id are never touched.
    Call it while holding the results folder's lock, so no other run is writing there.
    """
    if keep < 0:
        raise ValueError(f"keep must be >= 0, got {keep}")
    out = Path(work_dir) / "out"
    if not out.is_dir():
        return []
    runs = sorted(p for p in out.iterdir()
                  if RUN_DIR.fullmatch(p.name) and p.name != current
                  and p.is_dir() and not p.is_symlink())
    removed = []
    for path in runs[:max(0, len(runs) - keep)]:
        try:
            shutil.rmtree(path)
        except OSError:
            continue  # left for the next prune (a file still open, permissions)
        removed.append(path)
    return removed


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


def scan_lines(fh: BinaryIO, name: str, number: int = 0) -> Iterator[tuple[int, int, bytes,
                                                                           Result | Skipped]]:
    """Each non-blank line of ``fh`` from its position: (line number, byte offset, raw
    bytes, the Result or why it was skipped). ``number`` is the count of lines before.

    One line at a time, so a large file is never held whole. A last line with no
    newline that does not parse is named as truncated (a run interrupted mid-write).
    """
    offset = fh.tell()
    for raw in iter(fh.readline, b""):
        number += 1
        start, offset = offset, offset + len(raw)
        if raw.strip():
            yield number, start, raw, parse_line(raw, name, number)


def parse_line(raw: bytes, name: str, number: int) -> Result | Skipped:
    """One JSONL line as a Result, or the Skipped that says why it is not one."""
    try:
        obj = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return Skipped(name, number, "not valid UTF-8")
    except ValueError as exc:
        truncated = not raw.endswith(b"\n")
        hint = "truncated last line (run interrupted?)" if truncated else "invalid JSON"
        return Skipped(name, number, f"{hint}: {exc}")
    if not isinstance(obj, dict):
        return Skipped(name, number, f"not a JSON object ({type(obj).__name__})")
    try:
        return Result.from_dict(obj)
    except (ValueError, TypeError) as exc:
        return Skipped(name, number, str(exc))


def read_file(path: Path) -> tuple[list[tuple[int, Result]], list[Skipped]]:
    """Parse one JSONL file; returns ((line number, record), ...) and skipped lines."""
    name = str(path)
    good: list[tuple[int, Result]] = []
    bad: list[Skipped] = []
    try:
        with path.open("rb") as fh:
            for number, _, _, item in scan_lines(fh, name):
                if isinstance(item, Skipped):
                    bad.append(item)
                else:
                    good.append((number, item))
    except OSError as exc:
        return [], [Skipped(name, 0, f"cannot read: {exc.strerror or exc}")]
    return good, bad


def _canonical(result: Result) -> str:
    return json.dumps(result.to_dict(), sort_keys=True, default=str)


def load_records(paths: Iterable[Path | str]) -> Loaded:
    """Load records from files and folders; skip what cannot be read, report conflicts.

    Identical copies of a record (the same run shipped twice) count once. Different
    records for the same (run_id, cell) are a conflict: the latest-finished one is
    kept in ``records`` and every source is named in ``conflicts``. So is a cell whose
    latest cache key has different outcomes in different stores (see ``store_conflicts``).
    """
    files, skipped = iter_result_files(paths)
    out = Loaded(skipped=list(skipped))
    by_key: dict[tuple[str, str, int], list[tuple[str, Result]]] = {}
    order: list[tuple[str, str, int]] = []
    for path in files:
        good, bad = read_file(path)
        out.skipped.extend(bad)
        for number, rec in good:
            key = (rec.run_id, rec.cell, rec.attempt)
            if key not in by_key:
                by_key[key] = []
                order.append(key)
            by_key[key].append((f"{path}:{number}", rec))
    sources: dict[int, str] = {}
    for key in order:
        rec = _resolve(key, by_key[key], out.conflicts)
        sources[id(rec)] = next(s for s, r in by_key[key] if r is rec)
        out.records.append(rec)
    out.conflicts.extend(store_conflicts(out.records, lambda r: sources[id(r)]))
    return out


def store_of(source: str) -> str:
    """The store a ``file:line`` source belongs to: the folder above ``<host>/<run>.jsonl``."""
    return str(Path(source.rsplit(":", 1)[0]).resolve().parent.parent)


def store_conflicts(records: list[Result], source: Callable[[Result], str]) -> list[Conflict]:
    """Cells whose latest cache key has different outcomes recorded in different stores.

    One store's history (a rerun with the same key) is history, not a conflict; two
    stores (shards, machines) disagreeing about one environment and one repro source
    are. ``broken`` records are left out: infrastructure, retried, never a verdict.
    """
    latest = latest_by_cell(records)
    groups: dict[str, list[Result]] = {}
    for rec in records:
        key = rec.cache_key
        if key and key == latest[rec.cell].cache_key and rec.status != "broken":
            groups.setdefault(rec.cell, []).append(rec)
    out = []
    for cell, recs in groups.items():
        stores = {store_of(source(r)) for r in recs}
        if len(stores) < 2 or len({r.status for r in recs}) < 2:
            continue
        shown: dict[tuple[str, str], Result] = {}
        for r in sorted(recs, key=_time_key):
            shown.setdefault((store_of(source(r)), r.status), r)
        out.append(Conflict(
            run_id=", ".join(sorted({r.run_id for r in recs})), cell=cell,
            sources=tuple(source(r) for r in shown.values()),
            statuses=tuple(r.status for r in shown.values()),
            kept=source(latest[cell]), cache_key=str(latest[cell].cache_key)))
    return out


def _resolve(key: tuple[str, str, int], found: list[tuple[str, Result]],
             conflicts: list[Conflict]) -> Result:
    if len(found) == 1:
        return found[0][1]
    distinct: dict[str, tuple[str, Result]] = {}
    for source, rec in found:
        distinct.setdefault(_canonical(rec), (source, rec))
    if len(distinct) == 1:
        return found[0][1]
    variants = list(distinct.values())
    kept_source, kept = max(variants, key=lambda sr: _time_key(sr[1]))
    conflicts.append(Conflict(
        run_id=key[0], cell=key[1],
        sources=tuple(s for s, _ in variants),
        statuses=tuple(r.status for _, r in variants),
        kept=kept_source,
    ))
    return kept


def _time_key(result: Result) -> tuple[str, str, str]:
    """Sort key for 'later': finished_at, then started_at, then run id (ISO strings)."""
    return (result.finished_at, result.started_at, result.run_id)


def latest_by_cell(records: Iterable[Result]) -> dict[str, Result]:
    """The most recent record of every cell, keyed by cell id."""
    latest: dict[str, Result] = {}
    keys: dict[str, tuple[str, str, str]] = {}
    for rec in records:
        cell, key = rec.cell, _time_key(rec)
        if cell not in keys or key > keys[cell]:
            latest[cell], keys[cell] = rec, key
    return latest


def latest_attempts(records: Iterable[Result]) -> dict[str, list[Result]]:
    """Every attempt of each cell's latest run (one, unless the run used --repeat)."""
    recs = list(records)
    latest = latest_by_cell(recs)
    out: dict[str, list[Result]] = {}
    for r in recs:
        if r.run_id == latest[r.cell].run_id:
            out.setdefault(r.cell, []).append(r)
    return {c: sorted(rs, key=lambda r: r.attempt) for c, rs in out.items()}


def flaky_counts(statuses: Iterable[str]) -> dict[str, int] | None:
    """``{status: count}`` when repeated attempts disagree (a flaky cell), else None."""
    counts: dict[str, int] = {}
    for status in statuses:
        counts[status] = counts.get(status, 0) + 1
    return counts if len(counts) > 1 else None


def previous_by_cell(records: Iterable[Result]) -> dict[str, Result]:
    """For every cell with history, its latest record from a run other than its latest run."""
    recs = list(records)
    latest = latest_by_cell(recs)
    return latest_by_cell(r for r in recs if r.run_id != latest[r.cell].run_id)
