"""`repromatrix check`'s answer for a terminal: one block per bug, then the upgrade.

Flow: check.decide's answer -> **check.text** -> stdout. Text from records and from the
catalog goes through ``textsafe.printable`` (a record is hostile text).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

from repromatrix.model import KINDS
from repromatrix.textsafe import printable

from .decide import AFFECTED, LABELS, NOT_AFFECTED
from .fixes import evidence_words

MARKS = {AFFECTED: "AFFECTED", NOT_AFFECTED: "ok", "cannot tell": "?"}
APPLIES = "APPLIES"  # the mark of a breaking change or user error that applies (``notices``)
WIDTH = 100


def render(result: Mapping[str, Any]) -> str:
    """The answer as lines for a person."""
    env, source = result["environment"], result["source"]
    lines = [f"environment: {env['label']}",
             "  " + ", ".join(f"{LABELS[k]} {v}" for k, v in env["versions"].items() if v),
             *(f"  note: {n}" for n in env.get("notes", ())),
             f"records: {source_words(source)}", *kinds_line(result), ""]
    for bug in result["bugs"]:
        mark = mark_of(result, bug)
        lines.append(f"{mark:<9} {bug['id']} ({KINDS.get(bug['kind'], bug['kind'])}): "
                     f"{bug['title']}")
        lines += _wrapped(f"{bug['verdict']}: {bug['why']}")
        if bug["rule"] and bug["rule"]["note"]:
            lines += _wrapped(f"rule's note: {bug['rule']['note']}")
        if bug.get("releases"):
            lines += _wrapped("releases: " + "; ".join(releases_words(bug["releases"])))
        if bug.get("run"):
            run = bug["run"]
            level = f", {run['level']}" if run["level"] else ""
            said = {True: "agrees", False: "DISAGREES with the records", None: "cannot compare"}
            lines += _wrapped(f"run now: {run['status']} ({run['verdict']}{level}): "
                              f"{said[run['agrees']]}")
        if mark == APPLIES:
            lines += _wrapped(f"what to do: {bug['workaround'] or 'none documented'}")
            lines += _wrapped(notice_line(bug))
        elif bug["verdict"] == AFFECTED:
            record = bug["record"]
            if record and record["workaround"]:
                lines += _wrapped(f"workaround stage on that record: {record['workaround']}")
            lines += _wrapped(f"workaround: {bug['workaround'] or 'none documented'}")
            lines += _wrapped(f"fixed in: {bug['fixed_in'] or 'no release known to fix it'}")
    lines += ["", *_upgrade(result), "", *run_lines(result), _summary(result)]
    return printable("\n".join(lines), newlines=True) + "\n"


def mark_of(result: Mapping[str, Any], bug: Mapping[str, Any]) -> str:
    """A bug's mark in the answer: ``ignored``, ``APPLIES`` (``result["notices"]``), or its
    verdict's."""
    if bug["ignored"]:
        return "ignored"
    return APPLIES if bug["id"] in result.get("notices", ()) else MARKS[bug["verdict"]]


def notice_line(bug: Mapping[str, Any]) -> str:
    """What is said of a breaking change or user error that applies (the page's box says it
    too)."""
    return f"a {KINDS.get(bug['kind'], bug['kind'])}, not a defect: told, not counted in the exit code"


def notices_words(result: Mapping[str, Any]) -> str:
    """``; N breaking change(s) or user error(s) apply (not counted)``, or nothing."""
    n = len(result.get("notices", ()))
    return f"; {n} breaking change(s) or user error(s) apply (not counted)" if n else ""


def source_words(source: Mapping[str, Any]) -> str:
    what = {"snapshot": "the snapshot shipped with repromatrix, made from",
            "store": "the store", "results.json": "the page's results.json.gz"}[source["kind"]]
    newest = f", newest {source['newest'][:10]}" if source.get("newest") else ""
    return f"{what} {source['where']} ({source['cells']} cells{newest})"


def releases_words(releases: Mapping[str, Any]) -> list[str]:
    """A bug's ``releases`` (``decide.releases_of``) in words: the releases of its package
    and the NGC releases with a record, inferred from its rules, or that cannot tell."""
    return [*evidence_words(releases, LABELS[releases["package"]]),
            *evidence_words(releases["ngc"], "NGC")]


def kinds_line(result: Mapping[str, Any]) -> list[str]:
    """The kinds of bug answered, in one line, when ``--kind`` chose them (none otherwise)."""
    kinds = result.get("kinds")
    if not kinds:
        return []
    return [f"kinds: {', '.join(KINDS.get(k, k) for k in kinds)} only (--kind)"]


def _wrapped(text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent="          ", subsequent_indent="            ",
                         break_on_hyphens=False) or [""]


def _upgrade(result: Mapping[str, Any]) -> list[str]:
    up = result["upgrade"]
    if up is None:
        return ["smallest upgrade: none needed"]
    if not up["found"]:
        return [f"smallest upgrade: none: {up['why']} ({', '.join(up['still_affected'])})"]
    now = result["environment"]["versions"]
    moves = ", ".join(f"{LABELS[p]} {now.get(p) or '-'} -> {up['versions'][p]}" for p in up["changes"])
    avoids = ", ".join(f"{b} ({up['basis'][b]})" for b in up["avoids"])
    lines = [f"smallest upgrade: {moves}", f"  avoids: {avoids}"]
    if up["still_affected"]:
        lines.append(f"  still affected (no release known to fix them: use their workarounds): "
                     f"{', '.join(up['still_affected'])}")
    if up["brings"]:
        lines.append(f"  brings: {', '.join(up['brings'])} (not affected now)")
    if up.get("meets"):
        lines.append(f"  meets: {', '.join(up['meets'])} (breaking changes or user errors: "
                     f"not there now)")
    lines.append(f"  {up['install']}")
    return lines


def run_lines(result: Mapping[str, Any]) -> list[str]:
    """What ``--run`` found beside the records, in one line (none without ``--run``)."""
    run = result.get("run")
    if not run:
        return []
    if not run["disagree"]:
        return [f"run now: {run['ran']} repro(s) run; none disagrees with the records"]
    return [f"run now: {run['ran']} repro(s) run; disagreeing with the records: "
            f"{', '.join(run['disagree'])}"]


def _summary(result: Mapping[str, Any]) -> str:
    bugs = result["bugs"]
    ignored = sum(b["ignored"] for b in bugs)
    said = f" ({ignored} ignored)" if ignored else ""
    return (f"{len(result['affected'])} of {len(bugs)} known bug(s) affect this environment{said}"
            f"{notices_words(result)}; exit {result['exit']}")
