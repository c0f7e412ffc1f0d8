"""What a repro's META says should happen on a stack, and whether a record disagrees.

Flow: results -> **expect** -> report. A repro declares rules such as::

    "expect": [{"when": {"torch_tensorrt": ">=2.4,<2.5"}, "status": "fail",
                "note": "fixed in 2.5.0"}]

``when`` keys are probe package names (python, torch, torchvision, torch_tensorrt,
tensorrt, onnx, ngc) with PEP 440 specifiers; the first rule whose every clause matches
applies (``rules.versions``: the one version rule). A record contradicts its rule when it
says the opposite about the bug (``rules.verdict.contradicts``: a record that cannot tell
never does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from repromatrix.rules.verdict import contradicts
from repromatrix.rules.versions import first_rule, probe_version, when_text
from repromatrix.store.record import Result


@dataclass(frozen=True)
class Expectation:
    """The documented outcome for one record, and whether the record contradicts it."""

    status: str
    note: str
    when: tuple[tuple[str, str], ...]
    contradicted: bool

    @property
    def when_text(self) -> str:
        return ", ".join(f"{k} {v}" for k, v in self.when) or "always"


def evaluate(rules: Iterable[Mapping[str, Any]], result: Result) -> Expectation | None:
    """The first rule that applies to ``result``, as an Expectation; None if none applies."""
    rule = first_rule(rules, lambda package: probe_version(result.env, result.stack, package))
    if rule is None:
        return None
    expected = str(rule.get("status", ""))
    return Expectation(
        status=expected,
        note=str(rule.get("note", "")),
        when=tuple((str(k), str(v)) for k, v in (rule.get("when") or {}).items()),
        contradicted=contradicts(expected, result.status, result.evidence_level),
    )


def describe_rules(rules: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Rules as display rows: when (text), status, note."""
    return [{"when": when_text(rule.get("when") or {}), "status": str(rule.get("status", "")),
             "note": str(rule.get("note", ""))} for rule in rules]
