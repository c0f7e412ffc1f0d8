"""The data of the page's "Check your versions" box: out/data/verdicts.js and upgrades.js.

Flow: out/results.json (written by then) + the catalog -> **report.verdicts** ->
out/data/verdicts.js; the compatibility table -> out/data/upgrades.js. Both are loaded by
``static/check.js`` when the box is first used (scripts, so file:// works; index.html
carries none of it). The rows are what ``repromatrix check --from out/results.json`` reads
(``_rows``), so the box and the command answer alike. Each file is
made only when its inputs changed (``RenderState.kept``): a render that left results.json
as it was does not read it again, and one that did not change the table does not import
its reader (a patched render never needs it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repromatrix.model import Repro

from .chunks import DATA_DIR
from .markup import script_json
from .written import RenderState

if TYPE_CHECKING:
    from repromatrix.store.index import StoreIndex

VERDICTS, UPGRADES = "verdicts.js", "upgrades.js"


def catalog_bugs(repros: Mapping[str, Repro]) -> dict[str, dict[str, Any]]:
    """The page's catalog as ``check.decide`` takes it (``cli.check.catalog``'s shape)."""
    return {r.id: {"title": r.title, "upstream": list(r.upstream), "description": r.description,
                   "requires": list(r.requires), "expect": [dict(e) for e in r.expect]}
            for r in repros.values()}


def verdict_rows(index: StoreIndex | None, paths: Sequence[Path], out: Path) -> list[dict[str, Any]]:
    """The rows ``check --from out/results.json`` reads (``check.records``): each cell's shown
    record that says yes or no, read through the index the report read (one store's, or the
    merged index of several), whose stacks' versions are kept in the per-user cache under the
    store's folder (or ``out`` for several)."""
    from repromatrix.check.records import index_rows

    if index is None:
        return []
    one = len(paths) == 1 and Path(paths[0]).is_dir()
    return index_rows(index, Path(paths[0]) if one else out)


def page_fixes(rows: Sequence[Mapping[str, Any]], repros: Mapping[str, Repro],
               only: Collection[str] | None = None) -> dict[str, str]:
    """Each bug's fix in ``check``'s words (``check.fixes``), by id: what the page says (of the
    bugs ``only`` names, when given; the table is read only when there is one)."""
    bugs = {k: v for k, v in catalog_bugs(repros).items() if only is None or k in only}
    if not bugs:
        return {}
    from repromatrix.check.fixes import bug_fixes, fix_words
    from repromatrix.config.compat import load_table

    found = bug_fixes(bugs, rows, load_table())
    return {bug_id: fix_words(fix) for bug_id, fix in found.items()}


def write_verdicts(out: Path, rows: Sequence[Mapping[str, Any]], repros: Mapping[str, Repro],
                   state: RenderState) -> None:
    """Write data/verdicts.js (of ``rows``, ``verdict_rows``) and data/upgrades.js where their
    inputs changed since the last render into ``out``."""
    from repromatrix.check.page import page_bugs, page_data, table_digest

    folder = out / DATA_DIR
    folder.mkdir(parents=True, exist_ok=True)
    bugs = catalog_bugs(repros)
    source = hashlib.sha1(json.dumps([state.results, page_bugs(bugs), table_digest()],
                                     sort_keys=True, default=str).encode("utf-8", "surrogatepass")
                          ).hexdigest()
    if not state.kept(folder / VERDICTS, source):
        state.write_made(folder / VERDICTS, source,
                         f"repromatrixVerdicts({script_json(page_data(bugs, rows))});\n")
    if not state.kept(folder / UPGRADES, table_digest()):
        state.write_made(folder / UPGRADES, table_digest(), upgrades_script())


def upgrades_script() -> str:
    """data/upgrades.js: the shipped table's upgrade paths (``check.page.upgrade_data``)."""
    from repromatrix.check.page import upgrade_data
    from repromatrix.config.compat import load_table

    return f"repromatrixUpgrades({script_json(upgrade_data(load_table()))});\n"
