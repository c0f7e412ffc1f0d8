"""The report stage: results store -> a static site that opens from disk, sized by cells.

Flow: results -> **report.render**. ``render_site`` loads the result files and folders
(``report.load``: a folder through its index, the latest record per cell, and each
cell's history as a timeline, ``store.reader.timeline``), takes each cell's pieces
(``report.cell``: kept by the report's cache, ``report.cache``, while their inputs are
unchanged, else made from the record's summary, with its expectation checked), pivots the
cells with pandas (stacks as rows, grouped and in version order; repros as columns; the
layout kept while its inputs are unchanged), answers the per-repro questions from the records
(``report.answers``) and assembles the pieces into Jinja2 templates from ``report/``:

    out/index.html          the grid (status, marks, labels only), answers, filters, changes
    out/repro-<id>.html     one page per repro (answers, expectation beside the records)
    out/data/c<N>.js        cell details in chunks, loaded on demand (file:// works)
    out/changes.atom        status changes as an Atom feed
    out/results.json.gz     every loaded record, plus what was skipped and the conflicts
    out/results.csv         the latest record per cell, flattened
    out/static/             CSS and JS (no CDN)

A render into a folder an earlier render of the same store wrote patches that render's
site where the records since changed it (``report.patch``, from ``report.last_site``); the
files are the same either way.

Every string from a record is hostile: templates autoescape, JSON is escaped
for <script>, the page's script only ever sets ``textContent``.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from repromatrix.model import KINDS, Repro
from repromatrix.rules.versions import key_package
from repromatrix.store.index import StaleIndex
from repromatrix.store.lines import dumps, loads

from .cache import RenderCache
from .cell import reproduce_command
from .chunks import assign_chunks, chunk_groups, chunk_source, write_chunks
from .data_files import RESULTS, RawSink, write_csv
from .expect import describe_rules
from .feed import write_feed
from .fold import column_fold
from .last_site import KeptSite, Spans, kept_site, site_inputs
from .load import Reduced, reduce_records, status_changes
from .markup import STATUS_INFO, add_markup, fragment, page_name, safe_url, script_json
from .pages import (
    FEED_ENTRIES,
    ReportSummary,
    StageTable,
    changes,
    column_answers,
    copy_static,
    report_assets_dir,
    scope_counts,
    status_counts,
    write_pages,
)
from .patch import render_patched
from .pieces import CellPieces
from .stacks import StackBook, layout_key, matrix_rows, pivot
from .verdicts import decided_by_level, page_fixes, verdict_rows, write_verdicts
from .written import RenderState

__all__ = ["STATUS_INFO", "ReportSummary", "fragment", "page_name", "render_site",
           "report_assets_dir", "reproduce_command", "safe_url", "script_json"]


def render_site(paths: Sequence[Path], out: Path, repros: Mapping[str, Repro] | None = None,
                *, matrix: str = "matrix.yaml", title: str = "repromatrix compatibility",
                published: Collection[str] | None = None,
                freshness: Mapping[str, Any] | None = None,
                now: datetime | None = None) -> ReportSummary:
    """Load results from ``paths`` and write the static site into ``out``.

    ``published``: the stack ids of the matrix file; stacks outside it are one-off runs
    (None: every stack but bisect probes counts as published). ``freshness``: the page's
    freshness section (``report.freshness.freshness``; None: no section). ``now``: the
    generation time shown (default: the clock).

    A render into a folder an earlier render wrote rewrites only the files whose bytes
    changed (``report.written``); what it leaves is what a render into an empty folder writes."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    now = now or datetime.now(timezone.utc)
    repros = repros or {}
    with _gc_paused(), _cache_of(out, paths) as cache:
        patched = render_patched(paths, out, repros, matrix=matrix, title=title,
                                 published=published, freshness=freshness, now=now, cache=cache)
        if patched is not None:
            return patched
        return _render_full(paths, out, repros, matrix=matrix, title=title,
                            published=published, freshness=freshness, now=now, cache=cache)


@contextlib.contextmanager
def _cache_of(out: Path, paths: Sequence[Path]) -> Iterator[RenderCache | None]:
    """The report's cache (``report.cache``): beside the index of the one store folder
    ``paths`` names, else in ``out``; closed afterwards."""
    one = len(paths) == 1 and Path(paths[0]).is_dir()
    cache = RenderCache.open(out, Path(paths[0]) if one else None)
    try:
        yield cache
    finally:
        if cache is not None:
            cache.close()


def _render_full(paths: Sequence[Path], out: Path, repros: Mapping[str, Repro], *, matrix: str,
                 title: str, published: Collection[str] | None,
                 freshness: Mapping[str, Any] | None, now: datetime,
                 cache: RenderCache | None) -> ReportSummary:
    """``render_site`` from every cell, leaving the site it assembled for the next render
    (``report.last_site``) when it read one store through its histories."""
    state = RenderState(out)
    KeptSite.forget(out)  # until the pages it describes are written (a render cut off midway)
    for attempt in (1, 2):  # a file rewritten under its index: read once more, refreshed
        sink = RawSink(out / RESULTS, now.strftime("%Y-%m-%d %H:%M UTC"), state)
        try:
            with reduce_records(paths, sink, cache) as reduced:
                rows = verdict_rows(reduced.index)
                site = build_site(reduced, repros, matrix=matrix, title=title,
                                  published=published, now=now, fixes=page_fixes(rows, repros))
                site["freshness"], site["decided"] = freshness, decided_by_level(rows)
                pages = write_pages(out, site, state)
                groups = chunk_groups(site["cells"])
                sources = {n: chunk_source(n, members) for n, members in groups.items()}
                chunks = write_chunks(out, groups, sources, site["details"], state, reduced)
                head, lines = write_csv(out, site, site["heads"], state)
                pages["results.csv"] = Spans.of(head, lines, "\r\n", "\r\n")
                reduced.keep_only_shown()
            break
        except StaleIndex:
            sink.discard()
            if attempt == 2:
                raise
    shown = {c["id"] for c in site["cells"].values() if c["in_scope"]}
    feed = {c: reduced.timeline(c) for c in reduced.feed_cells(shown.__contains__, FEED_ENTRIES)}
    write_feed(out / "changes.atom", title, now.isoformat(timespec="seconds"),
               status_changes(feed, FEED_ENTRIES), state, {r.id: r.kind for r in repros.values()})
    write_verdicts(out, rows, repros, state, reduced)
    copy_static(out, state)
    sink.finish()  # (results.json.gz, written meanwhile by a second thread)
    state.save()
    if reduced.mark is not None and len(reduced.settled) == len(reduced.latest):
        key = site_inputs(site["site_key"], paths, repros, title, published)
        kept_site(key, reduced.mark, site, reduced.settled, sources, pages).save(out)
    return ReportSummary(
        out=out, index=out / "index.html", records=reduced.records,
        cells=len(site["cells"]), stacks=len(site["stacks"]), repros=len(site["repro_ids"]),
        skipped=list(reduced.skipped), conflicts=list(reduced.conflicts),
        contradictions=[c["id"] for c in site["cells"].values() if c["contradicted"]],
        changes={k: [c["id"] for c in v] for k, v in site["changes"].items()}, chunks=chunks,
        rewritten=list(state.rewritten),
        standin={c["id"]: c["standin"] for c in site["cells"].values() if c["standin"]},
    )


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC: a report allocates ~10^6 acyclic objects, and the collector's
    repeated scans of them cost a quarter of the render. Restored afterwards, with what the
    render made moved to the oldest generation unscanned (the first collection after would
    otherwise walk every one of them: 0.05 s at 10k cells; most die with the render)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:  # (a caller's own frozen objects stay frozen)
            gc.freeze()
            gc.unfreeze()
        if was_enabled:
            gc.enable()



# ----------------------------------------------------------------- the model


def build_site(reduced: Reduced, repros: Mapping[str, Repro], *, matrix: str, title: str,
               published: Collection[str] | None = None,
               now: datetime | None = None, fixes: Mapping[str, Mapping[str, Any]] | None = None
               ) -> dict[str, Any]:
    """Everything the templates need. Each cell's pieces (``report.pieces``) come from the
    report's cache when their key still matches, else are made (from the record's summary)
    and kept by ``Reduced.keep``; the rest is the site's assembly of them."""
    pieces = CellPieces(reduced, repros, matrix)
    pieces.gather(reduced.latest, reduced.pieces())
    heads, keys = pieces.heads, pieces.keys
    stage_names, book, cells = StageTable(), StackBook(published), {}
    for cid in reduced.latest:
        head = heads[cid]
        book.add(*head.stack)
        view = head.view
        view["stage_codes"] = stage_names.code(head.stage_key)
        view["env"], view["pieces"] = head.env_key, keys[cid]
        cells[cid] = view
    stacks = book.ordered()
    scopes = {s["id"]: s["scope"] for s in stacks}
    shown_scope = "published" if "published" in scopes.values() and \
        set(scopes.values()) != {"published"} else "all"
    for view in cells.values():
        view["scope"] = scopes[view["stack"]]
        view["in_scope"] = shown_scope == "all" or view["scope"] == shown_scope
    repro_ids = order_repros(repros, (c["repro"] for c in cells.values()))
    grid = grid_layout(reduced, cells, [s["id"] for s in stacks], repro_ids)
    rows = matrix_rows(stacks, grid, cells, shown_scope, repros)
    columns = [[c["id"] for c in (row["cells"][i] for row in rows) if c] for i in range(len(repro_ids))]
    placed = {cid for col in columns for cid in col}
    assign_chunks(columns, [cid for cid in cells if cid not in placed], cells)
    views = [repro_view(r, i, repros.get(r), rows, (fixes or {}).get(r)) for i, r in enumerate(repro_ids)]
    in_scope = {cid: c for cid, c in cells.items() if c["in_scope"]}
    site = {
        "title": title,
        "generated_at": (now or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M UTC"),
        "cells": cells, "cell_count": len(cells), "stacks": stacks, "stack_count": len(stacks),
        "repro_ids": repro_ids, "rows": rows, "grid": grid,
        "repro_views": views, "changes": changes(in_scope), "counts": status_counts(in_scope),
        "skipped": reduced.skipped, "conflicts": reduced.conflicts,
        "records": reduced.records, "stage_names": stage_names.names,
        "stage_table": stage_names,
        "shown_scope": shown_scope, "scope_counts": scope_counts(stacks),
        "heads": heads, "details": pieces.details, "site_key": pieces.site_key,
    }
    add_markup(site, heads)
    return site


def grid_layout(reduced: Reduced, cells: Mapping[str, Mapping[str, Any]], stack_ids: list[str],
                repro_ids: list[str]) -> list[list[str]]:
    """``stacks.pivot``, kept by the report's cache under the digest of its inputs."""
    key = layout_key(cells, stack_ids, repro_ids)
    cache = reduced.cache
    kept = cache.layout(key) if cache is not None else None
    if kept is not None:
        return loads(kept.encode("utf-8", "surrogatepass"))
    grid = pivot(cells, stack_ids, repro_ids)
    if cache is not None:
        with contextlib.suppress(Exception):  # only a cache
            cache.keep_layout(key, dumps(grid).decode("utf-8"))
    return grid


def order_repros(repros: Mapping[str, Repro], seen: Iterable[str]) -> list[str]:
    """Catalog repros first (catalog order), then any others seen in results, sorted."""
    ids = list(repros)
    seen = sorted(set(seen) - set(ids))
    return ids + seen


def repro_view(repro_id: str, column: int, repro: Repro | None,
               rows: list[dict[str, Any]], fix: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A repro's page: its rows in stack order, answers from the records (``fix``: where it is
    fixed, ``report.verdicts.page_fixes``), contradictions, and whether its grid column folds
    (``report.fold``)."""
    entries = [{"stack": row["stack"], "cell": row["cells"][column], "hidden": row["hidden"]}
               for row in rows if row["cells"][column] is not None]
    shown = [e for e in entries if not e["hidden"]]
    rules = describe_rules(repro.expect) if repro else []
    about = key_package(repro.expect) if repro else "torch"
    return {
        "id": repro_id, "page": page_name(repro_id),
        "title": repro.title if repro else repro_id,
        "kind": repro.kind if repro else "", "kind_words": KINDS.get(repro.kind, "") if repro else "",
        "description": repro.description if repro else "",
        "upstream": [{"url": u, "href": safe_url(u)} for u in (repro.upstream if repro else ())],
        "rules": rules, "about": about, "known": repro is not None,
        "entries": entries, "entry_count": len(entries), "off_count": len(entries) - len(shown),
        **column_answers(shown, rules, about, fix),
        "known_bug": fix["row"] if fix else None,
        "timeline": fix["timeline"] if fix else None,
        "fold": column_fold([e["cell"] for e in shown], repro),
    }
