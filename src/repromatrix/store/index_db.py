"""The store index's database: its file, its schema and format, opened ready for use.

Flow: results -> **store.index_db** -> store.index. ``<results>/.index.sqlite`` holds the
records and the cells' histories only (``store.index``'s docstring names its tables);
the report's own cache lives beside the page (``report.cache``). ``FORMAT`` changes
with the tables or what a row means: an index of another format is emptied and built
again from the files. A report change never changes it.
"""
from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

INDEX_NAME = ".index.sqlite"
FORMAT = "repromatrix-index-18"  # another value in `meta`: the index is rebuilt
BUSY_TIMEOUT_S = 60.0
TABLES = ("meta", "files", "records", "skipped", "cells", "histories",
          "summaries", "pieces", "bodies")  # (the last three: an older format's report cache)

# the records table's indexes: left out while a first build fills an empty table
# (``bulk_insert``: made once after, from the sorted rows, rather than row by row)
RECORD_INDEXES = {
    "records_by_cell": "records (cell, finished_at DESC, started_at DESC, run_id DESC)",  # LATER_SQL
    "records_by_file": "records (file, offset)",
    "records_upgraded": "records (file) WHERE upgraded",  # blocks()
    "records_copies": "records (file) WHERE copy",  # blocks()
}

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS files (id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL,
    size INTEGER, mtime_ns INTEGER, offset INTEGER, lines INTEGER, tail TEXT, chain TEXT);
CREATE TABLE IF NOT EXISTS records (id INTEGER PRIMARY KEY, file INTEGER NOT NULL,
    line INTEGER, offset INTEGER, length INTEGER, run_id TEXT, cell TEXT, attempt INTEGER,
    stack_id TEXT, repro TEXT, status TEXT, cache_key TEXT, started_at TEXT, finished_at TEXT, signature TEXT,
    workaround TEXT, digest TEXT, upgraded INTEGER, evidence TEXT,
    kind TEXT, gpu INTEGER, torch TEXT, torchvision TEXT, torch_tensorrt TEXT, ngc TEXT,
    python TEXT, onnxscript TEXT, onnxruntime TEXT,  -- the stack's kind, a GPU seen, its
    -- versions (rules.versions.record_versions)
    copy INTEGER DEFAULT 0);  -- copy: its cell's history dropped it as a copy of another
""" + "".join(f"CREATE INDEX IF NOT EXISTS {name} ON {on};\n"
             for name, on in RECORD_INDEXES.items()) + """
CREATE TABLE IF NOT EXISTS skipped (file INTEGER, line INTEGER, reason TEXT,
    PRIMARY KEY (file, line));
CREATE TABLE IF NOT EXISTS histories (cell TEXT PRIMARY KEY, record INTEGER, data BLOB,
    digest TEXT, kept INTEGER, conflicts INTEGER, changed_at TEXT, first_file INTEGER,
    first_offset INTEGER, seq INTEGER) WITHOUT ROWID;  -- seq: meta 'seq' when last settled
CREATE INDEX IF NOT EXISTS histories_tally ON histories (kept, conflicts);  -- settleable()
CREATE INDEX IF NOT EXISTS histories_by_seq ON histories (seq);
CREATE TABLE IF NOT EXISTS cells (cell TEXT PRIMARY KEY, record INTEGER, stack_id TEXT,
    repro TEXT, status TEXT, cache_key TEXT, run_id TEXT, started_at TEXT, finished_at TEXT,
    signature TEXT, workaround TEXT, digest TEXT) WITHOUT ROWID;
"""

@contextlib.contextmanager
def bulk_insert(conn: sqlite3.Connection) -> Iterator[None]:
    """Inside the caller's write transaction: when the records table is empty, its indexes
    are dropped for the block and made again at its end (about a third of a first build's
    inserting); otherwise nothing changes."""
    empty = conn.execute("SELECT 1 FROM records LIMIT 1").fetchone() is None
    if empty:
        for name in RECORD_INDEXES:
            conn.execute(f"DROP INDEX IF EXISTS {name}")
    yield  # (an exception rolls the transaction back, the indexes with it)
    if empty:
        for name, on in RECORD_INDEXES.items():
            conn.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {on}")


def connect(db: Path) -> sqlite3.Connection:
    """A connection to the index ``db``, its tables made (emptied first when the file is of
    another ``FORMAT``); a damaged file is removed and made anew once."""
    db.parent.mkdir(parents=True, exist_ok=True)
    for attempt in (1, 2):
        conn = sqlite3.connect(str(db), timeout=BUSY_TIMEOUT_S, isolation_level=None,
                               check_same_thread=False)
        try:
            return _prepared_when_free(conn)
        except sqlite3.DatabaseError as exc:
            conn.close()
            damaged = not isinstance(exc, sqlite3.OperationalError)  # not "locked", "read-only"
            if attempt == 2 or not damaged or not db.exists():
                raise
            remove_db(db)  # damaged: it is only an index, rebuild it
    raise AssertionError("unreachable")


def _prepared(conn: sqlite3.Connection) -> sqlite3.Connection:
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")  # the JSONL files are fsynced; this is derived
    was = lay_out(conn, SCHEMA, FORMAT, TABLES,
                  ["INSERT OR IGNORE INTO meta VALUES ('epoch', lower(hex(randomblob(8))))",
                   "INSERT OR IGNORE INTO meta VALUES ('seq', '0')"])
    if was not in (None, FORMAT):
        conn.execute("VACUUM")  # an older format's report cache was most of the file
    return conn


def lay_out(conn: sqlite3.Connection, schema: str, fmt: str, tables: Sequence[str],
            then: Sequence[str] = ()) -> str | None:
    """Make the tables of ``schema`` (``tables`` dropped first when ``meta`` holds a format
    other than ``fmt``) and note ``fmt``, then run ``then``, in one transaction; the format
    found (None: a new database)."""
    version = None
    with contextlib.suppress(sqlite3.OperationalError):
        row = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
        version = row[0] if row else None
    with transaction(conn):
        if version not in (None, fmt):
            for table in tables:
                conn.execute(f"DROP TABLE IF EXISTS {table}")
        for statement in schema.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('format', ?)", (fmt,))
        for statement in then:
            conn.execute(statement)
    return version


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One ``BEGIN IMMEDIATE`` transaction: committed, or rolled back on any exception."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


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


def remove_db(db: Path) -> None:
    """Remove an SQLite database and its WAL files."""
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(OSError):
            os.unlink(str(db) + suffix)
