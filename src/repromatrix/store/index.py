"""An SQLite index beside the append-only result logs: every record's key fields, each cell's latest.

Flow: run -> results (**index**) -> run's reuse check / bisect / report. The JSONL
run files stay the source of truth (mergeable, diffable, append-only);
``<results>/.index.sqlite`` (standard-library ``sqlite3``, WAL) only points into
them, so it can always be deleted and rebuilt. Lines are read with the store's one
parser (``store.reader.parse``) and ordered by its one order (``store.reader.LATER_SQL``). It keeps:

    files    every indexed file: size and mtime when last read, how far it was
             read (byte offset, line count) and a hash of the bytes before that
             offset, so a file grown by another writer is read from where the
             index stopped and a rewritten one is read again from the start
    records  one row per record line: where it is (file, offset, length), its key
             fields (run, cell, attempt, stack, repro, status, cache key, times), a
             hash of the line and whether it was written under an older schema
    skipped  the lines the loader would skip, and why
    cells    per cell, the latest record's key fields (what a no-op `run` reads)
    histories  per cell, its records settled (``store.reader.settle_cell``: the record the
             report shows, the previous run's status, the timeline, flaky attempts,
             conflicts) with the shown record's fields, kept current as records arrive:
             a render of one store reads one row per cell, not one per record
    summaries  the report's summary of a record (``report.cell.record_summary``), keyed by
             the line's digest and the summary's version: kept for cells' latest
             records only, so a render parses only records it has not seen
    pieces   per cell, the page's pieces of it the last render made (``report.cell``:
             its grid cell, repro-page row, CSV row) and a key of every input they were
             made from: a render remakes only cells whose inputs changed
    bodies   per cell, the rest of those pieces (drawer detail, environment) under the
             same key: read only when the cell's chunk is written
    meta     also the report's last grid layout (``layout``), under the digest of what
             decides it; the index's ``epoch`` (made anew with the index) and ``seq``, a
             count of the settlings of ``histories``, each row noting the one that last
             wrote it: a reader that noted both reads only the cells settled since
             (``histories_since``)

``refresh`` brings the index up to date with the files (a stat per file when
nothing changed); ``ResultStore.append`` updates it as each record is written, in
one ``BEGIN IMMEDIATE`` transaction that first reads any lines the index missed
(another writer's, or ones written while it could not be updated). ``entries``
hands every record's ``store.reader.Entry`` to the store's conflict rule and history
(the report); ``keys``, ``latest`` and ``read_lines`` read from disk only the
records asked for, one at a time: memory follows the cells asked for.
"""
from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from .reader import (
    LATER_SQL,
    CellHistory,
    Conflict,
    Entry,
    Overlong,
    Skipped,
    Span,
    digest,
    dumps,
    entry,
    loads,
    parse_line,
    parse_upgraded,
    read_lines,
    settle_cell,
    walk_jsonl,
)
from .record import Result

INDEX_NAME = ".index.sqlite"
FORMAT = "repromatrix-index-15"  # another value in `meta`: the index is rebuilt
TAIL = 256  # bytes before the indexed offset that must be unchanged to read on from there
BUSY_TIMEOUT_S = 60.0
MAX_OPEN = 64  # record files held open at once while reading records back
LATEST_ORDER = ", ".join("r." + c.strip() for c in LATER_SQL.split(",")) + ", r.file, r.offset"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS files (id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL,
    size INTEGER, mtime_ns INTEGER, offset INTEGER, lines INTEGER, tail TEXT, chain TEXT);
CREATE TABLE IF NOT EXISTS records (id INTEGER PRIMARY KEY, file INTEGER NOT NULL,
    line INTEGER, offset INTEGER, length INTEGER, run_id TEXT, cell TEXT, attempt INTEGER,
    stack_id TEXT, repro TEXT, status TEXT, cache_key TEXT, started_at TEXT, finished_at TEXT, signature TEXT,
    workaround TEXT, digest TEXT, upgraded INTEGER, evidence TEXT);
CREATE INDEX IF NOT EXISTS records_by_cell
    ON records (cell, finished_at DESC, started_at DESC, run_id DESC);  -- LATER_SQL
CREATE INDEX IF NOT EXISTS records_by_file ON records (file, offset);
CREATE INDEX IF NOT EXISTS records_upgraded ON records (file) WHERE upgraded;  -- blocks()
CREATE TABLE IF NOT EXISTS skipped (file INTEGER, line INTEGER, reason TEXT,
    PRIMARY KEY (file, line));
CREATE TABLE IF NOT EXISTS summaries (key TEXT PRIMARY KEY, data BLOB) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS histories (cell TEXT PRIMARY KEY, record INTEGER, data BLOB,
    digest TEXT, kept INTEGER, conflicts INTEGER, changed_at TEXT, first_file INTEGER,
    first_offset INTEGER,
    -- the shown record's fields, as in records (read without a lookup per cell there)
    run_id TEXT, attempt INTEGER, status TEXT, cache_key TEXT, finished_at TEXT,
    started_at TEXT, rdigest TEXT, file INTEGER, line INTEGER, evidence TEXT, offset INTEGER,
    length INTEGER, upgraded INTEGER,
    seq INTEGER) WITHOUT ROWID;  -- meta 'seq' when it was last settled (histories_since)
CREATE INDEX IF NOT EXISTS histories_tally ON histories (kept, conflicts);  -- settleable()
CREATE INDEX IF NOT EXISTS histories_by_seq ON histories (seq);
-- rowid tables: a row of up to ~4 KB stays in its leaf page (a WITHOUT ROWID row spills
-- past ~1 KB), and a cell's heads and bodies are read in separate passes
CREATE TABLE IF NOT EXISTS pieces (cell TEXT PRIMARY KEY, key TEXT, head BLOB, markup BLOB);
CREATE TABLE IF NOT EXISTS bodies (cell TEXT PRIMARY KEY, key TEXT, detail BLOB, env BLOB);
CREATE TABLE IF NOT EXISTS cells (cell TEXT PRIMARY KEY, record INTEGER, stack_id TEXT,
    repro TEXT, status TEXT, cache_key TEXT, run_id TEXT, started_at TEXT, finished_at TEXT,
    signature TEXT, workaround TEXT, digest TEXT) WITHOUT ROWID;
"""
_RECORD_COLS = ("file, line, offset, length, run_id, cell, attempt, stack_id, repro, status, cache_key, "
                "started_at, finished_at, signature, workaround, digest, upgraded, evidence")
_KEY_COLS = "stack_id, repro, status, cache_key, run_id, finished_at, signature, workaround, digest"
_CELL_COLS = "cell, record, started_at, " + _KEY_COLS
_INSERT_HISTORY = f"INSERT INTO histories VALUES ({', '.join('?' * 23)})"


class CellKey(NamedTuple):
    """A cell's latest record, key fields only: enough to decide whether it must run again.

    (A named tuple, not a dataclass: ``keys()`` makes one per cell, 100k at a time.)
    """

    cell: str
    stack_id: str
    repro: str
    status: str
    cache_key: str | None
    run_id: str
    finished_at: str
    signature: str | None = None
    workaround: str | None = None
    digest: str = ""  # a hash of the record's line: the same digest, the same record


class Where(NamedTuple):
    """Where an indexed record line is: file id, byte offset and length, line number, digest,
    and whether it was written under an older schema (upgraded when read)."""

    file: int
    offset: int
    length: int
    line: int
    digest: str
    upgraded: bool


class Block(NamedTuple):
    """One indexed file (``StoreIndex.blocks``): its id and path, the lines read, how many
    of them are records, a digest of their digests in line order (``StoreIndex.chain``),
    where its last record is (None: it holds none), and how many records are in an older
    schema. ``lines == count`` and none older: the file is exactly its records."""

    file: int
    path: str
    lines: int
    count: int
    chain: str
    last: Where | None
    older: int


class Settled(NamedTuple):
    """A cell's records as the index settled them (``StoreIndex.histories``): the record
    shown and where it is, the file that holds it, how many records the cell keeps, when its
    status last changed (None: never), a digest of its history, and the history itself
    (``history``, parsed when asked for)."""

    shown: Entry
    where: Where
    file: str
    kept: int
    changed_at: str | None  # None: its status never changed
    digest: str
    data: bytes
    root: str
    first: tuple[int, int] = (0, 0)  # (file id, offset) of its first record: the cells' order

    def history(self) -> CellHistory:
        previous, spans, attempts, kept, conflicts = loads(self.data)
        root = self.root
        return CellHistory(self.shown, previous, [Span(*s) for s in spans], attempts, kept,
                           [Conflict(run_id, c, tuple(root + x for x in sources), tuple(statuses),
                                     root + kept_at)
                            for run_id, c, sources, statuses, kept_at in conflicts])


class StoreIndex:
    """The index of the ``*.jsonl`` files under ``root``, kept in ``db``.

    Use ``StoreIndex.open(root)`` (refreshed, a context manager). Safe to share
    between threads; several processes may refresh and append at once (WAL, and
    each change is one ``BEGIN IMMEDIATE`` transaction).
    """

    def __init__(self, root: Path | str, db: Path | str | None = None) -> None:
        self.root = Path(root)
        self.db = Path(db) if db is not None else self.root / INDEX_NAME
        self._lock = threading.RLock()
        self._tmp: str | None = None
        self._conn = self._connect()

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
                _remove_db(index.db)  # damaged inside: rebuild it from the files
        tmp = tempfile.mkdtemp(prefix="repromatrix-index-")
        index = cls(root, Path(tmp) / INDEX_NAME)
        index._tmp = tmp
        index.refresh()
        return index

    def _connect(self) -> sqlite3.Connection:
        self.db.parent.mkdir(parents=True, exist_ok=True)
        for attempt in (1, 2):
            conn = sqlite3.connect(str(self.db), timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                   check_same_thread=False)
            try:
                return _prepared_when_free(conn)
            except sqlite3.DatabaseError as exc:
                conn.close()
                damaged = not isinstance(exc, sqlite3.OperationalError)  # not "locked", "read-only"
                if attempt == 2 or not damaged or not self.db.exists():
                    raise
                _remove_db(self.db)  # damaged: it is only an index, rebuild it
        raise AssertionError("unreachable")

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
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

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
            _remove_db(self.db)
            self._conn = self._connect()
        self.refresh()

    # -- keeping up with the files -------------------------------------------------------

    def refresh(self) -> int:
        """Read what changed in the files since the last refresh; the number of lines read."""
        found = self._found()
        known = {row[1]: row for row in self._query(
            "SELECT id, path, size, mtime_ns, offset, lines, tail FROM files")}
        if known.keys() == found.keys() and all(
                (known[k][2], known[k][3]) == (st.st_size, st.st_mtime_ns) for k, st in found.items()):
            return 0
        read = 0
        with self._write() as conn:
            known = {row[1]: row for row in conn.execute(
                "SELECT id, path, size, mtime_ns, offset, lines, tail FROM files")}
            touched: set[str] = set()
            for key in known.keys() - found.keys():
                touched |= _forget(conn, known[key][0])
                conn.execute("DELETE FROM files WHERE id = ?", (known[key][0],))
            for key in sorted(found):
                row, st = known.get(key), found[key]
                if row is None or (row[2], row[3]) != (st.st_size, st.st_mtime_ns):
                    read += self._read_file(conn, key, row, touched)
            _update_cells(conn, touched)
            self._update_histories(conn, touched)
        return read

    def _found(self) -> dict[str, os.stat_result]:
        out: dict[str, os.stat_result] = {}
        if not self.root.is_dir():
            return out
        for path in walk_jsonl(self.root):
            with contextlib.suppress(OSError):
                out[path.relative_to(self.root).as_posix()] = path.stat()
        return out

    def _read_file(self, conn: sqlite3.Connection, key: str, row: Any, touched: set[str]) -> int:
        """Index one file from where the index stopped (or from the start when it was rewritten)."""
        path = self.root / key
        try:
            fh = path.open("rb")
        except OSError:
            return 0
        with fh:
            st = os.fstat(fh.fileno())
            fid, offset, lines, joined = self._resume(conn, fh, key, row, st.st_size, touched)
            fh.seek(offset)
            read = 0
            for raw in read_lines(fh):
                if isinstance(raw, Overlong):
                    conn.execute("INSERT OR REPLACE INTO skipped VALUES (?, ?, ?)",
                                 (fid, lines + 1, raw.reason()))
                    if not raw.complete:
                        break  # maybe still being written: read it again next time
                    joined, read = False, read + 1
                    offset, lines = offset + raw.size, lines + 1
                    continue
                complete = raw.endswith(b"\n")
                if joined:  # the rest of an indexed last line that had no newline yet
                    joined = False
                    if not raw.strip():
                        offset += len(raw)
                        continue
                if raw.strip():
                    read += 1
                    item = parse_upgraded(raw, str(path), lines + 1)
                    if isinstance(item, Skipped):
                        conn.execute("INSERT OR REPLACE INTO skipped VALUES (?, ?, ?)",
                                     (fid, lines + 1, item.reason))
                        if not complete:
                            break  # maybe a record still being written: read it again next time
                    else:
                        _insert(conn, fid, lines + 1, offset, raw, *item)
                        touched.add(item[0]["cell"])
                elif not complete:
                    break
                offset, lines = offset + len(raw), lines + 1
            conn.execute("UPDATE files SET size = ?, mtime_ns = ?, offset = ?, lines = ?, tail = ?, "
                         "chain = NULL "
                         "WHERE id = ?", (st.st_size, st.st_mtime_ns, offset, lines,
                                          _tail(fh, offset), fid))
        return read

    def _resume(self, conn: sqlite3.Connection, fh: Any, key: str, row: Any, size: int,
                touched: set[str]) -> tuple[int, int, int, bool]:
        """(file id, offset, lines, joined): where to read ``fh`` from. An unchanged prefix is
        read on from its end; anything else is forgotten and read from the start."""
        if row is not None and row[4] is not None and row[4] <= size and _tail(fh, row[4]) == row[6]:
            joined = row[4] > 0 and _byte_before(fh, row[4]) != b"\n"
            if not joined or _rest_is_blank(fh, row[4]):
                conn.execute("DELETE FROM skipped WHERE file = ? AND line > ?", (row[0], row[5]))
                return row[0], row[4], row[5], joined
        if row is None:
            return conn.execute("INSERT INTO files (path) VALUES (?)", (key,)).lastrowid, 0, 0, False
        touched |= _forget(conn, row[0])
        return row[0], 0, 0, False

    def _update_histories(self, conn: sqlite3.Connection, touched: set[str]) -> None:
        """Settle the records of each ``touched`` cell again (``store.reader.settle_cell``)
        into its ``histories`` row (call after ``_update_cells``, which fills ``touched``)."""
        if not touched:
            return
        root = str(self.root) + os.sep
        conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'seq'")
        seq = int(conn.execute("SELECT value FROM meta WHERE key = 'seq'").fetchone()[0])
        conn.execute("DELETE FROM histories WHERE cell IN (SELECT cell FROM touched)")
        rows = conn.execute(  # streamed: a first build holds one cell's records at a time
            "SELECT r.cell, r.id, r.run_id, r.attempt, r.status, r.cache_key, r.finished_at, "
            "r.started_at, r.digest, f.path, r.line, r.evidence, r.file, r.offset, r.length, "
            "r.upgraded FROM records r "
            "JOIN files f ON f.id = r.file WHERE r.cell IN (SELECT cell FROM touched) "
            "ORDER BY r.cell")
        out: list[tuple[Any, ...]] = []
        for cell, group in itertools.groupby(rows, key=lambda r: r[0]):
            rows_of: dict[str, tuple[Any, ...]] = {}
            entries = []
            first: tuple[int, int] | None = None
            # in the order a reader of the files meets them: files by path parts, as
            # walk_jsonl sorts them ('h/…' before 'h-2/…'), then by place in the file
            for row in sorted(group, key=lambda r: (r[9].split("/"), r[13])):
                (_, _, run, attempt, status, key, fin, start, dig, path, line, evidence, fid,
                 offset, _, _) = row
                first = first or (fid, offset)
                source = f"{path}:{line}"
                rows_of[source] = row
                entries.append(Entry(run, cell, attempt, status, key, fin, start, dig,
                                     root + source, evidence or ""))
            settled = settle_cell(entries)
            data = dumps([settled.previous, [list(s) for s in settled.spans], settled.attempts,
                          settled.kept, [[c.run_id, c.cell, [x[len(root):] for x in c.sources],
                                          list(c.statuses), c.kept[len(root):]]
                                         for c in settled.conflicts]])
            changed_at = max((s.first_at for s in settled.spans[1:]), default=None)
            (_, rid, run, attempt, status, key, fin, start, dig, _, line, evidence, fid, offset,
             length, upgraded) = rows_of[settled.shown.source[len(root):]]
            out.append((cell, rid, data, hashlib.sha1(data).hexdigest(), settled.kept,
                        len(settled.conflicts), changed_at, *first,  # type: ignore[misc]
                        run, attempt, status, key, fin, start, dig, fid, line, evidence, offset,
                        length, upgraded, seq))
            if len(out) >= 1000:
                conn.executemany(_INSERT_HISTORY, out)
                out.clear()
        conn.executemany(_INSERT_HISTORY, out)

    def added(self, path: Path, offset: int, line: bytes) -> None:
        """``line`` (one record, newline included) was just appended at ``offset`` of ``path``.

        One ``BEGIN IMMEDIATE`` transaction: when everything before ``offset`` is indexed
        the line is indexed as every reader parses it; otherwise the file is read on from where the index
        stopped (another writer's lines included), so the index is current when it commits.
        """
        try:
            key = path.relative_to(self.root).as_posix()
        except ValueError:
            return
        with self._write() as conn:
            row = conn.execute("SELECT id, path, size, mtime_ns, offset, lines, tail FROM files "
                               "WHERE path = ?", (key,)).fetchone()
            item = parse_upgraded(line, str(path), row[5] + 1) if row is not None else None
            if row is None or row[4] != offset or isinstance(item, Skipped):
                touched: set[str] = set()
                self._read_file(conn, key, row, touched)
                _update_cells(conn, touched)
                self._update_histories(conn, touched)
                return
            fid, lines = row[0], row[5]
            _insert(conn, fid, lines + 1, offset, line, *item)  # type: ignore[misc]
            end = offset + len(line)
            st = path.stat()
            size, mtime = (st.st_size, st.st_mtime_ns) if st.st_size == end else (-1, -1)
            with path.open("rb") as fh:
                tail = _tail(fh, end)
            conn.execute("UPDATE files SET size = ?, mtime_ns = ?, offset = ?, lines = ?, tail = ?, "
                         "chain = NULL "
                         "WHERE id = ?", (size, mtime, end, lines + 1, tail, fid))
            cell = item[0]["cell"]  # type: ignore[index]
            _update_cells(conn, {cell})
            self._update_histories(conn, {cell})

    # -- queries -------------------------------------------------------------------------

    def keys(self, cells: Iterable[str] | None = None) -> dict[str, CellKey]:
        """The latest record's key fields of each cell (of ``cells``, or every cell)."""
        sql = f"SELECT cell, {_KEY_COLS} FROM cells"
        return {row[0]: CellKey(*row) for row in self._cells_rows(sql, cells, alias="")}

    def latest(self, cells: Iterable[str] | None = None) -> dict[str, Result]:
        """The latest record of each cell (of ``cells``, or every cell), like ``latest_by_cell``."""
        cells = None if cells is None else list(cells)
        return self._settled(lambda: dict(self.iter_latest(cells)))

    def iter_latest(self, cells: Iterable[str] | None = None) -> Iterator[tuple[str, Result]]:
        """``latest`` one cell at a time, in cell order: only one record is held at once."""
        rows = self._cells_rows("SELECT c.cell, r.file, r.offset, r.length, r.line, r.digest FROM cells c "
                                "JOIN records r ON r.id = c.record", cells)
        return self._read_records(rows)

    def _settled(self, read: Callable[[], dict[str, Result]]) -> dict[str, Result]:
        """``read()``; when a file changed under the index, refresh and read once more."""
        try:
            return read()
        except StaleIndex:
            self.refresh()
            return read()

    def summaries(self, keys: Iterable[str]) -> dict[str, bytes]:
        """The summaries kept under ``keys`` (``<record digest>:<version>``; see
        ``keep_summaries``): looked up a batch at a time when few, else in one pass over the
        table (it holds little but the summaries of its cells' latest records)."""
        wanted = list(dict.fromkeys(keys))
        if len(wanted) > 2000:
            chosen = set(wanted)
            return {key: bytes(data) for key, data in self._execute("SELECT key, data FROM summaries")
                    if key in chosen}
        out = {}
        for start in range(0, len(wanted), 500):
            batch = wanted[start:start + 500]
            out.update((key, bytes(data)) for key, data in self._execute(
                f"SELECT key, data FROM summaries WHERE key IN ({','.join('?' * len(batch))})", batch))
        return out

    def keep_summaries(self, items: Iterable[tuple[str, bytes]], version: str) -> None:
        """Keep ``(key, data)`` summaries of records (the report's per-cell data, keyed by
        ``<record digest>:<version>``); those of other versions, or of records no longer
        any cell's latest, go once they are a tenth of the table."""
        with self._write() as conn:
            conn.executemany("INSERT OR REPLACE INTO summaries VALUES (?, ?)", items)
            # the others go once they are a tenth of the table: not a scan on every render
            kept, cells = conn.execute("SELECT (SELECT count(*) FROM summaries), "
                                       "(SELECT count(*) FROM cells)").fetchone()
            if kept > cells * 1.1 + 100:
                conn.execute("DELETE FROM summaries WHERE key NOT LIKE ? OR substr(key, 1, 40) "
                             "NOT IN (SELECT digest FROM cells)", (f"%:{version}",))

    def histories(self) -> Iterator[Settled]:
        """Every cell's records, settled when they were indexed (``store.reader.settle_cell``),
        in order of each cell's first record in the store's files (``walk_jsonl``'s order),
        as a reader of the files meets them. No record line is read, and a history is parsed
        only when asked for (``Settled.history``)."""
        rank = {fid: n for n, (fid, _) in enumerate(self._ordered_files())}
        rows = self._settled_rows("")
        rows.sort(key=lambda s: (rank[s.first[0]], s.first[1]))
        yield from rows

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
        root = str(self.root) + os.sep
        rows = self._execute(
            "SELECT h.cell, h.data, h.digest, h.kept, h.changed_at, h.run_id, h.attempt, h.status, "
            "h.cache_key, h.finished_at, h.started_at, h.rdigest, f.path, h.line, h.evidence, "
            "h.file, h.offset, h.length, h.upgraded, h.first_file, h.first_offset "
            f"FROM histories h JOIN files f ON f.id = h.file {where}", args, cells).fetchall()
        return [Settled(Entry(run, cell, attempt, status, key, fin, start, dig,
                              f"{root}{path}:{line}", evidence or ""),
                        Where(fid, offset, length, line, dig, bool(upgraded)), root + path,
                        kept, changed_at, hdigest, data, root, (first_file, first_offset))
                for (cell, data, hdigest, kept, changed_at, run, attempt, status, key, fin, start,
                     dig, path, line, evidence, fid, offset, length, upgraded, first_file,
                     first_offset) in rows]

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
        """(file id, path) of every indexed file, in ``walk_jsonl``'s order (by path parts);
        ``with_lines``: (file id, path, lines read)."""
        return sorted(self._query("SELECT id, path, lines FROM files" if with_lines else
                                  "SELECT id, path FROM files"), key=lambda r: r[1].split("/"))

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
        root = str(self.root) + os.sep
        out = []
        for fid, path, lines in self._ordered_files(with_lines=True):
            count, chain = self._chain(fid)
            last = self._query("SELECT offset, length, line, digest, upgraded, (SELECT count(*) "
                               "FROM records WHERE file = ?1 AND upgraded) FROM records "
                               "WHERE file = ?1 ORDER BY offset DESC LIMIT 1", (fid,))
            out.append(Block(fid, root + path, lines, count, chain,
                             Where(fid, *last[0][:4], bool(last[0][4])) if last else None,
                             last[0][5] if last else 0))
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

    def pieces(self) -> dict[str, tuple[str, bytes, bytes]]:
        """The report's pieces of each cell (``keep_pieces``): (their key, head, markup)."""
        return {cell: (key, head, markup) for cell, key, head, markup in
                self._execute("SELECT cell, key, head, markup FROM pieces")}

    def pieces_of(self, cells: Iterable[str]) -> dict[str, tuple[str, bytes, bytes]]:
        """``pieces`` of ``cells`` only."""
        return {cell: (key, head, markup) for cell, key, head, markup in self._execute(
            "SELECT cell, key, head, markup FROM pieces WHERE cell IN (SELECT cell FROM wanted)",
            (), list(cells))}

    def bodies(self, cells: Iterable[str]) -> dict[str, tuple[str, bytes, bytes]]:
        """The key, detail and environment pieces of ``cells`` (in one pass over the table
        when they are many): the key, because another render may have replaced them since
        ``pieces`` was read."""
        cells = list(cells)
        if len(cells) > 2000:
            wanted = set(cells)
            return {cell: (key, detail, env) for cell, key, detail, env in self._execute(
                "SELECT cell, key, detail, env FROM bodies") if cell in wanted}
        return {cell: (key, detail, env) for cell, key, detail, env in self._execute(
            "SELECT cell, key, detail, env FROM bodies WHERE cell IN (SELECT cell FROM wanted)",
            (), cells)}

    def keep_pieces(self, items: Iterable[tuple[str, str, bytes, bytes, bytes, bytes]]) -> None:
        """Keep each cell's pieces ``(cell, key, head, markup, detail, env)``, replacing its
        earlier ones; pieces of cells the index no longer holds go."""
        items = list(items)
        with self._write() as conn:
            conn.executemany("INSERT OR REPLACE INTO pieces VALUES (?, ?, ?, ?)",
                             [(cell, key, head, markup) for cell, key, head, markup, _, _ in items])
            conn.executemany("INSERT OR REPLACE INTO bodies VALUES (?, ?, ?, ?)",
                             [(cell, key, detail, env) for cell, key, _, _, detail, env in items])
            for table in ("pieces", "bodies"):
                conn.execute(f"DELETE FROM {table} WHERE cell NOT IN (SELECT cell FROM cells)")

    def layout(self, key: str) -> str | None:
        """The grid layout kept under ``key`` (``keep_layout``), else None."""
        rows = self._query("SELECT value FROM meta WHERE key = 'layout'")
        if rows and rows[0][0].startswith(key + "\n"):
            return rows[0][0][len(key) + 1:]
        return None

    def keep_layout(self, key: str, layout: str) -> None:
        """Keep one grid layout (the report's, as text) under the digest of its inputs."""
        with self._write() as conn:
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('layout', ?)", (f"{key}\n{layout}",))

    def skipped(self) -> list[Skipped]:
        """Every line the loader would skip, and why (file, line, reason)."""
        rows = self._query("SELECT f.path, s.line, s.reason FROM skipped s JOIN files f "
                           "ON f.id = s.file ORDER BY f.path, s.line")
        root = str(self.root) + os.sep  # each file named as ``files`` and ``blocks`` name it
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
        root = str(self.root) + os.sep
        return [(Entry(run, cell, attempt, status, key, fin, start, dig, f"{root}{path}:{line}",
                       evidence or ""),
                 Where(fid, offset, length, line, dig, bool(upgraded)))
                for run, cell, attempt, status, key, fin, start, dig, path, line, fid, offset, length,
                upgraded, evidence in rows]

    def places(self, file: int) -> list[Where]:
        """Where each record of file ``file`` is, in line order (``read_lines`` reads them)."""
        return [Where(file, offset, length, line, dig, bool(upgraded))
                for offset, length, line, dig, upgraded in self._query(
                    "SELECT offset, length, line, digest, upgraded FROM records WHERE file = ? "
                    "ORDER BY offset", (file,))]

    def files(self) -> dict[str, tuple[int, int]]:
        """Every indexed file (its path) -> (file id, lines read): what ``entries`` covers."""
        root = str(self.root) + os.sep
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
                    fh = handles[fid] = (self.root / paths[fid]).open("rb")
                fh.seek(offset)
                raw = fh.read(length)
                if digest(raw) != want:
                    self._forget_file(fid)
                    raise StaleIndex(f"{self.root / paths[fid]}:{line} changed since it was "
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

    def _read_records(self, rows: Iterable[Any]) -> Iterator[tuple[Any, Result]]:
        """Read each (key, file, offset, length, line, digest) row's record back from its file."""
        for (key, line), raw in self.read_lines(((r[0], r[4]), Where(*r[1:], False)) for r in rows):
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


def recorded_latest(root: Path | str, cells: Iterable[str]) -> dict[str, Result]:
    """The latest record of ``cells`` in the results folder ``root`` (may not exist)."""
    if not Path(root).is_dir():
        return {}
    with StoreIndex.open(root) as index:
        return index.latest(cells)


# -- helpers ---------------------------------------------------------------------------------

def _prepared(conn: sqlite3.Connection) -> sqlite3.Connection:
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")  # the JSONL files are fsynced; this is derived
    version = None
    with contextlib.suppress(sqlite3.OperationalError):
        row = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
        version = row[0] if row else None
    conn.execute("BEGIN IMMEDIATE")
    try:
        if version not in (None, FORMAT):
            for table in ("meta", "files", "records", "skipped", "cells", "summaries", "pieces",
                          "bodies", "histories"):
                conn.execute(f"DROP TABLE IF EXISTS {table}")
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('format', ?)", (FORMAT,))
        conn.execute("INSERT OR IGNORE INTO meta VALUES ('epoch', ?)", (os.urandom(8).hex(),))
        conn.execute("INSERT OR IGNORE INTO meta VALUES ('seq', '0')")
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    return conn


def _prepared_when_free(conn: sqlite3.Connection) -> sqlite3.Connection:
    """``_prepared``, waiting while another process holds the database: switching a new
    database to WAL can report "locked" at once, without SQLite's busy wait."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            return _prepared(conn)
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _remove_db(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(OSError):
            os.unlink(str(db) + suffix)


def _tail(fh: Any, offset: int) -> str:
    """A hash of the (up to) TAIL bytes before ``offset``: unchanged when a file only grew."""
    start = max(0, offset - TAIL)
    fh.seek(start)
    return hashlib.sha1(fh.read(offset - start)).hexdigest()


def _byte_before(fh: Any, offset: int) -> bytes:
    fh.seek(offset - 1)
    return fh.read(1)


def _rest_is_blank(fh: Any, offset: int) -> bool:
    """Whether what follows ``offset`` on its line is only whitespace (a newline at most)."""
    fh.seek(offset)
    return not fh.readline().strip()


def _insert(conn: sqlite3.Connection, fid: int, number: int, offset: int, raw: bytes,
            data: dict[str, Any], upgraded: bool = False) -> None:
    e = entry(data, raw, "")
    conn.execute(f"INSERT INTO records ({_RECORD_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                 (fid, number, offset, len(raw), e.run_id, e.cell, e.attempt,
                  str(data["stack"]["id"]), data["repro"], e.status, e.cache_key, e.started_at,
                  e.finished_at, _opt(data.get("signature")), _opt(data.get("workaround")),
                  e.digest, int(upgraded), e.evidence))


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)


def _forget(conn: sqlite3.Connection, fid: int) -> set[str]:
    """Drop a file's rows; the cells they touched (their latest record must be found again)."""
    cells = {c for (c,) in conn.execute("SELECT DISTINCT cell FROM records WHERE file = ?", (fid,))}
    conn.execute("DELETE FROM records WHERE file = ?", (fid,))
    conn.execute("DELETE FROM skipped WHERE file = ?", (fid,))
    return cells


def _update_cells(conn: sqlite3.Connection, touched: set[str]) -> None:
    """Recompute the ``cells`` rows of ``touched`` from ``records``."""
    if not touched:
        return
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS touched (cell TEXT PRIMARY KEY)")
    conn.execute("DELETE FROM touched")
    conn.executemany("INSERT OR IGNORE INTO touched VALUES (?)", ((c,) for c in touched))
    conn.execute("DELETE FROM cells WHERE cell IN (SELECT cell FROM touched)")
    conn.execute(
        f"INSERT INTO cells ({_CELL_COLS}) SELECT r.cell, r.id, r.started_at, "
        f"{_prefixed('r.', _KEY_COLS)} FROM touched t "
        f"JOIN records r ON r.id = (SELECT r.id FROM records r WHERE r.cell = t.cell "
        f"ORDER BY {LATEST_ORDER} LIMIT 1)")


def _prefixed(prefix: str, cols: str) -> str:
    return ", ".join(prefix + c.strip() for c in cols.split(","))
