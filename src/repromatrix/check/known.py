"""What the compatibility table says of the versions an environment was given.

Flow: check.environment (pins, a requirements file, an interpreter) -> **check.known** ->
the environment's ``versions``, ``inferred`` and ``notes``. Each given torch, torchvision,
torch-tensorrt release is one the table knows (a pre-release of a known release counts as
it: ``rules.versions.boundary_version``); one newer than every release the table knows is
answered with a note (the table may be behind); any other is bad input naming it, with the
closest known releases. A combination the table rules out (torchvision not paired with
torch, torch-tensorrt requiring another torch, a Python without wheels) is bad input too.
For a partial input a package not given is taken as the table pairs it with what was given
(torchvision from torch, when the table pairs exactly one), said in ``inferred`` and a note.
An inspected interpreter is a fact, not a typo: there the same findings are notes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from packaging.version import InvalidVersion, Version

from repromatrix.errors import UsageError, did_you_mean
from repromatrix.rules.versions import LABELS, boundary_version, plain

if TYPE_CHECKING:
    from repromatrix.config.compat import CompatTable

PIP = {"torch": "torch", "torchvision": "torchvision", "torch_tensorrt": "torch-tensorrt",
       "onnxscript": "onnxscript", "onnxruntime": "onnxruntime"}


def closest(value: str, known: list[str]) -> str:
    """' (did you mean "2.4.1"?)': the release with the same digits (2.41 -> 2.4.1), else
    ``errors.did_you_mean``'s."""
    digits = value.replace(".", "")
    same = [k for k in known if k.replace(".", "") == digits]
    return f' (did you mean "{same[-1]}"?)' if same else did_you_mean(value, known)


def fit(versions: dict[str, Any], table: CompatTable, strict: bool, partial: bool
        ) -> tuple[dict[str, str], list[str]]:
    """Check ``versions`` against the table and fill in what a partial input leaves out
    (in place); (inferred: package -> how, notes). ``strict``: a finding is a UsageError
    (typed input), else a note (an interpreter's own versions)."""
    notes: list[str] = []

    def bad(text: str) -> None:
        if strict:
            raise UsageError(text)
        notes.append(f"{text} (as installed: answered anyway)")

    from .candidates import releases

    known = releases(table)
    found = {p: _release(p, versions.get(p), known[p], bad, notes) for p in PIP}
    inferred: dict[str, str] = {}
    if partial and not versions.get("torchvision"):
        paired = table.torch[found["torch"]].torchvision if found["torch"] else ()
        if not found["torch"]:
            notes.append("torchvision not given and the table knows no torch release like "
                         "the one given: bugs that need torchvision cannot tell")
        elif len(paired) == 1:
            versions["torchvision"] = found["torchvision"] = paired[0]
            inferred["torchvision"] = f"{paired[0]} (paired with torch {found['torch']} by the table)"
            notes.append(f"torchvision not given: taken as {paired[0]}, the release the "
                         f"compatibility table pairs with torch {found['torch']}")
        else:
            notes.append(f"torchvision not given and the table pairs torch {found['torch']} with "
                         f"{' or '.join(paired) or 'none'}: bugs that need it cannot tell")
    if partial and not versions.get("torch_tensorrt"):
        notes.append("torch-tensorrt not given: bugs that need it cannot tell (pin it, or "
                     "check the interpreter with --python)")
    _combination(table, found, versions.get("python"), bad)
    trt = found["torch_tensorrt"]
    if trt and table.torch_tensorrt[trt].broken:
        notes.append(f"torch-tensorrt {trt} is marked broken in the compatibility table: "
                     f"{table.torch_tensorrt[trt].broken}")
    return inferred, notes


def _release(package: str, text: Any, known: list[str], bad: Any, notes: list[str]) -> str | None:
    """The table's release ``text`` is (a pre-release counted as its release); None when not
    given or newer than every release the table knows (said in a note)."""
    if not text or not known:
        return None
    version = boundary_version(text)
    by_version = {boundary_version(k): k for k in known}
    if version in by_version:
        return by_version[version]
    given = str(plain(text))
    newest = known[-1]
    hint = closest(given, known)
    typo = any(k.replace(".", "") == given.replace(".", "") for k in known)  # 2.41 for 2.4.1
    if version is not None and version > boundary_version(newest) and not typo:
        notes.append(f"{LABELS[package]} {given} is newer than every release the compatibility "
                     f"table knows (newest {newest}){hint}: the table may be behind; answered "
                     f"from the records and expect rules as they stand")
        return None
    bad(f"{PIP[package]}=={given}: not a {LABELS[package]} release the compatibility table "
        f"knows{hint}; known: {known[0]} .. {newest}")
    return None


def _combination(table: CompatTable, found: Mapping[str, str | None], python: Any,
                 bad: Any) -> None:
    """A combination the table rules out: the finding, naming the values."""
    from repromatrix.config.compat import spec_text

    torch, vision, trt = found["torch"], found["torchvision"], found["torch_tensorrt"]
    if torch and vision and vision not in table.torch[torch].torchvision:
        pairs = " or ".join(table.torch[torch].torchvision) or "none known"
        bad(f"torchvision=={vision} does not install with torch=={torch}: the compatibility "
            f"table pairs torch {torch} with torchvision {pairs}")
    if torch and trt and not table.torch_tensorrt[trt].torch.contains(torch, prereleases=True):
        need = table.torch_tensorrt[trt].torch
        fits = [t for t in table.torch_versions() if need.contains(t)]
        bad(f"torch-tensorrt=={trt} does not install with torch=={torch}: it requires torch "
            f"{spec_text(need)}{f' ({fits[0]} .. {fits[-1]})' if fits else ''}")
    py = _python(python)
    if py is None:
        return
    for what, release in (("torch", torch and table.torch[torch]),
                          ("torch-tensorrt", trt and table.torch_tensorrt[trt])):
        if release and not release.python.contains(py):
            bad(f"python=={python}: {what} {release.version} has no wheels for Python "
                f"{py} (supports {spec_text(release.python)})")


def _python(text: Any) -> Version | None:
    try:
        return Version(".".join(str(text).split(".")[:2])) if text else None
    except InvalidVersion:
        return None


def torch_for(table: CompatTable, trt: str) -> str:
    """The one torch release a torch-tensorrt release installs with; UsageError when the
    table knows several (or none): then torch must be pinned."""
    from .candidates import releases

    found = _release("torch_tensorrt", trt, releases(table)["torch_tensorrt"],
                     _raise, [])
    if found is None:
        raise UsageError(f"torch-tensorrt=={trt}: pin torch too (torch==VERSION)")
    need = table.torch_tensorrt[found].torch
    fits = [t for t in table.torch_versions() if need.contains(t)]
    if len(fits) != 1:
        raise UsageError(f"torch-tensorrt=={trt} installs with torch {' or '.join(fits) or 'none'} "
                         f"known: pin torch too (torch==VERSION)")
    return fits[0]


def _raise(text: str) -> None:
    raise UsageError(text)
