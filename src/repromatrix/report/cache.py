"""The report's own cache: each cell's pieces, where each file of the page was made, the layout.

Flow: report.load / pieces / render / patch / chunks / verdicts -> **report.cache** ->
``.render-cache.sqlite`` (``sqlite3``) beside the store's index when the report reads one
store folder it may write in (a render into any ``--out`` finds it), else in ``--out``.
Not part of the page: deleting it costs one render that makes every cell's pieces again.

    pieces  per cell, its grid cell, repro-page row and CSV row (``report.cell``) under a
            key of every input they were made from (``report.cell.pieces_key``)
    placed  per cell, the chunk (``data/c<N>.js``) the last render wrote its drawer detail
            and environment in, read back from there (``report.chunks.read_entries``) while
            ``.render-state.json`` says it is the one written from that source
    files   per file made from a source (the chunks, the box's data), the file a render
            last made it in and the digest of its bytes: a render into another folder copies
            it while it holds those bytes (``write_sourced``); nothing is kept twice
    meta    its ``format`` and the grid layout under the digest of what decides it

``FORMAT`` is the cache's own: another empties it (the store's index is left alone). A
record's summary is not kept (as large as the record, and about as costly to read back as
to make again).
"""
from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from repromatrix.store.index_db import lay_out, remove_db, transaction

from .written import RenderState

CACHE_NAME = ".render-cache.sqlite"
FORMAT = "repromatrix-render-cache-4"  # another value in `meta`: the cache is emptied
MANY = 2000  # rows asked for at once above which a table is read in one pass
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
-- rowid tables: a row of up to ~4 KB stays in its leaf page (a WITHOUT ROWID row spills
-- past ~1 KB), and a cell's head and its place are read in separate passes
CREATE TABLE IF NOT EXISTS pieces (cell TEXT PRIMARY KEY, key TEXT, head BLOB, markup BLOB);
CREATE TABLE IF NOT EXISTS placed (cell TEXT PRIMARY KEY, key TEXT, chunk INTEGER, source TEXT);
CREATE TABLE IF NOT EXISTS files (name TEXT PRIMARY KEY, source TEXT, path TEXT, digest TEXT);
"""
_TABLES = ("meta", "pieces", "placed", "files", "bodies", "summaries")  # (bodies, summaries: dropped)
Kept = tuple[str, bytes, bytes]  # (the pieces' key, and two pieces: head and markup)
Where = tuple[str, int, str]  # (the pieces' key, the chunk's number and source)
Written = tuple[str, str, str]  # a file as last made: (its source, path, digest of its bytes)


class RenderCache:
    """The cache of the renders of one store, or into one ``--out`` (``RenderCache.open``)."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self._conn = _connect(db)

    @classmethod
    def open(cls, out: Path, store: Path | None = None) -> RenderCache | None:
        """The cache of a render into ``out``: beside the index of ``store`` (the one store
        folder it reads), else (that folder cannot hold it) in ``out``; a damaged one is made
        anew; None when neither can (every render then makes every cell's pieces). A cache an
        earlier release kept in ``out`` goes once the store holds it."""
        for db in ([store / CACHE_NAME] if store is not None else []) + [out / CACHE_NAME]:
            for attempt in (1, 2):
                try:
                    found = cls(db)
                except sqlite3.DatabaseError as exc:
                    if attempt == 2 or isinstance(exc, sqlite3.OperationalError):
                        break
                    remove_db(db)
                    continue
                except OSError:
                    break
                if db.parent != out:
                    remove_db(out / CACHE_NAME)
                return found
        return None

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> RenderCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return transaction(self._conn)

    def _in(self, sql: str, table: str, keys: Sequence[str]) -> Iterator[Any]:
        """The rows of ``sql`` (selecting from ``table``) whose cell is one of ``keys``:
        a batch at a time when few, else in one pass over the table."""
        if len(keys) > MANY:
            wanted = set(keys)
            yield from (row for row in self._conn.execute(f"{sql} FROM {table}")
                        if row[0] in wanted)
            return
        for start in range(0, len(keys), 500):
            batch = keys[start:start + 500]
            yield from self._conn.execute(
                f"{sql} FROM {table} WHERE cell IN ({','.join('?' * len(batch))})", batch)

    # -- pieces --------------------------------------------------------------------------

    def pieces(self) -> dict[str, Kept]:
        """Each cell's kept pieces (``keep_pieces``): (their key, head, markup)."""
        return {cell: (key, head, markup) for cell, key, head, markup in
                self._conn.execute("SELECT cell, key, head, markup FROM pieces")}

    def pieces_of(self, cells: Iterable[str]) -> dict[str, Kept]:
        """``pieces`` of ``cells`` only."""
        return {cell: (key, head, markup) for cell, key, head, markup in
                self._in("SELECT cell, key, head, markup", "pieces", list(cells))}

    def placed(self, cells: Iterable[str]) -> dict[str, Where]:
        """Where each of ``cells`` was last written: (its pieces' key then, the chunk's
        number and source)."""
        return {cell: (key, chunk, source) for cell, key, chunk, source in
                self._in("SELECT cell, key, chunk, source", "placed", list(cells))}

    def keep_pieces(self, items: Iterable[tuple[str, str, bytes, bytes]]) -> None:
        """Keep each cell's pieces ``(cell, key, head, markup)``, replacing its earlier ones."""
        with self._write() as conn:
            conn.executemany("INSERT OR REPLACE INTO pieces VALUES (?, ?, ?, ?)", list(items))

    def keep_placed(self, items: Iterable[tuple[str, str, int, str]]) -> None:
        """Each ``(cell, key, chunk, source)`` was just written in chunk ``chunk``."""
        with self._write() as conn:
            conn.executemany("INSERT OR REPLACE INTO placed VALUES (?, ?, ?, ?)", list(items))

    def written(self, names: Iterable[str]) -> dict[str, Written]:
        """Where each of the page's files ``names`` was last made (``keep_written``)."""
        wanted = set(names)
        return {name: (source, path, digest) for name, source, path, digest in
                self._conn.execute("SELECT name, source, path, digest FROM files")
                if name in wanted}

    def keep_written(self, items: Iterable[tuple[str, str, str, str]]) -> None:
        """Each ``(name, source, path, digest)``: file ``name`` was just made in ``path``."""
        with self._write() as conn:
            conn.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?)", list(items))

    def keep_only(self, cells: Iterable[str]) -> None:
        """Pieces of cells other than ``cells`` (a full render's) go once a tenth of the table."""
        wanted = set(cells)
        with self._write() as conn:
            kept = conn.execute("SELECT count(*) FROM pieces").fetchone()[0]
            if kept <= len(wanted) * 1.1 + 100:
                return
            gone = [(c,) for (c,) in conn.execute("SELECT cell FROM pieces") if c not in wanted]
            for table in ("pieces", "placed"):
                conn.executemany(f"DELETE FROM {table} WHERE cell = ?", gone)

    # -- layout --------------------------------------------------------------------------

    def layout(self, key: str) -> str | None:
        """The grid layout kept under ``key`` (``keep_layout``), else None."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'layout'").fetchone()
        if row and row[0].startswith(key + "\n"):
            return str(row[0][len(key) + 1:])
        return None

    def keep_layout(self, key: str, layout: str) -> None:
        """Keep one grid layout (the report's, as text) under the digest of its inputs."""
        with self._write() as conn:
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('layout', ?)", (f"{key}\n{layout}",))


def _connect(db: Path) -> sqlite3.Connection:
    """The cache's database, its tables made (emptied first when of another ``FORMAT``, and
    the file shrunk: an older format's could keep its space)."""
    conn = sqlite3.connect(str(db), timeout=60.0, isolation_level=None)
    try:
        conn.execute("PRAGMA page_size = 16384")  # (a new file only) rows of 2 to 5 KB fill its pages
        conn.execute("PRAGMA synchronous = OFF")  # a cache: a torn one is only made anew
        if lay_out(conn, _SCHEMA, FORMAT, _TABLES) not in (None, FORMAT):
            conn.execute("VACUUM")
    except BaseException:
        conn.close()
        raise
    return conn



class Book(Protocol):  # where a render notes the files it made (``report.load.Reduced``)
    def written(self, names: Iterable[str]) -> dict[str, Written]: ...
    def keep_written(self, items: list[tuple[str, str, str, str]]) -> None: ...


def write_sourced(out: Path, sources: Mapping[str, str],
                  make: Callable[[list[str]], Mapping[str, bytes]], state: RenderState,
                  book: Book | None) -> list[str]:
    """Write each file ``sources`` names (its name under ``out`` -> the digest of its inputs)
    whose source changed since the last render into ``out``: copied from where the ``book``
    says a render last made it from that source while it holds the bytes made (its bytes
    follow from its source), else made by ``make`` (asked once). Returns the names written."""
    stale = {name: source for name, source in sources.items()
             if not state.kept(out / name, source)}
    found: dict[str, bytes] = {}
    for name, (source, path, digest) in (book.written(stale) if book and stale else {}).items():
        with contextlib.suppress(OSError):
            data = Path(path).read_bytes()
            if source == stale[name] and hashlib.sha1(data).hexdigest() == digest:
                found[name] = data
    made = make([name for name in stale if name not in found]) if len(found) < len(stale) else {}
    for name, source in stale.items():
        state.write_made(out / name, source, found.get(name) or made[name])
    if book is not None and made:  # (a copy's file stays the one noted: this folder may go first)
        book.keep_written([(name, stale[name], str((out / name).resolve()),
                            hashlib.sha1(data).hexdigest()) for name, data in made.items()])
    return list(stale)
