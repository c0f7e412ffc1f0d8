"""Each cell's pieces for one render: the ones the report's cache keeps while their key matches, else made.

Flow: report.load -> **report.pieces** -> report.render / report.patch. A cell's pieces
(``report.cell``) are keyed by every input they are made from (``cell.pieces_key``): the
site's, its record's digest and its history's. ``CellPieces.gather`` takes the kept ones
whose key still matches and makes the others from the record's summary, handing them to
the report's cache (``report.cache``) a thousand at a time (memory stays flat);
``details`` reads the drawer's part of cells whose chunk is written, making again those
another render replaced meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from repromatrix.model import Repro
from repromatrix.store.reader import newest

from . import cell as cell_mod
from .cell import Head, Pieces, record_summary
from .load import Reduced
from .stacks import known_pairings

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
        self.made: dict[str, tuple[bytes, bytes]] = {}  # details of cells the cache did not take
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

    def make(self, cells: list[str], every: bool = False) -> dict[str, tuple[bytes, bytes]]:
        """Make the pieces of ``cells`` and hand them to the cache ``KEEP_BATCH`` at a time;
        the details (detail, env) of those it did not take, or, with ``every``, of all."""
        reduced = self.reduced
        batch: dict[str, tuple[str, bytes, bytes, bytes, bytes]] = {}
        out: dict[str, tuple[bytes, bytes]] = {}
        for cid, pieces in self._made(cells):
            self.heads[cid] = pieces.head
            if every:
                out[cid] = (pieces.detail, pieces.env)
            batch[cid] = (self.keys[cid], *cell_mod.stored_head(pieces.head), pieces.detail,
                          pieces.env)
            if len(batch) >= KEEP_BATCH:
                out.update(reduced.keep(batch))
                batch.clear()
        out.update(reduced.keep(batch))
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

    def details(self, wanted: list[str]) -> dict[str, tuple[bytes, bytes]]:
        """The detail and environment of each of ``wanted``: kept by the cache under its key,
        made by this render, or made again (pieces another render replaced since this one
        read them: another matrix, folder or catalog)."""
        made = self.made
        found = {c: (detail, env) for c, (key, detail, env) in
                 self.reduced.details(c for c in wanted if c not in made).items()
                 if key == self.keys[c]}
        found.update((c, made[c]) for c in wanted if c in made)
        again = [c for c in wanted if c not in found]
        return {**found, **self.make(again, every=True)} if again else found
