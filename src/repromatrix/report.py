"""The report stage: results store -> a static site that opens from disk.

Flow: results -> **report**. ``render_site`` loads result files and folders,
keeps the latest record per cell, pivots them with pandas (stacks as rows in
version order, repros as columns), checks each cell against its repro's
documented expectation, and renders Jinja2 templates from ``report/`` into:

    out/index.html          the matrix, legend, filters, changes since the previous run
    out/repro-<id>.html     one page per repro (expectation, first pass / last fail)
    out/results.json        every loaded record, plus what was skipped and the conflicts
    out/results.csv         the latest record per cell, flattened
    out/static/             CSS and JS (no CDN; data is inlined, so file:// works)

Every string from a record is hostile: templates autoescape, inline JSON is
escaped for <script>, the page's script only ever sets ``textContent``.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import re
import shlex
import shutil
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd
from markupsafe import Markup, escape

from . import expect as expect_mod
from .model import TRACEBACK_LIMIT, Repro, Status
from .report_raw import write_raw
from .result import Result, StageResult
from .results import Conflict, Loaded, Skipped, latest_by_cell, load_records, previous_by_cell

STATUS_INFO: dict[str, tuple[str, str]] = {
    "pass": ("P", "completed and checked: bug absent"),
    "fail": ("F", "failed with the known signature: bug present"),
    "error": ("E", "failed differently: a new or different problem"),
    "crash": ("C", "process died by a signal"),
    "timeout": ("T", "killed at its time limit"),
    "skip": ("S", "a precondition is missing"),
    "broken": ("B", "environment could not be built, started or probed"),
}
STATUS_ORDER = tuple(s.value for s in Status)
VERSION_KEYS = ("torch", "torch_tensorrt", "ngc")
LABEL_KEYS = (("torch", "torch"), ("torchvision", "tv"), ("torch_tensorrt", "trt"),
              ("tensorrt", "TensorRT"), ("ngc", "ngc"), ("python", "py"), ("cuda", "cuda"))
PROBLEMS = frozenset({"error", "crash", "timeout", "broken"})
MESSAGE_LIMIT = 2000
SEARCH_LIMIT = 300
_SAFE_PAGE = re.compile(r"^[a-z0-9_]{1,80}$")
_PLAIN_FRAGMENT = re.compile(r"^[A-Za-z0-9._+-]*$")
_JSON = json.JSONEncoder(default=str, ensure_ascii=False)  # reused: json.dumps(**kw) rebuilds one


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


def report_assets_dir() -> Path:
    """Where templates/ and static/ live (see paths.report_dir)."""
    from .paths import report_dir

    return report_dir()


def render_site(paths: Sequence[Path], out: Path, repros: Mapping[str, Repro] | None = None,
                *, matrix: str = "matrix.yaml",
                title: str = "repromatrix compatibility") -> ReportSummary:
    """Load results from ``paths`` and write the static site into ``out``."""
    with _gc_paused():
        loaded = load_records(paths)
        site = build_site(loaded, repros or {}, matrix=matrix, title=title)
        out = Path(out)
        write_pages(out, site)
        write_raw(out, loaded, site)
        copy_static(out)
    return ReportSummary(
        out=out, index=out / "index.html", records=len(loaded.records),
        cells=len(site["cells"]), stacks=len(site["stacks"]), repros=len(site["repro_ids"]),
        skipped=list(loaded.skipped), conflicts=list(loaded.conflicts),
        contradictions=[c["id"] for c in site["cells"].values() if c["contradicted"]],
        changes={k: [c["id"] for c in v] for k, v in site["changes"].items()},
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


def write_pages(out: Path, site: Mapping[str, Any]) -> None:
    """index.html and one page per repro, each with its inline data."""
    out.mkdir(parents=True, exist_ok=True)
    env = template_env()
    data = PageData(site)
    index = env.get_template("index.html.j2").render(site=site, data=data.index())
    (out / "index.html").write_text(index, encoding="utf-8")
    page = env.get_template("repro.html.j2")
    for rv in site["repro_views"]:
        html = page.render(site=site, repro=rv, data=data.repro(rv["id"]))
        (out / rv["page"]).write_text(html, encoding="utf-8")


# ----------------------------------------------------------------- templates


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
    return env


def script_json(obj: Any) -> Markup:
    """JSON that is safe inside <script>: no '<', '>', '&' or line separators survive raw."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)
    for raw, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                     ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, esc)
    return Markup(text)


def safe_url(url: Any) -> str | None:
    """The URL if it is http(s), else None (so a template renders it as text only)."""
    text = str(url or "").strip()
    return text if re.match(r"^https?://", text, re.IGNORECASE) else None


def fragment(cell: Any) -> str:
    """The repro-page anchor of a cell: ``c-<cell id>``, percent-encoded where needed."""
    text = str(cell)
    if _PLAIN_FRAGMENT.fullmatch(text):
        return "c-" + text
    from urllib.parse import quote

    return "c-" + quote(text, safe="")


def copy_static(out: Path) -> None:
    dest = out / "static"
    dest.mkdir(exist_ok=True)
    for src in sorted((report_assets_dir() / "static").iterdir()):
        if src.is_file():
            shutil.copyfile(src, dest / src.name)


# ----------------------------------------------------------------- the model


def build_site(loaded: Loaded, repros: Mapping[str, Repro], *, matrix: str,
               title: str) -> dict[str, Any]:
    """Everything the templates need, computed without I/O."""
    latest = latest_by_cell(loaded.records)
    previous = previous_by_cell(loaded.records)
    conflicted = {c.cell for c in loaded.conflicts}
    envs = EnvTable()
    cells = {cid: cell_view(rec, repros.get(rec.repro), previous.get(cid),
                            cid in conflicted, matrix, envs)
             for cid, rec in latest.items()}
    stacks = order_stacks(latest.values())
    repro_ids = order_repros(repros, latest.values())
    grid = pivot(cells, [s["id"] for s in stacks], repro_ids)
    rows = matrix_rows(stacks, grid, cells)
    site = {
        "title": title,
        "generated_at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cells": cells, "stacks": stacks, "repro_ids": repro_ids, "rows": rows,
        "repro_views": [repro_view(r, i, repros.get(r), rows) for i, r in enumerate(repro_ids)],
        "changes": changes(cells), "counts": status_counts(cells),
        "skipped": loaded.skipped, "conflicts": loaded.conflicts,
        "records": len(loaded.records), "envs": envs.items,
        "script_cells": {cid: script_cell(c) for cid, c in cells.items()},
    }
    add_markup(site)
    return site


def _page_extras(site: Mapping[str, Any]) -> dict[str, Any]:
    """The part of every page's data that does not depend on the page's cells."""
    return {"envs": site["envs"], "pages": {r: page_name(r) for r in site["repro_ids"]},
            "letters": {k: v[0] for k, v in STATUS_INFO.items()}}


class PageData:
    """Each page's inline data as script-safe JSON, encoding every cell only once.

    Cells are encoded per repro column; the index joins those objects instead of
    encoding all cells again. Each page gets ``{"cells": {...}, "envs", "pages", "letters"}``.
    """

    def __init__(self, site: Mapping[str, Any]) -> None:
        cells = site["script_cells"]
        groups: dict[str, dict[str, Any]] = {}
        for view in site["repro_views"]:
            groups[view["id"]] = {e["cell"]["id"]: cells[e["cell"]["id"]] for e in view["entries"]}
        placed = {cid for group in groups.values() for cid in group}
        leftover = {cid: c for cid, c in cells.items() if cid not in placed}
        self._cells = {rid: str(script_json(group)) for rid, group in groups.items()}
        self._leftover = str(script_json(leftover))
        self._extras = str(script_json(_page_extras(site)))[1:]  # '"envs":...}'

    def repro(self, repro_id: str) -> Markup:
        """Data for one repro page: that repro's cells."""
        return self._page(self._cells[repro_id])

    def index(self) -> Markup:
        """Data for the matrix page: every cell."""
        parts = [text[1:-1] for text in (*self._cells.values(), self._leftover) if text != "{}"]
        return self._page("{" + ",".join(parts) + "}")

    def _page(self, cells_json: str) -> Markup:
        # pieces are already script-safe, so joining them needs no further escaping
        return Markup('{"cells":' + cells_json + "," + self._extras)


class EnvTable:
    """Deduplicated environment probes (one per stack, typically)."""

    def __init__(self) -> None:
        self.items: list[list[list[str]]] = []
        self._index: dict[str, int] = {}

    def add(self, env: Any) -> int:
        rows = env_rows(env)
        key = "\0".join(f"{k}\1{v}" for k, v in rows)
        if key not in self._index:
            self._index[key] = len(self.items)
            self.items.append(rows)
        return self._index[key]


def env_rows(env: Any) -> list[list[str]]:
    """An env probe as [key, value] rows; nested values shown as compact JSON."""
    if not isinstance(env, Mapping):
        return [] if env is None else [["probe", str(env)]]
    rows = []
    for key, value in env.items():
        text = value if isinstance(value, str) else _JSON.encode(value)
        rows.append([str(key), text[:MESSAGE_LIMIT]])
    return rows


def cell_view(rec: Result, repro: Repro | None, prev: Result | None,
              conflict: bool, matrix: str, envs: EnvTable) -> dict[str, Any]:
    """One cell as the templates and the page script see it."""
    status = rec.status
    expectation = expect_mod.evaluate(repro.expect, rec) if repro else None
    return {
        "id": rec.cell, "stack": rec.stack_id, "repro": rec.repro,
        "status": status, "letter": STATUS_INFO[status][0],
        "signature": _text(rec.signature), "workaround": _text(rec.workaround),
        "message": _text(rec.message)[:MESSAGE_LIMIT],
        "traceback": _text(rec.traceback)[-TRACEBACK_LIMIT:],
        "duration": _duration(rec.duration_s),
        "exit": _exit(rec), "stages": stage_rows(rec.stages),
        "env": envs.add(rec.env), "image": image_text(rec.image),
        "run_id": _text(rec.run_id), "host": _text(rec.host),
        "backend": _text(rec.backend),
        "started_at": _text(rec.started_at), "finished_at": _text(rec.finished_at),
        "expected": expectation.status if expectation else "",
        "expected_note": expectation.note if expectation else "",
        "expected_when": expectation.when_text if expectation else "",
        "contradicted": bool(expectation and expectation.contradicted),
        "conflict": conflict,
        "previous": prev.status if prev else "",
        "command": reproduce_command(rec, matrix),
        "evidence": skip_evidence(status, rec.stages),
    }


def skip_evidence(status: str, stages: Iterable[StageResult]) -> str:
    """For a skipped cell, the stand-in stages that still ran (e.g. CPU stages with fake
    CUDA tensors): "evidence: fake_export pass, emulated_decomposition fail"."""
    if status != Status.SKIP.value:
        return ""
    ran = [f"{s.name} {s.status}" for s in stages
           if s.role == "info" and s.status in ("pass", "fail")]
    return "evidence: " + ", ".join(ran) if ran else ""


def script_cell(c: Mapping[str, Any]) -> dict[str, Any]:
    """The subset of a cell view the drawer needs, plus a lowercase search text."""
    keep = ("id", "stack", "repro", "status", "signature", "workaround", "message",
            "traceback", "duration", "exit", "stages", "env", "image", "run_id", "host",
            "backend", "started_at", "finished_at", "expected", "expected_note",
            "contradicted", "conflict", "previous", "command")
    out = {k: c[k] for k in keep if c[k] not in ("", None, [], False)}
    out["q"] = " ".join((c["id"], c["status"], c["signature"],
                         c["message"][:SEARCH_LIMIT])).lower()
    return out


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
        status = st.status
        evidence = st.evidence
        rows.append({
            "name": st.name, "role": st.role, "status": status,
            "letter": STATUS_INFO.get(status, ("?",))[0],
            "duration": _duration(st.duration_s),
            "message": st.message[:MESSAGE_LIMIT],
            "evidence": "" if evidence in (None, "", {}, [])
            else _JSON.encode(evidence)[:MESSAGE_LIMIT],
        })
    return rows


def image_text(image: Any) -> str:
    """Image tag and id/digest as one line."""
    if not isinstance(image, Mapping):
        return _text(image)
    parts = [f"{k} {image[k]}" for k in ("tag", "id", "digest") if image.get(k)]
    return "; ".join(parts)


def reproduce_command(rec: Result, matrix: str) -> str:
    """A shell command that re-runs exactly this cell: the one its run recorded (with the
    matrix, catalog, mirror map, CA bundle, wheelhouses and backend it used), else one
    rebuilt from the record (records written before runs recorded theirs).

    A cell of the stack that `--backend local` folds pip/ngc stacks into (``local``)
    is selected by its repro and re-run on the same interpreter."""
    if rec.reproduce:
        return shlex.join(rec.reproduce)
    folded = rec.backend == "local" and rec.stack_id == "local"
    args = ["repromatrix", "run", "--matrix", matrix, "-k", rec.repro if folded else rec.cell,
            "--rerun"]
    if folded:
        args += ["--backend", "local", "--python", str(rec.stack.get("interpreter") or "python3")]
    elif rec.backend in ("venv",):
        args += ["--backend", rec.backend]
    return shlex.join(args)


# ----------------------------------------------------------------- ordering and pivot


def stack_versions(rec: Result) -> dict[str, str]:
    """Display versions of a record's stack: spec pins, else the probe."""
    out = {}
    for key, _ in LABEL_KEYS:
        value = expect_mod.probe_version(None, rec.stack, key) or \
            expect_mod.probe_version(rec.env, None, key)
        if value:
            out[key] = value
    return out


def order_stacks(records: Iterable[Result]) -> list[dict[str, Any]]:
    """One entry per stack id, ordered by torch, torch_tensorrt, ngc versions, then id."""
    stacks: dict[str, dict[str, Any]] = {}
    for rec in records:
        sid = rec.stack_id
        found = stacks.get(sid)
        if found is None or rec.finished_at > found["_finished"]:
            stacks[sid] = {"id": sid, "kind": _text(rec.stack.get("kind")),
                           "versions": stack_versions(rec), "_finished": rec.finished_at}
    for st in stacks.values():
        st["label"] = " · ".join(f"{short} {st['versions'][k]}" for k, short in LABEL_KEYS
                                 if k in st["versions"])
    return sorted(stacks.values(), key=stack_sort_key)


def stack_sort_key(stack: Mapping[str, Any]) -> tuple:
    """Versions compared as versions (2.10 after 2.9); unknown versions first."""
    key: list[Any] = []
    for name in VERSION_KEYS:
        version = expect_mod.normalize_version(stack["versions"].get(name))
        key.append((0, expect_mod.Version("0")) if version is None else (1, version))
    key.append(stack["id"])
    return tuple(key)


def order_repros(repros: Mapping[str, Repro], records: Any) -> list[str]:
    """Catalog repros first (catalog order), then any others seen in results, sorted."""
    ids = list(repros)
    seen = sorted({r.repro for r in records} - set(ids))
    return ids + seen


def pivot(cells: Mapping[str, Mapping[str, Any]], stack_ids: list[str],
          repro_ids: list[str]) -> pd.DataFrame:
    """stack x repro frame of cell ids ('' where a cell has no result)."""
    frame = pd.DataFrame([(c["stack"], c["repro"], c["id"], c["finished_at"])
                          for c in cells.values()],
                         columns=["stack", "repro", "cell", "finished"])
    if frame.empty:
        return pd.DataFrame("", index=pd.Index(stack_ids), columns=pd.Index(repro_ids))
    frame = frame.sort_values("finished").drop_duplicates(["stack", "repro"], keep="last")
    grid = frame.pivot(index="stack", columns="repro", values="cell")
    return grid.reindex(index=stack_ids, columns=repro_ids).fillna("")


def matrix_rows(stacks: list[dict[str, Any]], grid: pd.DataFrame,
                cells: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows for the matrix template: the stack and its cells (None where missing)."""
    rows = []
    for stack, values in zip(stacks, grid.itertuples(index=False, name=None), strict=True):
        row_cells = [cells[v] if v else None for v in values]
        present = [c["status"] for c in row_cells if c]
        rows.append({"stack": stack, "cells": row_cells,
                     "all_broken": bool(present) and set(present) == {"broken"},
                     "broken_message": next((c["message"] for c in row_cells if c), "")})
    return rows


# ----------------------------------------------------------------- summaries


def status_counts(cells: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    series = pd.Series([c["status"] for c in cells.values()], dtype="object")
    counts = series.value_counts().to_dict() if len(series) else {}
    return {s: int(counts.get(s, 0)) for s in STATUS_ORDER}


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
    """A repro's page: its rows in stack order, first pass and last fail, contradictions."""
    entries = [{"stack": row["stack"], "cell": row["cells"][column]}
               for row in rows if row["cells"][column] is not None]
    first_pass = next((e for e in entries if e["cell"]["status"] == "pass"), None)
    last_fail = next((e for e in reversed(entries) if e["cell"]["status"] == "fail"), None)
    return {
        "id": repro_id, "page": page_name(repro_id),
        "title": repro.title if repro else repro_id,
        "description": repro.description if repro else "",
        "upstream": [{"url": u, "href": safe_url(u)} for u in (repro.upstream if repro else ())],
        "rules": expect_mod.describe_rules(repro.expect) if repro else [],
        "known": repro is not None,
        "entries": entries, "first_pass": first_pass, "last_fail": last_fail,
        "contradictions": [e for e in entries if e["cell"]["contradicted"]],
        "counts": status_counts({e["cell"]["id"]: e["cell"] for e in entries}),
    }


# ----------------------------------------------------------------- per-cell markup
# Built in Python, not in the templates: 10,000 cells through Jinja's attribute
# lookups cost seconds. Every record string goes through markupsafe.escape here,
# exactly as autoescaping would; the result is byte-identical to the old loops.

_MARK_CONTRA = '<span class="mark">!</span>'
_MARK_CONFLICT = '<span class="mark">≠</span>'
_MARK_EVIDENCE = '<span class="mark">+</span>'
_CONTRA_FLAG = ' <strong class="contra-flag">! contradicts expectation</strong>'


def badge_html(status: Any) -> Markup:
    """A status badge, letter and name (what the ``badge`` macro renders)."""
    known = status in STATUS_INFO
    letter, title = STATUS_INFO[status] if known else ("?", "unknown status")
    return Markup(f'<span class="badge st-{escape(status if known else "unknown")}" '
                  f'title="{escape(title)}"><b>{escape(letter)}</b> {escape(status)}</span>')


def add_markup(site: dict[str, Any]) -> None:
    """Attach each matrix row's <td>s and each repro page's <tr>s as escaped Markup."""
    columns = [(escape(rv["id"]), escape(rv["page"])) for rv in site["repro_views"]]
    for row in site["rows"]:
        row["cells_html"] = Markup("\n".join(
            matrix_td(cell, rid, page) for cell, (rid, page) in zip(row["cells"], columns, strict=True)))
    for rv in site["repro_views"]:
        rv["rows_html"] = Markup("\n".join(repro_tr(e) for e in rv["entries"]))


def matrix_td(cell: Mapping[str, Any] | None, rid: str, page: str) -> str:
    """One matrix cell; ``rid`` and ``page`` are already escaped."""
    if cell is None:
        return (f'      <td class="cell st-none" data-status="" data-repro="{rid}">'
                '<span title="no result">·</span></td>')
    cid, status = escape(cell["id"]), escape(cell["status"])
    contra, conflict = cell["contradicted"], cell["conflict"]
    flags = (" contra" if contra else "") + (" conflict" if conflict else "")
    expected = f" (expected {escape(cell['expected'])})" if cell["expected"] else ""
    evidence = f"; {escape(cell['evidence'])}" if cell["evidence"] else ""
    marks = ((_MARK_CONTRA if contra else "") + (_MARK_CONFLICT if conflict else "")
             + (_MARK_EVIDENCE if evidence else ""))
    return (f'      <td class="cell st-{status}{flags}" data-cell="{cid}" data-status="{status}" '
            f'data-repro="{rid}"><a href="{page}#{escape(fragment(cell["id"]))}" '
            f'title="{cid}: {status}{expected}{evidence}">{escape(cell["letter"])}{marks}</a></td>')


def repro_tr(entry: Mapping[str, Any]) -> str:
    """One row of a repro page's by-stack table."""
    cell, stack = entry["cell"], entry["stack"]
    cid, status = escape(cell["id"]), escape(cell["status"])
    contra = cell["contradicted"]
    summary = escape(cell["message"][:160] or cell["status"])
    return (f'    <tr id="{escape(fragment(cell["id"]))}" class="st-row-{status}'
            f'{" contra" if contra else ""}" data-cell="{cid}" data-status="{status}">\n'
            f'      <th scope="row"><span class="sid">{escape(stack["id"])}</span> '
            f'<small class="ver">{escape(stack["label"])}</small></th>\n'
            f'      <td>{badge_html(cell["status"])}{_CONTRA_FLAG if contra else ""}</td>\n'
            f'      <td>{escape(cell["expected"] or "—")}</td>\n'
            f'      <td><details class="cell-detail" data-cell="{cid}"><summary>{summary}</summary>'
            '<div class="slot"></div></details></td>\n'
            '    </tr>')


# ----------------------------------------------------------------- raw data
