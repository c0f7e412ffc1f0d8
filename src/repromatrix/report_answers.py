"""The questions people bring to the page, answered from the records (never from META).

Flow: report -> **report_answers** -> templates. For one repro: on how many
stacks it reproduces, where it was fixed (or introduced) on each version axis
(last bad -> first good), on how many stacks its workaround works, and how the
records compare with the documented expectation, rule by rule. Also which
stacks are the published matrix and which are bisect probes or one-off runs.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from .expect import normalize_version

AXES = (("torch_tensorrt", "torch-tensorrt"), ("torch", "torch"), ("ngc", "NGC"))
DECISIVE = ("pass", "fail")
SCOPES = ("published", "bisect", "one-off")
BISECT_TAG = "bisect"  # bisect.candidates.BISECT_TAG (not imported: bisect pulls in the compat table)


def stack_scope(stack: Mapping[str, Any], published: Collection[str] | None) -> str:
    """``bisect`` for a bisect probe's stack, ``one-off`` for a stack outside the matrix
    file (``published``: its stack ids; None when the report has no matrix), else ``published``."""
    tags = stack.get("tags")
    if isinstance(tags, list) and BISECT_TAG in tags:
        return "bisect"
    if published is not None and str(stack.get("id", "")) not in published:
        return "one-off"
    return "published"


def axis_answer(entries: Sequence[Mapping[str, Any]], axis: str, label: str) -> dict[str, str] | None:
    """Where the outcome turns on one axis, from the decisive cells (pass/fail) whose stack has
    a version on it: "fixed" (last fail -> first pass after it), "introduced" (last pass -> first
    fail), "still" (fails on the newest), or None when the axis says nothing."""
    outcomes: dict[Any, tuple[str, set[str]]] = {}
    for e in entries:
        status = e["cell"]["status"]
        text = e["stack"]["versions"].get(axis)
        version = normalize_version(text)
        if status in DECISIVE and version is not None:
            outcomes.setdefault(version, (str(text), set()))[1].add(status)
    if not outcomes:
        return None
    order = sorted(outcomes)
    fails = [v for v in order if "fail" in outcomes[v][1]]
    if not fails:
        return None
    name = lambda v: f"{label} {outcomes[v][0]}"  # noqa: E731
    last_bad = fails[-1]
    later = [v for v in order if v > last_bad]
    if later and outcomes[later[0]][1] == {"pass"}:
        return {"axis": axis, "kind": "fixed", "from": name(last_bad), "to": name(later[0]),
                "text": f"first fixed in {name(later[0])} (last bad {outcomes[last_bad][0]})"}
    earlier = [v for v in order if v < fails[0]]
    if earlier and outcomes[earlier[-1]][1] == {"pass"}:
        return {"axis": axis, "kind": "introduced", "from": name(earlier[-1]), "to": name(fails[0]),
                "text": f"first bad in {name(fails[0])} (last good {outcomes[earlier[-1]][0]})"}
    if not later:
        return {"axis": axis, "kind": "still", "from": name(last_bad), "to": "",
                "text": f"still reproduces on the newest, {name(last_bad)}"}
    return None


def repro_answers(entries: Sequence[Mapping[str, Any]], rules: Sequence[Mapping[str, str]]
                  ) -> dict[str, Any]:
    """Everything the repro page and the matrix's summary row say about one repro."""
    statuses = [e["cell"]["status"] for e in entries]
    reproduces = statuses.count("fail")
    passes = statuses.count("pass")
    tried = [e for e in entries if e["cell"]["status"] == "fail" and e["cell"]["workaround"]]
    works = sum(e["cell"]["workaround"] == "pass" for e in tried)
    axes = [a for a in (axis_answer(entries, k, label) for k, label in AXES) if a]
    parts = [f"reproduces on {reproduces} of {len(entries)} stack{'' if len(entries) == 1 else 's'}"]
    undecided = len(entries) - reproduces - passes
    if undecided:
        parts[0] += f" ({undecided} cannot tell)"
    parts += [a["text"] for a in axes]
    if tried:
        parts.append(f"workaround works on {works} of {len(tried)}")
    return {
        "reproduces": reproduces, "passes": passes, "stacks": len(entries), "undecided": undecided,
        "workaround_works": works, "workaround_tried": len(tried), "axes": axes,
        "summary": " · ".join(parts), "short": f"{reproduces}/{len(entries)}",
        "rules": rule_rows(entries, rules),
    }


def rule_rows(entries: Sequence[Mapping[str, Any]], rules: Sequence[Mapping[str, str]]
              ) -> list[dict[str, Any]]:
    """Each documented rule beside what the records under it show; plus one row for the
    cells no rule covers."""
    rows = [{**r, "observed": {}, "contradicted": 0, "cells": 0} for r in rules]
    uncovered = {"when": "no rule applies", "status": "", "note": "", "observed": {},
                 "contradicted": 0, "cells": 0}
    by_when = {r["when"]: row for r, row in zip(rules, rows, strict=True)}
    for e in entries:
        c = e["cell"]
        row = by_when.get(c["expected_when"], uncovered) if c["expected"] else uncovered
        row["observed"][c["status"]] = row["observed"].get(c["status"], 0) + 1
        row["contradicted"] += int(bool(c["contradicted"]))
        row["cells"] += 1
    return rows + ([uncovered] if uncovered["cells"] else [])
