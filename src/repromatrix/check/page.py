"""What the page's "Check your versions" box answers: ``check``'s own answers, worked out here.

Flow: the compatibility table -> **check.page** -> every environment the box can be asked
about (``combinations``: each NGC release, and each pip combination the table allows) ->
the report's ``data/environments.js``; + a page's rows and the catalog -> each one's answer
by the command's own function (``check.command.check_answer``) -> ``data/verdicts.js``.
``report/static/check.js`` only looks answers up: no rule of ``check`` is written twice.

Compact: an answer is rebuilt (``rebuilt``) from the parts every answer shares
(``shared``), its environment (by position in ``environments.js``), its bugs (positions in
``bugs``, each distinct per-bug answer once: the keys every answer about that bug shares in
``parts``, its record in ``records``, the rest), its upgrade (a position in ``upgrades``)
and the rest of its keys. A combination is ``[torch, torchvision, torch_tensorrt, ngc]``, "" where not given:
lists, so no text becomes an object key.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .command import check_answer
from .decide import LABELS, RowTable
from .fixes import bug_fixes

if TYPE_CHECKING:
    from repromatrix.config.compat import CompatTable

PAGE_FORMAT = 2
FIELDS = ("torch", "torchvision", "torch_tensorrt", "ngc")
PIP_NAMES = {"torch": "torch", "torchvision": "torchvision", "torch_tensorrt": "torch-tensorrt"}
# what each data file is made of besides its data inputs: their digest says whether it changed
# without importing the table's reader (``report.cell`` keys its pieces the same way)
TABLE_SOURCES = ("data/compat.yaml", "config/compat.py", "config/catalog.py",
                 "check/environment.py", "check/known.py", "check/page.py")
ANSWER_SOURCES = (*TABLE_SOURCES, "check/command.py", "check/decide.py", "check/candidates.py",
                  "check/fixes.py", "check/records.py", "rules/verdict.py", "rules/versions.py",
                  "store/record.py")
# the keys of an answer that are interned (the rest are kept per answer, or shared)
INTERNED = ("environment", "bugs", "upgrade")

Combination = tuple[str, str, str, str]
# a combination, the environment check reads from it, and the upgrades the table allows it
Environment = tuple[Combination, dict[str, Any], list[dict[str, Any]]]


def code_digest(sources: Sequence[str] = TABLE_SOURCES) -> str:
    """A digest of the package's files ``sources``: what is made of them changes only with it."""
    package = Path(__file__).resolve().parents[1]
    return hashlib.sha1(b"".join((package / name).read_bytes() for name in sources)).hexdigest()


def combinations(table: CompatTable) -> list[Combination]:
    """Every environment the box can be asked about: each pip combination the table allows
    (torch; no torchvision or one the table pairs with it; no torch-tensorrt or a release
    whose torch specifier allows it, broken ones too), then each NGC release."""
    out: list[Combination] = []
    for torch in table.torch_versions():
        visions = ["", *dict.fromkeys(table.torch[torch].torchvision)]
        trts = ["", *(r for r in table.trt_versions() if table.torch_tensorrt[r].torch.contains(torch))]
        out += [(torch, tv, trt, "") for tv in visions for trt in trts]
    return out + [("", "", "", tag) for tag in table.ngc_tags()]


def arguments(combination: Sequence[str]) -> list[str]:
    """The environment arguments of ``repromatrix check`` for ``combination``."""
    fields = dict(zip(FIELDS, combination, strict=True))
    if fields["ngc"]:
        return ["--ngc", fields["ngc"]]
    return [f"{PIP_NAMES[k]}=={fields[k]}" for k in FIELDS[:3] if fields[k]]


def environment(combination: Sequence[str]) -> dict[str, Any]:
    """The environment ``check`` reads from ``arguments(combination)``."""
    from .environment import from_ngc, from_pins

    args = arguments(combination)
    return from_ngc(args[1]) if args[0] == "--ngc" else from_pins(args)


# per table (by id, the table kept alive with it): each combination, its environment and
# ``check.candidates``' upgrades, which depend on the table alone: worked out once a process
_MADE: dict[int, tuple[CompatTable, list[Environment]]] = {}
# what the kept environments are made of: the table's sources, and the candidates' code
KEPT_SOURCES = (*ANSWER_SOURCES, "model.py")


def environments(table: CompatTable, kept_in: Path | None = None) -> list[Environment]:
    """Each of ``combinations(table)`` with its environment and the upgrades the table allows
    it (``check.candidates.candidates``), made once per table in a process. ``kept_in``: a
    folder where they are kept between processes, for the packaged table only (the file is
    named by the digest of the code and data they are made of, ``KEPT_SOURCES``)."""
    if id(table) not in _MADE or _MADE[id(table)][0] is not table:
        path = kept_in / f"environments-{code_digest(KEPT_SOURCES)}.json" if kept_in else None
        made = _read_kept(path) if path else None
        if made is None:
            from .candidates import candidates

            made = [(c, env, candidates(table, env))
                    for c, env in ((c, environment(c)) for c in combinations(table))]
            if path:
                _keep(path, made)
        _MADE[id(table)] = (table, made)
    return _MADE[id(table)][1]


def _read_kept(path: Path) -> list[Environment] | None:
    """The environments kept in ``path`` (``environments``); None when absent or unreadable."""
    try:
        found = json.loads(path.read_bytes())
        return [(tuple(c), env, upgrades) for c, env, upgrades in found]  # type: ignore[misc]
    except (OSError, ValueError, TypeError):
        return None


def _keep(path: Path, made: list[Environment]) -> None:
    """Keep ``made`` in ``path``, whole or not at all (a folder that cannot hold it: not kept)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_text(json.dumps(made), encoding="utf-8")
        os.replace(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)


def environments_data(table: CompatTable, kept_in: Path | None = None) -> dict[str, Any]:
    """``data/environments.js``: each combination with its environment, in order."""
    return {"format": PAGE_FORMAT,
            "environments": [[list(c), env] for c, env, _ in environments(table, kept_in)]}


def answers(bugs: Mapping[str, Mapping[str, Any]], rows: Sequence[Mapping[str, Any]],
            source: Mapping[str, Any], table: CompatTable, kept_in: Path | None = None
            ) -> list[dict[str, Any]]:
    """``check``'s answer for each of ``combinations(table)``, in order (the rows' table and
    each bug's fix worked out once; ``kept_in``: ``environments``')."""
    found = RowTable(rows)
    fixes = bug_fixes(bugs, found, table)
    return [check_answer(bugs, found, source, env, table, upgrades=upgrades, fixes=fixes)
            for _, env, upgrades in environments(table, kept_in)]


class Interned:
    """Distinct JSON values, each kept once and named by its position."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self.at: dict[str, int] = {}

    def __call__(self, value: Any) -> int:
        key = json.dumps(value, sort_keys=True, default=str)
        if key not in self.at:
            self.at[key] = len(self.values)
            self.values.append(value)
        return self.at[key]


def verdicts_data(found: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``data/verdicts.js`` of ``answers``: ``shared`` (the keys equal in every answer); the
    distinct per-bug answers (``bugs``: each ``[its bug's part, record, the other keys]``,
    the part being the keys equal in every answer about that bug, in ``parts``, the record
    in ``records``) and upgrades; per answer ``[bug positions, upgrade position, its other
    keys]`` (its environment is the one at its own position in ``environments.js``)."""
    same = [k for k in (found[0] if found else {}) if k not in INTERNED
            and all(k in a and a[k] == found[0][k] for a in found)]
    bugs, upgrades = Interned(), Interned()
    compact = [[[bugs(b) for b in a["bugs"]], upgrades(a["upgrade"]),
                {k: v for k, v in a.items() if k not in INTERNED and k not in same}] for a in found]
    return {"format": PAGE_FORMAT, "labels": LABELS,
            "shared": {k: found[0][k] for k in same} if found else {},
            **_bugs(bugs.values), "upgrades": upgrades.values, "answers": compact}


def _bugs(distinct: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """``parts``, ``records`` and ``bugs`` of the distinct per-bug answers."""
    by_id: dict[Any, list[Mapping[str, Any]]] = {}
    for b in distinct:
        by_id.setdefault(b["id"], []).append(b)
    keys = {i: [k for k in group[0] if k != "record" and all(k in b and b[k] == group[0][k]
                                                            for b in group)]
            for i, group in by_id.items()}
    parts, records = Interned(), Interned()
    out = [[parts({k: b[k] for k in keys[b["id"]]}), records(b.get("record")),
            {k: v for k, v in b.items() if k != "record" and k not in keys[b["id"]]}]
           for b in distinct]
    return {"parts": parts.values, "records": records.values, "bugs": out}


def rebuilt(environments: Mapping[str, Any], verdicts: Mapping[str, Any], at: int
            ) -> dict[str, Any]:
    """The answer at position ``at``, as ``static/check.js`` puts it together."""
    bug_ids, upgrade, rest = verdicts["answers"][at]
    bugs = [{**verdicts["parts"][part], **other, "record": verdicts["records"][record]}
            for part, record, other in (verdicts["bugs"][i] for i in bug_ids)]
    return {**verdicts["shared"], **rest, "environment": environments["environments"][at][1],
            "bugs": bugs, "upgrade": verdicts["upgrades"][upgrade]}
