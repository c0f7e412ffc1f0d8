"""The data of the page's "Check your versions" box: out/data/environments.js and verdicts.js.

Flow: the compatibility table -> out/data/environments.js (every environment the box can
be asked about); out/results.json (written by then) + the catalog + the table ->
out/data/verdicts.js (each one's answer, as ``repromatrix check ... --from results.json
--format json`` prints it): both made by ``check.page`` with the command's own function,
loaded by ``static/check.js`` when the box is first used (scripts, so file:// works;
index.html carries none of it), which only looks answers up. The rows are what ``check
--from out/results.json`` reads (``_rows``). Each file is made only when its inputs changed
(``RenderState.kept``): a render that left results.json, the catalog and the table as they
were does not read results.json again, and one that did not change the table does not
import its reader (a patched render never needs it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from repromatrix.check.command import catalog_bugs
from repromatrix.errors import UsageError
from repromatrix.model import Repro

from .chunks import DATA_DIR
from .markup import script_json
from .written import RenderState

VERDICTS, ENVIRONMENTS = "verdicts.js", "environments.js"
WHERE = "results.json"  # the page's own records, as the answers' source names them
FORMER = "upgrades.js"  # what an earlier box read (the table's upgrade paths): removed


def write_verdicts(out: Path, paths: Sequence[Path], repros: Mapping[str, Repro],
                   state: RenderState) -> None:
    """Write data/environments.js and data/verdicts.js where their inputs changed since the
    last render into ``out`` of ``paths``."""
    from repromatrix.check.page import ANSWER_SOURCES, code_digest

    folder = out / DATA_DIR
    folder.mkdir(parents=True, exist_ok=True)
    bugs = catalog_bugs(repros)
    # (keys in their order: a rule's conditions are said in the catalog's order)
    source = hashlib.sha1(json.dumps([state.results, bugs, code_digest(ANSWER_SOURCES)],
                                     default=str).encode("utf-8", "surrogatepass")).hexdigest()
    if not state.kept(folder / VERDICTS, source):
        state.write_made(folder / VERDICTS, source, verdicts_script(bugs, *_rows(out, paths)))
    if not state.kept(folder / ENVIRONMENTS, code_digest()):
        state.write_made(folder / ENVIRONMENTS, code_digest(), environments_script())
    state.remove_others(folder, FORMER)


def verdicts_script(bugs: Mapping[str, Mapping[str, Any]], rows: Sequence[Mapping[str, Any]],
                    source: Mapping[str, Any]) -> str:
    """data/verdicts.js: every combination's answer (``check.page.verdicts_data``)."""
    from repromatrix.check.page import answers, verdicts_data
    from repromatrix.config.compat import load_table

    return f"repromatrixVerdicts({script_json(verdicts_data(answers(bugs, rows, source, load_table())))});\n"


def environments_script() -> str:
    """data/environments.js: the shipped table's combinations (``check.page.environments_data``)."""
    from repromatrix.check.page import environments_data
    from repromatrix.config.compat import load_table

    return f"repromatrixEnvironments({script_json(environments_data(load_table()))});\n"


def _rows(out: Path, paths: Sequence[Path]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The rows ``check --from results.json`` reads and their source: of one store folder
    through its index (``check.records.store_rows``, the rows ``check --results`` reads: the
    same records, settled by the same rule, without parsing results.json again), else of
    results.json."""
    from repromatrix.check.records import results_rows, rows_source, store_rows

    rows: list[dict[str, Any]] = []
    try:
        if len(paths) == 1 and Path(paths[0]).is_dir():
            rows = store_rows(Path(paths[0]))[0]
        else:
            rows = results_rows((out / WHERE).read_bytes(), WHERE)[0]
    except UsageError:  # no usable record: the command answers nothing from it either
        pass
    return rows, rows_source("results.json", WHERE, rows)
