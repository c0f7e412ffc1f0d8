"""The report stage's raw data, published beside the page (caniuse publishes its data too).

    out/results.json.gz  every usable record (streamed as it is loaded), what was skipped,
                         conflicts: one JSON document, gzip-compressed (``RESULTS``)
    out/results.csv      the latest record per cell, flattened, spreadsheet-safe

``results.json.gz`` is a gzip file of several members (RFC 1952 allows it; ``gzip``,
``zcat`` and every gzip reader join them): the header (stored, so a later render rewrites
its date in place), the records (one member per render that added some) and the tail
(what was skipped, the conflicts). A render whose records begin with the last one's
rewrites the header, appends a member of the new records and writes the tail again: the
records already written are neither read nor compressed again. Compressed, the file is
about a tenth of the records (``results.json`` before 2026-11-29 was as large as them).
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import hashlib
import io
import json
import queue
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any, BinaryIO

from repromatrix.store.lines import Skipped, dumps
from repromatrix.store.reader import Conflict

from .written import RenderState

RESULTS = "results.json.gz"  # every record, as the page links it and `check --from` reads it
LEVEL = 1  # gzip's fastest: about a tenth of the records' bytes, 0.2 s per 60 MB
_CSV_FORMULA = ("=", "+", "@", "\t", "\r")
CSV_COLUMNS = ["cell", "stack", "repro", "status", "expected", "contradicted", "signature",
               "workaround", "message", "duration", "exit", "image", "run_id", "host",
               "backend", "started_at", "finished_at", "previous", "versions", "scope"]


class RawSink:
    """Collects usable records for ``results.json.gz``: ``{"generated_at", "records": [...],
    "skipped", "conflicts"}``, one record a line (the line as stored when its schema is current).

    Records arrive as they are loaded, each with its line's digest; lines still in the
    result files are read only when written. ``close`` starts writing the file, or, when its
    records begin with those the last render into this folder wrote (``RenderState``),
    appending the rest in place (a gzip member of them); ``finish`` waits for it.
    """

    def __init__(self, path: Path, generated_at: str, state: RenderState) -> None:
        self.path, self.state = path, state
        self.header = ('{"generated_at": ' + json.dumps(generated_at) + ',\n"records": [\n'
                       ).encode("utf-8")
        self.pieces: list[tuple[int, Callable[[], Any]]] = []
        self.blocks: set[int] = set()  # the pieces that are whole files (add_file)
        self.count = 0
        self._chain = hashlib.sha1()
        self._want = state.results.get("count")
        self._at_want: str | None = self._chain.hexdigest() if self._want == 0 else None
        self._writing: tuple[ThreadPoolExecutor, Future[int], dict[str, Any]] | None = None

    def _note(self, digests: Iterable[str]) -> int:
        n = 0
        for digest in digests:
            self._chain.update(digest.encode("ascii"))
            n += 1
            if self.count + n == self._want:
                self._at_want = self._chain.hexdigest()
        self.count += n
        return n

    def add(self, raw: bytes | None, data: Mapping[str, Any], digest: str) -> None:
        """One record: its stored line (no newline), or None to write ``data`` (upgraded)."""
        text = raw if raw is not None else dumps(data)
        self.pieces.append((self._note([digest]), lambda: [text]))

    def add_lines(self, digests: list[str], read: Callable[[], Iterable[bytes]]) -> None:
        """Records whose lines ``read`` returns (newline included) when they are written."""
        self.pieces.append((self._note(digests), lambda: [r.rstrip(b"\n") for r in read()]))

    def add_file(self, count: int, chain: str, read: Callable[[], Iterator[bytes]]) -> None:
        """A whole file of ``count`` records, every line one, each ending in a newline: copied
        a chunk of ``read()`` at a time, never held whole. Noted by ``chain`` (a digest of
        their digests, ``StoreIndex.chain``), not one digest at a time: a later render
        appends after it only when it starts with the same whole files."""
        self.blocks.add(len(self.pieces))
        self.add_records(count, chain, read)

    def add_records(self, count: int, chain: str, read: Callable[[], Any]) -> None:
        """The ``count`` records of one file whose lines ``read()`` returns as written (no
        newline; older ones upgraded), noted by ``chain`` as ``add_file`` notes its own."""
        self._chain.update(b"file " + chain.encode("ascii"))
        self.count += count
        if self.count == self._want:
            self._at_want = self._chain.hexdigest()
        self.pieces.append((count, read))

    def close(self, skipped: list[Skipped], conflicts: list[Conflict]) -> None:
        """Start writing the file: the records are read here (a file found changed since it
        was indexed raises ``StaleIndex`` here), compressed and written by a second thread
        while the render goes on (zlib lets go of the GIL); ``finish`` waits for it."""
        tail = {
            "skipped": [{"file": s.file, "line": s.line, "reason": s.reason} for s in skipped],
            "conflicts": [{"run_id": c.run_id, "cell": c.cell, "sources": list(c.sources),
                           "statuses": list(c.statuses), "kept": c.kept,
                           "cache_key": c.cache_key} for c in conflicts],
        }
        end = ("\n],\n" + json.dumps(tail, ensure_ascii=False)[1:] + "\n").encode("utf-8")
        known = self.state.results
        header = _member(self.header, 0)  # stored: the same size for another date
        resume = (self._at_want is not None and known.get("chain") == self._at_want
                  and known.get("header") == len(header) and self.state.unchanged(self.path))
        ends = [hashlib.sha1(self.header).hexdigest(), hashlib.sha1(end).hexdigest()]
        if resume and self.count == known["count"] and known.get("ends") == ends:
            self.state.written.add(self.state.name(self.path))
            return  # the same records, header and tail: the file stays as it is
        work: queue.SimpleQueue[bytes | tuple[Iterator[bytes], int] | None] = queue.SimpleQueue()
        pool = ThreadPoolExecutor(1, thread_name_prefix="results.json.gz")
        writing = pool.submit(self._write, work, header, end, known["end"] if resume else None)
        skip, written = (known["count"], known["count"]) if resume else (0, 0)
        try:
            for number, (n, read) in enumerate(self.pieces):
                if skip >= n:
                    skip -= n
                    continue
                if written:
                    work.put(b",\n")
                # a whole file: checked here, its bytes read by the writer; else its lines
                work.put((read(), skip) if number in self.blocks else b",\n".join(read()[skip:]))
                written += n - skip
                skip = 0
        except BaseException:
            work.put(None)
            pool.shutdown()  # (a half-written file: the state does not name it)
            raise
        work.put(None)
        self._writing = (pool, writing, {"count": self.count, "chain": self._chain.hexdigest(),
                                         "header": len(header), "ends": ends})

    def _write(self, work: queue.SimpleQueue[Any], header: bytes, end: bytes,
               at: int | None) -> int:
        """The writer: the header in place, the records ``close`` hands over after the end
        of those already written (``at``), the tail. Returns where the records end."""
        done = False
        try:
            with open(self.path, "wb" if at is None else "r+b") as fh:
                fh.write(header)
                if at is not None:
                    fh.seek(at)
                    fh.truncate()
                item = work.get()
                if item is not None:
                    with _compressed(fh) as gz:
                        while item is not None:
                            if isinstance(item, bytes):
                                gz.write(item)
                            else:
                                _copy_lines(*item, gz)
                            item = work.get()
                done = True
                records_end = fh.tell()
                fh.write(_member(end, LEVEL))
                fh.truncate()
            return records_end
        except BaseException:
            while not done and work.get() is not None:  # let close go on: it never waits
                pass
            raise

    def discard(self) -> None:
        """Wait for the file ``close`` started, without noting it (a render begun again)."""
        if self._writing is not None:
            self._writing[0].shutdown()  # (what it raised is not asked for)
            self._writing = None

    def finish(self) -> None:
        """Wait for the file ``close`` started (raising what writing it raised), and note it
        in the render state; nothing when nothing was started."""
        if self._writing is None:
            return
        pool, writing, results = self._writing
        self._writing = None
        pool.shutdown()
        self.state.results = {**results, "end": writing.result()}
        self.state.noted(self.path, "")  # too large to hash again: its size and mtime identify it
        self.state.remove_others(self.path.parent, "results.json")  # what renders wrote before


@contextlib.contextmanager
def _compressed(fh: BinaryIO, level: int = LEVEL) -> Iterator[IO[bytes]]:
    """One gzip member written to ``fh`` (no name, no time: the same bytes every render)."""
    with gzip.GzipFile(filename="", mode="wb", compresslevel=level, fileobj=fh, mtime=0) as gz:
        yield gz  # type: ignore[misc]


def _member(data: bytes, level: int) -> bytes:
    """``data`` as one gzip member, as ``_compressed`` writes it."""
    fh = io.BytesIO()
    with _compressed(fh, level) as gz:
        gz.write(data)
    return fh.getvalue()


def _copy_lines(chunks: Iterator[bytes], skip: int, fh: IO[bytes]) -> None:
    """Write the lines in ``chunks`` after the first ``skip``, joined by ",\\n" (the last
    newline dropped: every newline but the stream's last is written as ",\\n", a chunk's
    last one only once the next chunk shows it was not the stream's last)."""
    pending = False  # a newline that ended the previous chunk, not yet written
    for chunk in chunks:
        while skip and chunk:
            cut = chunk.find(b"\n")
            chunk = b"" if cut < 0 else chunk[cut + 1:]
            skip -= cut >= 0
        if not chunk:
            continue
        if pending:
            fh.write(b",\n")
        out = chunk.replace(b"\n", b",\n")
        pending = chunk.endswith(b"\n")
        fh.write(memoryview(out)[:-2] if pending else out)


def write_csv(out: Path, site: Mapping[str, Any], heads: Mapping[str, Any],
              state: RenderState) -> tuple[str, list[str]]:
    """results.csv: the latest record per cell (each row's own columns come with its
    pieces, ``report.cell.Head.csv``; the stack's columns are added here). Returns the text
    before the cells' lines, and those lines."""
    ends = stack_columns(site["stacks"])
    lines = [f"{heads[c['id']].csv},{ends.get(c['stack'], ',')}" for c in site["cells"].values()]
    write_csv_lines(out, lines, state)
    return CSV_HEAD, lines


CSV_HEAD = ",".join(CSV_COLUMNS) + "\r\n"


def write_csv_lines(out: Path, lines: list[str], state: RenderState) -> None:
    """results.csv from its cells' lines."""
    state.write(out / "results.csv", CSV_HEAD + "".join(line + "\r\n" for line in lines))


def stack_columns(stacks: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each stack's columns of a results.csv line (its full label and scope), as CSV."""
    ends = {}
    for stack in stacks:
        fh = io.StringIO(newline="")
        csv.writer(fh).writerow([csv_safe(stack.get("full_label", "")), stack.get("scope", "")])
        ends[stack["id"]] = fh.getvalue()[:-2]
    return ends


def csv_safe(value: Any) -> Any:
    """Neutralise spreadsheet formulas in hostile text ('=cmd|...' -> "'=cmd|...")."""
    if isinstance(value, str) and value.startswith(_CSV_FORMULA):
        return "'" + value
    return value
