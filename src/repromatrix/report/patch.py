"""A render after a few new records: the last render's site, patched where they changed it.

Flow: report.render -> **report.patch** -> out/. When the last render into ``out`` kept
its site (``report.last_site``) under the same site-wide inputs, and the store's index says
which cells it settled since (``StoreIndex.histories_since``), only those cells are read:
their pieces (``report.pieces``), their rows of the grid and of their repro pages, their
lines of ``results.csv``, their chunks, their stacks' and repros' answers. Every other
cell's markup is taken from the files the last render wrote, where it noted it
(``kept.Spans``), and every page is rendered again around it. The files are byte for byte
what a full render writes; whatever a patch cannot decide that way (a new or vanished
cell, a cell moving in the grid, a stack whose versions changed, a new stage name, a file
changed under the page) gives ``None``, before anything is written, and the caller
renders in full.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from markupsafe import escape

from repromatrix.model import Repro
from repromatrix.store.index import StaleIndex, StoreIndex
from repromatrix.store.lines import iter_result_files

from . import cell as cell_mod
from .answers import stack_scope
from .cache import RenderCache
from .cell import Head
from .chunks import DATA_DIR, Member, chunk_source, write_chunks
from .data_files import CSV_HEAD, RESULTS, RawSink, stack_columns, write_csv_lines
from .feed import write_feed
from .fold import column_fold, row_fold
from .last_site import KeptSite, numbered, site_inputs
from .load import Reduced, add_settled, covers_exactly, newest_changed, sink_files, status_changes
from .markup import grid_row, repro_tr
from .pages import (
    FEED_ENTRIES,
    ReportSummary,
    StageTable,
    changes,
    column_answers,
    copy_static,
    status_counts,
    write_pages,
)
from .pieces import CellPieces, kept_details
from .verdicts import decided_by_level, page_fixes, verdict_rows, write_verdicts
from .written import RenderState

_FROM_VIEW = ("status", "previous", "contradicted", "expected", "expected_when", "workaround",
              "standin", "verdict", "untold")


class _Unpatchable(Exception):
    """What changed is not a patch of the kept site: render in full."""


def render_patched(paths: Sequence[Path], out: Path, repros: Mapping[str, Repro], *,
                   matrix: str, title: str, published: Collection[str] | None,
                   freshness: Mapping[str, Any] | None, now: datetime,
                   cache: RenderCache | None) -> ReportSummary | None:
    """``render_site`` by patching the site the last render into ``out`` kept; None when
    it cannot (nothing written then)."""
    kept = KeptSite.load(out)
    if kept is None or cache is None or len(paths) != 1 or not Path(paths[0]).is_dir():
        return None
    state = RenderState(out)
    if not all(state.unchanged(out / name) for name in kept.pages):
        return None
    site_key = cell_mod.site_key(repros, matrix)
    if kept.key != site_inputs(site_key, paths, repros, title, published):
        return None
    files, missing = iter_result_files(paths)
    if missing:
        return None
    with StoreIndex.open(paths[0]) as index:
        if not index.files() or not covers_exactly(index, files):
            return None
        patch = _Patch(index, cache, kept, out, state, repros, matrix, published)
        sink = RawSink(out / RESULTS, now.strftime("%Y-%m-%d %H:%M UTC"), state)
        try:
            patch.read(sink)
            patch.prepare()
            KeptSite.forget(out)  # until the pages it describes are written (a render cut off)
            sink.close(patch.reduced.skipped, [])  # (a file rewritten meanwhile: StaleIndex)
            sink.finish()  # (a patch appends a few records: no reason to write meanwhile)
        except (_Unpatchable, StaleIndex, OSError, UnicodeDecodeError):
            sink.discard()
            return None
        return patch.write(title, freshness, now)


class _Patch:
    """One patch of a kept site: read (``read``, ``prepare``: nothing written), then written."""

    def __init__(self, index: StoreIndex, cache: RenderCache, kept: KeptSite, out: Path,
                 state: RenderState, repros: Mapping[str, Repro], matrix: str,
                 published: Collection[str] | None) -> None:
        self.index, self.cache, self.kept, self.out, self.state = index, cache, kept, out, state
        self.repros, self.matrix, self.published = repros, matrix, published
        self.cols = kept.cells
        self.reduced = Reduced(cache=cache)
        self.changed: list[int] = []  # positions of the cells settled since the kept site
        self.feed: dict[str, list[Any]] = {}
        self.heads: dict[int, Head] = {}  # of changed cells and their grid rows' cells
        self.table = StageTable()

    # -- reading (nothing written) -------------------------------------------------------

    def read(self, sink: RawSink) -> None:
        """What the index settled since the kept site, in one read transaction: the cells,
        every file for ``results.json.gz``, and the feed's newest changes."""
        index, kept, cols, reduced = self.index, self.kept, self.cols, self.reduced
        position = {c: n for n, c in enumerate(cols["id"])}
        with index.snapshot():
            epoch, seq, count = index.history_mark()
            if (epoch, count) != (kept.epoch, len(cols["id"])) or not index.settleable():
                raise _Unpatchable("another index, or cells came or went")
            stores: dict[str, str] = {}
            for settled in index.histories_since(kept.seq):
                n = position.get(settled.shown.cell)
                if n is None or settled.first != (cols["first_file"][n], cols["first_offset"][n]):
                    raise _Unpatchable("a new cell, or one whose first record moved")
                add_settled(index, reduced, settled, stores)
                cols["changed_at"][n] = settled.changed_at
                self.changed.append(n)
            reduced.mark = (epoch, seq, count)
            reduced.records = index.kept_records()
            sink_files(index, reduced, sink)
            shown = [n for n, on in enumerate(cols["in_scope"]) if on]
            newest = newest_changed([cols["id"][n] for n in shown],
                                    [cols["changed_at"][n] for n in shown], FEED_ENTRIES)
            found = index.histories_of(newest)
            self.feed = {c: found[c].history().spans for c in newest}
        index.keep_chains()

    def prepare(self) -> None:
        """The changed cells' pieces and columns, the stacks, stage names and every head and
        detail the files to write need."""
        kept, cols = self.kept, self.cols
        pieces = CellPieces(self.reduced, self.repros, self.matrix)
        self.pieces = pieces
        ids = [cols["id"][n] for n in self.changed]
        pieces.gather(ids, self.cache.pieces_of(ids) if ids else {},
                      [[None, None, st["versions"], None, None, st["pairing"]]
                       for st in kept.stacks])
        numbers = {k: i for i, k in enumerate(kept.stage_keys)}
        before: dict[int, str] = {}
        for n in self.changed:
            head = self.heads[n] = pieces.heads[cols["id"][n]]
            view = head.view
            if (view["stack"], view["repro"]) != (cols["stack"][n], cols["repro"][n]) or \
                    cols["shared"][n]:
                raise _Unpatchable("a cell moved in the grid")
            for key in _FROM_VIEW:
                cols[key][n] = view[key]
            before[n] = cols["finished"][n]
            cols["finished"][n] = head.stack[3]
            cols["pieces"][n] = pieces.keys[cols["id"][n]]
            number = numbers.get(head.stage_key)
            if number is None:
                number = numbers[head.stage_key] = len(kept.stage_keys)
                kept.stage_keys.append(head.stage_key)
            cols["stage"][n] = number
        for number in dict.fromkeys(cols["stage"]):  # stage names in order of first appearance
            self.table.code(kept.stage_keys[number])
        if self.table.names != kept.stage_names:
            raise _Unpatchable("the stage names changed")
        self._stacks(before)
        self.rows = sorted({cols["row"][n] for n in self.changed if cols["row"][n] >= 0})
        self.columns = sorted({cols["col"][n] for n in self.changed if cols["col"][n] >= 0})
        others = [n for r in self.rows for n in kept.grid[r] if n >= 0 and n not in self.heads]
        self.heads.update(self._kept_heads(others))
        self._chunks()
        self.old: dict[str, list[str]] = {}  # each file's cells' markup as the last render wrote it
        self.around: dict[str, tuple[str, str]] = {}  # and its text before and after them
        for name, spans in kept.pages.items():
            text = (self.out / name).read_bytes().decode("utf-8")
            found = spans.pieces(text)
            if found is None:
                raise _Unpatchable(f"{name} is not as the last render wrote it")
            self.old[name], end = found
            self.around[name] = (text[:spans.start], text[end:])

    def _stacks(self, before: Mapping[int, str]) -> None:
        """Each changed cell's stack as ``StackBook`` keeps it: from its latest-finished cell
        (the first of them in cell order); a stack whose shown fields changed is not a patch."""
        cols, kept = self.cols, self.kept
        by_id = {st["id"]: st for st in kept.stacks}
        for sid in dict.fromkeys(cols["stack"][n] for n in self.changed):
            winner = -1
            for n, stack in enumerate(cols["stack"]):
                if stack == sid and (winner < 0 or cols["finished"][n] > cols["finished"][winner]):
                    winner = n
            st = by_id[sid]
            if winner in before:
                _, kind, versions, _, spec, pairing = self.heads[winner].stack
                if [kind, versions, stack_scope(spec, self.published), pairing] != \
                        [st["kind"], st["versions"], st["scope"], st["pairing"]]:
                    raise _Unpatchable(f"stack {sid} changed")
            elif any(cols["stack"][n] == sid and old >= cols["finished"][winner]
                     for n, old in before.items()):
                raise _Unpatchable(f"stack {sid} is shown from another record now")
            st["_finished"] = cols["finished"][winner]

    def _kept_heads(self, cells: list[int]) -> dict[int, Head]:
        """The heads the cache keeps of ``cells`` (unchanged: their pieces key is the kept one)."""
        cols = self.cols
        found = self.cache.pieces_of(cols["id"][n] for n in cells) if cells else {}
        out = {}
        for n in cells:
            item = found.get(cols["id"][n])
            if item is None or item[0] != cols["pieces"][n]:
                raise _Unpatchable("pieces another render replaced")
            out[n] = cell_mod.read_head(item[1], item[2])
        return out

    def _chunks(self) -> None:
        """The sources of the chunks changed cells are in, and the details of those to write."""
        cols, kept, state = self.cols, self.kept, self.state
        scope = {st["id"]: st["scope"] for st in kept.stacks}
        touched = {cols["chunk"][n] for n in self.changed}
        groups: dict[int, list[Member]] = {k: [] for k in touched}
        positions: dict[int, list[int]] = {k: [] for k in touched}
        for n, k in enumerate(cols["chunk"]):
            if k in groups:
                groups[k].append((cols["id"][n], cols["pieces"][n], scope[cols["stack"][n]]))
                positions[k].append(n)
        self.sources = dict(kept.chunk_sources)
        self.sources.update((k, chunk_source(k, groups[k])) for k in touched)
        folder = self.out / DATA_DIR
        if any(k not in touched and not state.kept(folder / f"c{k}.js", source)
               for k, source in self.sources.items()):
            raise _Unpatchable("a chunk changed under the page")
        stale = [k for k in touched if not state.kept(folder / f"c{k}.js", self.sources[k])]
        wanted = [n for k in stale for n in positions[k]]
        made = self.pieces.made
        keys = {cols["id"][n]: cols["pieces"][n] for n in wanted}
        self.details: dict[str, tuple[bytes, bytes]] = {c: made[c] for c in keys if c in made}
        rest = [c for c in keys if c not in made]
        if rest:
            self.details.update(kept_details(self.cache.placed(rest), keys, folder, state))
        if len(self.details) < len(keys):
            raise _Unpatchable("pieces another render replaced")
        self.groups = groups

    # -- writing -------------------------------------------------------------------------

    def write(self, title: str, freshness: Mapping[str, Any] | None,
              now: datetime) -> ReportSummary:
        """Every file but ``results.json.gz`` (written by then), and the patched site."""
        kept, cols, out, state = self.kept, self.cols, self.out, self.state
        stacks, shown_scope = kept.stacks, kept.shown_scope
        hidden = [shown_scope != "all" and st["scope"] != shown_scope for st in stacks]
        views = [dict(rv) for rv in kept.views]
        rows = verdict_rows(self.index)
        fixes = page_fixes(rows, self.repros, {kept.repro_ids[j] for j in self.columns})
        for j in self.columns:
            fix = fixes.get(kept.repro_ids[j])
            views[j].update(self._answers(j, hidden, fix), known_bug=fix["row"] if fix else None,
                            timeline=fix["timeline"] if fix else None)
        trs = self._repro_rows(views, hidden)
        count = len(cols["id"])
        in_scope = [n for n in range(count) if cols["in_scope"][n]]
        site = {
            "title": title, "generated_at": now.strftime("%Y-%m-%d %H:%M UTC"),
            "cell_count": count, "stack_count": len(stacks), "repro_ids": kept.repro_ids,
            "repro_views": [{**rv, "trs": t} for rv, t in zip(views, trs, strict=True)],
            "changes": changes({cols["id"][n]: {k: cols[k][n] for k in ("id", "previous",
                                                                          "status")}
                                for n in in_scope if cols["previous"][n]}),
            "counts": status_counts({n: {"status": cols["status"][n]} for n in in_scope}),
            "skipped": self.reduced.skipped, "conflicts": [], "records": self.reduced.records,
            "stage_names": self.table.names, "shown_scope": shown_scope,
            "scope_counts": kept.scope_counts, "freshness": freshness,
            "grid_rows": self._grid_rows(views, hidden), "decided": decided_by_level(rows),
        }
        changed = {views[j]["page"] for j in self.columns}
        pages = write_pages(out, site, state, {rv["page"]: self.around[rv["page"]] for rv in views
                                               if rv["page"] not in changed})
        chunks = write_chunks(out, self.groups, self.sources, lambda *_: self.details, state,
                              self.reduced)
        lines = self._csv_lines()
        write_csv_lines(out, lines, state)
        pages["results.csv"] = kept.pages["results.csv"]._replace(
            start=len(CSV_HEAD), lengths=[len(line) for line in lines])
        write_feed(out / "changes.atom", title, now.isoformat(timespec="seconds"),
                   status_changes(self.feed, FEED_ENTRIES), state,
                   {r.id: r.kind for r in self.repros.values()})
        write_verdicts(out, rows, self.repros, state, self.reduced)
        copy_static(out, state)
        state.save()
        self._keep(views, pages)
        ids = cols["id"]
        return ReportSummary(
            out=out, index=out / "index.html", records=self.reduced.records, cells=count,
            stacks=len(stacks), repros=len(kept.repro_ids), skipped=list(self.reduced.skipped),
            contradictions=[ids[n] for n in range(count) if cols["contradicted"][n]],
            changes={k: [c["id"] for c in v] for k, v in site["changes"].items()},
            chunks=chunks, rewritten=list(state.rewritten),
            standin={ids[n]: cols["standin"][n] for n in range(count) if cols["standin"][n]},
            patched=True)

    def _view(self, n: int) -> dict[str, Any]:
        """Cell ``n`` as the grid's and repro pages' markup reads it."""
        cols, head = self.cols, self.heads[n]
        return {**head.view, "stage_codes": self.table.code(head.stage_key),
                "chunk": cols["chunk"][n]}

    def _grid_rows(self, views: list[dict[str, Any]], hidden: list[bool]) -> list[str]:
        kept = self.kept
        rows = self.old["index.html"]
        columns = [escape(rv["id"]) for rv in views]
        for r in self.rows:
            cells = [self._view(n) if n >= 0 else None for n in kept.grid[r]]
            present = [c["status"] for c in cells if c]
            row = {"stack": kept.stacks[r], "cells": cells,
                   "group_start": r == 0 or kept.stacks[r]["group"] != kept.stacks[r - 1]["group"],
                   "hidden": hidden[r], "all_broken": bool(present) and set(present) == {"broken"},
                   "broken_message": next((c["message"] for c in cells if c), ""),
                   "fold": row_fold(cells, self.repros)}
            rows[r] = grid_row(row, [self.heads[n].td if n >= 0 else None for n in kept.grid[r]],
                               columns)
        return rows

    def _entries(self, j: int) -> list[tuple[int, int]]:
        """(row, cell position) of each cell in repro column ``j``, in row order."""
        return [(r, line[j]) for r, line in enumerate(self.kept.grid) if line[j] >= 0]

    def _answers(self, j: int, hidden: list[bool], fix: Mapping[str, Any] | None) -> dict[str, Any]:
        """What repro column ``j`` says now (``render.repro_view``'s answers and counts)."""
        cols, stacks = self.cols, self.kept.stacks
        shown = [{"stack": stacks[r], "cell": {k: cols[k][n] for k in (
            "id", "status", "verdict", "workaround", "contradicted", "expected", "expected_when",
            "untold")}}
            for r, n in self._entries(j) if not hidden[r]]
        view = self.kept.views[j]
        return {**column_answers(shown, view["rules"], view["about"], fix),
                "fold": column_fold([e["cell"] for e in shown], self.repros.get(view["id"]))}

    def _repro_rows(self, views: list[dict[str, Any]], hidden: list[bool]) -> list[list[str]]:
        cols, stacks = self.cols, self.kept.stacks
        changed = set(self.changed)
        ths: dict[str, str] = {}
        out = []
        for j, rv in enumerate(views):
            trs = self.old[rv["page"]]
            if j in self.columns:
                for k, (r, n) in enumerate(self._entries(j)):
                    if n in changed:
                        entry = {"stack": stacks[r], "hidden": hidden[r],
                                 "cell": {"chunk": cols["chunk"][n]}}
                        trs[k] = repro_tr(entry, self.heads[n].tr, ths)
            out.append(trs)
        return out

    def _csv_lines(self) -> list[str]:
        cols = self.cols
        lines = self.old["results.csv"]
        by_id = {st["id"]: st for st in self.kept.stacks}
        ends = stack_columns(by_id[s] for s in dict.fromkeys(cols["stack"][n]
                                                              for n in self.changed))
        for n in self.changed:
            lines[n] = f"{self.heads[n].csv},{ends[cols['stack'][n]]}"
        return lines

    def _keep(self, views: list[dict[str, Any]], pages: dict[str, Any]) -> None:
        """The patched site, for the next render."""
        kept, cols = self.kept, self.cols
        kept.stage_keys, cols["stage"] = numbered([kept.stage_keys[i] for i in cols["stage"]])
        kept.seq = self.reduced.mark[1]  # type: ignore[index]
        kept.views = views
        kept.chunk_sources = self.sources
        kept.pages = pages
        kept.save(self.out)
