"""Each cell's records, settled as they arrive: the ``histories`` table of the store index.

Flow: store.index_files (the records) -> **store.index_histories** -> store.index
(``histories``, ``histories_since``). A touched cell's records go through the store's one
conflict rule and history (``store.reader.settle_cell``), in the order a reader of the
files meets them; its row keeps the outcome (previous status, timeline, flaky attempts,
conflicts) and points at the record shown. Only the order of the entries is worked out
here: the rules are ``store.reader``'s.
"""
from __future__ import annotations

import hashlib
import itertools
import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from .index_rows import Where
from .lines import dumps, loads
from .reader import CellHistory, Conflict, Entry, Span, settle_cell

_BATCH = 1000  # history rows written at once


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
    conflicts: int = 0  # how many conflicts its history holds

    def history(self) -> CellHistory:
        previous, spans, attempts, kept, conflicts = loads(self.data)
        root = self.root
        return CellHistory(self.shown, previous, [Span(*s) for s in spans], attempts, kept,
                           [Conflict(run_id, c, tuple(root + x for x in sources), tuple(statuses),
                                     root + kept_at, key)
                            for run_id, c, sources, statuses, kept_at, key in conflicts])


class HistoryRow(NamedTuple):
    """A ``histories`` row: the record shown (its row id), the settled history (``data``) and
    its digest, the records kept, the conflicts, the last status change, where the cell's
    first record is, and the settling that wrote the row (``seq``)."""

    cell: str
    record: int
    data: bytes
    digest: str
    kept: int
    conflicts: int
    changed_at: str | None
    first_file: int
    first_offset: int
    seq: int


class _Met(NamedTuple):
    """A record as the settling reads it (``records`` joined with its file's path)."""

    cell: str
    id: int
    run_id: str
    attempt: int
    status: str
    cache_key: str | None
    finished_at: str
    started_at: str
    digest: str
    path: str
    line: int
    evidence: str | None
    file: int
    offset: int


_MET = ("SELECT r.cell, r.id, r.run_id, r.attempt, r.status, r.cache_key, r.finished_at, "
        "r.started_at, r.digest, f.path, r.line, r.evidence, r.file, r.offset FROM records r "
        "JOIN files f ON f.id = r.file WHERE r.cell IN (SELECT cell FROM touched) ORDER BY r.cell")
_INSERT = f"INSERT INTO histories VALUES ({', '.join('?' * len(HistoryRow._fields))})"


def settle(conn: sqlite3.Connection, root: str, by_id: bool = False) -> None:
    """Settle again the records of each cell in the temporary table ``touched`` (filled by
    ``store.index_files.update_cells``) into its ``histories`` row, and mark the records it
    dropped as copies; ``root`` names the files (their prefix), ``by_id``: files are met in
    the order of their ids (else of their paths' parts, as ``walk_jsonl`` orders them)."""
    conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'seq'")
    seq = int(conn.execute("SELECT value FROM meta WHERE key = 'seq'").fetchone()[0])
    conn.execute("DELETE FROM histories WHERE cell IN (SELECT cell FROM touched)")
    conn.execute("UPDATE records SET copy = 0 WHERE copy AND cell IN (SELECT cell FROM touched)")
    rows = map(_Met._make, conn.execute(_MET))  # streamed: one cell's records held at a time
    out: list[HistoryRow] = []
    copies: list[tuple[int]] = []
    for cell, group in itertools.groupby(rows, key=lambda r: r.cell):
        out.append(_settled_row(cell, group, root, seq, by_id, copies))
        if len(out) >= _BATCH:
            conn.executemany(_INSERT, out)
            out.clear()
    conn.executemany(_INSERT, out)
    conn.executemany("UPDATE records SET copy = 1 WHERE id = ?", copies)


def _settled_row(cell: str, group: Iterator[_Met], root: str, seq: int, by_id: bool,
                 copies: list[tuple[int]]) -> HistoryRow:
    # in the order a reader of the files meets them: files by path parts, as walk_jsonl
    # sorts them ('h/…' before 'h-2/…'), then by place in the file
    met = sorted(group, key=(lambda r: (r.file, r.offset)) if by_id else
                 (lambda r: (r.path.split("/"), r.offset)))
    by_source = {f"{root}{r.path}:{r.line}": r for r in met}
    settled = settle_cell(Entry(r.run_id, cell, r.attempt, r.status, r.cache_key, r.finished_at,
                                r.started_at, r.digest, source, r.evidence or "")
                          for source, r in by_source.items())
    cut = len(root)
    data = dumps([settled.previous, [list(s) for s in settled.spans], settled.attempts,
                  settled.kept, [[c.run_id, c.cell, [x[cut:] for x in c.sources],
                                  list(c.statuses), c.kept[cut:], c.cache_key]
                                 for c in settled.conflicts]])
    copies.extend((by_source[source].id,) for source in settled.copies)
    return HistoryRow(cell=cell, record=by_source[settled.shown.source].id, data=data,
                      digest=hashlib.sha1(data).hexdigest(), kept=settled.kept,
                      conflicts=len(settled.conflicts),
                      changed_at=max((s.first_at for s in settled.spans[1:]), default=None),
                      first_file=met[0].file, first_offset=met[0].offset, seq=seq)


class _Shown(NamedTuple):
    """A ``histories`` row joined with its shown record and that record's file."""

    cell: str
    data: bytes
    digest: str
    kept: int
    changed_at: str | None
    first_file: int
    first_offset: int
    run_id: str
    attempt: int
    status: str
    cache_key: str | None
    finished_at: str
    started_at: str
    rdigest: str
    path: str
    line: int
    evidence: str | None
    file: int
    offset: int
    length: int
    upgraded: int
    conflicts: int


_SHOWN = ("SELECT h.cell, h.data, h.digest, h.kept, h.changed_at, h.first_file, h.first_offset, "
          "r.run_id, r.attempt, r.status, r.cache_key, r.finished_at, r.started_at, r.digest, "
          "f.path, r.line, r.evidence, r.file, r.offset, r.length, r.upgraded, h.conflicts "
          "FROM histories h JOIN records r ON r.id = h.record JOIN files f ON f.id = r.file ")


def settled_rows(execute: Callable[..., sqlite3.Cursor], root: str, where: str,
                 args: Sequence[Any] = (), cells: Sequence[str] | None = None) -> list[Settled]:
    """The ``histories`` rows ``where`` selects, as ``Settled`` (``execute``: the index's read,
    ``cells`` filling its table ``wanted``); ``root`` ends in a separator."""
    return [_as_settled(s, root) for s in map(_Shown._make,
                                               execute(_SHOWN + where, args, cells).fetchall())]


def _as_settled(s: _Shown, root: str) -> Settled:
    return Settled(Entry(s.run_id, s.cell, s.attempt, s.status, s.cache_key, s.finished_at,
                         s.started_at, s.rdigest, f"{root}{s.path}:{s.line}", s.evidence or ""),
                   Where(s.file, s.offset, s.length, s.line, s.rdigest, bool(s.upgraded)),
                   root + s.path, s.kept, s.changed_at, s.digest, s.data, root,
                   (s.first_file, s.first_offset), s.conflicts)


def root_of(path: os.PathLike[str] | str) -> str:
    """A store folder as the prefix of its files' names (ending in a separator)."""
    return str(path) + os.sep


class ShownKey(NamedTuple):
    """A cell's shown record (``StoreIndex.shown``): its key fields, its file (by the
    store's path) and where its line is (``where``); nothing read from the files."""

    cell: str
    stack_id: str
    repro: str
    status: str
    evidence: str | None
    workaround: str | None
    run_id: str
    finished_at: str
    path: str
    file: int
    offset: int
    length: int
    line: int
    digest: str
    upgraded: int
    kind: str
    gpu: int
    torch: str | None  # each of rules.versions.RECORD_PACKAGES, as the index keeps them
    torchvision: str | None
    torch_tensorrt: str | None
    ngc: str | None
    python: str | None
    onnxscript: str | None
    onnxruntime: str | None

    @property
    def where(self) -> Where:
        return Where(self.file, self.offset, self.length, self.line, self.digest, bool(self.upgraded))


_SHOWN_KEYS = ("SELECT h.cell, r.stack_id, r.repro, r.status, r.evidence, r.workaround, r.run_id, "
               "r.finished_at, f.path, r.file, r.offset, r.length, r.line, r.digest, r.upgraded, "
               "r.kind, r.gpu, r.torch, r.torchvision, r.torch_tensorrt, r.ngc, r.python, "
               "r.onnxscript, r.onnxruntime "
               "FROM histories h JOIN records r ON r.id = h.record JOIN files f ON f.id = r.file")


def shown_keys(execute: Callable[..., sqlite3.Cursor], where: str = "") -> list[ShownKey]:
    """Each cell's shown record whose record ``r`` meets ``where`` (SQL; "": every cell), key
    fields only (``execute``: the index's read)."""
    return list(map(ShownKey._make, execute(f"{_SHOWN_KEYS} {where}").fetchall()))
