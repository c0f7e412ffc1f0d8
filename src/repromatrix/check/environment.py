"""The environment `repromatrix check` is asked about, from one of four inputs.

Flow: command line -> **check.environment** -> check.decide. Each input becomes one
plain mapping: ``label``, ``kind`` (``pip``, ``ngc``, ``python``), ``versions`` (torch,
torchvision, torch_tensorrt, ngc, python, tensorrt: the probe's names), ``packages``
(every package it names, by its normalised name), ``complete`` (whether a package it does
not name is absent: true for an interpreter, pins and a requirements file; false for an
NGC release, whose other packages the table does not list) and ``notes`` (lines the
input could not use, said to the user).

- an interpreter (``--python``): the runner's environment probe, run by that interpreter
  in a child process (``engines.interpreter.env_probe``; the host never imports torch);
- pins (``torch==2.4.1 torch-tensorrt==2.4.0``): the packages the bugs depend on, exact;
- a requirements file (``-r``): ``check.requirements``;
- an NGC release (``--ngc 25.01``): the compatibility table's row.

Bad input is a UsageError naming the value (exit 2), before anything else is read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from repromatrix.config.catalog import package_name
from repromatrix.config.compat import CompatError, resolve_ngc
from repromatrix.errors import UsageError, did_you_mean
from repromatrix.textsafe import bounded

from .requirements import read_requirements

# pip's names of the packages the catalog's bugs turn on -> the probe's names
KNOWN = {"torch": "torch", "torchvision": "torchvision", "torch-tensorrt": "torch_tensorrt",
         "tensorrt": "tensorrt", "onnx": "onnx", "onnxscript": "onnxscript",
         "onnxruntime": "onnxruntime", "python": "python"}
_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*===?\s*([^\s;\[\]]+)\s*$")
VERSIONS = ("torch", "torchvision", "torch_tensorrt", "ngc", "python", "tensorrt")


def _environment(label: str, kind: str, packages: Mapping[str, Any], complete: bool,
                 notes: Sequence[str] = (), **versions: Any) -> dict[str, Any]:
    found = {KNOWN[k]: v for k, v in packages.items() if k in KNOWN}
    merged = {name: (versions.get(name) or found.get(name) or None) for name in VERSIONS}
    return {"label": label, "kind": kind, "versions": merged,
            "packages": {k: v for k, v in sorted(packages.items())}, "complete": complete,
            "notes": list(notes)}


def from_pins(pins: Sequence[str]) -> dict[str, Any]:
    """``torch==2.4.1 torch-tensorrt==2.4.0 ...``: exact versions of known packages."""
    packages: dict[str, str] = {}
    for pin in pins:
        pinned = _PIN.match(pin)
        if pinned and not _is_version(pinned.group(2)):
            raise UsageError(f"{bounded(pin, 200)}: {bounded(pinned.group(2), 100)} is not a "
                             f"version (like 2.4.1)")
        try:
            req = Requirement(pin)
        except InvalidRequirement as exc:
            raise UsageError(f"{bounded(pin, 200)}: not a pin like torch==2.4.1 ({exc})") from None
        name = package_name(req.name)
        if name not in KNOWN:
            raise UsageError(f"{bounded(pin, 200)}: {req.name!r} is not a package the catalog's bugs "
                             f"depend on{did_you_mean(name, KNOWN)}; known: {', '.join(KNOWN)}")
        packages[name] = exact_version(req, pin)
    if "torch" not in packages:
        raise UsageError(f"{' '.join(pins)}: pin torch too (torch==VERSION): every bug of the "
                         f"catalog depends on it")
    return _environment(" ".join(pins), "pip", packages, True)


def _is_version(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


def exact_version(req: Requirement, text: str) -> str:
    """The one version ``req`` pins (``==V``, no wildcard); UsageError otherwise."""
    clauses = list(req.specifier)
    if len(clauses) != 1 or clauses[0].operator not in ("==", "===") or "*" in clauses[0].version:
        raise UsageError(f"{bounded(text, 200)}: give one exact version ({req.name}==VERSION), "
                         f"not {str(req.specifier) or 'no version'}")
    return clauses[0].version


def from_requirements(path: Path) -> dict[str, Any]:
    """A requirements file or ``pip freeze`` output; it must pin torch."""
    packages, where, notes = read_requirements(path)
    if "torch" not in packages:
        raise UsageError(f"-r {path}: names no torch: give the environment's requirements "
                         f"(pip freeze > requirements.txt)")
    for name in KNOWN:
        if name in packages and packages[name] is None:
            raise UsageError(f"-r {where[name]}: {name} is not pinned to one version: check "
                             f"needs the versions installed (pip freeze > requirements.txt)")
    return _environment(f"-r {path}", "pip", packages, True, notes)


def from_ngc(tag: str) -> dict[str, Any]:
    """An NGC PyTorch release, as the compatibility table lists it."""
    try:
        rel = resolve_ngc(tag)
    except CompatError as exc:
        raise UsageError(f"--ngc {bounded(tag, 100)}: {exc}") from None
    packages = {"torch": rel.torch, "torch-tensorrt": rel.torch_tensorrt, "tensorrt": rel.tensorrt}
    return _environment(f"NGC PyTorch {rel.tag}", "ngc",
                        {k: v for k, v in packages.items() if v}, False,
                        ["torchvision and the other packages of an NGC release are not in the "
                         "compatibility table: bugs that need them are not ruled out"],
                        ngc=rel.tag, python=rel.python)


def from_probe(python: str, probe: Mapping[str, Any]) -> dict[str, Any]:
    """An interpreter's environment probe (``runner.py --probe``); it must import torch."""
    if probe.get("error") or not probe.get("torch"):
        why = probe.get("error") or "no torch version in its probe"
        raise UsageError(f"--python {python}: has no working torch ({bounded(str(why), 300)}): "
                         f"give the interpreter of the environment to check")
    dists = probe.get("distributions")
    packages = {package_name(k): str(v) for k, v in dists.items()} if isinstance(dists, Mapping) else {}
    for name, key in KNOWN.items():
        if probe.get(key) and isinstance(probe[key], str):
            packages[name] = probe[key]
    ngc = probe.get("ngc") if isinstance(probe.get("ngc"), str) else None
    label = f"{probe.get('python_executable') or python} (Python {probe.get('python')})"
    return _environment(label, "ngc" if ngc else "python", packages, True, ngc=ngc,
                        python=probe.get("python"))
