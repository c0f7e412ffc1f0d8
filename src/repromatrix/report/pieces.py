"""Each cell's pieces for one render: the ones the report's cache keeps while their key matches, else made.

Flow: report.load -> **report.pieces** -> report.render / report.patch. A cell's pieces
(``report.cell``) are keyed by every input they are made from (``cell.pieces_key``): the
site's, its record's digest and its history's. ``CellPieces.gather`` takes the kept ones
whose key still matches and makes the others from the record's summary, handing them to
the report's cache (``report.cache``) a thousand at a time; ``details`` gives the drawer's
part of cells whose chunk is written: made by this render, read back from the chunk an
earlier render wrote it in (the cache keeps no second copy), or made again.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from repromatrix.model import Repro
from repromatrix.store.reader import newest

from . import cell as cell_mod
from .cell import Head, Pieces, record_summary
from .chunks import read_entries
from .load import Reduced
from .stacks import known_pairings
from .written import RenderState

KEEP_BATCH = 1000  # cells whose new pieces go to the cache at once


def history_context(reduced: Reduced, cell: str, conflict: bool) -> dict[str, Any]:
    """What a cell's own history puts in its pieces (``report.cell.make_pieces``)."""
    history, dropped = newest(reduced.timeline(cell))
    attempts = reduced.attempts(cell)
    flaky = ", ".join(f"{n} {s}" for s, n in sorted(attempts.items())) if attempts else ""
    return {"previous": reduced.previous(cell), "conflict": conflict, "flaky": flaky,
            "history": history, "dropped": dropped}


class CellPieces:
    """The heads (``report.cell.Head``) and keys of one render's cells."""

    def __init__(self, reduced: Reduced, repros: Mapping[str, Repro], matrix: str) -> None:
        self.reduced, self.repros, self.matrix = reduced, repros, matrix
        self.site_key = cell_mod.site_key(repros, matrix)
        self.conflicted = {c.cell for c in reduced.conflicts}
        self.heads: dict[str, Head] = {}
        self.keys: dict[str, str] = {}
        self.made: dict[str, tuple[bytes, bytes]] = {}  # details of the cells made, until written
        self._contexts: dict[str, dict[str, Any]] = {}
        self._shared: dict[Any, Any] = {}

    def key(self, cell: str) -> str:
        """The key of every input of ``cell``'s pieces (the index's digest of its history
        where it keeps one: nothing parsed)."""
        latest = self.reduced.latest[cell]
        kept_history = self.reduced.history_digest(cell)
        if kept_history:
            history = f"index {kept_history} {cell in self.conflicted}"
        else:
            context = self._contexts[cell] = history_context(self.reduced, cell,
                                                             cell in self.conflicted)
            history = cell_mod.history_key(**context)
        return cell_mod.pieces_key(self.site_key, latest.digest, latest.store, history)

    def gather(self, cells: Iterable[str], kept: Mapping[str, tuple[str, bytes, bytes]],
               pairings: Iterable[Any] = ()) -> list[str]:
        """The head of each of ``cells``: read from ``kept`` (cell -> key, head, markup) when
        its key matches, else made. ``pairings``: ``Head.stack`` lists whose pairing notes a
        made cell may reuse (a new run of a known stack then needs no compatibility table).
        Returns the cells made."""
        wanted = []
        for cid in cells:
            self.keys[cid] = key = self.key(cid)
            found = kept.get(cid)
            if found is not None and found[0] == key:
                self.heads[cid] = cell_mod.read_head(found[1], found[2])
            else:
                wanted.append(cid)
        if wanted:
            self._shared[cell_mod.PAIRINGS] = known_pairings(
                [*pairings, *(h.stack for h in self.heads.values())])
            self.made.update(self.make(wanted))
        return wanted

    def make(self, cells: list[str]) -> dict[str, tuple[bytes, bytes]]:
        """Make the pieces of ``cells``, handing their heads to the cache ``KEEP_BATCH`` at
        a time; their details (detail, env)."""
        batch: list[tuple[str, str, bytes, bytes]] = []
        out: dict[str, tuple[bytes, bytes]] = {}
        for cid, pieces in self._made(cells):
            self.heads[cid] = pieces.head
            out[cid] = (pieces.detail, pieces.env)
            batch.append((cid, self.keys[cid], *cell_mod.stored_head(pieces.head)))
            if len(batch) >= KEEP_BATCH:
                self.reduced.keep(batch)
                batch = []
        if batch:
            self.reduced.keep(batch)
        return out

    def _made(self, cells: Sequence[str]) -> Iterator[tuple[str, Pieces]]:
        """Each of ``cells`` with its pieces, made from its record's summary."""
        reduced = self.reduced
        for cid, summary in reduced.summaries(cells, record_summary):
            context = self._contexts.get(cid) or history_context(reduced, cid,
                                                                 cid in self.conflicted)
            yield cid, cell_mod.make_pieces(summary, self.repros.get(summary["view"]["repro"]),
                                            matrix=self.matrix, store=reduced.store(cid),
                                            seen=self._shared, **context)

    def details(self, wanted: list[str], folder: Path | None = None,
                state: RenderState | None = None) -> dict[str, tuple[bytes, bytes]]:
        """The detail and environment of each of ``wanted``: made by this render, read back
        from the chunk in ``folder`` an earlier render wrote it in under the same key (while
        ``state`` says that chunk is as written), or made again."""
        made = self.made
        found = {c: made[c] for c in wanted if c in made}
        rest = [c for c in wanted if c not in made]
        if rest and folder is not None and state is not None:
            found.update(kept_details(self.reduced.placed(rest), self.keys, folder, state))
        again = [c for c in rest if c not in found]
        return {**found, **self.make(again)} if again else found


def kept_details(placed: Mapping[str, tuple[str, int, str]], keys: Mapping[str, str],
                 folder: Path, state: RenderState) -> dict[str, tuple[bytes, bytes]]:
    """The details of the cells ``placed`` names (cell -> key, chunk, source) read back from
    their chunks in ``folder``: those whose key is still ``keys``' and whose chunk ``state``
    says is the one written from that source."""
    by_chunk: dict[tuple[int, str], list[str]] = {}
    for cell, (key, chunk, source) in placed.items():
        if key == keys.get(cell):
            by_chunk.setdefault((chunk, source), []).append(cell)
    found: dict[str, tuple[bytes, bytes]] = {}
    for (chunk, source), cells in by_chunk.items():
        path = folder / f"c{chunk}.js"
        if state.holds(path, source):
            found.update(read_entries(path, set(cells)))
    return found
