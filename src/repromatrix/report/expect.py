"""What a repro's META says should happen on a stack, and whether a record disagrees.

Flow: results -> **expect** -> report. A repro declares rules such as::

    "expect": [{"when": {"torch_tensorrt": ">=2.4,<2.5"}, "status": "fail",
                "note": "fixed in 2.5.0"}]

``when`` keys are probe package names (python, torch, torchvision, torch_tensorrt,
tensorrt, onnx, ngc) with PEP 440 specifiers. The first rule whose every clause
matches applies. Versions are taken from the record's environment probe, falling
back to the stack spec; local parts (``+cu124``, ``.nv24.05``) are dropped and
versions compare in PEP 440 order: a pre-/dev-release (NGC's ``2.5.0a0``) comes
before its release, so ``>=2.5`` does not hold for it and ``<2.5`` does (the
same order as ``repros/harness/_versions.py``; packaging's rule that ``<V`` excludes
pre-releases of V is not used, so every version falls on one side of a bound).
A rule naming a package whose version is unknown does not apply.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from repromatrix.model import Status
from repromatrix.store.record import Result

# Results that say nothing about the bug: they never contradict an expectation.
CANNOT_TELL = frozenset({Status.ERROR.value, Status.TIMEOUT.value, Status.BROKEN.value,
                         Status.SKIP.value})
_RELEASE = re.compile(r"^\s*v?(\d+(?:\.\d+)*)")
_PROBE_SECTIONS = ("packages", "versions")


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


def normalize_version(text: Any) -> Version | None:
    """``2.4.0a0+07cecf4`` -> 2.4.0a0 (local part dropped, pre-release kept);
    ``10.3.0.nv24.05`` -> 10.3.0; junk -> None."""
    if text is None:
        return None
    raw = str(text).strip()
    try:
        return Version(raw.split("+", 1)[0])
    except InvalidVersion:
        pass
    match = _RELEASE.match(raw)
    if not match:
        return None
    try:
        return Version(match.group(1))
    except InvalidVersion:  # pragma: no cover - the regex only admits valid releases
        return None


def probe_version(env: Any, stack: Any, package: str) -> str | None:
    """The version of ``package`` in a record: env probe first, then the stack spec."""
    if isinstance(env, Mapping):
        found = _lookup(env, package)
        if found:
            return found
    if isinstance(stack, Mapping) and stack.get(package):
        return str(stack[package])
    return None


def _lookup(env: Mapping[str, Any], package: str) -> str | None:
    value = env.get(package)
    if isinstance(value, Mapping):
        value = value.get("version")
    if isinstance(value, (str, int, float)) and str(value):
        return str(value)
    for section in _PROBE_SECTIONS:
        inner = env.get(section)
        if isinstance(inner, Mapping) and isinstance(inner.get(package), (str, int, float)):
            return str(inner[package])
    return None


def rule_matches(when: Mapping[str, Any], result: Result) -> bool:
    """Whether every clause of ``when`` holds for the record's versions."""
    return when_holds(when, lambda package: probe_version(result.env, result.stack, package))


def when_holds(when: Mapping[str, Any], version_of: Callable[[str], Any]) -> bool:
    """Whether every clause of ``when`` holds for the versions ``version_of`` gives (a package
    name to its version text, None when unknown): a rule's one test, for a record here and
    for an environment `repromatrix check` is given."""
    for package, spec in when.items():
        version = normalize_version(version_of(str(package)))
        if version is None:
            return False
        try:
            specifier = SpecifierSet(str(spec), prereleases=True)
        except InvalidSpecifier:
            return False
        if not all(_holds(version, clause) for clause in specifier):
            return False
    return True


def _holds(version: Version, clause: Specifier) -> bool:
    """One clause in PEP 440 order; ``==``/``!=``/``~=``/``===`` as packaging reads them."""
    ops = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}
    if clause.operator in ops:
        return bool(ops[clause.operator](version, Version(clause.version)))
    return clause.contains(version, prereleases=True)


def contradicts(expected: str, status: str) -> bool:
    """A decisive result that differs from the expectation (cannot-tell never does)."""
    return status != expected and status not in CANNOT_TELL


def evaluate(rules: Iterable[Mapping[str, Any]], result: Result) -> Expectation | None:
    """The first rule that applies to ``result``, as an Expectation; None if none applies."""
    for rule in rules:
        when = rule.get("when") or {}
        if not isinstance(when, Mapping) or not rule_matches(when, result):
            continue
        expected = str(rule.get("status", ""))
        return Expectation(
            status=expected,
            note=str(rule.get("note", "")),
            when=tuple((str(k), str(v)) for k, v in when.items()),
            contradicted=contradicts(expected, result.status),
        )
    return None


def describe_rules(rules: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Rules as display rows: when (text), status, note."""
    rows = []
    for rule in rules:
        when = rule.get("when") or {}
        text = ", ".join(f"{k} {v}" for k, v in when.items()) if isinstance(when, Mapping) else ""
        rows.append({"when": text or "always", "status": str(rule.get("status", "")),
                     "note": str(rule.get("note", ""))})
    return rows
