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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from repromatrix.errors import UsageError
from repromatrix.model import Repro

from .chunks import DATA_DIR
from .markup import script_json
from .written import RenderState

VERDICTS, UPGRADES = "verdicts.js", "upgrades.js"


def catalog_bugs(repros: Mapping[str, Repro]) -> dict[str, dict[str, Any]]:
    """The page's catalog as ``check.decide`` takes it (``cli.check.catalog``'s shape)."""
    return {r.id: {"title": r.title, "upstream": list(r.upstream), "description": r.description,
                   "requires": list(r.requires), "expect": [dict(e) for e in r.expect]}
            for r in repros.values()}


def write_verdicts(out: Path, paths: Sequence[Path], repros: Mapping[str, Repro],
                   state: RenderState) -> None:
    """Write data/verdicts.js and data/upgrades.js where their inputs changed since the last
    render into ``out`` of ``paths``."""
    from repromatrix.check.page import page_bugs, page_data, table_digest

    folder = out / DATA_DIR
    folder.mkdir(parents=True, exist_ok=True)
    bugs = catalog_bugs(repros)
    source = hashlib.sha1(json.dumps([state.results, page_bugs(bugs), table_digest()],
                                     sort_keys=True, default=str).encode("utf-8", "surrogatepass")
                          ).hexdigest()
    if not state.kept(folder / VERDICTS, source):
        state.write_made(folder / VERDICTS, source,
                         f"repromatrixVerdicts({script_json(page_data(bugs, _rows(out, paths)))});\n")
    if not state.kept(folder / UPGRADES, table_digest()):
        state.write_made(folder / UPGRADES, table_digest(), upgrades_script())


def upgrades_script() -> str:
    """data/upgrades.js: the shipped table's upgrade paths (``check.page.upgrade_data``)."""
    from repromatrix.check.page import upgrade_data
    from repromatrix.config.compat import load_table

    return f"repromatrixUpgrades({script_json(upgrade_data(load_table()))});\n"


def _rows(out: Path, paths: Sequence[Path]) -> list[dict[str, Any]]:
    """The rows ``check --from out/results.json`` reads: of one store folder through its index
    (``check.records.store_rows``, the rows ``check --results`` reads: the same records,
    settled by the same rule, without parsing results.json again), else of results.json."""
    from repromatrix.check.records import results_rows, store_rows

    try:
        if len(paths) == 1 and Path(paths[0]).is_dir():
            return store_rows(Path(paths[0]))[0]
        path = out / "results.json"
        return results_rows(path.read_bytes(), str(path))[0]
    except UsageError:  # no usable record: the command answers nothing from it either
        return []
