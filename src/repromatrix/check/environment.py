"""The environment `repromatrix check` is asked about, from one of four inputs.

Flow: command line -> **check.environment** -> check.decide. Each input becomes one
plain mapping: ``label``, ``kind`` (``pip``, ``ngc``, ``python``), ``versions`` (torch,
torchvision, torch_tensorrt, ngc, python, tensorrt: the probe's names), ``packages``
(every package it names, by its normalised name), ``complete`` (whether a package it does
not name is absent: true for an inspected interpreter and a complete ``pip freeze``; false
for pins, a partial requirements file and an NGC release, whose other packages the table
does not list), ``inferred`` (a package not given, taken as the table pairs it with what
was given: ``check.known``) and ``notes`` (what the input could not use, what was taken,
said to the user).

- an interpreter (``--python``): its installed distributions, read by that interpreter in
  a child process (``engines.interpreter.distributions_probe``: nothing imported; ``--run``
  uses the runner's full probe, ``env_probe``); the host never imports torch;
- pins (``torch==2.4.1 torch-tensorrt==2.4.0``): the packages the bugs depend on, exact;
  partial: torchvision is taken as the table pairs it, torch from torch-tensorrt's
  requirement when it names one release;
- a requirements file (``-r``, ``-r -`` for standard input): ``check.requirements``; a
  complete ``pip freeze`` when every line pins one version and torch's own requirements
  are listed (``FREEZE_SIGNS``), else partial like pins;
- an NGC release (``--ngc 25.01``): the compatibility table's row.

Bad input is a UsageError naming the value (exit 2), before anything else is read: a
release the table does not know, a combination it rules out (``check.known``).
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
VERSIONS = ("torch", "torchvision", "torch_tensorrt", "ngc", "python", "tensorrt", "onnxscript",
            "onnxruntime")
# what every torch 2.x wheel requires: a pip freeze of an environment with torch lists them
FREEZE_SIGNS = ("filelock", "typing-extensions", "sympy", "networkx", "jinja2")


def _environment(label: str, kind: str, packages: Mapping[str, Any], complete: bool,
                 notes: Sequence[str] = (), fit: str = "", **versions: Any) -> dict[str, Any]:
    """The environment's mapping; ``fit``: "strict" (typed input: a release or combination
    the table rules out is bad input) or "noted" (an interpreter's: said in a note), checked
    and, where partial, filled in by ``check.known``."""
    found = {KNOWN[k]: v for k, v in packages.items() if k in KNOWN}
    merged = {name: (versions.get(name) or found.get(name) or None) for name in VERSIONS}
    inferred: dict[str, str] = dict(versions.get("inferred") or {})
    notes = list(notes)
    if fit:
        from repromatrix.config.compat import load_table

        from .known import fit as fit_table

        more, said = fit_table(merged, load_table(), fit == "strict", not complete)
        inferred.update(more)
        notes += said
    return {"label": label, "kind": kind, "versions": merged,
            "packages": {k: v for k, v in sorted(packages.items())}, "complete": complete,
            "inferred": inferred, "notes": notes}


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
    inferred = {}
    if "torch" not in packages:
        if "torch-tensorrt" not in packages:
            raise UsageError(f"{' '.join(pins)}: pin torch too (torch==VERSION): every bug of "
                             f"the catalog depends on it")
        from repromatrix.config.compat import load_table

        from .known import torch_for

        trt = packages["torch-tensorrt"]
        torch = torch_for(load_table(), trt)
        inferred["torch"] = f"{torch} (the one torch torch-tensorrt {trt} installs with, by the table)"
        return _environment(" ".join(pins), "pip", packages, False,
                            [f"torch not given: taken as {torch}, the release torch-tensorrt {trt} "
                             f"requires by the compatibility table"], "strict", torch=torch,
                            inferred=inferred)
    return _environment(" ".join(pins), "pip", packages, False, fit="strict")


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
    """A requirements file or ``pip freeze`` output (``-`` for standard input); it must pin
    torch. Complete when it reads as a whole ``pip freeze`` (``is_freeze``)."""
    packages, where, notes = read_requirements(path)
    if "torch" not in packages:
        raise UsageError(f"-r {path}: names no torch: give the environment's requirements "
                         f"(pip freeze > requirements.txt)")
    for name in KNOWN:
        if name in packages and packages[name] is None:
            raise UsageError(f"-r {where[name]}: {name} is not pinned to one version: check "
                             f"needs the versions installed (pip freeze > requirements.txt)")
    complete = is_freeze(packages, notes)
    notes.append("read as a complete pip freeze: a package it does not list is not installed"
                 if complete else
                 f"read as partial (a pip freeze pins every line and lists torch's own "
                 f"requirements: {', '.join(FREEZE_SIGNS)}): a package it does not list may "
                 f"be installed")
    return _environment(f"-r {path}", "pip", packages, complete, notes, "strict")


def is_freeze(packages: Mapping[str, str | None], notes: Sequence[str]) -> bool:
    """Whether a requirements file is a whole environment's ``pip freeze``: every line pins
    one version, none was left unread (``-e``, ``-c``, a marker), and torch's own
    requirements are there."""
    return (not notes and all(v for v in packages.values())
            and all(sign in packages for sign in FREEZE_SIGNS))


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
    """An interpreter's probe (``distributions_probe``, or ``runner.py --probe``); it must
    have torch."""
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
    cuda = f", torch's CUDA {probe['cuda']} build" if isinstance(probe.get("cuda"), str) else ""
    label = f"{probe.get('python_executable') or python} (Python {probe.get('python')}{cuda})"
    return _environment(label, "ngc" if ngc else "python", packages, True,
                        fit="" if ngc else "noted", ngc=ngc, python=probe.get("python"))
