"""An SQLite index beside the append-only result logs: every record's key fields, each cell's history.

Flow: run -> results (**index**) -> run's reuse check / bisect / report. The JSONL
run files stay the source of truth (mergeable, diffable, append-only);
``<results>/.index.sqlite`` (standard-library ``sqlite3``, WAL; ``store.index_db``) only
points into them, so it can always be deleted and rebuilt. Lines are read with the store's
one parser (``store.lines.parse``) and ordered by its one order (``store.reader.LATER_SQL``).
It keeps records and histories only (the report's cache is its own, ``report.cache``):

    files    every indexed file: size and mtime when last read, how far it was
             read (byte offset, line count) and a hash of the bytes before that
             offset, so a file grown by another writer is read from where the
             index stopped and a rewritten one is read again from the start
             (``store.index_files``), and a digest of its records (``chain``)
    records  one row per record line: where it is (file, offset, length), its key
             fields (run, cell, attempt, stack, repro, status, cache key, times), a
             hash of the line and whether it was written under an older schema
    skipped  the lines the loader would skip, and why
    cells    per cell, the latest record's key fields (what a no-op `run` reads)
    histories  per cell, its records settled (``store.reader.settle_cell``, through
             ``store.index_histories``: the record shown, the previous run's status, the
             timeline, flaky attempts, conflicts), kept current as records arrive: a
             render of one store reads one row per cell, not one per record
    meta     the index's ``format``, its ``epoch`` (made anew with the index) and ``seq``,
             a count of the settlings of ``histories``, each row noting the one that last
             wrote it: a reader that noted both reads only the cells settled since
             (``histories_since``)

Each table's row is a named type (``store.index_rows``, ``Settled``). ``refresh`` catches
up with the files (a stat per file when nothing changed); ``ResultStore.append`` updates it
per record (``added``) in one ``BEGIN IMMEDIATE`` transaction that first reads any lines it
missed. ``entries`` hands every record's ``store.reader.Entry`` to the store's conflict rule
and history; ``keys``, ``latest`` and ``read_lines`` read only the records asked for.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sqlite3
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from . import index_histories
from .index_db import FORMAT, INDEX_NAME, bulk_insert, connect, remove_db, transaction
from .index_files import (
    file_rows,
    forget_rows,
    insert_record,
    note_read,
    read_file,
    read_files,
    tail_hash,
    update_cells,
)
from .index_histories import Settled, ShownKey, root_of, settle, settled_rows
from .index_rows import Block, CellKey, FileRow, Where
from .lines import Skipped, digest, parse_line, parse_upgraded, walk_jsonl
from .reader import Entry
from .record import Result

__all__ = ["FORMAT", "INDEX_NAME", "Block", "CellKey", "Settled", "StaleIndex", "StoreIndex",
           "Where", "recorded_keys", "recorded_shown"]
MAX_OPEN = 64  # record files held open at once while reading records back


class StoreIndex:
    """The index of the ``*.jsonl`` files under ``root``, kept in ``db``.

    Use ``StoreIndex.open(root)`` (refreshed, a context manager). Safe to share
    between threads; several processes may refresh and append at once (WAL, and
    each change is one ``BEGIN IMMEDIATE`` transaction).
    """

    def __init__(self, root: Path | str, db: Path | str | None = None) -> None:
        self.root = Path(root)
        self.db = Path(db) if db is not None else self.root / INDEX_NAME
        self.prefix = root_of(self.root)  # a file's name: this, then its path in ``files``
        self._by_id = False  # files are in the order of their ids (else of their paths' parts)
        self._lock = threading.RLock()
        self._tmp: str | None = None
        self._conn = connect(self.db)

    # -- opening -------------------------------------------------------------------------

    @classmethod
    def open(cls, root: Path | str) -> StoreIndex:
        """The index of ``root``, brought up to date. A damaged index is rebuilt; a folder
        that cannot hold one (read-only, no locking) gets a private index in a temporary
        folder, removed on ``close``: slower, never wrong."""
        for attempt in (1, 2):
            try:
                index = cls(root)
            except (sqlite3.Error, OSError):
                break
            try:
                index.refresh()
                return index
            except sqlite3.DatabaseError as exc:
                index.close()
                if attempt == 2 or isinstance(exc, sqlite3.OperationalError):
                    break
                remove_db(index.db)  # damaged inside: rebuild it from the files
        tmp = tempfile.mkdtemp(prefix="repromatrix-index-")
        index = cls(root, Path(tmp) / INDEX_NAME)
        index._tmp = tmp
        index.refresh()
        return index

    def close(self) -> None:
        with self._lock:
            self._conn.close()
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> StoreIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock, transaction(self._conn) as conn:
            yield conn

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        return self._execute(sql, args).fetchall()

    def _execute(self, sql: str, args: Sequence[Any] = (),
                 cells: Sequence[str] | None = None) -> sqlite3.Cursor:
        """Run a read (``cells`` filling the temporary table ``wanted`` first). An index found
        damaged inside is rebuilt from the files and the read tried again."""
        for attempt in (1, 2):
            try:
                with self._lock:
                    if cells is not None:
                        self._in_cells(cells)
                    return self._conn.execute(sql, args)
            except sqlite3.DatabaseError as exc:
                if attempt == 2 or isinstance(exc, sqlite3.OperationalError) or self._tmp:
                    raise
                self._rebuild()
        raise AssertionError("unreachable")

    def _rebuild(self) -> None:
        with self._lock:
            self._conn.close()
            remove_db(self.db)
            self._conn = connect(self.db)
        self.refresh()

    # -- keeping up with the files -------------------------------------------------------

    def refresh(self) -> int:
        """Read what changed in the files since the last refresh; the number of lines read."""
        found = self._found()
        known = {r.path: r for r in map(FileRow._make,
                                        self._query(f"SELECT {FileRow.cols()} FROM files"))}
        if known.keys() == found.keys() and all(
                (known[k].size, known[k].mtime_ns) == (st.st_size, st.st_mtime_ns)
                for k, st in found.items()):
            return 0
        read = 0
        with self._write() as conn:
            known = file_rows(conn)
            touched: set[str] = set()
            for key in known.keys() - found.keys():
                touched |= forget_rows(conn, known[key].id)
                conn.execute("DELETE FROM files WHERE id = ?", (known[key].id,))
            changed = [key for key in (found if self._by_id else sorted(found))
                       if key not in known or (known[key].size, known[key].mtime_ns)
                       != (found[key].st_size, found[key].st_mtime_ns)]
            with bulk_insert(conn):
                read = read_files(conn, self.prefix, changed, known, touched)
            self._settle(conn, touched)
        return read

    def _settle(self, conn: sqlite3.Connection, touched: set[str]) -> None:
        """The latest record and the settled history of each ``touched`` cell, again."""
        if touched:
            update_cells(conn, touched)
            settle(conn, self.prefix, self._by_id)

    def _found(self) -> dict[str, os.stat_result]:
        out: dict[str, os.stat_result] = {}
        if not self.root.is_dir():
            return out
        for path in walk_jsonl(self.root):
            with contextlib.suppress(OSError):
                out[path.relative_to(self.root).as_posix()] = path.stat()
        return out

    def added(self, path: Path, offset: int, line: bytes) -> None:
        """``line`` (one record, newline included) was just appended at ``offset`` of ``path``.

        One ``BEGIN IMMEDIATE`` transaction: when everything before ``offset`` is indexed
        the line is indexed as every reader parses it; otherwise the file is read on from where
        the index stopped (another writer's lines included), so the index is current when it
        commits.
        """
        try:
            key = path.relative_to(self.root).as_posix()
        except ValueError:
            return
        with self._write() as conn:
            row = file_rows(conn, "WHERE path = ?", (key,)).get(key)
            item = parse_upgraded(line, str(path), (row.lines or 0) + 1) if row is not None else None
            if row is None or row.offset != offset or item is None or isinstance(item, Skipped):
                touched: set[str] = set()
                read_file(conn, self.prefix, key, row, touched)
                self._settle(conn, touched)
                return
            lines = (row.lines or 0) + 1
            insert_record(conn, row.id, lines, offset, line, *item)
            end = offset + len(line)
            st = path.stat()
            size, mtime = (st.st_size, st.st_mtime_ns) if st.st_size == end else (-1, -1)
            with path.open("rb") as fh:
                tail = tail_hash(fh, end)
            note_read(conn, row.id, size, mtime, end, lines, tail)
            self._settle(conn, {item[0]["cell"]})

    # -- queries -------------------------------------------------------------------------

    def keys(self, cells: Iterable[str] | None = None) -> dict[str, CellKey]:
        """The key fields of each cell's latest run (of ``cells``, or every cell): what run's
        reuse compares (is the environment the cell last ran in the planned one?), never what
        a cell shows (``shown_records``)."""
        sql = f"SELECT {CellKey.cols()} FROM cells"
        return {row[0]: CellKey(*row) for row in self._cells_rows(sql, cells, alias="")}

    def shown_records(self, cells: Iterable[str] | None = None) -> dict[str, Result]:
        """The record each cell shows (of ``cells``, or every cell): the one rule, its settled
        history's (``store.reader.settle_cell``: the latest, a real verdict over a stand-in one),
        as the page, ``check`` and bisect read it."""
        cells = None if cells is None else list(cells)
        return self._settled(lambda: dict(self.iter_shown(cells)))

    def iter_shown(self, cells: Iterable[str] | None = None) -> Iterator[tuple[str, Result]]:
        """``shown_records`` one cell at a time, in cell order: one record held at once."""
        rows = self._cells_rows("SELECT c.cell, r.file, r.offset, r.length, r.line, r.digest "
                                "FROM histories c JOIN records r ON r.id = c.record", cells)
        return self._read_records((cell, Where(fid, offset, length, line, dig, False))
                                  for cell, fid, offset, length, line, dig in rows)

    def _settled(self, read: Callable[[], dict[str, Result]]) -> dict[str, Result]:
        """``read()``; when a file changed under the index, refresh and read once more."""
        try:
            return read()
        except StaleIndex:
            self.refresh()
            return read()

    def histories(self) -> Iterator[Settled]:
        """Every cell's records, settled when they were indexed (``store.reader.settle_cell``),
        in order of each cell's first record in the store's files (``walk_jsonl``'s order),
        as a reader of the files meets them. No record line is read, and a history is parsed
        only when asked for (``Settled.history``)."""
        rank = {fid: n for n, (fid, _) in enumerate(self._ordered_files())}
        rows = self._settled_rows("")
        rows.sort(key=lambda s: (rank[s.first[0]], s.first[1]))
        yield from rows

    def shown(self, where: str = "") -> list[ShownKey]:
        """Each cell's shown record whose record ``r`` meets ``where`` (SQL), key fields only."""
        return index_histories.shown_keys(self._execute, where)

    def history_mark(self) -> tuple[str, int, int]:
        """(the index's epoch, its ``seq``, how many cells it holds): what a reader notes to
        ask ``histories_since`` later. Another epoch: the index was made anew."""
        epoch, seq, cells = self._query(
            "SELECT (SELECT value FROM meta WHERE key = 'epoch'), (SELECT value FROM meta "
            "WHERE key = 'seq'), (SELECT count(*) FROM histories)")[0]
        return str(epoch), int(seq), int(cells)

    def histories_since(self, seq: int) -> list[Settled]:
        """The settled history of each cell settled again after ``seq`` (``history_mark``):
        a cell that lost every record is not among them (its count is)."""
        return self._settled_rows("WHERE h.seq > ?", (seq,))

    def histories_of(self, cells: Iterable[str]) -> dict[str, Settled]:
        """The settled history of each of ``cells`` the index holds."""
        return {s.shown.cell: s for s in self._settled_rows(
            "WHERE h.cell IN (SELECT cell FROM wanted)", (), list(cells))}

    def _settled_rows(self, where: str, args: Sequence[Any] = (),
                      cells: Sequence[str] | None = None) -> list[Settled]:
        return settled_rows(self._execute, self.prefix, where, args, cells)

    def settleable(self) -> bool:
        """Whether every record is the only one of its kind (no copy of another record, no
        conflict): each cell's settled history is then what a reader of every record works
        out (blank, damaged and older-schema lines are the reader's to skip or upgrade)."""
        records, kept, conflicts = self._query(
            "SELECT (SELECT count(*) FROM records), (SELECT coalesce(sum(kept), 0) FROM histories), "
            "(SELECT coalesce(sum(conflicts), 0) FROM histories)")[0]
        return records == kept and not conflicts

    def kept_records(self) -> int:
        """How many records the cells' histories keep (every record, when ``settleable``)."""
        return int(self._query("SELECT coalesce(sum(kept), 0) FROM histories")[0][0])

    def _ordered_files(self, with_lines: bool = False) -> list[Any]:
        """(file id, path) of every indexed file, in ``walk_jsonl``'s order (by path parts;
        by id for an index whose files were given in order); ``with_lines``: (file id, path,
        lines read)."""
        return sorted(self._query("SELECT id, path, lines FROM files" if with_lines else
                                  "SELECT id, path FROM files"),
                      key=(lambda r: r[0]) if self._by_id else (lambda r: r[1].split("/")))

    def origin(self, name: str) -> Path | None:
        """The store folder file ``name`` was found in (None: a file given on its own)."""
        return self.root

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads inside see the index as it was when the first of them ran (one read
        transaction: a writer committing meanwhile is seen by none of them)."""
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                yield
            finally:
                self._conn.execute("COMMIT")

    def blocks(self) -> list[Block]:
        """Each indexed file, in ``walk_jsonl``'s order (``Block``). Reads only (use inside
        ``snapshot``); ``keep_chains`` keeps the digests worked out."""
        root = self.prefix
        out = []
        for fid, path, lines in self._ordered_files(with_lines=True):
            count, chain = self._chain(fid)
            last = [Where(fid, offset, length, line, dig, bool(upgraded)) for
                    offset, length, line, dig, upgraded in self._query(
                        "SELECT offset, length, line, digest, upgraded FROM records "
                        "WHERE file = ? ORDER BY offset DESC LIMIT 1", (fid,))]
            older, copies = self._query(
                "SELECT (SELECT count(*) FROM records WHERE file = ?1 AND upgraded), "
                "(SELECT count(*) FROM records WHERE file = ?1 AND copy)", (fid,))[0] \
                if last else (0, 0)
            out.append(Block(fid, root + path, lines, count, chain, last[0] if last else None,
                             older, copies))
        return out

    def _chain(self, fid: int, conn: sqlite3.Connection | None = None) -> tuple[int, str]:
        """(how many records file ``fid`` holds, a digest of their digests in line order),
        kept in ``files.chain`` once worked out (``keep_chains``)."""
        run = conn.execute if conn is not None else self._execute
        row = run("SELECT chain FROM files WHERE id = ?", (fid,)).fetchone()
        if row and row[0]:
            count, _, chain = row[0].partition(":")
            return int(count), chain
        digests = [d for (d,) in run("SELECT digest FROM records WHERE file = ? ORDER BY offset",
                                     (fid,))]
        return len(digests), hashlib.sha1("".join(digests).encode("ascii")).hexdigest()

    def chain(self, fid: int) -> tuple[int, str]:
        """``_chain``, kept for the next render (worked out inside one write transaction, so a
        writer appending meanwhile never leaves a digest of fewer records than the file has;
        a digest already kept is only read)."""
        row = self._execute("SELECT chain FROM files WHERE id = ?", (fid,)).fetchone()
        if row and row[0]:
            return self._chain(fid)
        with contextlib.suppress(sqlite3.Error), self._write() as conn:  # only a cache
            count, chain = self._chain(fid, conn)
            conn.execute("UPDATE files SET chain = ? WHERE id = ?", (f"{count}:{chain}", fid))
            return count, chain
        return self._chain(fid)

    def keep_chains(self) -> None:
        """Work out and keep the digest of every file that has none (after ``blocks``)."""
        for (fid,) in self._query("SELECT id FROM files WHERE chain IS NULL"):
            self.chain(fid)

    def skipped(self) -> list[Skipped]:
        """Every line the loader would skip, and why (file, line, reason)."""
        rows = self._query("SELECT f.path, s.line, s.reason FROM skipped s JOIN files f "
                           "ON f.id = s.file ORDER BY f.path, s.line")
        root = self.prefix  # each file named as ``files`` and ``blocks`` name it
        return [Skipped(root + p, line, reason) for p, line, reason in rows]

    def _in_cells(self, cells: Iterable[str]) -> None:
        """Fill the temporary table ``wanted`` with ``cells`` (call with the lock held)."""
        self._conn.execute("CREATE TEMP TABLE IF NOT EXISTS wanted (cell TEXT PRIMARY KEY)")
        self._conn.execute("DELETE FROM wanted")
        self._conn.executemany("INSERT OR IGNORE INTO wanted VALUES (?)", ((c,) for c in cells))

    def _cells_rows(self, sql: str, cells: Iterable[str] | None, alias: str = "c.") -> list[Any]:
        if cells is None:
            return self._execute(sql + f" ORDER BY {alias}cell").fetchall()
        return self._execute(sql + f" WHERE {alias}cell IN (SELECT cell FROM wanted) "
                             f"ORDER BY {alias}cell", (), list(cells)).fetchall()

    def entries(self) -> list[tuple[Entry, Where]]:
        """Every record line the files hold, in file and line order: its Entry (source
        ``file:line``) and where it is (``read_lines`` reads it back)."""
        rows = self._query(
            "SELECT r.run_id, r.cell, r.attempt, r.status, r.cache_key, r.finished_at, "
            "r.started_at, r.digest, f.path, r.line, r.file, r.offset, r.length, r.upgraded, "
            "r.evidence FROM records r JOIN files f ON f.id = r.file ORDER BY f.path, r.offset")
        root = self.prefix
        return [(Entry(run, cell, attempt, status, key, fin, start, dig, f"{root}{path}:{line}",
                       evidence or ""),
                 Where(fid, offset, length, line, dig, bool(upgraded)))
                for run, cell, attempt, status, key, fin, start, dig, path, line, fid, offset, length,
                upgraded, evidence in rows]

    def places(self, file: int, copies: bool = True) -> list[Where]:
        """Where each record of file ``file`` is, in line order (``read_lines`` reads them);
        ``copies=False``: not those its cell's history dropped as copies of another."""
        return [Where(file, offset, length, line, dig, bool(upgraded))
                for offset, length, line, dig, upgraded in self._query(
                    "SELECT offset, length, line, digest, upgraded FROM records WHERE file = ? "
                    f"{'' if copies else 'AND NOT copy '}ORDER BY offset", (file,))]

    def files(self) -> dict[str, tuple[int, int]]:
        """Every indexed file (its path) -> (file id, lines read): what ``entries`` covers."""
        root = self.prefix
        return {root + path: (fid, lines) for fid, path, lines in
                self._query("SELECT id, path, lines FROM files")}

    def read_lines(self, rows: Iterable[tuple[Any, Where]]) -> Iterator[tuple[Any, bytes]]:
        """Each (key, Where) row's line read back from its file;
        a line that is no longer the one indexed raises StaleIndex (and marks the file for
        reading again)."""
        paths = dict(self._query("SELECT id, path FROM files"))
        handles: dict[int, Any] = {}
        try:
            for key, (fid, offset, length, line, want, _) in rows:
                fh = handles.get(fid)
                if fh is None:
                    if len(handles) >= MAX_OPEN:
                        for old in handles.values():
                            old.close()
                        handles.clear()
                    fh = handles[fid] = open(self.prefix + paths[fid], "rb")  # noqa: SIM115
                fh.seek(offset)
                raw = fh.read(length)
                if digest(raw) != want:
                    self._forget_file(fid)
                    raise StaleIndex(f"{self.prefix}{paths[fid]}:{line} changed since it was "
                                     f"indexed: open the index again (StoreIndex.open)")
                yield key, raw
        finally:
            for fh in handles.values():
                fh.close()

    def forget(self, path: Path) -> None:
        """``path`` is not as indexed: the next refresh reads it again from the start."""
        with contextlib.suppress(ValueError):
            key = path.relative_to(self.root).as_posix()
            for (fid,) in self._query("SELECT id FROM files WHERE path = ?", (key,)):
                self._forget_file(fid)

    def _forget_file(self, fid: int) -> None:
        with self._write() as conn:
            conn.execute("UPDATE files SET size = -1, tail = NULL, chain = NULL WHERE id = ?",
                         (fid,))

    def _read_records(self, rows: Iterable[tuple[str, Where]]) -> Iterator[tuple[str, Result]]:
        """Each (key, Where) row's record read back from its file and parsed."""
        for (key, line), raw in self.read_lines(((key, where.line), where) for key, where in rows):
            item = parse_line(raw, str(self.root), line)
            if isinstance(item, Skipped):  # the digest matched: only a harness change gets here
                raise StaleIndex(f"{item}: open the index again (StoreIndex.open)")
            yield key, item


class StaleIndex(RuntimeError):
    """A record the index points at is no longer where it was (the file was rewritten)."""


def recorded_keys(root: Path | str, cells: Iterable[str]) -> dict[str, CellKey]:
    """The latest record's key fields of ``cells`` in the results folder ``root`` (may not exist)."""
    if not Path(root).is_dir():
        return {}
    with StoreIndex.open(root) as index:
        return index.keys(cells)


def recorded_shown(root: Path | str, cells: Iterable[str]) -> dict[str, Result]:
    """The record each of ``cells`` shows in the results folder ``root`` (may not exist)."""
    if not Path(root).is_dir():
        return {}
    with StoreIndex.open(root) as index:
        return index.shown_records(cells)


