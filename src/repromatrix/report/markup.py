"""Per-cell markup of the report, built in Python, not in the templates.

10,000 cells through Jinja's attribute lookups cost seconds. Every record
string goes through ``markupsafe.escape`` here, exactly as autoescaping would.
A grid cell carries only what the grid needs: its status (letter, class and
name in the title: never colour alone), its marks, which data chunk holds its
details (``data-k``), its stages' statuses for the stage selector (``data-sg``)
and whether its workaround works (``data-w``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from markupsafe import Markup, escape

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency
    _orjson = None

STATUS_INFO: dict[str, tuple[str, str]] = {
    "pass": ("P", "completed and checked: bug absent"),
    "fail": ("F", "failed with the known signature: bug present"),
    "error": ("E", "failed differently: a new or different problem"),
    "crash": ("C", "process died by a signal"),
    "timeout": ("T", "killed at its time limit"),
    "skip": ("S", "a precondition is missing"),
    "broken": ("B", "environment could not be built, started or probed"),
}
_PLAIN_FRAGMENT = re.compile(r"^[A-Za-z0-9._+-]*$")
_SAFE_PAGE = re.compile(r"^[a-z0-9_]{1,80}$")
_MARK_CONTRA = '<span class="mark" aria-hidden="true">!</span>'
_MARK_CONFLICT = '<span class="mark" aria-hidden="true">≠</span>'
_MARK_FLAKY = '<span class="mark" aria-hidden="true">~</span>'
_MARK_EVIDENCE = '<span class="mark" aria-hidden="true">+</span>'
_MARK_STANDIN = '<span class="mark standin" aria-hidden="true">◇</span>'
_CONTRA_FLAG = ' <strong class="contra-flag">! contradicts expectation</strong>'


def script_json(obj: Any) -> Markup:
    """JSON that is safe inside <script> (and in a .js file): no '<', '>', '&' or line
    separators survive raw."""
    text = None
    if _orjson is not None:
        try:
            text = _orjson.dumps(obj, default=str).decode("utf-8")
        except (TypeError, _orjson.JSONEncodeError):
            text = None  # e.g. lone surrogates in hostile text: the stdlib escapes them
    if text is None:
        text = json.dumps(obj, separators=(",", ":"), default=str)
    for raw, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                     ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        if raw in text:
            text = text.replace(raw, esc)
    return Markup(text)


def safe_url(url: Any) -> str | None:
    """The URL if it is http(s), else None (so a template renders it as text only)."""
    text = str(url or "").strip()
    return text if re.match(r"^https?://", text, re.IGNORECASE) else None


def fragment(cell: Any) -> str:
    """The repro-page anchor of a cell: ``c-<cell id>``, percent-encoded where needed."""
    text = str(cell)
    return "c-" + (text if _PLAIN_FRAGMENT.fullmatch(text) else quote(text, safe=""))


def badge_html(status: Any) -> Markup:
    """A status badge, letter and name (what the ``badge`` macro renders)."""
    known = status in STATUS_INFO
    letter, title = STATUS_INFO[status] if known else ("?", "unknown status")
    return Markup(f'<span class="badge st-{escape(status if known else "unknown")}" '
                  f'title="{escape(title)}"><b>{escape(letter)}</b> {escape(status)}</span>')


def add_markup(site: dict[str, Any], heads: Mapping[str, Any]) -> None:
    """Each matrix row's markup (``site["grid_rows"]``) and each repro page's <tr>s
    (``rv["trs"]``), escaped, from each cell's pieces (``heads``: cell ->
    ``report.cell.Head``) and what the site decides."""
    columns = [escape(rv["id"]) for rv in site["repro_views"]]
    site["grid_rows"] = [grid_row(row, [heads[c["id"]].td if c else None for c in row["cells"]],
                                  columns) for row in site["rows"]]
    ths: dict[str, str] = {}
    for rv in site["repro_views"]:
        rv["trs"] = [repro_tr(e, heads[e["cell"]["id"]].tr, ths) for e in rv["entries"]]


def grid_row(row: Mapping[str, Any], tds: Sequence[Sequence[str] | None],
             columns: Sequence[str]) -> str:
    """One stack's row of the grid from its cells' <td> pieces (None: no cell there) and the
    repro columns' escaped ids."""
    cells = "\n".join(matrix_td(cell, td) if cell is not None else empty_td(rid)  # type: ignore[arg-type]
                       for cell, td, rid in zip(row["cells"], tds, columns, strict=True))
    return matrix_tr(row, cells, len(columns) + 1)


def matrix_tr(row: Mapping[str, Any], cells: str, width: int) -> str:
    """One stack's row of the grid (after its group's heading row when it opens a group);
    ``cells``: its <td>s, already markup; ``width``: the grid's columns."""
    stack = row["stack"]
    group = escape(stack["group"])
    head = (f'    <tr class="group" data-group="{group}"><th scope="rowgroup" colspan="{width}">'
            f'{group}</th></tr>\n') if row["group_start"] else ""
    classes = ("all-broken" if row["all_broken"] else "") + (" scope-off" if row["hidden"] else "") \
        + (" folded" if row["fold"] else "")
    scope = "" if stack["scope"] == "published" else f" · {escape(stack['scope'])}"
    pairing = f'<small class="pairing">{escape(stack["pairing"])}</small>' if stack["pairing"] else ""
    broken = (f'\n        <small class="broken-note" title="{escape(row["broken_message"])}">'
              'environment broken</small>') if row["all_broken"] else ""
    return (f'{head}    <tr data-stack="{escape(stack["id"])}" data-scope="{escape(stack["scope"])}" '
            f'data-rank="{stack["rank"]}" data-group="{group}" class="{classes}">\n'
            f'      <th scope="row" class="stack" title="{escape(stack["full_label"])}">'
            f'<span class="sid">{escape(stack["label"] or stack["id"])}</span>\n'
            f'        <small class="ver">{escape(stack["id"])}{scope}</small>{pairing}{broken}\n'
            f'      </th>\n{cells}{fold_td(row["fold"], width - 1)}\n    </tr>')


def fold_td(fold: Mapping[str, Any] | None, width: int) -> str:
    """A folded row's one cell after its own (hidden), saying what would decide them
    (``report.fold.row_fold``); "" for a row that does not fold."""
    if not fold:
        return ""
    which = "its one repro" if fold["cells"] == 1 else f'any of its {fold["cells"]} repros'
    return (f'\n<td class="fold-note" colspan="{width}">cannot tell on {which} here '
            f'({escape(fold["ended"])}): {escape(fold["needs"])}</td>')


def empty_td(rid: str) -> str:
    """A grid cell without a result; ``rid`` is already escaped."""
    return (f'<td class="cell st-none" data-status="" data-repro="{rid}">'
            '<span title="no result">·</span></td>')


def td_pieces(cell: Mapping[str, Any]) -> list[str]:
    """A grid cell's <td> around its detail chunk and stage codes (``matrix_td``)."""
    cid, status = escape(cell["id"]), escape(cell["status"])
    rid, page = escape(cell["repro"]), escape(page_name(cell["repro"]))
    contra, conflict, flaky = cell["contradicted"], cell["conflict"], cell.get("flaky", "")
    flags = (" contra" if contra else "") + (" conflict" if conflict else "") + \
        (" flaky" if flaky else "")
    expected = f" (expected {escape(cell['expected'])})" if cell["expected"] else ""
    evidence = f"; {escape(cell['evidence'])}" if cell["evidence"] else ""
    standin = cell.get("standin", "")
    flags += " standin" if standin else ""
    notes = (f"; {escape(standin)}" if standin else "") + \
        ("; contradicts its expectation" if contra else "") + \
        ("; conflicting records" if conflict else "") + \
        (f"; flaky: {escape(flaky)}" if flaky else "")
    marks = ((_MARK_CONTRA if contra else "") + (_MARK_CONFLICT if conflict else "")
             + (_MARK_FLAKY if flaky else "")
             + (_MARK_EVIDENCE if evidence and not standin else "")
             + (_MARK_STANDIN if standin else ""))
    extra = f' data-w="{escape(cell["workaround"])}"' if cell["workaround"] else ""
    return [f'<td class="cell st-{status}{flags}" data-cell="{cid}" data-status="{status}" '
            f'data-v="{escape(cell["verdict"])}" data-repro="{rid}" data-k="',
            f'{extra}><a href="{page}#{escape(fragment(cell["id"]))}" '
            f'title="{cid}: {status}{expected}{evidence}{notes}"><span class="l">'
            f'{escape(cell["letter"])}</span>{marks}</a></td>']


def matrix_td(cell: Mapping[str, Any], pieces: Sequence[str]) -> str:
    """One matrix cell: its pieces (``td_pieces``) around its chunk and stage codes."""
    codes = cell["stage_codes"]
    return (f'{pieces[0]}{cell["chunk"]}"' + (f' data-sg="{codes}"' if codes else "")
            + pieces[1])


def tr_pieces(cell: Mapping[str, Any]) -> list[str]:
    """A repro page's row around what the site decides: whether the default scope hides it,
    its detail chunk, and its stack's scope and label (``repro_tr``)."""
    cid, status = escape(cell["id"]), escape(cell["status"])
    contra = cell["contradicted"]
    summary = escape(cell["message"][:160] or cell["status"])
    workaround = escape(cell["workaround"] or "—")
    return [f'    <tr id="{escape(fragment(cell["id"]))}" class="st-row-{status}'
            + (" contra" if contra else ""),
            f'" data-cell="{cid}" data-status="{status}" data-k="',
            f'      <td>{badge_html(cell["status"])}{_CONTRA_FLAG if contra else ""}'
            f'{_standin_flag(cell.get("standin", ""))}</td>\n'
            f'      <td>{escape(cell["expected"] or "—")}</td>\n'
            f'      <td>{workaround}</td>\n'
            f'      <td><details class="cell-detail" data-cell="{cid}"><summary>{summary}</summary>'
            '<div class="slot"></div></details></td>\n'
            '    </tr>']


def repro_tr(entry: Mapping[str, Any], pieces: Sequence[str], ths: dict[str, str]) -> str:
    """One row of a repro page's by-stack table (``ths``: the stacks' headers, made once)."""
    stack = entry["stack"]
    th = ths.get(stack["id"])
    if th is None:
        th = ths[stack["id"]] = (
            f'" data-scope="{escape(stack["scope"])}">\n'
            f'      <th scope="row"><span class="sid">{escape(stack["id"])}</span> '
            f'<small class="ver">{escape(stack["label"])}</small></th>\n')
    return (pieces[0] + (" scope-off" if entry.get("hidden") else "") + pieces[1]
            + str(entry["cell"]["chunk"]) + th + pieces[2])


def page_name(repro_id: str) -> str:
    """A safe file name for a repro page (hashed when the id is not a plain id)."""
    if _SAFE_PAGE.fullmatch(repro_id):
        return f"repro-{repro_id}.html"
    return f"repro-x{hashlib.sha256(repro_id.encode()).hexdigest()[:12]}.html"


def _standin_flag(note: str) -> str:
    """The stand-in evidence level beside a status badge on a repro page."""
    if not note:
        return ""
    return f' <span class="standin-flag" title="{escape(note)}">◇ {escape(note)}</span>'
