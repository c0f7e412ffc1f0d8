"""The questions people bring to the page, answered from the records (never from META).

Flow: report -> **report.answers** -> templates. For one repro: on how many
stacks it reproduces, where it was fixed (or introduced) on each version axis
(last bad -> first good), on how many stacks its workaround works, and how the
records compare with the documented expectation, rule by rule. Also which
stacks are the published matrix and which are bisect probes or one-off runs.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from repromatrix.rules.verdict import BAD, GOOD
from repromatrix.rules.versions import LABELS, normalize_version

AXES = ("torch_tensorrt", "torchvision", "torch", "ngc")  # the version axes a page may say
# (and the bug's own package first: onnxscript's on the stacks that pin it, report.stacks)
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


def outcome(cell: Mapping[str, Any]) -> str:
    """A cell as the answers count it: ``fail`` where its record says the bug is there,
    ``pass`` where it says it is not (``rules.verdict``: a stand-in ``skip`` that cleared the
    bug's point is one; the grid still shows the skip), else its status (cannot tell)."""
    said = cell["verdict"]
    return "fail" if said == BAD else "pass" if said == GOOD else str(cell["status"])


def axis_answer(entries: Sequence[Mapping[str, Any]], axis: str, label: str) -> dict[str, str] | None:
    """Where the outcome turns on one axis, from the decisive cells (``outcome`` pass/fail) whose stack has
    a version on it. Versions in order form runs of one outcome; each fail -> pass boundary is a
    fix (last bad -> first good), each pass -> fail one a regression. None when fewer than two
    versions were decided or the bug never reproduced."""
    outcomes: dict[Any, tuple[str, set[str]]] = {}
    for e in entries:
        status = outcome(e["cell"])
        text = e["stack"]["versions"].get(axis)
        version = normalize_version(text)
        if status in DECISIVE and version is not None:
            outcomes.setdefault(version, (_plain(str(text)), set()))[1].add(status)
    if len(outcomes) < 2 or not any("fail" in o[1] for o in outcomes.values()):
        return None
    runs: list[list[Any]] = []  # [outcome, first version text, last version text]
    for version in sorted(outcomes):
        text, seen = outcomes[version]
        said = seen.pop() if len(seen) == 1 else "mixed"
        if runs and runs[-1][0] == said:
            runs[-1][2] = text
        else:
            runs.append([said, text, text])
    events = []
    for before, after in zip(runs, runs[1:], strict=False):
        if before[0] == "fail" and after[0] == "pass":
            events.append(("fixed", before[2], after[1],
                           f"bad on {label} {before[2]}, good on {after[1]}"))
        elif before[0] == "pass" and after[0] == "fail":
            again = any(e[0] == "fixed" for e in events)
            events.append(("regressed" if again else "introduced", before[2], after[1],
                           f"good on {label} {before[2]}, bad {'again ' if again else ''}"
                           f"on {after[1]}"))
    if not events:
        kind = "still" if runs[-1][0] == "fail" else "mixed"
        text = (f"reproduces on every {label} version tried ({runs[0][1]} to {runs[-1][2]})"
                if kind == "still" else f"mixed results across {label} versions")
        return {"axis": axis, "label": label, "kind": kind, "from": "", "to": "", "text": text}
    kind, last_bad, first_good, _ = events[-1]
    return {"axis": axis, "label": label, "kind": kind, "from": f"{label} {last_bad}",
            "to": f"{label} {first_good}", "text": "records: " + "; ".join(e[3] for e in events)}


def _plain(version: str) -> str:
    return version.split("+", 1)[0]


def repro_answers(entries: Sequence[Mapping[str, Any]], rules: Sequence[Mapping[str, str]],
                  about: str = "torch", fix: str = "") -> dict[str, Any]:
    """Everything the repro page and the matrix's summary row say about one repro (``about``:
    the package the bug is about, ``rules.versions.key_package``: its axis comes first and is
    the one the summary names, with NGC; ``fix``: where it is fixed, in ``check``'s words,
    ``check.fixes.fix_words``)."""
    statuses = [outcome(e["cell"]) for e in entries]
    reproduces = statuses.count("fail")
    passes = statuses.count("pass")
    tried = [e["cell"]["workaround"] for e in entries
             if e["cell"]["status"] == "fail" and e["cell"]["workaround"]]
    workaround, works, decided = workaround_answer(tried)
    order = (about, *(a for a in AXES if a != about))
    axes = [a for a in (axis_answer(entries, k, LABELS[k]) for k in order) if a]
    plural = "" if len(entries) == 1 else "s"
    parts = [f"reproduces on {reproduces} of {len(entries)} stack{plural}"]
    undecided = len(entries) - reproduces - passes
    if undecided == len(entries):  # no verdict anywhere: "0 of N" would read as "never"
        parts = [f"cannot tell on {len(entries)} stack{plural} (no pass or fail recorded)"]
    elif undecided:
        parts[0] += f" ({undecided} cannot tell)"
    # torch, torchvision and torch-tensorrt move together on pip stacks: say the bug's own
    # package (the others' boundaries are on its page), and NGC
    said = [a for a in axes if a["axis"] in (about, "ngc")]
    parts += [fix] if fix else []
    parts += [a["text"] for a in said]
    if tried:
        parts.append(workaround)
    return {
        "reproduces": reproduces, "passes": passes, "stacks": len(entries), "undecided": undecided,
        "workaround_works": works, "workaround_tried": decided, "axes": axes,
        "workaround": workaround if tried else "",  # in words (workaround_answer)
        "fix": fix,
        "workaround_undecided": len(tried) - decided,  # its stage could not run (skip, error)
        "summary": " · ".join(parts),
        "short": f"cannot tell on {len(entries)}" if entries and undecided == len(entries)
        else f"{reproduces}/{len(entries)}",
        "rules": rule_rows(entries, rules),
        "untold": untold_groups(entries),
    }


def untold_groups(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The cells that cannot tell, grouped by why (each cell's ``untold``,
    ``rules.verdict.untold``: for an ``error``, the new problem that is not the bug): errors
    first, then the larger groups; each group's cells as (cell id, stack id)."""
    groups: dict[tuple[str, str], list[list[str]]] = {}
    for e in entries:
        cell = e["cell"]
        if cell.get("untold"):
            groups.setdefault((cell["status"], cell["untold"]), []).append([cell["id"], e["stack"]["id"]])
    ranked = sorted(groups.items(), key=lambda g: (g[0][0] != "error", -len(g[1]), g[0]))
    return [{"status": status, "line": line, "cells": cells} for (status, line), cells in ranked]


def workaround_answer(tried: Sequence[str]) -> tuple[str, int, int]:
    """How the workaround did where the bug reproduced (``tried``: its stage's status on each
    such stack), as text, the stacks where it works and those where its stage decided: a
    stage that could not run (skip, error) is "cannot tell", never a failed workaround."""
    decided = [w for w in tried if w in ("pass", "fail")]
    works = decided.count("pass")
    undecided = len(tried) - len(decided)
    if not decided:
        ran = ", ".join(sorted(set(tried)))
        return f"workaround: cannot tell on {undecided} (its stage ended {ran}, no verdict)", 0, 0
    text = f"workaround works on {works} of {len(decided)}"
    return text + (f" ({undecided} cannot tell)" if undecided else ""), works, len(decided)


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
