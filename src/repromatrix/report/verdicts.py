"""What the page says that ``check`` says: each bug's fix, and the "Check your versions" box's
data (out/data/environments.js and verdicts.js).

Flow: the index the report read -> the rows ``check --from out/results.json.gz`` reads
(``verdict_rows``: each cell's shown record that says yes or no) -> each bug's fix in
``check``'s words (``page_fixes``: the page's answers); the compatibility table ->
out/data/environments.js (every environment the box can be asked about); the rows + the
catalog + the table -> out/data/verdicts.js (each one's answer, as ``repromatrix check ...
--from results.json.gz --format json`` prints it): both made by ``check.page`` with the
command's own function, loaded by ``static/check.js`` when the box is first used (scripts,
so file:// works; index.html carries none of it), which only looks answers up. Each file
is made only when its inputs changed (``RenderState.kept``), and one that did not change
the table does not import its reader.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repromatrix.check.command import catalog_bugs
from repromatrix.model import Repro
from repromatrix.paths import cache_dir

from .cache import write_sourced
from .cell import PIECES_VERSION
from .chunks import DATA_DIR
from .data_files import RESULTS
from .markup import script_json
from .written import RenderState

if TYPE_CHECKING:
    from repromatrix.store.index import StoreIndex

    from .load import Reduced

VERDICTS, ENVIRONMENTS = "verdicts.js", "environments.js"
WHERE = RESULTS  # the page's own records, as the answers' source names them
FORMER = "upgrades.js"  # what an earlier box read (the table's upgrade paths): removed


def environments_folder() -> Path:
    """Where the packaged table's environments and upgrades are kept between renders
    (``check.page.environments``): the user's cache, as they depend on the package alone."""
    return cache_dir() / "box"


def verdict_rows(index: StoreIndex | None) -> list[dict[str, Any]]:
    """The rows ``check --from out/results.json.gz`` reads (``check.records``): each cell's shown
    record that says yes or no, read through the index the report read (one store's, or the
    merged index of several), as it keeps them (no record line read)."""
    from repromatrix.check.records import index_rows

    return [] if index is None else index_rows(index)


def page_fixes(rows: Sequence[Mapping[str, Any]], repros: Mapping[str, Repro],
               only: Collection[str] | None = None) -> dict[str, dict[str, Any]]:
    """Each bug as ``check`` answers it, by id: its fix in ``check``'s words (``text``,
    ``check.fixes.fix_words``) and its row of the page's table of known bugs (``row``,
    ``check.fixes.known_bug``) and its page's release timeline (``timeline``,
    ``check.fixes.timeline``); of the bugs ``only`` names, when given (the table is read only
    when there is one)."""
    bugs = {k: v for k, v in catalog_bugs(repros).items() if only is None or k in only}
    if not bugs:
        return {}
    from repromatrix.check.fixes import bug_fixes, fix_words, known_bug, timeline
    from repromatrix.config.compat import load_table

    found = bug_fixes(bugs, rows, load_table())
    return {bug_id: {"text": fix_words(fix),
                     "row": known_bug(bugs[bug_id], fix, [r for r in rows if r["repro"] == bug_id]),
                     "timeline": timeline(fix)}
            for bug_id, fix in found.items()}


def decided_by_level(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How many cells say yes or no about their bug (``rows``), by evidence level
    (``rules.verdict``: gpu, standin, cpu): what the page's opening sentence counts."""
    from repromatrix.rules.verdict import CPU, GPU, STANDIN, verdict

    levels = Counter(verdict(r["status"], r["evidence"], bool(r.get("gpu"))).level for r in rows)
    return {GPU: levels[GPU], STANDIN: levels[STANDIN], CPU: levels[CPU], "all": len(rows)}


def write_verdicts(out: Path, rows: Sequence[Mapping[str, Any]], repros: Mapping[str, Repro],
                   state: RenderState, book: Reduced | None = None) -> None:
    """Write data/environments.js and data/verdicts.js (of ``rows``, ``verdict_rows``) where
    their inputs changed since the last render into ``out``: copied from where the ``book``
    says a render (into any folder) last made them from the same inputs, else made."""
    from repromatrix.check.page import ANSWER_SOURCES, code_digest
    from repromatrix.check.records import rows_source

    folder = out / DATA_DIR
    folder.mkdir(parents=True, exist_ok=True)
    bugs = catalog_bugs(repros)
    # the answers change only with the rows that say yes or no (a new record that cannot
    # tell changes none), the catalog (keys in their order: a rule's conditions are said in
    # the catalog's order) and the code and table that decide them and write them
    answers = json.dumps([rows, bugs, code_digest(ANSWER_SOURCES), PIECES_VERSION], default=str)
    sources = {f"{DATA_DIR}/{VERDICTS}": hashlib.sha1(answers.encode("utf-8", "surrogatepass")
                                                      ).hexdigest(),
               f"{DATA_DIR}/{ENVIRONMENTS}": f"{code_digest()} {PIECES_VERSION}"}

    def make(names: list[str]) -> dict[str, bytes]:
        return {name: (verdicts_script(bugs, rows, rows_source("results.json", WHERE, rows))
                       if name.endswith(VERDICTS) else environments_script()).encode("utf-8")
                for name in names}

    write_sourced(out, sources, make, state, book)
    state.remove_others(folder, FORMER)


def verdicts_script(bugs: Mapping[str, Mapping[str, Any]], rows: Sequence[Mapping[str, Any]],
                    source: Mapping[str, Any]) -> str:
    """data/verdicts.js: every combination's answer (``check.page.verdicts_data``)."""
    from repromatrix.check.page import answers, verdicts_data
    from repromatrix.config.compat import load_table

    found = answers(bugs, rows, source, load_table(), kept_in=environments_folder())
    return f"repromatrixVerdicts({script_json(verdicts_data(found))});\n"


def environments_script() -> str:
    """data/environments.js: the shipped table's combinations (``check.page.environments_data``)."""
    from repromatrix.check.page import environments_data
    from repromatrix.config.compat import load_table

    found = environments_data(load_table(), environments_folder())
    return f"repromatrixEnvironments({script_json(found)});\n"
