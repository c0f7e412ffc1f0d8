"""The results store: append-only JSON-lines records, one per finished cell.

Flow: run -> **results** -> report. The run stage appends one record per cell
as soon as the cell is finished (flushed and fsynced, so a killed run loses at
most the cell in flight). The report stage loads any number of files and
folders (runs from several machines or shards) into one list, then picks the
latest record per cell and the previous one for change detection.

Reading goes through ``store.reader`` (one parser, one order, one conflict rule): a
damaged line is named (file, line, reason) and skipped, older records are
upgraded, different records for one (run, cell, attempt) are a conflict, and so
are different outcomes for one cell and one cache key recorded in different
stores (shards that disagree about one environment).

Layout: ``<root>/<host>/<run_id>.jsonl``, and beside them ``<root>/.index.sqlite``
(``store.index``: every record's key fields and each cell's latest, derived from the
files and rebuilt from them when missing or stale). Files are read line by line.
``<root>/.lock`` is held by the run writing into the folder (``locked``: a second run
waits, saying who holds it); ``<root>/.work/out/<run_id>`` holds a run's logs, pruned by
``prune_work``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sqlite3
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

from repromatrix import lock

from .index import StoreIndex
from .lines import Skipped, canonical_record, iter_result_files, record, scan
from .reader import Conflict, Settler, entry, flaky_counts, latest_attempts, latest_by_cell, previous_by_cell
from .record import Result, finite

__all__ = ["LOCK_NAME", "Conflict", "Loaded", "ResultStore", "Skipped", "flaky_counts",
           "latest_attempts", "latest_by_cell", "load_records", "locked", "previous_by_cell",
           "prune_work", "safe_component"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]")
LOCK_NAME = ".lock"
RUN_DIR = re.compile(r"[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}")  # run.new_run_id()


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

    Each append also updates the store's index (``store.index``) unless ``index`` is
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
        record = finite(result.to_dict())
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
        self._indexed(path, end - len(data), data)
        return path

    def _indexed(self, path: Path, offset: int, data: bytes) -> None:
        if not self._use_index:
            return
        try:
            if self._index is None:
                self._index = StoreIndex(self.root)
        except (sqlite3.Error, OSError):
            self._use_index = False  # no index here: StoreIndex.open catches up from the files
            return
        with contextlib.suppress(sqlite3.Error, OSError):
            self._index.added(path, offset, data)  # else the next append reads on

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


def load_records(paths: Iterable[Path | str]) -> Loaded:
    """Load records from files and folders; skip what cannot be read, report conflicts.

    Identical copies of a record (the same run shipped twice) count once. Different
    records for the same (run_id, cell, attempt) are a conflict: the latest-finished one
    is kept in ``records`` and every source is named in ``conflicts``. So is a cell whose
    latest cache key has different outcomes in different stores (``store.reader.Settler``).
    """
    files, skipped = iter_result_files(paths)
    out = Loaded(skipped=list(skipped))
    parsed: dict[str, Result] = {}
    settler = Settler(lambda e: canonical_record(parsed[e.source]))
    for path in files:
        name = str(path)
        try:
            with path.open("rb") as fh:
                for number, _, raw, data in scan(fh, name):
                    rec = data if isinstance(data, Skipped) else record(data, name, number)
                    if isinstance(rec, Skipped):
                        out.skipped.append(rec)
                        continue
                    e = entry(data, raw, f"{name}:{number}")
                    parsed[e.source] = rec
                    if not settler.add(e):
                        del parsed[e.source]  # a copy of a record already loaded
        except OSError as exc:
            out.skipped.append(Skipped(name, 0, f"cannot read: {exc.strerror or exc}"))
    kept, out.conflicts = settler.finish()
    out.records = [parsed[e.source] for e in kept]
    return out

