"""The store index catching up with its files: record rows read from where it stopped.

Flow: results files -> **store.index_files** -> the ``files``, ``records``, ``skipped`` and
``cells`` tables (store.index_db). A file is read with the store's one parser
(``store.lines.parse_upgraded``) from the offset the index reached, when the bytes
before it are unchanged (``TAIL``), else from the start (its rows forgotten first). Each
function runs inside the caller's write transaction and adds the cells it touched to
``touched``: their latest record (``update_cells``) and history
(``store.index_histories.settle``) are worked out again.
"""
from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from repromatrix.rules.verdict import on_gpu
from repromatrix.rules.versions import RECORD_PACKAGES, record_versions

from .index_rows import CellKey, FileRow, RecordRow
from .lines import Overlong, Skipped, parse_upgraded, read_lines
from .reader import LATER_SQL, entry

TAIL = 256  # bytes before the indexed offset that must be unchanged to read on from there
_BATCH = 1000  # record rows inserted at once
LATEST_ORDER = ", ".join("r." + c.strip() for c in LATER_SQL.split(",")) + ", r.file, r.offset"
_INSERT_RECORD = (f"INSERT INTO records ({RecordRow.cols()}) "
                  f"VALUES ({', '.join('?' * len(RecordRow._fields))})")


def file_rows(conn: sqlite3.Connection, where: str = "", args: tuple[Any, ...] = ()
              ) -> dict[str, FileRow]:
    """The indexed files (``where``: a condition), by path."""
    return {row.path: row for row in map(FileRow._make, conn.execute(
        f"SELECT {FileRow.cols()} FROM files {where}", args))}


class Skip(NamedTuple):
    """A line of a file the index skips (``skipped``): its number and why."""

    line: int
    reason: str


class Scanned(NamedTuple):
    """The end of a file's scan (``scan``): what ``note_read`` notes, and the lines read."""

    offset: int
    lines: int
    size: int
    mtime_ns: int
    tail: str
    read: int


def read_file(conn: sqlite3.Connection, prefix: str, key: str, known: FileRow | None,
              touched: set[str]) -> int:
    """Index file ``key`` (named ``prefix + key``) from where the index stopped (or from the
    start when it was rewritten); the number of lines read."""
    path = Path(prefix + key)
    try:
        fh = path.open("rb")
    except OSError:
        return 0
    with fh:
        st = os.fstat(fh.fileno())
        fid, offset, lines, joined = _resume(conn, fh, key, known, st.st_size, touched)
        return store_scan(conn, fid, scan(fh, path, fid, st, offset, lines, joined), touched)


def scan(fh: BinaryIO, path: Path, fid: int, st: os.stat_result, offset: int = 0,
         lines: int = 0, joined: bool = False) -> Iterator[RecordRow | Skip | Scanned]:
    """The rows of ``fh`` (file ``fid``, ``path``, as ``st``) from ``offset`` (line ``lines``;
    ``joined``: the rest of an indexed last line that had no newline yet) to its end: each
    record's row and each skipped line, in order, then where the scan stopped."""
    fh.seek(offset)
    read = 0
    for raw in read_lines(fh):
        if isinstance(raw, Overlong):
            yield Skip(lines + 1, raw.reason())
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
        if not raw.isspace():  # (not blank: strip() would copy every line)
            read += 1
            item = parse_upgraded(raw, str(path), lines + 1)
            if isinstance(item, Skipped):
                yield Skip(lines + 1, item.reason)
                if not complete:
                    break  # maybe a record still being written: read it again next time
            else:
                yield record_row(fid, lines + 1, offset, raw, *item)
        elif not complete:
            break
        offset, lines = offset + len(raw), lines + 1
    yield Scanned(offset, lines, st.st_size, st.st_mtime_ns, tail_hash(fh, offset), read)


def store_scan(conn: sqlite3.Connection, fid: int, items: Iterable[RecordRow | Skip | Scanned],
               touched: set[str]) -> int:
    """Store the rows of file ``fid``'s ``scan`` (the cells of its records added to
    ``touched``) up to its end (``Scanned``); the number of lines read."""
    rows: list[RecordRow] = []  # inserted a batch at a time
    for item in items:
        if isinstance(item, Skip):
            conn.execute("INSERT OR REPLACE INTO skipped VALUES (?, ?, ?)", (fid, *item))
        elif isinstance(item, Scanned):
            conn.executemany(_INSERT_RECORD, rows)
            note_read(conn, fid, item.size, item.mtime_ns, item.offset, item.lines, item.tail)
            return item.read
        else:
            rows.append(item)
            touched.add(item.cell)
            if len(rows) >= _BATCH:
                conn.executemany(_INSERT_RECORD, rows)
                rows.clear()
    raise ValueError(f"the scan of file {fid} ended before its end")


def read_files(conn: sqlite3.Connection, prefix: str, keys: list[str],
               known: Mapping[str, FileRow], touched: set[str]) -> int:
    """Index each of ``keys`` (files new or changed since ``known``), in order; the number of
    lines read."""
    return sum(read_file(conn, prefix, key, known.get(key), touched) for key in keys)


def note_read(conn: sqlite3.Connection, fid: int, size: int, mtime_ns: int, offset: int,
              lines: int, tail: str) -> None:
    """File ``fid`` is indexed up to ``offset`` (``lines`` lines), as it was at ``size`` and
    ``mtime_ns``; its digest of records (``chain``) is worked out again when asked for."""
    conn.execute("UPDATE files SET size = ?, mtime_ns = ?, offset = ?, lines = ?, tail = ?, "
                 "chain = NULL WHERE id = ?", (size, mtime_ns, offset, lines, tail, fid))


def _resume(conn: sqlite3.Connection, fh: BinaryIO, key: str, known: FileRow | None, size: int,
            touched: set[str]) -> tuple[int, int, int, bool]:
    """(file id, offset, lines, joined): where to read ``fh`` from. An unchanged prefix is
    read on from its end; anything else is forgotten and read from the start."""
    if known is None:
        return conn.execute("INSERT INTO files (path) VALUES (?)", (key,)).lastrowid or 0, 0, 0, False
    offset, lines = known.offset, known.lines or 0
    if offset is not None and offset <= size and tail_hash(fh, offset) == known.tail:
        joined = offset > 0 and _byte_before(fh, offset) != b"\n"
        if not joined or _rest_is_blank(fh, offset):
            conn.execute("DELETE FROM skipped WHERE file = ? AND line > ?", (known.id, lines))
            return known.id, offset, lines, joined
    touched |= forget_rows(conn, known.id)
    return known.id, 0, 0, False


def tail_hash(fh: BinaryIO, offset: int) -> str:
    """A hash of the (up to) TAIL bytes before ``offset``: unchanged when a file only grew."""
    start = max(0, offset - TAIL)
    fh.seek(start)
    return hashlib.sha1(fh.read(offset - start)).hexdigest()


def _byte_before(fh: BinaryIO, offset: int) -> bytes:
    fh.seek(offset - 1)
    return fh.read(1)


def _rest_is_blank(fh: BinaryIO, offset: int) -> bool:
    """Whether what follows ``offset`` on its line is only whitespace (a newline at most)."""
    fh.seek(offset)
    return not fh.readline().strip()


def insert_record(conn: sqlite3.Connection, fid: int, number: int, offset: int, raw: bytes,
                  data: dict[str, Any], upgraded: bool = False) -> None:
    """Index one record line (``record_row``)."""
    conn.execute(_INSERT_RECORD, record_row(fid, number, offset, raw, data, upgraded))


def record_row(fid: int, number: int, offset: int, raw: bytes, data: dict[str, Any],
               upgraded: bool = False) -> RecordRow:
    """One record line's row (its key fields as ``store.reader.entry`` reads them, and what
    a verdict row of ``check`` reads: its stack's kind and versions, a GPU seen)."""
    e = entry(data, raw, "")
    stack, env = data["stack"], data.get("env")
    return RecordRow(
        file=fid, line=number, offset=offset, length=len(raw), run_id=e.run_id, cell=e.cell,
        attempt=e.attempt, stack_id=str(data["stack"]["id"]), repro=data["repro"],
        status=e.status, cache_key=e.cache_key, started_at=e.started_at,
        finished_at=e.finished_at, signature=_opt(data.get("signature")),
        workaround=_opt(data.get("workaround")), digest=e.digest, upgraded=int(upgraded),
        evidence=e.evidence, kind=str(stack.get("kind", "")), gpu=int(on_gpu(env)),
        **dict(zip(RECORD_PACKAGES, record_versions(env, stack), strict=True)))


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)


def forget_rows(conn: sqlite3.Connection, fid: int) -> set[str]:
    """Drop a file's rows; the cells they touched (their latest record must be found again)."""
    cells = {c for (c,) in conn.execute("SELECT DISTINCT cell FROM records WHERE file = ?", (fid,))}
    conn.execute("DELETE FROM records WHERE file = ?", (fid,))
    conn.execute("DELETE FROM skipped WHERE file = ?", (fid,))
    return cells


def fill_touched(conn: sqlite3.Connection, touched: set[str]) -> None:
    """The temporary table ``touched``: the cells whose rows are worked out again."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS touched (cell TEXT PRIMARY KEY)")
    conn.execute("DELETE FROM touched")
    conn.executemany("INSERT OR IGNORE INTO touched VALUES (?)", ((c,) for c in touched))


def update_cells(conn: sqlite3.Connection, touched: set[str]) -> None:
    """Recompute the ``cells`` rows of ``touched`` from ``records`` (fills ``touched``)."""
    if not touched:
        return
    fill_touched(conn, touched)
    conn.execute("DELETE FROM cells WHERE cell IN (SELECT cell FROM touched)")
    key = CellKey.cols("r.").split(", ", 1)[1]  # the record's fields after its cell
    conn.execute(
        f"INSERT INTO cells (cell, record, started_at, {CellKey.cols().split(', ', 1)[1]}) "
        f"SELECT r.cell, r.id, r.started_at, {key} FROM touched t "
        f"JOIN records r ON r.id = (SELECT r.id FROM records r WHERE r.cell = t.cell "
        f"ORDER BY {LATEST_ORDER} LIMIT 1)")
