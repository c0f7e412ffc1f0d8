"""One environment's answer, as `repromatrix check` gives it: the one composition of the parts.

Flow: the catalog + verdict rows + the environment + the compatibility table ->
**check.answers** -> the command's text and JSON, the page's box. The verdicts
(``check.decide``), the upgrades the table allows (``check.candidates``) and each bug's fix
(``check.fixes``) are put together here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .candidates import candidates
from .decide import RowTable, answer
from .fixes import bug_fixes

if TYPE_CHECKING:
    from repromatrix.config.compat import CompatTable


def answer_for(bugs: Mapping[str, Mapping[str, Any]], rows: Iterable[Mapping[str, Any]] | RowTable,
               env: Mapping[str, Any], table: CompatTable, ignore: Iterable[str] = (),
               fixes: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """``env``'s answer (``check --format json`` without its ``source``); ``fixes``, when
    given, are ``check.fixes.bug_fixes`` of the same bugs, rows and table (worked out once
    for many environments)."""
    found = rows if isinstance(rows, RowTable) else RowTable(rows)
    if fixes is None:
        fixes = bug_fixes(bugs, found, table)
    return answer(bugs, found, env, candidates(table, env), fixes, ignore)
