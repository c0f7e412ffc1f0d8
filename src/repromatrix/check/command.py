"""The answer `repromatrix check` prints, as one function the command and the page share.

Flow: the catalog's bugs + verdict rows and their source + one environment + the
compatibility table -> **check.command** (the verdicts of ``check.decide``, the upgrades the
table allows, ``check.candidates``, and each bug's fix, ``check.fixes``: put together here and
nowhere else) -> the JSON of ``check --format json`` (``data/check.schema.json``).
``cli.check`` prints it; ``check.page`` works it out for every environment the page's box can
be asked about.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .candidates import candidates
from .decide import RowTable, answer, key_package
from .fixes import bug_fixes

if TYPE_CHECKING:
    from repromatrix.config.compat import CompatTable
    from repromatrix.model import Repro


def catalog_bugs(repros: Mapping[str, Repro]) -> dict[str, dict[str, Any]]:
    """The catalog as ``check.decide`` takes it: each bug as its META says."""
    return {r.id: {"title": r.title, "kind": r.kind, "upstream": list(r.upstream),
                   "description": r.description, "requires": list(r.requires),
                   "expect": [dict(e) for e in r.expect]}
            for r in repros.values()}


def check_answer(bugs: Mapping[str, Mapping[str, Any]],
                 rows: Sequence[Mapping[str, Any]] | RowTable, source: Mapping[str, Any],
                 env: Mapping[str, Any], table: CompatTable, ignore: Iterable[str] = (),
                 upgrades: Sequence[Mapping[str, Any]] | None = None,
                 fixes: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """What ``check`` answers for ``env`` from ``rows`` (read from ``source``): every bug,
    the smallest upgrade the table allows, the exit code, and where the rows came from.
    ``upgrades`` (``candidates``) and ``fixes`` (``bug_fixes(bugs, rows, table)``)
    when already worked out (the page's box asks for many environments)."""
    found = rows if isinstance(rows, RowTable) else RowTable(rows)
    if fixes is None:
        fixes = bug_fixes(bugs, found, table)
    if upgrades is None:  # an ONNX package moves where some bug is about it
        upgrades = candidates(table, env, {key_package(bug) for bug in bugs.values()})
    result = answer(bugs, found, env, upgrades, fixes, ignore)
    result["source"] = dict(source)
    return result
