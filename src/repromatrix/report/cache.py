"""The report's own cache beside its page: each cell's pieces, the layout.

Flow: report.load / report.pieces / report.render / report.patch -> **report.cache** ->
``out/.render-cache.sqlite`` (standard-library ``sqlite3``). Beside ``.render-state.json``
(``report.written``) and ``.render-site`` (``report.last_site``), and like them not part of the
page: deleting it costs one render that makes every cell's pieces again. It keeps:

    pieces     per cell, the page's pieces of it the last render made (``report.cell``:
               its grid cell, repro-page row, CSV row) under a key of every input they
               were made from (``report.cell.pieces_key``)
    placed     per cell, the detail chunk (``data/c<N>.js``) the last render wrote it in,
               under its pieces' key and that chunk's source: the rest of its pieces (drawer
               detail, environment) are read back from that chunk, not kept twice
               (``report.chunks.read_entries``), while the page's ``.render-state.json``
               says the chunk is the one written from that source
    meta       its ``format`` and the grid layout (``layout``) under the digest of what
               decides it

``FORMAT`` is the cache's own: a change of what it keeps empties it (the store's index,
``store.index``, is left alone). The store's records are read through the store's index,
and only those of cells whose pieces are made: a record's summary is not kept (as large
as the record, and about as costly to write and read back as to make again).
"""
from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from repromatrix.store.index_db import lay_out, remove_db, transaction

CACHE_NAME = ".render-cache.sqlite"
FORMAT = "repromatrix-render-cache-3"  # another value in `meta`: the cache is emptied
MANY = 2000  # rows asked for at once above which a table is read in one pass
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
-- rowid tables: a row of up to ~4 KB stays in its leaf page (a WITHOUT ROWID row spills
-- past ~1 KB), and a cell's head and its place are read in separate passes
CREATE TABLE IF NOT EXISTS pieces (cell TEXT PRIMARY KEY, key TEXT, head BLOB, markup BLOB);
CREATE TABLE IF NOT EXISTS placed (cell TEXT PRIMARY KEY, key TEXT, chunk INTEGER, source TEXT);
"""
_TABLES = ("meta", "pieces", "placed", "bodies", "summaries")  # (bodies, summaries: dropped)
Kept = tuple[str, bytes, bytes]  # (the pieces' key, and two pieces: head and markup)
Where = tuple[str, int, str]  # (the pieces' key, the chunk's number and source)


class RenderCache:
    """The cache of the report rendered into one ``--out`` folder (``RenderCache.open``)."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self._conn = _connect(db)

    @classmethod
    def open(cls, out: Path) -> RenderCache | None:
        """The cache of ``out``; a damaged one is made anew; None when it cannot be kept
        there (every render then makes every cell's pieces)."""
        for attempt in (1, 2):
            try:
                return cls(out / CACHE_NAME)
            except sqlite3.DatabaseError as exc:
                if attempt == 2 or isinstance(exc, sqlite3.OperationalError):
                    return None
                remove_db(out / CACHE_NAME)
            except OSError:
                return None
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

    def keep_only(self, cells: Iterable[str]) -> None:
        """Pieces of cells other than ``cells`` (a full render's) go, once they are a tenth
        of the table."""
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
