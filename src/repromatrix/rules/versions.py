"""How versions compare, which ``expect`` rule applies to them, and which package a bug is about.

The one version rule of the host side (``check`` and ``report`` both read it). Versions are
taken from a record's environment probe, falling back to the stack spec; local parts
(``+cu124``, ``.nv24.05``) are dropped and versions sort in PEP 440 order (``normalize_version``).

Where a bug's boundary is concerned (an ``expect`` rule's ``when``, a release that fixes it,
the upgrade past it) a pre-release or dev release of V counts as V (``boundary_version``):
NVIDIA's NGC containers build torch and torch-tensorrt from the release branch shortly
before the release (NGC 24.09/24.10's torch-tensorrt ``2.5.0a0`` has the 2.5 fix, NGC
24.02-24.04's ``2.3.0.dev0`` the 2.3 code), so ``2.14.0a0`` meets ``>=2.14`` and not
``<2.14``, and "fixed in torch 2.14.0" is not said to an environment on ``2.14.0a0``. Every
version falls on one side of a bound. A rule naming a package whose version is unknown does
not apply. (The container side, ``repros/harness/_versions.py``, keeps PEP 440's order for
the signatures and requirements it matches inside a run: what a record says is measured
there, how it is read against a bug's boundary is decided here.)
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.version import InvalidVersion, Version

# what a bug can be about, in the order a rule's ``when`` is read for it
BUG_PACKAGES = ("onnxscript", "onnxruntime", "torch_tensorrt", "torchvision", "torch")
LABELS = {"torch": "torch", "torchvision": "torchvision", "torch_tensorrt": "torch-tensorrt",
          "ngc": "NGC", "python": "Python", "tensorrt": "tensorrt", "onnxscript": "onnxscript",
          "onnxruntime": "onnxruntime"}
# the versions a record's stack is read by (``record_versions``), and the index keeps per record
RECORD_PACKAGES = ("torch", "torchvision", "torch_tensorrt", "ngc", "python", "onnxscript",
                   "onnxruntime")
_RELEASE = re.compile(r"^\s*v?(\d+(?:\.\d+)*)")
_PROBE_SECTIONS = ("packages", "versions")
_OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}


def normalize_version(text: Any) -> Version | None:
    """``2.4.0a0+07cecf4`` -> 2.4.0a0 (local part dropped, pre-release kept);
    ``10.3.0.nv24.05`` -> 10.3.0; junk -> None."""
    if text is None:
        return None
    return _normalized(str(text))


@functools.lru_cache(maxsize=8192)
def _normalized(raw: str) -> Version | None:
    raw = raw.strip()
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


def boundary_version(text: Any) -> Version | None:
    """The version a bug's boundary sees: ``normalize_version``, with a pre-release or dev
    release of V (NGC's ``2.14.0a0``, ``2.3.0.dev0``) counted as V (see the module's doc)."""
    found = normalize_version(text)
    return None if found is None else _as_release(found)


@functools.lru_cache(maxsize=8192)
def _as_release(version: Version) -> Version:
    if version.is_prerelease or version.is_devrelease:
        return Version(version.base_version)
    return version


def plain(text: Any) -> str | None:
    """A version without its local part (``2.5.1+cu124`` -> ``2.5.1``); None and "" are None."""
    return None if text is None or str(text) == "" else str(text).split("+", 1)[0]


def probe_version(env: Any, stack: Any, package: str) -> str | None:
    """The version of ``package`` in a record: env probe first, then the stack spec."""
    return _probe(_mapping(env), _mapping(stack), package)


def record_versions(env: Any, stack: Any) -> tuple[str | None, ...]:
    """The version of each of ``RECORD_PACKAGES`` in a record (``probe_version``, local part
    dropped: ``plain``), in that order."""
    env, stack = _mapping(env), _mapping(stack)  # each record's index row: checked once
    return tuple(plain(_probe(env, stack, p)) for p in RECORD_PACKAGES)


def _mapping(value: Any) -> Mapping[str, Any] | None:
    """``value`` when it is a mapping (a record's JSON is a dict: the cheap test first)."""
    return value if value is not None and isinstance(value, (dict, Mapping)) else None


def _probe(env: Mapping[str, Any] | None, stack: Mapping[str, Any] | None,
           package: str) -> str | None:
    if env is not None:
        found = _lookup(env, package)
        if found:
            return found
    if stack is not None and stack.get(package):
        return str(stack[package])
    return None


_SCALARS = (str, int, float)


def _lookup(env: Mapping[str, Any], package: str) -> str | None:
    value = env.get(package)
    if value is not None and not isinstance(value, _SCALARS) and isinstance(value, (dict, Mapping)):
        value = value.get("version")
    if isinstance(value, _SCALARS) and str(value):
        return str(value)
    for section in _PROBE_SECTIONS:
        inner = env.get(section)
        if inner is not None and isinstance(inner, (dict, Mapping)) \
                and isinstance(inner.get(package), _SCALARS):
            return str(inner[package])
    return None


def when_holds(when: Mapping[str, Any], version_of: Callable[[str], Any]) -> bool:
    """Whether every clause of ``when`` holds for the versions ``version_of`` gives (a package
    name to its version text, None when unknown): a rule's one test, for a record and for an
    environment `repromatrix check` is given."""
    for package, spec in when.items():
        version = boundary_version(version_of(str(package)))
        if version is None:
            return False
        clauses = _clauses(str(spec))
        if clauses is None or not all(_holds(version, clause) for clause in clauses):
            return False
    return True


@functools.lru_cache(maxsize=1024)
def _clauses(spec: str) -> tuple[Specifier, ...] | None:
    try:
        return tuple(SpecifierSet(spec, prereleases=True))
    except InvalidSpecifier:
        return None


def _holds(version: Version, clause: Specifier) -> bool:
    """One clause in PEP 440 order, its bound read as ``boundary_version`` reads a version;
    ``==``/``!=``/``~=``/``===`` as packaging reads them."""
    if clause.operator in _OPS:
        return bool(_OPS[clause.operator](version, _bound(clause.version)))
    return clause.contains(version, prereleases=True)


@functools.lru_cache(maxsize=1024)
def _bound(text: str) -> Version:
    """A clause's version as ``_holds`` compares with it (parsed once: the page's box asks
    every rule of every bug for each combination and upgrade candidate)."""
    return _as_release(Version(text))


def first_rule(rules: Iterable[Mapping[str, Any]], version_of: Callable[[str], Any]
               ) -> Mapping[str, Any] | None:
    """The first ``expect`` rule whose ``when`` holds for the versions ``version_of`` gives."""
    for rule in rules:
        when = rule.get("when") or {}
        if isinstance(when, Mapping) and when_holds(when, version_of):
            return rule
    return None


def when_text(when: Any) -> str:
    """A rule's ``when`` in words: ``torch_tensorrt >=2.4,<2.5, torch <2.6`` or ``always``."""
    if not isinstance(when, Mapping):
        return "always"
    return ", ".join(f"{k} {v}" for k, v in when.items()) or "always"


def key_package(rules: Iterable[Mapping[str, Any]]) -> str:
    """The package a bug is about: the first of onnxscript, onnxruntime, torch-tensorrt,
    torchvision or torch (in that order) that any of its ``expect`` rules turns on (torch
    when they name none): a torch-tensorrt bug whose first rule is on torch is still about
    torch-tensorrt. Every answer that names a fix, a boundary or an axis of the bug names this
    package."""
    named = {str(p) for rule in rules if isinstance(rule.get("when"), (dict, Mapping))
             for p in rule["when"]}
    return next((p for p in BUG_PACKAGES if p in named), "torch")
