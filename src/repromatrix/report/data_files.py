"""The report stage's raw data, published beside the page (caniuse publishes its data too).

    out/results.json   every usable record (streamed as it is loaded), what was skipped, conflicts
    out/results.csv    the latest record per cell, flattened, spreadsheet-safe
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from repromatrix.store.lines import Skipped, dumps
from repromatrix.store.reader import Conflict

from .written import RenderState

_CSV_FORMULA = ("=", "+", "@", "\t", "\r")
CSV_COLUMNS = ["cell", "stack", "repro", "status", "expected", "contradicted", "signature",
               "workaround", "message", "duration", "exit", "image", "run_id", "host",
               "backend", "started_at", "finished_at", "previous", "versions", "scope"]


class RawSink:
    """Collects usable records for ``results.json``: ``{"generated_at", "records": [...],
    "skipped", "conflicts"}``, one record a line (the line as stored when its schema is current).

    Records arrive as they are loaded, each with its line's digest; lines still in the
    result files are read only when written. ``close`` writes the file, or, when its
    records begin with those the last render into this folder wrote (``RenderState``),
    appends the rest in place.
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
        tail = {
            "skipped": [{"file": s.file, "line": s.line, "reason": s.reason} for s in skipped],
            "conflicts": [{"run_id": c.run_id, "cell": c.cell, "sources": list(c.sources),
                           "statuses": list(c.statuses), "kept": c.kept,
                           "cache_key": c.cache_key} for c in conflicts],
        }
        end = ("\n],\n" + json.dumps(tail, ensure_ascii=False)[1:] + "\n").encode("utf-8")
        known = self.state.results
        resume = (self._at_want is not None and known.get("chain") == self._at_want
                  and known.get("header") == len(self.header) and self.state.unchanged(self.path))
        ends = [hashlib.sha1(self.header).hexdigest(), hashlib.sha1(end).hexdigest()]
        if resume and self.count == known["count"] and known.get("ends") == ends:
            self.state.written.add(self.state.name(self.path))
            return  # the same records, header and tail: the file stays as it is
        with open(self.path, "r+b" if resume else "wb") as fh:
            fh.write(self.header)
            skip, written = (known["count"], known["count"]) if resume else (0, 0)
            if resume:
                fh.seek(known["end"])
                fh.truncate()
            for number, (n, read) in enumerate(self.pieces):
                if skip >= n:
                    skip -= n
                    continue
                if written:
                    fh.write(b",\n")
                if number in self.blocks:
                    _copy_lines(read(), skip, fh)
                else:
                    fh.write(b",\n".join(read()[skip:]))
                written += n - skip
                skip = 0
            records_end = fh.tell()
            fh.write(end)
            fh.truncate()
        self.state.results = {"count": self.count, "chain": self._chain.hexdigest(),
                              "end": records_end, "header": len(self.header), "ends": ends}
        self.state.noted(self.path, "")  # too large to hash again: its size and mtime identify it


def _copy_lines(chunks: Iterator[bytes], skip: int, fh: BinaryIO) -> None:
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
