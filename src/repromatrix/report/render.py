"""The report stage: results store -> a static site that opens from disk, sized by cells.

Flow: results -> **report.render**. ``render_site`` loads the result files and folders
(``report.load``: a folder through its index, the latest record per cell, and each
cell's history as a timeline, ``store.reader.timeline``), pivots the cells with pandas
(stacks as rows, grouped and in version order; repros as columns), checks each cell
against its repro's documented expectation, answers the per-repro questions from the records
(``report.answers``) and renders Jinja2 templates from ``report/`` into:

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
import hashlib
import json
import os
import re
import shlex
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

import jinja2

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency
    _orjson = None

from repromatrix.model import TRACEBACK_LIMIT, Repro, Status
from repromatrix.store.index import StaleIndex
from repromatrix.store.reader import Conflict, Skipped, flaky_counts, newest, timeline
from repromatrix.store.record import Result, StageResult

from . import expect as expect_mod
from .answers import SCOPES, repro_answers
from .chunks import DATA_DIR, assign_chunks, detail_json, write_chunks
from .feed import write_feed
from .load import Reduced, reduce_records, status_changes
from .markup import STATUS_INFO, add_markup, badge_html, fragment, safe_url, script_json
from .raw import RawSink, write_csv
from .stacks import StackBook, matrix_rows, pivot
from .state import RenderState

__all__ = ["STATUS_INFO", "ReportSummary", "fragment", "page_name", "render_site",
           "report_assets_dir", "reproduce_command", "safe_url", "script_json"]

STATUS_ORDER = tuple(s.value for s in Status)
PROBLEMS = frozenset({"error", "crash", "timeout", "broken"})
MESSAGE_LIMIT = 2000
FEED_ENTRIES = 200
_SAFE_PAGE = re.compile(r"^[a-z0-9_]{1,80}$")
_JSON_ENCODER = json.JSONEncoder(default=str, ensure_ascii=False)
# record_summary's output changes only with these sources: summaries the store index
# keeps from an earlier render are used only when they were made by the same ones
SUMMARY_VERSION = hashlib.sha1(b"".join(
    (Path(__file__).resolve().parents[1] / name).read_bytes()
    for name in ("report/render.py", "report/markup.py", "model.py", "store/record.py"))).hexdigest()[:16]


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
                    reduced.keep_summaries()
                break
            except StaleIndex:
                if attempt == 2:
                    raise
        site["freshness"] = freshness
        write_pages(out, site, state)
        chunks = write_chunks(out, site["cells"], site["envs"], state)
        write_csv(out, site, state)
        shown = {c["id"] for c in site["cells"].values() if c["in_scope"]}
        write_feed(out / "changes.atom", title, now.isoformat(timespec="seconds"),
                   status_changes(site["timelines"], shown.__contains__, FEED_ENTRIES), state)
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
    repeated scans of them cost a quarter of the render. Restored afterwards."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
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
        trim_blocks=True, lstrip_blocks=True,
    )
    env.filters["script_json"] = script_json
    env.filters["safe_url"] = safe_url
    env.filters["fragment"] = fragment
    env.globals["badge_html"] = badge_html
    env.globals["STATUS_INFO"] = STATUS_INFO
    env.globals["STATUS_ORDER"] = STATUS_ORDER
    env.globals["SCOPES"] = SCOPES
    return env


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
    """Everything the templates need, computed without I/O."""
    conflicted = {c.cell for c in reduced.conflicts}
    envs, stage_names, book = EnvTable(), StageTable(), StackBook(published)
    cells, seen_repros, timelines = {}, set(), {}
    for cid, summary in reduced.summaries(record_summary):   # one record at a time
        facts = RecordFacts(*summary["facts"])
        book.add(facts)
        seen_repros.add(facts.repro)
        view = cell_view(summary, repros.get(facts.repro), reduced.previous(cid), cid in conflicted,
                         matrix, envs, stage_names, reduced.store(cid))
        timelines[cid] = timeline(reduced.seen.get(cid, ()))   # the feed's too
        view["history"], view["history_dropped"] = newest(timelines[cid])
        attempts = flaky_counts(s.status for s in reduced.seen.get(cid, ()) if s.run_id == facts.run_id)
        view["flaky"] = ", ".join(f"{n} {s}" for s, n in sorted(attempts.items())) if attempts else ""
        view["detail"] = detail_json(view)
        for heavy in ("traceback", "stages", "history"):   # now only in the detail JSON
            del view[heavy]
        cells[cid] = view
    stacks = book.ordered()
    scopes = {s["id"]: s["scope"] for s in stacks}
    shown_scope = "published" if "published" in scopes.values() and \
        set(scopes.values()) != {"published"} else "all"
    for view in cells.values():
        view["scope"] = scopes[view["stack"]]
        view["in_scope"] = shown_scope == "all" or view["scope"] == shown_scope
    repro_ids = order_repros(repros, seen_repros)
    grid = pivot(cells, [s["id"] for s in stacks], repro_ids)
    rows = matrix_rows(stacks, grid, cells, shown_scope)
    columns = [[c["id"] for c in (row["cells"][i] for row in rows) if c] for i in range(len(repro_ids))]
    placed = {cid for col in columns for cid in col}
    assign_chunks(columns, [cid for cid in cells if cid not in placed], cells)
    views = [repro_view(r, i, repros.get(r), rows) for i, r in enumerate(repro_ids)]
    in_scope = {cid: c for cid, c in cells.items() if c["in_scope"]}
    site = {
        "title": title,
        "generated_at": (now or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M UTC"),
        "cells": cells, "stacks": stacks, "repro_ids": repro_ids, "rows": rows,
        "repro_views": views, "changes": changes(in_scope), "counts": status_counts(in_scope),
        "skipped": reduced.skipped, "conflicts": reduced.conflicts,
        "records": reduced.records, "envs": envs.items, "stage_names": stage_names.names,
        "shown_scope": shown_scope, "scope_counts": _scope_counts(stacks),
        "timelines": timelines,
    }
    add_markup(site)
    return site


def _scope_counts(stacks: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(SCOPES, 0)
    for s in stacks:
        counts[s["scope"]] += 1
    return counts


class EnvTable:
    """Deduplicated environment probes (one per stack, typically)."""

    def __init__(self) -> None:
        self.items: list[list[list[str]]] = []
        self._index: dict[Any, int] = {}

    def add(self, env: Any) -> int:
        key = _env_key(env)
        found = self._index.get(key)
        if found is None:
            rows = env_rows(env)
            found = self._index.setdefault("\0".join(f"{k}\1{v}" for k, v in rows), len(self.items))
            if found == len(self.items):
                self.items.append(rows)
            self._index[key] = found
        return found


def _env_key(env: Any) -> Any:
    """A cheap exact key for an env probe (C-speed serialisation), so rows are built once."""
    if _orjson is not None and isinstance(env, Mapping):
        try:
            return _orjson.dumps(env, option=_orjson.OPT_SORT_KEYS, default=str)
        except (TypeError, _orjson.JSONEncodeError):
            pass
    return ("rows", "\0".join(f"{k}\1{v}" for k, v in env_rows(env)))


class StageTable:
    """Stage names across the site, numbered for the grid's compact stage codes."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._index: dict[str, int] = {}

    def code(self, stages: Iterable[Sequence[str]]) -> str:
        """``0P.3F``: stage number and status letter of each (name, status) stage ('' without
        stages)."""
        parts = []
        for name, status in stages:
            number = self._index.setdefault(name, len(self.names))
            if number == len(self.names):
                self.names.append(name)
            parts.append(f"{number}{STATUS_INFO.get(status, ('?',))[0]}")
        return ".".join(parts)


def env_rows(env: Any) -> list[list[str]]:
    """An env probe as [key, value] rows; nested values shown as compact JSON."""
    if not isinstance(env, Mapping):
        return [] if env is None else [["probe", str(env)]]
    rows = []
    for key, value in env.items():
        text = value if isinstance(value, str) else _JSON_ENCODER.encode(value)
        rows.append([str(key), text[:MESSAGE_LIMIT]])
    return rows


class RecordFacts(NamedTuple):
    """What the page needs of a record beyond its view: expectations, stacks, the command
    (the attribute names of ``Result``, so ``expect``, ``StackBook`` and
    ``reproduce_command`` take either)."""

    cell: str
    repro: str
    status: str
    run_id: str
    stack_id: str
    stack: Mapping[str, Any]
    env: Mapping[str, Any]
    finished_at: str
    backend: str
    reproduce: Sequence[str]


def record_summary(rec: Result) -> dict[str, Any]:
    """The part of a cell's view that only its record decides (JSON data: the store index
    keeps it per record, so a render parses only records it has not summarised before)."""
    view = {
        "id": rec.cell, "stack": rec.stack_id, "repro": rec.repro,
        "status": rec.status, "letter": STATUS_INFO[rec.status][0],
        "signature": _text(rec.signature), "workaround": _text(rec.workaround),
        "message": _text(rec.message)[:MESSAGE_LIMIT],
        "traceback": _text(rec.traceback)[-TRACEBACK_LIMIT:],
        "duration": _duration(rec.duration_s),
        "exit": _exit(rec), "stages": stage_rows(rec.stages),
        "image": image_text(rec.image),
        "run_id": _text(rec.run_id), "host": _text(rec.host),
        "backend": _text(rec.backend),
        "started_at": _text(rec.started_at), "finished_at": _text(rec.finished_at),
        "evidence": skip_evidence(rec.status, rec.stages),
        "standin": rec.standin_note,  # the verdict's evidence level when TensorRT was stood in
    }
    facts = [rec.cell, rec.repro, rec.status, rec.run_id, rec.stack_id, dict(rec.stack),
             rec.env, rec.finished_at, rec.backend, list(rec.reproduce)]
    return {"view": view, "stages": [[st.name, st.status] for st in rec.stages], "facts": facts}


def cell_view(summary: Mapping[str, Any], repro: Repro | None, previous: str, conflict: bool,
              matrix: str, envs: EnvTable, stage_names: StageTable,
              store: str = "") -> dict[str, Any]:
    """One cell as the templates and the page script see it: its record's summary
    (``record_summary``) and what the rest of the site decides (``store``: the folder its
    record is read from now)."""
    facts = RecordFacts(*summary["facts"])
    expectation = expect_mod.evaluate(repro.expect, facts) if repro else None  # type: ignore[arg-type]
    view = dict(summary["view"])
    view.update({
        "stage_codes": stage_names.code(summary["stages"]), "env": envs.add(facts.env),
        "expected": expectation.status if expectation else "",
        "expected_note": expectation.note if expectation else "",
        "expected_when": expectation.when_text if expectation else "",
        "contradicted": bool(expectation and expectation.contradicted),
        "conflict": conflict, "previous": previous,
        "command": reproduce_command(facts, matrix, store),  # type: ignore[arg-type]
    })
    return view


def skip_evidence(status: str, stages: Iterable[StageResult]) -> str:
    """For a skipped cell, the stand-in stages that still ran (e.g. CPU stages with fake
    CUDA tensors): "evidence: fake_export pass, emulated_decomposition fail"."""
    if status != Status.SKIP.value:
        return ""
    ran = [f"{s.name} {s.status}" for s in stages
           if s.role == "info" and s.status in ("pass", "fail")]
    return "evidence: " + ", ".join(ran) if ran else ""


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _duration(value: Any) -> str:
    try:
        return f"{float(value):.1f} s"
    except (TypeError, ValueError):
        return ""


def _exit(rec: Result) -> str:
    if rec.signal:
        return f"signal {rec.signal}"
    return "" if rec.exit_code is None else f"exit {rec.exit_code}"


def stage_rows(stages: Iterable[StageResult]) -> list[dict[str, str]]:
    """Per-stage rows: name, role, status, duration, message (hostile text, bounded)."""
    rows = []
    for st in stages:
        evidence = st.evidence
        rows.append({
            "name": st.name, "role": st.role, "status": st.status,
            "duration": _duration(st.duration_s),
            "message": st.message[:MESSAGE_LIMIT],
            "standins": ", ".join(st.standins),
            "evidence": "" if evidence in (None, "", {}, [])
            else _JSON_ENCODER.encode(evidence)[:MESSAGE_LIMIT],
        })
    return rows


def image_text(image: Any) -> str:
    """Image tag and id/digest as one line."""
    if not isinstance(image, Mapping):
        return _text(image)
    parts = [f"{k} {image[k]}" for k in ("tag", "id", "digest") if image.get(k)]
    return "; ".join(parts)


def reproduce_command(rec: Result, matrix: str, store: str = "") -> str:
    """A shell command that re-runs exactly this cell: the one its run recorded (with the
    matrix, catalog, mirror map, CA bundle, wheelhouses and backend it used; its paths
    moved along with the store, see ``relocated``), else one rebuilt from the record
    (records written before runs recorded theirs).

    A cell of the stack that `--backend local` folds pip/ngc stacks into (``local``)
    is selected by its repro and re-run on the same interpreter."""
    if rec.reproduce:
        return shlex.join(relocated(rec.reproduce, store))
    folded = rec.backend == "local" and rec.stack_id == "local"
    args = ["repromatrix", "run", "--matrix", matrix, "-k", rec.repro if folded else rec.cell,
            "--rerun"]
    if folded:
        args += ["--backend", "local", "--python", str(rec.stack.get("interpreter") or "python3")]
    elif rec.backend in ("venv",):
        args += ["--backend", rec.backend]
    return shlex.join(args)


def relocated(command: Sequence[str], store: str) -> list[str]:
    """A recorded command whose ``--results`` folder is not where its store is read from now
    (a store copied from another machine, shards merged, published records): every argument
    under the old folder follows the store, shown relative to the current folder when it is
    inside it (a published page's commands then work from a checkout). Unchanged otherwise."""
    old = next((b for a, b in zip(command, command[1:], strict=False) if a == "--results"), "")
    if not store or not old or os.path.normpath(old) == os.path.normpath(store):
        return list(command)
    try:
        here = os.getcwd()
        now = os.path.relpath(store, here) if os.path.commonpath([here, store]) == here else store
    except (OSError, ValueError):  # no current folder (deleted), or another drive
        now = store
    old = old.rstrip("/")
    return [now + arg[len(old):] if arg == old or arg.startswith(old + "/") else arg
            for arg in command]


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


def page_name(repro_id: str) -> str:
    """A safe file name for a repro page (hashed when the id is not a plain id)."""
    if _SAFE_PAGE.fullmatch(repro_id):
        return f"repro-{repro_id}.html"
    return f"repro-x{hashlib.sha256(repro_id.encode()).hexdigest()[:12]}.html"


def repro_view(repro_id: str, column: int, repro: Repro | None,
               rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A repro's page: its rows in stack order, answers from the records, contradictions."""
    entries = [{"stack": row["stack"], "cell": row["cells"][column], "hidden": row["hidden"]}
               for row in rows if row["cells"][column] is not None]
    shown = [e for e in entries if not e["hidden"]]
    rules = expect_mod.describe_rules(repro.expect) if repro else []
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
