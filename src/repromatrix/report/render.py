"""The report stage: results store -> a static site that opens from disk, sized by cells.

Flow: results -> **report.render**. ``render_site`` loads the result files and folders
(``report.load``: a folder through its index, the latest record per cell, and each
cell's history as a timeline, ``store.reader.timeline``), takes each cell's pieces
(``report.cell``: kept by the index while their inputs are unchanged, else made from
the record's summary, with its expectation checked), pivots the cells with pandas
(stacks as rows, grouped and in version order; repros as columns; the layout kept while
its inputs are unchanged), answers the per-repro questions from the records
(``report.answers``) and assembles the pieces into Jinja2 templates from ``report/``:

    out/index.html          the grid (status, marks, labels only), answers, filters, changes
    out/repro-<id>.html     one page per repro (answers, expectation beside the records)
    out/data/c<N>.js        cell details in chunks, loaded on demand (file:// works)
    out/changes.atom        status changes as an Atom feed
    out/results.json        every loaded record, plus what was skipped and the conflicts
    out/results.csv         the latest record per cell, flattened
    out/static/             CSS and JS (no CDN)

Every string from a record is hostile: templates autoescape, JSON is escaped
for <script>, the page's script only ever sets ``textContent``.
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jinja2

from repromatrix.model import Repro, Status
from repromatrix.store.index import StaleIndex
from repromatrix.store.reader import Conflict, Skipped, dumps, loads, newest

from . import cell as cell_mod
from .answers import SCOPES, repro_answers
from .cell import SUMMARY_VERSION, Head, record_summary, reproduce_command
from .chunks import DATA_DIR, assign_chunks, write_chunks
from .expect import describe_rules
from .feed import write_feed
from .load import Reduced, reduce_records, status_changes
from .markup import STATUS_INFO, add_markup, badge_html, fragment, page_name, safe_url, script_json
from .raw import RawSink, write_csv
from .stacks import StackBook, known_pairings, layout_key, matrix_rows, pivot
from .state import RenderState

__all__ = ["STATUS_INFO", "ReportSummary", "fragment", "page_name", "render_site",
           "report_assets_dir", "reproduce_command", "safe_url", "script_json"]

STATUS_ORDER = tuple(s.value for s in Status)
PROBLEMS = frozenset({"error", "crash", "timeout", "broken"})
FEED_ENTRIES = 200
KEEP_BATCH = 1000  # cells whose new pieces go to their index at once


@dataclass
class ReportSummary:
    """What render_site produced, for the CLI to print and for check mode."""

    out: Path
    index: Path
    records: int
    cells: int
    stacks: int
    repros: int
    skipped: list[Skipped] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    contradictions: list[str] = field(default_factory=list)
    changes: dict[str, list[str]] = field(default_factory=dict)
    chunks: int = 0
    rewritten: list[str] = field(default_factory=list)  # files (under out) this render wrote
    standin: dict[str, str] = field(default_factory=dict)  # cell -> its stand-in evidence level


def report_assets_dir() -> Path:
    """Where templates/ and static/ live (see paths.report_dir)."""
    from repromatrix.paths import report_dir

    return report_dir()


def render_site(paths: Sequence[Path], out: Path, repros: Mapping[str, Repro] | None = None,
                *, matrix: str = "matrix.yaml", title: str = "repromatrix compatibility",
                published: Collection[str] | None = None,
                freshness: Mapping[str, Any] | None = None,
                now: datetime | None = None) -> ReportSummary:
    """Load results from ``paths`` and write the static site into ``out``.

    ``published``: the stack ids of the matrix file; stacks outside it are one-off runs
    (None: every stack but bisect probes counts as published). ``freshness``: the page's
    freshness section (``report.fresh.freshness``; None: no section). ``now``: the
    generation time shown (default: the clock).

    A render into a folder an earlier render wrote rewrites only the files whose bytes
    changed (``report.state``); what it leaves is what a render into an empty folder writes."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    now = now or datetime.now(timezone.utc)
    state = RenderState(out)
    with _gc_paused():
        for attempt in (1, 2):  # a file rewritten under its index: read once more, refreshed
            sink = RawSink(out / "results.json", now.strftime("%Y-%m-%d %H:%M UTC"), state)
            try:
                with reduce_records(paths, sink, SUMMARY_VERSION) as reduced:
                    site = build_site(reduced, repros or {}, matrix=matrix, title=title,
                                      published=published, now=now)
                    site["freshness"] = freshness
                    write_pages(out, site, state)
                    chunks = write_chunks(out, site["cells"], site["details"], state)
                    write_csv(out, site, site["heads"], state)
                    reduced.keep_summaries()
                break
            except StaleIndex:
                if attempt == 2:
                    raise
        shown = {c["id"] for c in site["cells"].values() if c["in_scope"]}
        feed = {c: reduced.timeline(c) for c in reduced.feed_cells(shown.__contains__, FEED_ENTRIES)}
        write_feed(out / "changes.atom", title, now.isoformat(timespec="seconds"),
                   status_changes(feed, FEED_ENTRIES), state)
        copy_static(out, state)
        state.save()
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


def write_pages(out: Path, site: Mapping[str, Any], state: RenderState) -> None:
    """index.html and one page per repro, each with its (small) inline data."""
    env = template_env()
    common = {"pages": {r: page_name(r) for r in site["repro_ids"]},
              "letters": {k: v[0] for k, v in STATUS_INFO.items()},
              "stages": site["stage_names"], "data": DATA_DIR}
    index = env.get_template("index.html.j2").render(site=site, data=script_json(common))
    state.write(out / "index.html", index)
    page = env.get_template("repro.html.j2")
    data = script_json(common)
    for rv in site["repro_views"]:
        html = page.render(site=site, repro=rv, data=data)
        state.write(out / rv["page"], html)
    state.remove_others(out, "repro-*.html")


def template_env() -> jinja2.Environment:
    """Jinja2 environment over report/templates, autoescaping everything."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(report_assets_dir() / "templates")),
        autoescape=True, undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, bytecode_cache=_bytecode_cache(),
    )
    env.filters["script_json"] = script_json
    env.filters["safe_url"] = safe_url
    env.filters["fragment"] = fragment
    env.globals["badge_html"] = badge_html
    env.globals["STATUS_INFO"] = STATUS_INFO
    env.globals["STATUS_ORDER"] = STATUS_ORDER
    env.globals["SCOPES"] = SCOPES
    return env


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept in the user's cache (Jinja checks each against its source):
    compiling them is a tenth of a render. None where that folder cannot be made."""
    from repromatrix.paths import cache_dir

    folder = cache_dir() / "templates"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return jinja2.FileSystemBytecodeCache(str(folder))


def copy_static(out: Path, state: RenderState) -> None:
    dest = out / "static"
    dest.mkdir(exist_ok=True)
    for src in sorted((report_assets_dir() / "static").iterdir()):
        if src.is_file():
            state.write(dest / src.name, src.read_bytes())


# ----------------------------------------------------------------- the model


def build_site(reduced: Reduced, repros: Mapping[str, Repro], *, matrix: str, title: str,
               published: Collection[str] | None = None,
               now: datetime | None = None) -> dict[str, Any]:
    """Everything the templates need. Each cell's pieces (``report.cell``) come from its
    index when their key still matches, else are made (from the record's summary) and kept
    by ``Reduced.keep``; the rest is the site's assembly of them."""
    conflicted = {c.cell for c in reduced.conflicts}
    site_key = cell_mod.site_key(repros, matrix)
    kept = reduced.pieces()
    heads: dict[str, Head] = {}
    keys: dict[str, str] = {}
    contexts: dict[str, dict[str, Any]] = {}
    for cid, latest in reduced.latest.items():
        conflict = cid in conflicted
        kept_history = reduced.history_digest(cid)  # the index's digest of it: nothing parsed
        context = None if kept_history else history_context(reduced, cid, conflict)
        history = f"index {kept_history} {conflict}" if kept_history else \
            cell_mod.history_key(**context)  # type: ignore[arg-type]
        keys[cid] = key = cell_mod.pieces_key(site_key, latest.digest, latest.store, history)
        found = kept.get(cid)
        if found is not None and found[0] == key:
            heads[cid] = cell_mod.read_head(found[1], found[2])
        else:
            contexts[cid] = context or history_context(reduced, cid, conflict)
    made: dict[str, tuple[bytes, bytes]] = {}  # details of cells no index keeps
    # the pairing notes of the stacks kept pieces show: a new run of a known stack needs
    # no compatibility table
    shared: dict[Any, Any] = {}
    if contexts:
        shared[cell_mod.PAIRINGS] = known_pairings(h.stack for h in heads.values())

    def make(cells: list[str], every: bool = False) -> dict[str, tuple[bytes, bytes]]:
        """Make the pieces of ``cells`` and hand them to their indexes as they are made (a
        thousand at a time: memory stays flat); the details (detail, env) of those no index
        took, or, with ``every``, of all."""
        batch: dict[str, tuple[str, bytes, bytes, bytes, bytes]] = {}
        out: dict[str, tuple[bytes, bytes]] = {}
        for cid, summary in reduced.summaries(cells, record_summary):
            context = contexts.get(cid) or history_context(reduced, cid, cid in conflicted)
            pieces = cell_mod.make_pieces(summary, repros.get(summary["view"]["repro"]),
                                          matrix=matrix, store=reduced.store(cid), seen=shared,
                                          **context)
            heads[cid] = pieces.head
            if every or reduced.index_of(cid) is None:
                out[cid] = (pieces.detail, pieces.env)
            if reduced.index_of(cid) is not None:
                batch[cid] = (keys[cid], *cell_mod.stored_head(pieces.head), pieces.detail,
                              pieces.env)
            if len(batch) >= KEEP_BATCH:
                out.update(reduced.keep(batch))
                batch.clear()
        out.update(reduced.keep(batch))
        return out

    made.update(make(list(contexts)))
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
    rows = matrix_rows(stacks, grid_layout(reduced, cells, [s["id"] for s in stacks], repro_ids),
                       cells, shown_scope)
    columns = [[c["id"] for c in (row["cells"][i] for row in rows) if c] for i in range(len(repro_ids))]
    placed = {cid for col in columns for cid in col}
    assign_chunks(columns, [cid for cid in cells if cid not in placed], cells)
    views = [repro_view(r, i, repros.get(r), rows) for i, r in enumerate(repro_ids)]
    in_scope = {cid: c for cid, c in cells.items() if c["in_scope"]}

    def details(wanted: list[str]) -> dict[str, tuple[bytes, bytes]]:
        found = {c: (detail, env) for c, (key, detail, env) in
                 reduced.details(c for c in wanted if c not in made).items() if key == keys[c]}
        found.update((c, made[c]) for c in wanted if c in made)
        # pieces another render replaced since this one read them (another matrix, folder or
        # catalog): made again, as this render's
        again = [c for c in wanted if c not in found]
        return {**found, **make(again, every=True)} if again else found

    site = {
        "title": title,
        "generated_at": (now or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M UTC"),
        "cells": cells, "stacks": stacks, "repro_ids": repro_ids, "rows": rows,
        "repro_views": views, "changes": changes(in_scope), "counts": status_counts(in_scope),
        "skipped": reduced.skipped, "conflicts": reduced.conflicts,
        "records": reduced.records, "stage_names": stage_names.names,
        "shown_scope": shown_scope, "scope_counts": _scope_counts(stacks),
        "heads": heads, "details": details,
    }
    add_markup(site, heads)
    return site


def history_context(reduced: Reduced, cell: str, conflict: bool) -> dict[str, Any]:
    """What a cell's own history puts in its pieces (``report.cell.make_pieces``)."""
    history, dropped = newest(reduced.timeline(cell))
    attempts = reduced.attempts(cell)
    flaky = ", ".join(f"{n} {s}" for s, n in sorted(attempts.items())) if attempts else ""
    return {"previous": reduced.previous(cell), "conflict": conflict, "flaky": flaky,
            "history": history, "dropped": dropped}


def grid_layout(reduced: Reduced, cells: Mapping[str, Mapping[str, Any]], stack_ids: list[str],
                repro_ids: list[str]) -> list[list[str]]:
    """``stacks.pivot``, kept by the first index read under the digest of its inputs."""
    key = layout_key(cells, stack_ids, repro_ids)
    index = next((reduced.index_of(cid) for cid in cells), None)
    kept = index.layout(key) if index is not None else None
    if kept is not None:
        return loads(kept.encode("utf-8", "surrogatepass"))
    grid = pivot(cells, stack_ids, repro_ids)
    if index is not None:
        with contextlib.suppress(Exception):  # only a cache
            index.keep_layout(key, dumps(grid).decode("utf-8"))
    return grid


def _scope_counts(stacks: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(SCOPES, 0)
    for s in stacks:
        counts[s["scope"]] += 1
    return counts


class StageTable:
    """Stage names across the site, numbered in order of first appearance, for the grid's
    compact stage codes."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._index: dict[str, int] = {}
        self._codes: dict[str, str] = {}

    def code(self, stages: str) -> str:
        """``0P.3F``: stage number and status letter of each stage ('' without stages);
        ``stages``: their [name, status] pairs as JSON (``report.cell.Head.stage_key``)."""
        found = self._codes.get(stages)
        if found is not None:
            return found
        parts = []
        for name, status in json.loads(stages):
            number = self._index.setdefault(name, len(self.names))
            if number == len(self.names):
                self.names.append(name)
            parts.append(f"{number}{STATUS_INFO.get(status, ('?',))[0]}")
        self._codes[stages] = code = ".".join(parts)
        return code


# ----------------------------------------------------------------- repros and summaries


def order_repros(repros: Mapping[str, Repro], seen: Iterable[str]) -> list[str]:
    """Catalog repros first (catalog order), then any others seen in results, sorted."""
    ids = list(repros)
    seen = sorted(set(seen) - set(ids))
    return ids + seen


def status_counts(cells: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(STATUS_ORDER, 0)
    for c in cells.values():
        counts[c["status"]] += 1
    return counts


def changes(cells: Mapping[str, Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Cells whose status moved since their previous run, by kind of change."""
    out: dict[str, list[Mapping[str, Any]]] = {
        "newly failing": [], "newly passing": [], "new errors": []}
    for c in sorted(cells.values(), key=lambda c: c["id"]):
        prev, now = c["previous"], c["status"]
        if not prev or prev == now:
            continue
        if now == "fail":
            out["newly failing"].append(c)
        elif now == "pass":
            out["newly passing"].append(c)
        elif now in PROBLEMS:
            out["new errors"].append(c)
    return out


def repro_view(repro_id: str, column: int, repro: Repro | None,
               rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A repro's page: its rows in stack order, answers from the records, contradictions."""
    entries = [{"stack": row["stack"], "cell": row["cells"][column], "hidden": row["hidden"]}
               for row in rows if row["cells"][column] is not None]
    shown = [e for e in entries if not e["hidden"]]
    rules = describe_rules(repro.expect) if repro else []
    return {
        "id": repro_id, "page": page_name(repro_id),
        "title": repro.title if repro else repro_id,
        "description": repro.description if repro else "",
        "upstream": [{"url": u, "href": safe_url(u)} for u in (repro.upstream if repro else ())],
        "rules": rules, "known": repro is not None,
        "entries": entries, "answers": repro_answers(shown, rules),
        "contradictions": [e for e in shown if e["cell"]["contradicted"]],
        "counts": status_counts({e["cell"]["id"]: e["cell"] for e in shown}),
    }
