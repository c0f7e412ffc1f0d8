"""Which known bugs one environment has, and the smallest upgrade that avoids them.

Pure: JSON-shaped data in, JSON-shaped data out (no I/O, no clock, no compat table read
here), so the page can mirror it in JavaScript. In:

    bugs        {id: the repro's META (title, kind, upstream, description, requires, expect)}
    rows        verdict rows, one per cell: the record its page shows (``row_of``)
    env         {"label", "kind", "versions": {package: version or None}, "complete"}
    candidates  the combinations the compatibility table allows (``check.candidates``)

Per bug, the answer comes from the closest records first: a record on the same versions
(torch, torchvision, torch-tensorrt, NGC release), else one on the same release of the
package the bug's ``expect`` rules name (torch-tensorrt or torch), else the rules
themselves, said as an inference. A bug whose repro needs a package the environment does
not have is not affected. What a record says is ``rules.verdict``'s one rule (bad, good or
cannot tell, and on what evidence), the package a bug is about ``rules.versions.key_package``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from repromatrix.model import DEFECTS, ONNX_PACKAGES
from repromatrix.rules.verdict import (
    BAD,
    EXPECTED,
    GOOD,
    LEVEL_WORDS,
    REAL,
    decided,
    evidence_level,
    on_gpu,
    said,
)
from repromatrix.rules.verdict import CANNOT_TELL as UNDECIDED
from repromatrix.rules.verdict import verdict as verdict_of
from repromatrix.rules.versions import (
    BUG_PACKAGES,
    LABELS,
    RECORD_PACKAGES,
    boundary_version,
    normalize_version,
    plain,
    record_versions,
    when_holds,
)
from repromatrix.rules.versions import key_package as rules_package

FORMAT = 1  # of the JSON answer (data/check.schema.json)
AXES = ("torch", "torchvision", "torch_tensorrt", "ngc")  # what "the same versions" means
IMPLIED = {"onnxscript": ("onnx",)}  # given, it brings these (onnxscript's Requires-Dist: onnx)
AFFECTED, NOT_AFFECTED, CANNOT_TELL = "affected", "not affected", "cannot tell"
SAME, RELEASE, RULES, REQUIRES, NOTHING = "same versions", "same release", "expect rules", \
    "requirements", "nothing"
EVIDENCE_WORDS = LEVEL_WORDS
WORDS = {BAD: AFFECTED, GOOD: NOT_AFFECTED, UNDECIDED: CANNOT_TELL}  # a verdict, said of an environment
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_WORKAROUND = re.compile(r"\bworkaround\b|\bis the fix\b|'s fix\b", re.I)


def row_of(record: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict row of one record's JSON (the record shown for its cell)."""
    stack = record.get("stack") if isinstance(record.get("stack"), Mapping) else {}
    env = record.get("env") if isinstance(record.get("env"), Mapping) else {}
    status = str(record.get("status", ""))
    level = evidence_level(status, record.get("stages") or [])
    gpu = on_gpu(env)
    return {"cell": str(record.get("cell", "")), "repro": str(record.get("repro", "")),
            "stack": str(stack.get("id", "")), "kind": str(stack.get("kind", "")),
            "versions": dict(zip(RECORD_PACKAGES, record_versions(env, stack), strict=True)),
            "status": status, "evidence": level, "gpu": gpu,
            "workaround": record.get("workaround"), "run_id": str(record.get("run_id", "")),
            "finished_at": str(record.get("finished_at", "")), "host": str(record.get("host", ""))}


_key = boundary_version  # a version against a fix (``rules.versions``: a pre-release of V is V)
_exact = normalize_version  # a version looking up records of "the same release" (2.5.0a0 is not 2.5.0)


def decisive(row: Mapping[str, Any]) -> bool:
    """Whether a row says yes or no about its bug (``rules.verdict``)."""
    return decided(row["status"], row["evidence"])


def evidence_words(row: Mapping[str, Any]) -> str:
    """What decided a row, in words: GPU, TensorRT stood in, CPU or fake CUDA."""
    return verdict_of(row["status"], row["evidence"], bool(row.get("gpu"))).words


def row_said(row: Mapping[str, Any]) -> str:
    """What a row says of an environment on its versions: affected, not affected, cannot tell."""
    return WORDS[said(row["status"], row["evidence"])]


class RowTable:
    """The decisive rows, looked up by (repro, the same versions) and by (repro, package,
    release): built once, each look-up a dict access."""

    def __init__(self, rows: Iterable[Mapping[str, Any]]) -> None:
        self.same: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
        self.release: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
        self.count = 0
        # verdicts worked out on this table, by ``_verdict_key``: the page asks the same bug
        # on the same versions once per combination and once per upgrade candidate
        self.verdicts: dict[tuple[Any, ...], tuple[Mapping[str, Any], dict[str, Any]]] = {}
        # what of an environment a verdict reads, by the environment's id (the environment
        # held beside it, so the id is not another's): one answer asks it thousands of times
        self.env_keys: dict[int, tuple[Mapping[str, Any], tuple[Any, ...]]] = {}
        for row in rows:
            self.count += 1
            if not decisive(row):
                continue
            v = row["versions"]
            self.same.setdefault((row["repro"], *_same(v)), []).append(row)
            for axis in BUG_PACKAGES:
                if v.get(axis):
                    self.release.setdefault((row["repro"], axis, _exact(v[axis])), []).append(row)

    def closest(self, repro: str, versions: Mapping[str, Any], axis: str
                ) -> tuple[str, list[Mapping[str, Any]]]:
        """The rows on the same versions, else on the same ``axis`` release; (basis, rows)."""
        same = self.same.get((repro, *_same(versions)))
        # a bug about an ONNX package: the same torch is not the same onnxscript
        if same and axis in ONNX_PACKAGES:
            have = _exact(versions.get(axis))
            same = [r for r in same if have is not None and _exact(r["versions"].get(axis)) == have]
        if same:
            return SAME, same
        if versions.get(axis):
            found = self.release.get((repro, axis, _exact(versions[axis])))
            if found:
                return RELEASE, found
        return NOTHING, []


def _same(versions: Mapping[str, Any]) -> tuple[Any, ...]:
    """What "the same versions" compares: an NGC release by its tag (NVIDIA pins the rest),
    else torch, torchvision and torch-tensorrt."""
    if versions.get("ngc"):
        return ("ngc", str(versions["ngc"]))
    return tuple(_exact(versions.get(a)) for a in AXES if a != "ngc")


def best(rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The row that speaks: real evidence over stand-in, then the newest."""
    return max(rows, key=lambda r: (r["evidence"] == REAL, r["finished_at"], r["cell"]))


def key_package(bug: Mapping[str, Any]) -> str:
    """The package a bug is about (``rules.versions.key_package`` of its ``expect`` rules)."""
    return rules_package(bug.get("expect") or ())


def counted(bug: Mapping[str, Any]) -> bool:
    """Whether an answered bug (an entry of ``answer``'s ``bugs``) counts against the
    environment: a defect (``model.DEFECTS``) not ignored. A breaking change or a user error
    that applies is told (``notices``), never failed on."""
    return bug["kind"] in DEFECTS and not bug["ignored"]


def kind_of(bug: Mapping[str, Any]) -> str:
    """What a bug is to a user (``model.KINDS``' key: bug, silent-wrong-output, ...)."""
    return str(bug.get("kind") or "bug")


def missing_packages(bug: Mapping[str, Any], env: Mapping[str, Any]) -> list[str]:
    """What the bug's repro requires that a complete environment does not have, or that a
    partial pip input (pins, a partial requirements file) does not name: not installed in
    the first, not known in the second. An NGC release's unlisted packages are not asked."""
    if not env.get("complete") and env.get("kind") != "pip":
        return []
    # (imported here: the report writes the page's check data without the config package)
    from repromatrix.config.catalog import NOT_PACKAGES, package_name

    have = {package_name(k) for k, v in (env.get("packages") or {}).items() if v}
    have |= {package_name(k) for k, v in env["versions"].items() if v}
    have |= {dep for name in list(have) for dep in IMPLIED.get(name, ())}
    wanted = dict.fromkeys(package_name(r) for r in bug.get("requires") or ())
    return [p for p in wanted if p not in NOT_PACKAGES and p not in have]


def workaround(bug: Mapping[str, Any]) -> str:
    """The sentences of the bug's description that give its workaround or fix."""
    return _workaround_of(str(bug.get("description", "")))


@functools.lru_cache(maxsize=256)
def _workaround_of(description: str) -> str:
    sentences = _SENTENCE.split(description)
    return " ".join(s for s in sentences if _WORKAROUND.search(s))


def verdict(bug_id: str, bug: Mapping[str, Any], versions: Mapping[str, Any],
            env: Mapping[str, Any], table: RowTable) -> dict[str, Any]:
    """One bug on one combination: verdict, basis, the record or rule behind it (worked out
    once per table for the same bug, versions and what of ``env`` it reads; callers copy
    the answer, never change it)."""
    key = _verdict_key(bug_id, versions, env, table)
    if key is None:
        return _verdict(bug_id, bug, versions, env, table)
    kept = table.verdicts.get(key)
    if kept is None or kept[0] is not bug:
        kept = table.verdicts[key] = (bug, _verdict(bug_id, bug, versions, env, table))
    return kept[1]


def _verdict_key(bug_id: str, versions: Mapping[str, Any], env: Mapping[str, Any],
                 table: RowTable) -> tuple[Any, ...] | None:
    """Everything ``_verdict`` reads besides the bug and the table (of the packages, only
    which are given: ``missing_packages``); None when a value cannot be a key (then nothing
    is kept)."""
    held = table.env_keys.get(id(env))
    if held is None or held[0] is not env:
        named = sorted(name for name, version in (env.get("packages") or {}).items() if version)
        held = table.env_keys[id(env)] = (env, (bool(env.get("complete")), env.get("kind"),
                                                tuple(named)))
    key = (bug_id, tuple(sorted((k, v) for k, v in versions.items() if v is not None)), *held[1])
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _verdict(bug_id: str, bug: Mapping[str, Any], versions: Mapping[str, Any],
             env: Mapping[str, Any], table: RowTable) -> dict[str, Any]:
    """``verdict``, worked out."""
    missing = missing_packages(bug, {**env, "versions": versions})
    if missing:
        are = "is" if len(missing) == 1 else "are"
        if env.get("complete"):
            return {"verdict": NOT_AFFECTED, "basis": REQUIRES, "inference": False,
                    "record": None, "rule": None, "agree": None,
                    "why": f"needs {', '.join(missing)}, which {are} not installed"}
        return {"verdict": CANNOT_TELL, "basis": REQUIRES, "inference": False, "record": None,
                "rule": None, "agree": None,
                "why": f"needs {', '.join(missing)}, which {are} not given and the table "
                       f"cannot pair: give its version, or check the interpreter (--python)"}
    axis = key_package(bug)
    basis, rows = table.closest(bug_id, versions, axis)
    if rows:
        row = best(rows)
        found = row_said(row)
        agree = sum(row_said(r) == found for r in rows)
        where = "the same versions" if basis == SAME else \
            f"the same {LABELS[axis]} release ({plain(versions[axis])})"
        return {"verdict": found, "basis": basis if basis == SAME else f"same {LABELS[axis]} release",
                "inference": False, "record": _record(row), "rule": None,
                "agree": {"records": len(rows), "agreeing": agree},
                "why": f"{row['status']} on {where}: {row['stack']} "
                       f"({evidence_words(row)}, {row['finished_at'][:10]})"}
    for rule in bug.get("expect") or ():
        when = rule.get("when") or {}
        if isinstance(when, (dict, Mapping)) and when_holds(when, versions.get):
            found = WORDS[EXPECTED.get(str(rule.get("status")), UNDECIDED)]
            text = ", ".join(f"{k} {v}" for k, v in when.items()) or "always"
            return {"verdict": found, "basis": RULES, "inference": True, "record": None,
                    "rule": {"when": text, "status": str(rule.get("status", "")),
                             "note": str(rule.get("note", ""))}, "agree": None,
                    "why": f"no record this close; the repro's expectation for {text} is "
                           f"{rule.get('status')} (an inference, not a record)"}
    return {"verdict": CANNOT_TELL, "basis": NOTHING, "inference": False, "record": None,
            "rule": None, "agree": None, "why": "no record this close and no expectation applies"}


def _record(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in ("cell", "stack", "versions", "status", "evidence", "workaround",
                                "run_id", "finished_at", "host")} | {"level": evidence_words(row)}


def fixed_in(fix: Mapping[str, Any] | None, versions: Mapping[str, Any], kind: str) -> str | None:
    """The fix an affected environment of ``versions`` (and ``kind``) is told about, in words
    (``torch 2.14.0``, ``NGC 24.09``): the bug's fix (``check.fixes.fix``) when it is later
    than what the environment has, else None (no release known to fix it for this one)."""
    if fix is None:
        return None
    if kind == "ngc" and versions.get("ngc"):
        tag = fix["ngc"]["fixed_in"]
        later = tag is not None and _key(tag) > _key(str(versions["ngc"]))
        return f"NGC {tag}" if later else None
    release, have = fix["fixed_in"], _key(versions.get(fix["package"]))
    if release is None or (have is not None and have >= _key(release)):
        return None
    return f"{fix['label']} {release}"


def answer(bugs: Mapping[str, Mapping[str, Any]], rows: Iterable[Mapping[str, Any]] | RowTable,
           env: Mapping[str, Any], candidates: Sequence[Mapping[str, Any]],
           fixes: Mapping[str, Mapping[str, Any]], ignore: Iterable[str] = ()) -> dict[str, Any]:
    """Every bug of the catalog on ``env``, and the smallest upgrade; the exit code in it
    (``fixes``: each bug's fix, ``check.fixes.bug_fixes``)."""
    table = rows if isinstance(rows, RowTable) else RowTable(rows)
    ignored = set(ignore)
    versions = env["versions"]
    out = []
    for bug_id in sorted(bugs):
        bug = bugs[bug_id]
        found = verdict(bug_id, bug, versions, env, table)
        out.append({"id": bug_id, "title": str(bug.get("title", bug_id)), "kind": kind_of(bug),
                    "upstream": list(bug.get("upstream") or ()), "ignored": bug_id in ignored,
                    **found, "workaround": workaround(bug), "fixed_in": None,
                    "releases": releases_of(fixes.get(bug_id))})
    affected = [b["id"] for b in out if b["verdict"] == AFFECTED and counted(b)]
    notices = [b["id"] for b in out if b["verdict"] == AFFECTED and not b["ignored"]
               and not counted(b)]
    upgrade = smallest_upgrade(bugs, out, env, candidates, table, fixes)
    return {"format": FORMAT, "environment": dict(env), "records": table.count,
            "bugs": out, "affected": affected, "notices": notices,
            "ignored": sorted(ignored), "upgrade": upgrade, "exit": 1 if affected else 0}


def releases_of(fix: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What the bug's verdict stands on, release by release of its package and NGC release by
    release (``check.fixes.evidence``: runs of releases with a decided record, inferred from
    the rules alone, or that cannot tell); None without its fix."""
    if fix is None:
        return None
    return {"package": fix["package"], **fix["evidence"], "ngc": dict(fix["ngc"]["evidence"])}


def smallest_upgrade(bugs: Mapping[str, Mapping[str, Any]], found: list[dict[str, Any]],
                     env: Mapping[str, Any], candidates: Sequence[Mapping[str, Any]],
                     table: RowTable, fixes: Mapping[str, Mapping[str, Any]]) -> dict[str, Any] | None:
    """The nearest candidate (fewest packages changed, then fewest release steps) on which no
    affected bug that some release fixes is affected; fills each affected bug's ``fixed_in``
    (``fixed_in``). Candidates that bring a bug the environment does not have come last; the
    breaking changes and user errors (``counted``) a candidate would bring are told
    (``meets``), never ranked on."""
    affected = [b for b in found if b["verdict"] == AFFECTED and counted(b)]
    if not affected:
        return None
    others = [b["id"] for b in found if b["verdict"] != AFFECTED and counted(b)]
    changes = [b["id"] for b in found if b["verdict"] != AFFECTED and not b["ignored"]
               and not counted(b)]
    clear = {b["id"] for b in found if b["verdict"] == NOT_AFFECTED}

    def on(candidate: Mapping[str, Any], bug_id: str) -> str:
        merged = {**env["versions"], **candidate["versions"]}
        return str(verdict(bug_id, bugs[bug_id], merged, env, table)["verdict"])

    for b in affected:
        b["fixed_in"] = fixed_in(fixes.get(b["id"]), env["versions"], str(env.get("kind", "")))
    # a bug some release fixes, where a combination the table allows from here avoids it
    fixable = [b["id"] for b in affected
               if b["fixed_in"] and any(on(c, b["id"]) == NOT_AFFECTED for c in candidates)]
    left = [b["id"] for b in affected if b["id"] not in fixable]
    if not fixable:
        return {"found": False, "versions": None, "changes": [], "install": "", "avoids": [],
                "still_affected": left, "brings": [], "may_bring": [], "meets": [],
                "why": "no release in the compatibility table is known to avoid them: use the "
                       "workarounds"}
    ranked = []
    for c in candidates:
        if all(on(c, b) == NOT_AFFECTED for b in fixable):
            brings = [b for b in others if on(c, b) == AFFECTED]
            ranked.append((len(brings), len(c["changes"]), c["distance"], c, brings))
    if not ranked:
        return {"found": False, "versions": None, "changes": [], "install": "", "avoids": [],
                "still_affected": left + fixable, "brings": [], "may_bring": [], "meets": [],
                "why": "no single combination avoids every one of them together"}
    _, _, _, c, brings = min(ranked, key=lambda r: r[:3])
    merged = {**env["versions"], **c["versions"]}
    basis = {b: verdict(b, bugs[b], merged, env, table)["basis"] for b in fixable}
    # "brings" a bug not affected now; one that cannot tell now "may bring" it
    return {"found": True, "versions": dict(c["versions"]), "changes": list(c["changes"]),
            "install": c["install"], "avoids": fixable, "basis": basis, "still_affected": left,
            "brings": [b for b in brings if b in clear],
            "may_bring": [b for b in brings if b not in clear],
            "meets": [b for b in changes if on(c, b) == AFFECTED], "why": ""}


def compare_run(result: Mapping[str, Any], run_rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``result`` with what a run on the environment found now beside each bug (``run``), the
    bugs where it disagrees with the records, and a bug the run found failing counted as
    affected (the upgrade stays the records')."""
    by_repro = {r["repro"]: r for r in run_rows}
    bugs, disagree = [], []
    for bug in result["bugs"]:
        row = by_repro.get(bug["id"])
        now = None
        if row is not None:
            found = row_said(row)
            agrees = None if CANNOT_TELL in (found, bug["verdict"]) else found == bug["verdict"]
            now = {"status": row["status"], "verdict": found, "agrees": agrees, "cell": row["cell"],
                   "run_id": row["run_id"], "level": evidence_words(row) if decisive(row) else ""}
            if agrees is False:
                disagree.append(bug["id"])
        bugs.append({**bug, "run": now})
    affected = sorted({*result["affected"], *(b["id"] for b in bugs if b["run"] and counted(b)
                                              and b["run"]["verdict"] == AFFECTED)})
    return {**result, "bugs": bugs, "affected": affected, "exit": 1 if affected else 0,
            "run": {"ran": len(by_repro), "disagree": disagree}}
