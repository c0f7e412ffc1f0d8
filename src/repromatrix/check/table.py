"""`repromatrix check`'s short answers: one line per bug, as pip-audit's ``columns`` and
``markdown`` formats print them, then the smallest upgrade.

Flow: check.decide's answer (+ each bug's package, ``decide.key_package``) -> **check.table**
-> stdout, ``--output`` or the GitHub step summary. Rows come affected first, then cannot
tell; a bug that does not affect the environment is counted, not listed (``--verbose``:
``check.text``'s blocks list every bug with its evidence). Text from records and the catalog
goes through ``textsafe.printable``; a Markdown cell is escaped by ``run.ci`` (one place).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import astuple, dataclass
from typing import Any

from repromatrix.model import KINDS
from repromatrix.run import ci
from repromatrix.textsafe import printable

from .decide import AFFECTED, CANNOT_TELL, LABELS, NOT_AFFECTED
from .text import kinds_line, notices_words, run_lines, source_words

APPLIES = "applies"  # a row's verdict for a breaking change or user error that applies

HEADER = ("verdict", "bug", "kind", "package", "installed", "fixed in", "workaround", "link")
ORDER = (AFFECTED, CANNOT_TELL, NOT_AFFECTED)
SHORT = 48  # a workaround's characters in a column
_LEAD = re.compile(r"^(?:the seed's )?workaround\b[^:]{0,40}:\s*", re.I)


@dataclass(frozen=True)
class Row:
    """One bug, one line: what pip-audit's columns say of a vulnerability."""

    verdict: str
    bug: str
    kind: str  # in words (model.KINDS)
    package: str
    installed: str
    fixed_in: str
    workaround: str
    link: str


def rows(result: Mapping[str, Any], packages: Mapping[str, str],
         verdicts: Iterable[str] = (AFFECTED, CANNOT_TELL), short: bool = True) -> list[Row]:
    """The bugs of ``result`` whose verdict is in ``verdicts`` (ignored ones left out),
    affected first, then the breaking changes that apply (``APPLIES``); ``packages``: each
    bug's package (``decide.key_package``)."""
    wanted = [v for v in ORDER if v in set(verdicts)]
    versions = result["environment"]["versions"]
    out = []
    notices = set(result.get("notices", ()))
    for bug in sorted((b for b in result["bugs"] if b["verdict"] in wanted and not b["ignored"]),
                      key=lambda b: (wanted.index(b["verdict"]), b["id"] in notices, b["id"])):
        package = packages.get(bug["id"], "torch")
        label = LABELS.get(package, package)
        notice = bug["id"] in notices
        fix = bug["fixed_in"] or ("no fix yet" if bug["verdict"] == AFFECTED and not notice else "-")
        fix = fix.removeprefix(f"{label} ")  # the package's own release: its version alone
        work = _short(bug["workaround"]) if short else bug["workaround"]
        out.append(Row(APPLIES if notice else bug["verdict"], bug["id"],
                       KINDS.get(bug["kind"], bug["kind"]), label,
                       str(versions.get(package) or "-"), fix, work or "-",
                       (bug.get("upstream") or ["-"])[0]))
    return [Row(*(printable(str(c)) for c in astuple(r))) for r in out]


def _short(text: str) -> str:
    text = _LEAD.sub("", " ".join(str(text).split()))
    if len(text) <= SHORT:
        return text
    return text[:SHORT - 3].rsplit(" ", 1)[0].rstrip(" ,;:.") + "..."


def columns(result: Mapping[str, Any], packages: Mapping[str, str], exit_code: int) -> str:
    """The default answer: the environment, one line per bug, the upgrade, the counts."""
    found = rows(result, packages)
    lines = _head(result)
    if found:
        table = [HEADER, *(astuple(r) for r in found)]
        widths = [max(len(line[n]) for line in table) for n in range(len(HEADER))]
        table.insert(1, tuple("-" * w for w in widths))
        lines += ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in table]
        lines.append("")
    up = upgrade_lines(result)
    lines += [*up, *([""] if up else []), *run_lines(result), summary(result, exit_code)]
    return printable("\n".join(lines), newlines=True) + "\n"


def _head(result: Mapping[str, Any]) -> list[str]:
    env = result["environment"]
    have = ", ".join(f"{LABELS[k]} {v}" for k, v in env["versions"].items() if v)
    return [f"environment: {env['label']} ({have})" if have else f"environment: {env['label']}",
            *(f"  note: {n}" for n in env.get("notes", ())),
            f"records: {source_words(result['source'])}", *kinds_line(result), ""]


def upgrade_lines(result: Mapping[str, Any]) -> list[str]:
    """The smallest upgrade in one or two lines: what moves and what it avoids, the command."""
    up = result["upgrade"]
    if up is None:
        return []
    if not up["found"]:
        return [f"smallest upgrade: none: {up['why']} ({', '.join(up['still_affected'])})"]
    now = result["environment"]["versions"]
    moves = ", ".join(f"{LABELS[p]} {now.get(p) or '-'} -> {up['versions'][p]}" for p in up["changes"])
    said = [f"avoids {len(up['avoids'])}"]
    if up["still_affected"]:
        said.append(f"no release avoids {', '.join(up['still_affected'])}")
    if up["brings"]:
        said.append(f"brings {', '.join(up['brings'])}")
    if up.get("meets"):
        said.append(f"meets {', '.join(up['meets'])}")
    return [f"smallest upgrade: {moves} ({'; '.join(said)})", f"  {up['install']}"]


def counts(result: Mapping[str, Any]) -> dict[str, int]:
    """How many bugs have each verdict, ignored ones apart, and the breaking changes and user
    errors that apply (``notices``: not counted as affected)."""
    found = {v: 0 for v in (*ORDER, "ignored", APPLIES)}
    notices = set(result.get("notices", ()))
    for bug in result["bugs"]:
        found["ignored" if bug["ignored"] else APPLIES if bug["id"] in notices
              else bug["verdict"]] += 1
    return found


def summary(result: Mapping[str, Any], exit_code: int) -> str:
    """The closing line: how many bugs affect the environment, the others, the exit code."""
    n = counts(result)
    ignored = f" ({n['ignored']} ignored)" if n["ignored"] else ""
    listed = "not listed: --verbose lists every bug with its evidence"
    return (f"{n[AFFECTED]} of {len(result['bugs'])} known bug(s) affect this environment"
            f"{ignored}{notices_words(result)}; {n[CANNOT_TELL]} cannot tell, "
            f"{n[NOT_AFFECTED]} not affected ({listed}); exit {exit_code}")


def markdown(result: Mapping[str, Any], packages: Mapping[str, str], exit_code: int,
             every: bool = False) -> str:
    """The answer for a pull-request comment or a step summary: a GitHub-flavoured table
    (every bug when ``every``), then the upgrade and its command."""
    env = result["environment"]
    n = counts(result)
    ignored = f", {n['ignored']} ignored" if n["ignored"] else ""
    lines = [f"### repromatrix check: {ci.markdown_text(env['label'])}", "",
             f"**{n[AFFECTED]} affected**{notices_words(result).replace(';', ',')}, "
             f"{n[CANNOT_TELL]} cannot tell, {n[NOT_AFFECTED]} not "
             f"affected{ignored} (of {len(result['bugs'])} known bugs); exit {exit_code}. "
             f"Records: {ci.markdown_text(source_words(result['source']))}.", ""]
    found = rows(result, packages, ORDER if every else (AFFECTED, CANNOT_TELL), short=False)
    if found:
        lines.append(ci.markdown_table(HEADER, [astuple(r) for r in found]))
    lines += [f"{ci.markdown_text(line)}.\n" for line in run_lines(result)]
    up = result["upgrade"]
    if up is not None:
        first, *rest = upgrade_lines(result)
        first = first.replace("smallest upgrade", "Smallest upgrade").replace(" -> ", " → ")
        lines.append(f"**{ci.markdown_text(first)}**")
        if rest:
            lines += ["", "```sh", printable(up["install"]), "```"]
        lines.append("")
    return "\n".join(lines)


def packages_of(bugs: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Each catalog bug's package (``decide.key_package``), as ``rows`` takes them."""
    from .decide import key_package

    return {bug_id: key_package(bug) for bug_id, bug in bugs.items()}
