"""The report's view of the results store: latest record per cell, per-cell history.

Flow: results store -> **report.load** -> report. The report needs the latest
record of each cell in full (only for cells whose pieces the report's cache,
``report.cache``, does not keep), and of every other record only what its cell's
history settled.

One read path: everything is read through one index's cells' histories
(``StoreIndex.histories``: settled as the records arrived, by ``store.reader.settle_cell``,
copies once, conflicts named), one row per cell, parsed only for cells whose pieces must
be made, for the feed's newest cells and for the cells that hold a conflict. One store
folder is read through its own index; several stores, or files given on their own, go
through a temporary one (``store.index_merged.MergedIndex``). Only each cell's latest line
is held, and ``Reduced.summaries`` hands them over one at a time, so memory grows with
cells, not with history.

Every usable record goes to ``results.json.gz`` (``report.data_files.RawSink``: whole result
files copied a chunk at a time), so the published data stays complete.
"""
from __future__ import annotations

import contextlib
import heapq
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from repromatrix.store.index import Block, Settled, StaleIndex, StoreIndex, Where
from repromatrix.store.index_merged import MergedIndex
from repromatrix.store.lines import Skipped, digest, dumps, parse, record_data
from repromatrix.store.reader import CellHistory, Conflict, Span, TimeKey, newest, store_of_file, time_key
from repromatrix.store.record import Result

from .cache import RenderCache


@dataclass
class _Latest:
    time: TimeKey
    raw: bytes
    where: tuple[StoreIndex, Where] | None = None  # in an index: read back at the end
    evidence: str = ""  # result.evidence_level: a real verdict outranks a stand-in one
    store: str = ""  # the store folder it is read from now ("" for a file read on its own)
    digest: str = ""  # of its line: the same digest, the same record


def recorded_root(root: Path | str, file: str) -> str:
    """The folder that holds what a run wrote as its ``--results`` (``<results>/<host>/<run>
    .jsonl``), as it is found now: ``file``'s grandparent when that is inside the store folder
    ``root`` (a store read through a parent folder, such as ``results/`` holding
    ``published/``), else ``root``. Resolved, as a run records its ``--results``."""
    root = os.path.realpath(root)
    folder = store_of_file(os.path.abspath(file))
    inside = folder == root or folder.startswith(root.rstrip(os.sep) + os.sep)
    return folder if inside else root


@dataclass
class Reduced:
    """What the report reads from the store."""

    latest: dict[str, _Latest] = field(default_factory=dict)   # raw latest line per cell
    settled: dict[str, Settled] = field(default_factory=dict)  # its history, from the index
    _histories: dict[str, CellHistory] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    records: int = 0
    mark: tuple[str, int, int] | None = None  # the index's, when read through its histories
    cache: RenderCache | None = None  # the report's own (pieces, layout), beside its page
    index: StoreIndex | None = None  # what it was read through, open inside reduce_records

    def _settled(self, cell: str) -> CellHistory:
        if cell not in self._histories:
            self._histories[cell] = self.settled[cell].history()
        return self._histories[cell]

    def previous(self, cell: str) -> str:
        """The status of the cell's latest record from a run other than its latest run."""
        return self._settled(cell).previous

    def timeline(self, cell: str) -> list[Span]:
        """The cell's timeline (``store.reader.timeline``)."""
        return self._settled(cell).spans

    def attempts(self, cell: str) -> dict[str, int] | None:
        """The statuses of its shown run's attempts when they disagree (a flaky cell)."""
        return self._settled(cell).attempts

    def history_digest(self, cell: str) -> str:
        """A digest of the cell's history the index keeps."""
        return self.settled[cell].digest

    def feed_cells(self, keep: Callable[[str], bool], limit: int) -> list[str]:
        """The cells ``keep`` shows that may hold one of the ``limit`` newest status changes
        (``status_changes``, whose order is (time, cell)), in cell order: the ``limit`` cells
        whose newest change comes last in that order (those ``limit`` changes come after any
        other cell's, so no other cell's change can be among the newest ``limit``)."""
        cells = [c for c in self.latest if keep(c)]
        return newest_changed(cells, [self.settled[c].changed_at for c in cells], limit)

    def store(self, cell: str) -> str:
        """The store folder the cell's latest record is read from ("" when its file was read
        on its own, outside a store folder's index)."""
        return self.latest[cell].store

    def result(self, cell: str) -> Result:
        """The latest record of ``cell``, parsed (read back from its file when an index
        holds it: inside the ``reduce_records`` block)."""
        found = self.latest[cell]
        if not found.raw and found.where is not None:
            found.raw = next(raw for _, raw in found.where[0].read_lines([(cell, found.where[1])]))
        return Result.from_dict(record_data(found.raw))

    def summaries(self, cells: Iterable[str], make: Callable[[Result], dict[str, Any]]
                  ) -> Iterator[tuple[str, dict[str, Any]]]:
        """The latest record of each of ``cells`` as ``make`` summarises it, one at a time
        (each line read back from its file, parsed, and let go)."""
        cells = list(cells)
        _fill_latest(self, cells)
        for cell in cells:
            found = self.latest[cell]
            summary = make(Result.from_dict(record_data(found.raw)))
            found.raw = b""
            yield cell, summary

    def _cached(self, method: str, *args: Any, default: Any = None) -> Any:
        """The cache's ``method(*args)``; ``default`` without one, or when it fails (a cache)."""
        if self.cache is not None:
            with contextlib.suppress(sqlite3.Error, OSError):
                return getattr(self.cache, method)(*args)
        return default

    def pieces(self) -> dict[str, tuple[str, bytes, bytes]]:
        """The pieces the cache keeps, by cell: (their key, head, markup)."""
        return self._cached("pieces", default={})  # type: ignore[no-any-return]

    def placed(self, cells: Iterable[str]) -> dict[str, tuple[str, int, str]]:
        """Where each of ``cells`` was last written: (its pieces' key then, chunk, source)."""
        return self._cached("placed", cells, default={})  # type: ignore[no-any-return]

    def keep(self, pieces: Iterable[tuple[str, str, bytes, bytes]]) -> None:
        """Hand cells' new heads (cell, key, head, markup) to the cache, for the next render."""
        self._cached("keep_pieces", pieces)

    def keep_placed(self, items: list[tuple[str, str, int, str]]) -> None:
        """Note the chunk each cell was just written in."""
        self._cached("keep_placed", items)

    def written(self, names: Iterable[str]) -> dict[str, tuple[str, str, str]]:
        """Where each of the page's files ``names`` was last made: (source, path, digest)."""
        return self._cached("written", names, default={})  # type: ignore[no-any-return]

    def keep_written(self, items: list[tuple[str, str, str, str]]) -> None:
        """Note the page's files just made."""
        self._cached("keep_written", items)

    def keep_only_shown(self) -> None:
        """After a render of every cell: the pieces the cache keeps of other cells go, once
        they are a tenth of it (``RenderCache.keep_only``)."""
        self._cached("keep_only", self.latest)


def newest_changed(cells: list[str], changed_at: list[str | None], limit: int) -> list[str]:
    """The ``limit`` of ``cells`` whose last status change (``changed_at``, None: never) comes
    last in (time, cell) order, in cell order (``Reduced.feed_cells``)."""
    last = heapq.nlargest(limit, ((at, c) for c, at in zip(cells, changed_at, strict=True)
                                  if at is not None))
    chosen = {c for _, c in last}
    return [c for c in cells if c in chosen]


class Sink(Protocol):
    """Where usable records go as they stream past (``report.data_files.RawSink``): a stored line,
    lines read back later, or a whole file's lines; closed at the end of the load."""

    def add(self, raw: bytes | None, data: dict[str, Any], digest: str) -> None: ...

    def add_lines(self, digests: list[str], read: Callable[[], Iterable[bytes]]) -> None: ...

    def add_file(self, count: int, chain: str, read: Callable[[], Iterator[bytes]]) -> None: ...

    def add_records(self, count: int, chain: str, read: Callable[[], list[bytes]]) -> None: ...

    def close(self, skipped: list[Skipped], conflicts: list[Conflict]) -> None: ...


@contextlib.contextmanager
def reduce_records(paths: Iterable[Path | str], sink: Sink | None = None,
                   cache: RenderCache | None = None) -> Iterator[Reduced]:
    """Every record under ``paths``: the latest per cell and what history needs (the index
    stays open inside the ``with`` block, for ``Reduced.summaries``).

    One store folder is read through its index (``store.index``), anything else through a
    temporary index of every file given (``MergedIndex``): each cell from the history the
    index settled (no record line parsed; only the latest line of each cell whose pieces
    are made is read back from the files, by ``Reduced.summaries``)."""
    paths = list(paths)
    out = Reduced(cache=cache)
    with contextlib.ExitStack() as stack:
        if len(paths) == 1 and Path(paths[0]).is_dir():
            index: StoreIndex = stack.enter_context(StoreIndex.open(paths[0]))
            out.mark = index.history_mark()
        else:
            index, missing = MergedIndex.over(paths)
            stack.enter_context(index)
            out.skipped.extend(missing)
        out.index = index
        with index.snapshot():  # the histories and the files' rows: one state of the index
            _read_settled(index, out, sink)
        if sink is not None:  # (a file found changed is marked: a write, so not inside)
            sink.close(out.skipped, out.conflicts)
        index.keep_chains()
        yield out


def _read_settled(index: StoreIndex, out: Reduced, sink: Sink | None) -> None:
    """Each cell from the history its index keeps (``StoreIndex.histories``); each file that
    is exactly its records copied whole to the sink, any other (blank, damaged, copied or
    older-schema lines) its records' lines only (the sink is closed by the caller, outside
    the read transaction); the conflicts, in the order a reader of the files meets them."""
    stores: dict[str, str] = {}
    conflicts: list[Conflict] = []
    for settled in index.histories():
        add_settled(index, out, settled, stores)
        out.records += settled.kept
        if settled.conflicts:
            conflicts.extend(out._settled(settled.shown.cell).conflicts)
    blocks = sink_files(index, out, sink)
    out.conflicts = in_reading_order(conflicts, [b.path for b in blocks])


def in_reading_order(conflicts: list[Conflict], files: list[str]) -> list[Conflict]:
    """``conflicts`` as ``store.reader.Settler`` lists them for the whole of ``files``: those
    within a run by where their first record is, then those between stores in cell order."""
    rank = {name: n for n, name in enumerate(files)}

    def place(c: Conflict) -> tuple[int, int]:
        name, _, line = c.sources[0].rpartition(":")
        return rank.get(name, -1), int(line or 0)
    return sorted((c for c in conflicts if not c.cache_key), key=place) + \
        [c for c in conflicts if c.cache_key]


def add_settled(index: StoreIndex, out: Reduced, settled: Settled, stores: dict[str, str]) -> None:
    """A cell as its index settled it (``stores``: each file's store folder, found once)."""
    e = settled.shown
    store = stores.get(settled.file)
    if store is None:
        origin = index.origin(settled.file)
        store = stores[settled.file] = "" if origin is None else recorded_root(origin, settled.file)
    out.latest[e.cell] = _Latest(time_key(e), b"", (index, settled.where), evidence=e.evidence,
                                 store=store, digest=e.digest)
    out.settled[e.cell] = settled


def sink_files(index: StoreIndex, out: Reduced, sink: Sink | None) -> list[Block]:
    """Every file ``index`` covers to ``sink`` (see ``_read_settled``), and the lines it
    skipped to ``out``; the files (``StoreIndex.blocks``)."""
    skipped = _skipped_by_file(index)
    blocks = index.blocks()
    for block in blocks:
        out.skipped.extend(skipped.get(block.path, []))
        if sink is None or block.last is None:
            continue
        if block.copies:  # the lines of its records that are not copies of an earlier one
            places = [w for w in index.places(block.file, copies=False)
                      if w.offset <= block.last.offset]
            sink.add_lines([w.digest for w in places], lambda b=block, p=places: _record_lines(
                index, b.path, p))
        elif block.count == block.lines and not block.older:
            sink.add_file(block.count, block.chain,
                          lambda b=block: _chunks(index, Path(b.path), b.last))  # type: ignore[arg-type]
        else:  # its records' lines only (not lines added since), read back when written
            sink.add_records(block.count, block.chain, lambda b=block: _record_lines(
                index, b.path, index.places(b.file)[:b.count]))
    return blocks


def covers_exactly(index: StoreIndex, files: Iterable[Path]) -> bool:
    """Whether ``files`` (those a walk of the store finds) are the files ``index`` covers."""
    return {f.resolve() for f in files} == {Path(n).resolve() for n in index.files()}


def _record_lines(index: StoreIndex, name: str, places: Iterable[Where]) -> list[bytes]:
    """The lines at ``places`` of file ``name`` as ``results.json.gz`` holds them, without their
    newline: lines in the current schema as they are, older ones upgraded (parsed, written
    anew). What both readers write, so that their bytes agree."""
    return [dumps(parse(raw, name, where.line)) if where.upgraded else raw.rstrip(b"\n")
            for where, raw in index.read_lines((w, w) for w in places)]


def _skipped_by_file(index: StoreIndex) -> dict[str, list[Skipped]]:
    """The lines ``index`` skipped, by file, in each file's order."""
    skipped: dict[str, list[Skipped]] = {}
    for item in index.skipped():
        skipped.setdefault(item.file, []).append(item)
    return skipped


def _fill_latest(out: Reduced, cells: list[str]) -> None:
    """The line of each of ``cells`` (read back from its file when an index holds it)."""
    wanted: dict[StoreIndex, list[tuple[str, Where]]] = {}
    for cell in cells:
        found = out.latest[cell]
        if found.where is not None and not found.raw:
            wanted.setdefault(found.where[0], []).append((cell, found.where[1]))
    for index, rows in wanted.items():
        for cell, raw in index.read_lines(rows):
            out.latest[cell].raw = raw


def _chunks(index: StoreIndex, path: Path, last: Where, size: int = 1 << 22) -> Iterator[bytes]:
    """The bytes of a file whose every line is a distinct current record, up to the end of
    the last indexed one, in chunks, each line ending in a newline (one is added after a
    last record written without); StaleIndex, raised here and now (the bytes are read by
    whoever iterates, ``RawSink``'s writer), when the file is no longer as indexed."""
    with path.open("rb") as fh:
        fh.seek(last.offset)
        tail = fh.read(last.length)
    if digest(tail) != last.digest:
        index.forget(path)
        raise StaleIndex(f"{path} changed since it was indexed: render again")
    return _file_bytes(path, last.offset + last.length, tail.endswith(b"\n"), size)


def _file_bytes(path: Path, end: int, ends_in_newline: bool, size: int) -> Iterator[bytes]:
    """``_chunks``' bytes."""
    with path.open("rb") as fh:
        while fh.tell() < end:
            yield fh.read(min(size, end - fh.tell()))
    if not ends_in_newline:
        yield b"\n"


def status_changes(timelines: Mapping[str, list[Span]], limit: int = 200
                   ) -> list[tuple[str, Span, Span]]:
    """Every status change among the newest ``limit`` spans of each cell's timeline
    (``store.reader.timeline``), newest first: (cell, before, after); the first ``limit``."""
    def changes() -> Iterator[tuple[str, Span, Span]]:
        for cell, spans in timelines.items():
            shown, _ = newest(spans, limit)
            yield from ((cell, a, b) for a, b in zip(shown, shown[1:], strict=False))
    # nlargest: sorted(..., reverse=True)[:limit], ties included, without sorting them all
    return heapq.nlargest(limit, changes(), key=lambda c: (c[2].first_at, c[0]))
