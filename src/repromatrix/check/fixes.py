"""Where each bug is fixed: the one answer the page and `check` both name.

Flow: verdict rows + the catalog + the compatibility table -> **check.fixes** -> check.decide
(an affected environment's "fixed in") and the report (each bug's line and page). For each
bug, the releases of the package it is about (``rules.versions.key_package``: torch,
torchvision or torch-tensorrt) that the table knows, in order, each judged as ``check``
judges an environment of that release alone (``check.decide.verdict``: its records first,
else the repro's ``expect`` rules, said as an inference); the releases affected, as runs;
and the first release after the newest affected one that is not affected: the fix (None
while the newest affected release has no later release said to be clear). NGC releases
the same way, by their tag.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from repromatrix.model import KINDS
from repromatrix.rules.verdict import LEVEL_WORDS
from repromatrix.rules.verdict import verdict as verdict_of
from repromatrix.rules.versions import LABELS, key_package, plain

from .candidates import releases
from .decide import (
    AFFECTED,
    CANNOT_TELL,
    NOT_AFFECTED,
    RULES,
    RowTable,
    kind_of,
    verdict,
    workaround,
)

if TYPE_CHECKING:
    from repromatrix.config.compat import CompatTable


def ngc_versions(table: CompatTable) -> list[tuple[str, dict[str, Any]]]:
    """Each NGC release the table knows, oldest first, with the versions it ships."""
    return [(tag, {"ngc": tag, "torch": plain(table.ngc[tag].torch), "torchvision": None,
                   "torch_tensorrt": plain(table.ngc[tag].torch_tensorrt)})
            for tag in table.ngc_tags()]


def bug_fixes(bugs: Mapping[str, Mapping[str, Any]], rows: RowTable | Sequence[Mapping[str, Any]],
              table: CompatTable) -> dict[str, dict[str, Any]]:
    """Every bug's fix (``fix``), by id."""
    found = rows if isinstance(rows, RowTable) else RowTable(rows)
    known, ngc = releases(table), ngc_versions(table)
    return {bug_id: fix(bug_id, bug, found, known, ngc) for bug_id, bug in sorted(bugs.items())}


def fix(bug_id: str, bug: Mapping[str, Any], table: RowTable, known: Mapping[str, list[str]],
        ngc: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """One bug: the package it is about, the releases affected (runs ``[first, last]``), the
    release that fixes it and whether records or only rules say so, each release's verdict
    (``releases``: ``[version, verdict, by its rules only]``, oldest first); the same for NGC
    (but each release)."""
    package = key_package(bug.get("expect") or ())
    env = {"complete": False}
    said = [(v, verdict(bug_id, bug, {package: v}, env, table)) for v in known.get(package, [])]
    on_ngc = [(tag, verdict(bug_id, bug, versions, env, table)) for tag, versions in ngc]
    pip, tags = _turn(said), _turn(on_ngc)
    return {"package": package, "label": LABELS[package], **pip, "evidence": evidence(said),
            "releases": [[v, found["verdict"], found["basis"] == RULES] for v, found in said],
            "ngc": {"affected": tags["affected"], "fixed_in": tags["fixed_in"],
                    "inferred": tags["inferred"], "evidence": evidence(on_ngc)}}


def evidence(said: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, list[list[str]]]:
    """What each release's verdict stands on, as runs ``[first, last]`` of consecutive
    releases: ``run`` (a decided record on that release), ``inferred`` (the repro's
    ``expect`` rules alone: a rule's claim no record backs), ``untold`` (no decided record
    and no rule that decides)."""
    out: dict[str, list[list[str]]] = {"run": [], "inferred": [], "untold": []}
    last = ""
    for version, found in said:
        if found["record"] is not None:
            where = "run"
        elif found["basis"] == RULES and found["verdict"] != CANNOT_TELL:
            where = "inferred"
        else:
            where = "untold"
        if where == last:
            out[where][-1][1] = version
        else:
            out[where].append([version, version])
        last = where
    return out


def runs_words(runs: Sequence[Sequence[str]]) -> str:
    """Runs of releases in words: ``2.4.0 to 2.5.0, 2.9.0``."""
    return ", ".join(a if a == b else f"{a} to {b}" for a, b in runs)


def evidence_words(found: Mapping[str, Sequence[Sequence[str]]], label: str) -> list[str]:
    """``evidence``' runs as sentences, for the page and ``check --verbose``: the releases
    run, those inferred, those that cannot tell (none said where there are none)."""
    said = (("run", "records on"), ("inferred", "inferred from its rules (no record) for"),
            ("untold", "cannot tell (no decided record, no rule) for"))
    return [f"{words} {label} {runs_words(found[key])}" for key, words in said if found[key]]


def _turn(said: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """Runs of affected releases (a release that cannot tell does not end one; one that is
    not affected does), and the first clear release after the newest affected one."""
    runs: list[list[str]] = []
    last, open_run = None, False
    for n, (version, found) in enumerate(said):
        if found["verdict"] == NOT_AFFECTED:
            open_run = False
        if found["verdict"] != AFFECTED:
            continue
        if open_run:
            runs[-1][1] = version
        else:
            runs.append([version, version])
        last, open_run = n, True
    if last is None:
        return {"affected": [], "fixed_in": None, "inferred": False}
    clear = next(((v, f) for v, f in said[last + 1:] if f["verdict"] == NOT_AFFECTED), None)
    return {"affected": runs, "fixed_in": clear[0] if clear else None,
            "inferred": bool(clear and clear[1]["basis"] == RULES)}


def fix_words(fix: Mapping[str, Any] | None) -> str:
    """A bug's fix in words, as the page says it: ``fixed in torch 2.14.0``, ``no fix yet``,
    and the NGC release that first ships it; "" when no release of the table is said to be
    affected."""
    if not fix:
        return ""
    parts = []
    if fix["affected"]:
        if fix["fixed_in"] is None:
            parts.append(f"no fix yet (newest {fix['label']} affected: {fix['affected'][-1][1]})")
        else:
            how = " (by its rules: no record on that release)" if fix["inferred"] else ""
            parts.append(f"fixed in {fix['label']} {fix['fixed_in']}{how}")
    ngc = fix["ngc"]
    if ngc["affected"]:
        parts.append(f"NGC: fixed from {ngc['fixed_in']}" if ngc["fixed_in"] else "NGC: not yet")
    return "; ".join(parts)


def known_bug(bug: Mapping[str, Any], fix: Mapping[str, Any],
              rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A bug as the page's table of known bugs lists it: the package it is about, its kind
    (``model.KINDS``: its key and its words), the releases
    it affects (runs, in words), its fix (``fix_words``' parts), its workaround (the
    description's own sentences) and the evidence of its decided records (``rows``: this
    bug's, ``check.records``), by level (GPU, TensorRT stood in, CPU or fake CUDA)."""
    levels = Counter(verdict_of(r["status"], r["evidence"], bool(r.get("gpu"))).level for r in rows)
    kind = kind_of(bug)
    return {"package": fix["label"], "kind": kind, "kind_words": KINDS.get(kind, kind),
            "affects": runs_words(fix["affected"]),
            "releases": evidence_words(fix["evidence"], fix["label"])
            + evidence_words(fix["ngc"]["evidence"], "NGC"),
            "fixed_in": fix["fixed_in"] or ("no fix yet" if fix["affected"] else ""),
            "ngc_fixed_in": fix["ngc"]["fixed_in"] or ("no fix yet" if fix["ngc"]["affected"] else ""),
            "inferred": fix["inferred"], "workaround": workaround(bug),
            "evidence": [[LEVEL_WORDS[k], levels[k]] for k in LEVEL_WORDS if levels[k]],
            "upstream": str((bug.get("upstream") or [""])[0])}


def timeline(fix: Mapping[str, Any]) -> dict[str, Any]:
    """A bug's releases as its page's timeline shows them: each release of its package the
    table knows, oldest first, affected, not affected or cannot tell (``fix``'s own verdicts),
    whether only the repro's rules say so (no record), and which one is the fix; with a
    sentence saying the same for a reader that does not see the marks."""
    marks = [{"version": v, "verdict": said, "inferred": inferred, "fix": v == fix["fixed_in"],
              "words": f"{said}{', the fix' if v == fix['fixed_in'] else ''}"
                       f"{' (by its rules: no record)' if inferred else ''}"}
             for v, said, inferred in fix["releases"]]
    runs: list[list[Any]] = []  # [verdict, first, last] of consecutive releases alike
    for m in marks:
        if runs and runs[-1][0] == m["verdict"]:
            runs[-1][2] = m["version"]
        else:
            runs.append([m["verdict"], m["version"], m["version"]])
    text = "; ".join(f"{a if a == b else f'{a} to {b}'} {said}" for said, a, b in runs)
    if fix["fixed_in"]:
        text += f"; fixed in {fix['fixed_in']}"
    inferred = sum(m["inferred"] for m in marks)
    if inferred:
        text += f" ({inferred} of {len(marks)} by the repro's rules alone: no record)"
    return {"label": fix["label"], "marks": marks, "text": f"{fix['label']} {text}" if marks else ""}
