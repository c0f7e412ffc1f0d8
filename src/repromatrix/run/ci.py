"""The CI service a run reports to, known in one place (as cibuildwheel's ``ci.py``).

Run stage -> **ci** -> the CI service's log and job page. Only GitHub Actions is known
(``GITHUB_ACTIONS=true``); there ``run.progress`` folds each stack's lines between
``group_start`` and ``GROUP_END`` and ends a run with one ``::error::`` annotation per
broken stack (``broken_stack``); ``check`` annotates each bug it finds (``error``,
``warning``). Wherever ``GITHUB_STEP_SUMMARY`` names a file, the closing summary is appended
to it as Markdown (``append_step_summary``, ``markdown_table``, ``markdown_text``).
Nothing else in the tree writes workflow commands; both variables are read here, where
they are used. Escaping follows GitHub's workflow-command rules: ``%``, ``\\r`` and ``\\n``
in a message, and ``:`` and ``,`` too in a property.
"""

from __future__ import annotations

import html
import os
from collections.abc import Collection, Sequence
from pathlib import Path

from repromatrix.textsafe import printable

GROUP_END = "::endgroup::"


def on_github_actions() -> bool:
    """True inside a GitHub Actions job (its runner sets ``GITHUB_ACTIONS=true``)."""
    return os.environ.get("GITHUB_ACTIONS") == "true"


def escape_data(text: str) -> str:
    """A workflow command's message, escaped so the runner reads it back whole."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value (``title=...``): a message's escapes, ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def group_start(title: str) -> str:
    """The line that opens a folded group of log lines (closed by ``GROUP_END``)."""
    return f"::group::{escape_data(title)}"


def error(message: str, title: str = "") -> str:
    """An ``::error::`` annotation line: shown on the run's page, titled when ``title``."""
    return _annotation("error", message, title)


def warning(message: str, title: str = "") -> str:
    """A ``::warning::`` annotation line: shown on the run's page, titled when ``title``."""
    return _annotation("warning", message, title)


def notice(message: str, title: str = "") -> str:
    """A notice annotation: told on the run's page, never failing it."""
    return _annotation("notice", message, title)


def _annotation(kind: str, message: str, title: str) -> str:
    properties = f" title={escape_property(title)}" if title else ""
    return f"::{kind}{properties}::{escape_data(message)}"


def broken_stack(stack_id: str, reason: str) -> str:
    """The annotation of one stack the run could not build, start or probe, with its reason."""
    return error(reason or "the environment could not be built, started or probed",
                 title=f"broken: {stack_id}")


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]],
                   right: Collection[int] = ()) -> str:
    """A GitHub-flavoured Markdown table; columns numbered in ``right`` align right. Cells are
    one line, their ``|`` and markup escaped (record text is hostile)."""
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(markdown_text(c) for c in cells) + " |"

    rule = ["---:" if n in right else "---" for n in range(len(header))]
    return "\n".join([line(header), "| " + " | ".join(rule) + " |", *map(line, rows)]) + "\n"


def markdown_text(text: str) -> str:
    """Record text for Markdown: one line, its markup and ``|`` escaped (a table cell's rule)."""
    return html.escape(printable(text), quote=False).replace("|", "\\|")


def step_summary_file() -> Path | None:
    """The job's step summary file (``GITHUB_STEP_SUMMARY``), or None outside such a job."""
    name = os.environ.get("GITHUB_STEP_SUMMARY")
    return Path(name) if name else None


def append_step_summary(markdown: str) -> Path | None:
    """Append ``markdown`` to the step summary (appended, as GitHub requires: what earlier
    steps wrote stays); the file written, or None where there is none."""
    path = step_summary_file()
    if path is None:
        return None
    with path.open("a", encoding="utf-8") as out:
        out.write(markdown)
    return path
