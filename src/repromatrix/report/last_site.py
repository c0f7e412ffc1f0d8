"""The last render's site, kept beside its page, so the next render patches it.

Flow: report.render -> **report.last_site** -> out/.render-site -> report.patch. A render of
one store through its settled histories leaves what it assembled from its cells: each
cell's light fields as columns (status, previous, expectation, chunk, pieces key, ...),
the stacks, the grid's layout, each repro's answers, the stage names, each chunk's source,
and where each cell's markup sits in the files it wrote (``Spans``: a grid row in
``index.html``, a row of a repro page, a line of ``results.csv``), under the index's mark
(``StoreIndex.history_mark``) and a digest of every site-wide input (``site_inputs``).
A later render into the same folder reads the cells settled since that mark and patches
(``report.patch``); anything else renders in full. Written with ``marshal``: columns of
strings and numbers load in milliseconds, where 10^4 objects would not.

Like ``.render-state.json`` it is not part of the page: deleting it costs one full render.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import marshal
import os
import sys
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, fields
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any, NamedTuple

from repromatrix.model import Repro

KEPT_NAME = ".render-site"
FORMAT = 4
# the cells' columns, in the site's cell order
COLUMNS = ("id", "stack", "repro", "status", "previous", "contradicted", "expected",
           "expected_when", "workaround", "standin", "verdict", "untold", "finished", "in_scope",
           "chunk", "pieces", "stage", "changed_at", "first_file", "first_offset", "row", "col", "shared")


class Spans(NamedTuple):
    """Consecutive pieces of a file's text, ``sep`` between them and ``end`` after the last,
    from character ``start``: ``lengths`` of each piece."""

    start: int
    lengths: list[int]
    sep: str
    end: str

    @classmethod
    def of(cls, head: str, pieces: Sequence[str], sep: str, end: str) -> Spans:
        return cls(len(head), list(map(len, pieces)), sep, end)

    @staticmethod
    def join(pieces: Sequence[str], sep: str, end: str) -> str:
        return sep.join(pieces) + (end if pieces else "")

    def pieces(self, text: str) -> tuple[list[str], int] | None:
        """The pieces as ``text`` holds them, and where their text ends (after ``end``);
        None: it is not the text they were noted in."""
        out, at, last = [], self.start, len(self.lengths) - 1
        for n, length in enumerate(self.lengths):
            piece = text[at:at + length]
            at += length
            tail = self.sep if n < last else self.end
            if len(piece) != length or text[at:at + len(tail)] != tail:
                return None
            out.append(piece)
            at += len(tail)
        return out, at


@dataclass
class KeptSite:
    """What a render assembled, as the next render into its folder patches it."""

    key: str  # site_inputs
    epoch: str  # the index's, with the seq it was read at
    seq: int
    cells: dict[str, list[Any]]  # COLUMNS
    stage_keys: list[str]  # the distinct stage keys the ``stage`` column points into
    stage_names: list[str]
    stacks: list[dict[str, Any]]  # in row order, as ``StackBook.ordered`` made them
    grid: list[list[int]]  # per row, each column's cell position (-1: none)
    repro_ids: list[str]
    views: list[dict[str, Any]]  # each repro's page model without its rows
    shown_scope: str
    scope_counts: dict[str, int]
    chunk_sources: dict[int, str]
    pages: dict[str, Spans] = field(default_factory=dict)  # file name -> where its cells' markup is

    def save(self, out: Path) -> None:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["pages"] = {k: tuple(v) for k, v in self.pages.items()}
        tmp = out / (KEPT_NAME + ".tmp")
        with contextlib.suppress(OSError, ValueError):  # only a cache
            tmp.write_bytes(marshal.dumps((FORMAT, sys.version, data)))
            os.replace(tmp, out / KEPT_NAME)

    @classmethod
    def load(cls, out: Path) -> KeptSite | None:
        """The site the last render into ``out`` kept (None: none, or another format)."""
        try:
            form, version, data = marshal.loads((out / KEPT_NAME).read_bytes())
            if (form, version) != (FORMAT, sys.version):
                return None
            data["pages"] = {k: Spans(*v) for k, v in data["pages"].items()}
            return cls(**data)
        except (OSError, ValueError, EOFError, TypeError, KeyError):
            return None

    @staticmethod
    def forget(out: Path) -> None:
        """Before a render writes: the kept site describes the files as they are until then
        (a render cut off midway leaves none, and the next renders in full)."""
        with contextlib.suppress(OSError):
            (out / KEPT_NAME).unlink()


def site_inputs(site_key: str, paths: Sequence[Path], repros: Mapping[str, Repro], title: str,
                published: Collection[str] | None) -> str:
    """A digest of every input of the page beside the cells: the pieces' site key (sources,
    catalog expectations, matrix, current folder), the store read, the catalog's texts, kinds
    and requirements (what a fold says), the title and the published stacks."""
    catalog = [[r.id, r.title, r.kind, r.description, list(r.upstream), list(r.requires)]
               for r in repros.values()]
    text = json.dumps([FORMAT, site_key, [os.path.realpath(p) for p in paths], catalog, title,
                       None if published is None else sorted(published)],
                      default=str)
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def kept_site(key: str, mark: tuple[str, int, int], site: Mapping[str, Any],
              settled: Mapping[str, Any], sources: dict[int, str],
              pages: dict[str, Spans]) -> KeptSite:
    """What a full render (``site``, ``report.render.build_site``; ``settled``: each cell's
    ``store.index.Settled``) leaves for the next: see the module's docstring."""
    views = site["cells"].values()
    # columns made by the C loops of map, zip and itemgetter: this is part of every full render
    cells: dict[str, Any] = dict(zip(_FROM_VIEWS, zip(*map(itemgetter(*_FROM_VIEWS), views), strict=True),
                                     strict=True)) if views else dict.fromkeys(_FROM_VIEWS, ())
    ids = cells["id"]
    heads = list(map(site["heads"].__getitem__, ids))
    cells["finished"] = list(map(itemgetter(3), map(attrgetter("stack"), heads)))
    stage_keys, cells["stage"] = numbered(list(map(attrgetter("stage_key"), heads)))
    found = list(map(settled.__getitem__, ids))
    cells["changed_at"] = list(map(attrgetter("changed_at"), found))
    cells["first_file"], cells["first_offset"] = (zip(*map(attrgetter("first"), found), strict=True)
                                                  if found else ((), ()))
    position = {c: n for n, c in enumerate(ids)}
    row, col = [-1] * len(ids), [-1] * len(ids)
    grid = []
    for r, line in enumerate(site["grid"]):
        grid.append([position[c] if c else -1 for c in line])
        for j, c in enumerate(line):
            if c:
                row[position[c]], col[position[c]] = r, j
    cells["row"], cells["col"] = row, col
    places = Counter(zip(cells["stack"], cells["repro"], strict=True))
    cells["shared"] = [places[p] > 1 for p in zip(cells["stack"], cells["repro"], strict=True)]
    cells = {k: list(v) for k, v in cells.items()}
    return KeptSite(
        key=key, epoch=mark[0], seq=mark[1], cells=cells, stage_keys=stage_keys,
        stage_names=list(site["stage_names"]), stacks=site["stacks"], grid=grid,
        repro_ids=list(site["repro_ids"]),
        views=[{k: v for k, v in rv.items() if k not in ("entries", "trs")}
               for rv in site["repro_views"]],
        shown_scope=site["shown_scope"], scope_counts=dict(site["scope_counts"]),
        chunk_sources=sources, pages=pages)


_FROM_VIEWS = ("id", "stack", "repro", "status", "previous", "contradicted", "expected",
               "expected_when", "workaround", "standin", "verdict", "untold", "in_scope", "chunk",
               "pieces")


def numbered(values: list[str]) -> tuple[list[str], list[int]]:
    """The distinct ``values`` in order of first appearance, and each value's number."""
    numbers: dict[str, int] = {}
    each = [numbers.setdefault(v, len(numbers)) for v in values]
    return list(numbers), each
