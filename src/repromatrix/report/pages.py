"""The report's files from its site model: pages, their cells' markup, static assets.

Flow: report.render / report.patch -> **report.pages** -> out/. The templates in
``report/templates`` render every page around a mark where its cells' markup goes (the
grid's rows, a repro page's rows): the markup is put in as text, and where each cell's
piece of it sits is noted (``report.last_site.Spans``), so the next render can take unchanged
cells' markup from the file instead of making it again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from repromatrix.model import KINDS, Status
from repromatrix.store.lines import Skipped
from repromatrix.store.reader import Conflict

from .answers import SCOPES, repro_answers
from .chunks import DATA_DIR
from .last_site import Spans
from .markup import STATUS_INFO, badge_html, fragment, page_name, safe_url, script_json
from .written import RenderState

STATUS_ORDER = tuple(s.value for s in Status)
PROBLEMS = frozenset({"error", "crash", "timeout", "broken"})
FEED_ENTRIES = 200


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
    patched: bool = False  # the last render's site patched (``report.patch``), not assembled
    standin: dict[str, str] = field(default_factory=dict)  # cell -> its stand-in evidence level


def report_assets_dir() -> Path:
    """Where templates/ and static/ live (see paths.report_dir)."""
    from repromatrix.paths import report_dir

    return report_dir()



META_START, META_END = '<p class="meta">', "</p>"


def page_meta(site: Mapping[str, Any]) -> Markup:
    """The line under every page's title: when it was made, from how many records, the raw
    data's links (all of a repro page that changes with every render)."""
    n = int(site["records"])
    return Markup(f'{META_START}Generated {escape(site["generated_at"])} from {n} record'
                  f'{"" if n == 1 else "s"}.\n    Raw data: <a href="results.json.gz">results.json.gz'
                  '</a> · <a href="results.csv">results.csv</a>\n    · Feed of changes: '
                  f'<a href="changes.atom">changes.atom</a>{META_END}')


def _with_meta(head: str, meta: str) -> str:
    """``head`` (a page's text before its cells) with its ``page_meta`` line replaced."""
    start = head.index(META_START)
    return head[:start] + meta + head[head.index(META_END, start) + len(META_END):]


def write_pages(out: Path, site: Mapping[str, Any], state: RenderState,
                unchanged: Mapping[str, tuple[str, str]] | None = None) -> dict[str, Spans]:
    """index.html and one page per repro, each with its (small) inline data; where each
    page's cells' markup is (``report.last_site.Spans``: grid rows, repro-page rows).
    ``unchanged``: a patch's repro pages whose inputs but ``page_meta``'s did not change, as
    their text before and after their cells (only their meta line is made again)."""
    unchanged = unchanged or {}
    env = template_env()
    common = {"pages": {r: page_name(r) for r in site["repro_ids"]},
              "letters": {k: v[0] for k, v in STATUS_INFO.items()},
              "stages": site["stage_names"], "data": DATA_DIR}
    data = script_json(common)
    mark = Markup(f"\x00{os.urandom(8).hex()}\x00")  # where the cells' markup goes
    spans = {}
    text = env.get_template("index.html.j2").render(site={**site, "grid_html": mark}, data=data)
    spans["index.html"] = _write_around(out / "index.html", text, mark, site["grid_rows"],
                                        "\n", "\n", state)
    page = env.get_template("repro.html.j2")
    meta = str(page_meta(site))
    for rv in site["repro_views"]:
        if rv["page"] in unchanged:
            head, tail = unchanged[rv["page"]]
            text = f"{_with_meta(head, meta)}{mark}{tail}"
        else:
            text = page.render(site=site, repro={**rv, "rows_html": mark}, data=data)
        spans[rv["page"]] = _write_around(out / rv["page"], text, mark, rv["trs"], "\n", "",
                                          state)
    state.remove_others(out, "repro-*.html")
    return spans


def _write_around(path: Path, text: str, mark: str, pieces: Sequence[str], sep: str, end: str,
                  state: RenderState) -> Spans:
    """Write ``text`` with ``pieces`` (``Spans.join``) in place of ``mark``; where they are
    (a page without cells, such as an empty store's, has no place for them)."""
    head, found, tail = text.partition(mark)
    if not found and pieces:
        raise AssertionError(f"{path.name}: its template has no place for its cells")
    state.write(path, head + Spans.join(pieces, sep, end) + tail)
    return Spans.of(head, pieces, sep, end)


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
    env.globals["page_meta"] = page_meta
    env.globals["STATUS_INFO"] = STATUS_INFO
    env.globals["STATUS_ORDER"] = STATUS_ORDER
    env.globals["SCOPES"] = SCOPES
    env.globals["KINDS"] = KINDS
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


def scope_counts(stacks: Iterable[Mapping[str, Any]]) -> dict[str, int]:
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



def status_counts(cells: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(STATUS_ORDER, 0)
    for c in cells.values():
        counts[c["status"]] += 1
    return counts


def column_answers(shown: Sequence[Mapping[str, Any]], rules: Sequence[Mapping[str, str]],
                   about: str, fix: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a repro's column says from its shown entries (``{"stack", "cell"}``): its answers
    (``report.answers.repro_answers``), how many cells contradict their expectation, and
    how many have each status."""
    return {"answers": repro_answers(shown, rules, about, fix["text"] if fix else ""),
            "contradiction_count": sum(bool(e["cell"]["contradicted"]) for e in shown),
            "counts": status_counts({e["cell"]["id"]: e["cell"] for e in shown})}


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


