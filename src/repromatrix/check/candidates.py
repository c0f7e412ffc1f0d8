"""The combinations an environment could move to, as the compatibility table allows them.

Flow: compat table + the environment -> **check.candidates** -> check.decide. Only
upgrades: each package the environment has stays or moves to a newer release, never an
older one. A pip environment with torch-tensorrt moves along torch-tensorrt releases with a
torch each one requires; without it, along torch releases; torchvision follows torch (the
table's pairing); an ONNX package the environment names (onnxscript, onnxruntime) stays or
moves along its own releases, with any of those, where some bug is about it (``moving``).
An NGC environment moves to later NGC releases. A release whose wheels do
not support the environment's Python, and a torch-tensorrt release the table marks broken,
are left out. Each candidate says which packages change, how many releases they move in
all (``distance``) and the command that installs it. An environment whose torch is a
CUDA (or CPU) build of the PyTorch wheel index (``2.9.1+cu128``) keeps that build: the
command pins it and names its index (as ``engines.images.index_options`` does), or, where
the target torch was never published for it, says so in a shell comment.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from packaging.version import InvalidVersion, Version

from repromatrix.model import ONNX_PACKAGES
from repromatrix.rules.versions import boundary_version, plain

from .decide import AXES

if TYPE_CHECKING:
    from repromatrix.config.compat import CompatTable

NGC_IMAGE = "nvcr.io/nvidia/pytorch:{tag}-py3"
PIP_NAMES = {"torch": "torch", "torchvision": "torchvision", "torch_tensorrt": "torch-tensorrt"}


def candidates(table: CompatTable, env: Mapping[str, Any],
               moving: Collection[str] = ()) -> list[dict[str, Any]]:
    """Every combination ``env`` could upgrade to (the environment itself left out); of the
    ONNX packages, those in ``moving`` (the ones some bug is about) may move too."""
    versions = env["versions"]
    if env.get("kind") == "ngc" and versions.get("ngc"):
        return _ngc(table, str(versions["ngc"]))
    torch = boundary_version(versions.get("torch"))
    if torch is None:
        return []
    python = _python(versions.get("python"))
    known = releases(table)
    torches = [v for v in known["torch"] if _v(v) >= torch
               and (python is None or table.torch[v].python.contains(python))]
    pairs: list[tuple[str, str | None]] = []
    trt_now = boundary_version(versions.get("torch_tensorrt"))
    if trt_now is not None:
        for trt in known["torch_tensorrt"]:
            row = table.torch_tensorrt[trt]
            if _v(trt) < trt_now or row.broken or \
                    (python is not None and not row.python.contains(python)):
                continue
            pairs += [(t, trt) for t in torches if row.torch.contains(_v(t))]
    else:
        pairs += [(t, None) for t in torches]
    out = [_pip(table, known, versions, t, trt, onnx) for t, trt in pairs
           for onnx in _onnx_moves(known, versions, moving)]
    return [c for c in out if c["changes"]]


def _onnx_moves(known: Mapping[str, list[str]], versions: Mapping[str, Any],
                moving: Collection[str]) -> list[dict[str, str]]:
    """The releases the ONNX packages of ``versions`` could have together: each one named
    and in ``moving`` stays or moves to a later release the table knows ({} when none can)."""
    options = []
    for name in ONNX_PACKAGES:
        now = boundary_version(versions.get(name))
        if now is None or name not in moving or not known.get(name):
            continue
        options.append([(name, str(versions[name]))]
                       + [(name, v) for v in known[name] if _v(v) > now])
    return [dict(combo) for combo in itertools.product(*options)]


def releases(table: CompatTable) -> dict[str, list[str]]:
    """Each package's releases the table knows, oldest first (worked out once per table)."""
    made = _RELEASES.get(id(table))
    if made is None or made[0] is not table:
        made = _RELEASES[id(table)] = (table, {
            "torch": table.torch_versions(), "torch_tensorrt": table.trt_versions(),
            "torchvision": sorted({tv for r in table.torch.values() for tv in r.torchvision},
                                  key=_v),
            **{name: list(table.onnx.get(name, ())) for name in ONNX_PACKAGES}})
    return made[1]


_RELEASES: dict[int, tuple[CompatTable, dict[str, list[str]]]] = {}


def _v(text: str) -> Version:
    """A release the table names, parsed (once per text: ``rules.versions``)."""
    found = boundary_version(text)
    assert found is not None, text  # the table's releases are validated when it loads
    return found


def _python(text: Any) -> Version | None:
    try:
        return Version(".".join(str(text).split(".")[:2])) if text else None
    except InvalidVersion:
        return None


def _pip(table: CompatTable, lists: Mapping[str, list[str]], versions: Mapping[str, Any],
         torch: str, trt: str | None, onnx: Mapping[str, str]) -> dict[str, Any]:
    new: dict[str, Any] = {"torch": torch, "torch_tensorrt": trt, **onnx}
    if versions.get("torchvision"):
        paired = table.torch[torch].torchvision
        now = plain(versions["torchvision"])
        new["torchvision"] = now if now in paired else (paired[0] if paired else None)
    changes = [p for p in (*PIP_NAMES, *onnx) if p in new and new[p] is not None
               and boundary_version(new[p]) != boundary_version(versions.get(p))]
    return {"kind": "pip", "versions": {**{p: new.get(p) for p in AXES if p != "ngc"}, **onnx},
            "changes": changes,
            "distance": sum(_steps(lists[p], versions.get(p), new[p]) for p in changes),
            "install": install(table, {p: v for p, v in new.items() if p not in onnx or p in changes},
                               build(table, versions.get("torch")))}


def build(table: CompatTable, torch: Any) -> str | None:
    """The wheel index build of an installed torch (``2.9.1+cu128`` -> ``cu128``), or None for
    PyPI's (no local part, or one that names no index of the table)."""
    local = str(torch or "").partition("+")[2].lower()
    return local if local in table.indexes else None


def install(table: CompatTable, new: Mapping[str, Any], index: str | None) -> str:
    """The ``pip install`` of the versions ``new``; on the PyTorch wheel index ``index`` (its
    build pinned: PyPI stays an extra index for the dependencies) when the target torch was
    published for it, else PyPI's wheels and a comment saying that build does not exist."""
    names = [p for p in (*PIP_NAMES, *ONNX_PACKAGES) if new.get(p)]
    plain_pins = " ".join(f"{PIP_NAMES.get(p, p)}=={new[p]}" for p in names)
    if index is None:
        return f"pip install {plain_pins}"
    rel = table.torch[new["torch"]]
    if index != "cpu" and index not in rel.indexes:
        published = ", ".join(rel.indexes) or "none known"
        return (f"pip install {plain_pins}  # torch {rel.version} has no {index} build "
                f"(its CUDA builds: {published}); this installs PyPI's (CUDA {rel.pypi_cuda})")
    from repromatrix.engines.images import PYPI_INDEX, TORCH_INDEX

    local = {"torch": f"+{index}", "torchvision": f"+{index}"}
    pins = " ".join(f"{PIP_NAMES.get(p, p)}=={new[p]}{local.get(p, '')}" for p in names)
    return f"pip install {pins} --index-url {TORCH_INDEX}/{index} --extra-index-url {PYPI_INDEX}"


def _steps(known: list[str], old: Any, new: str) -> int:
    """How many releases of ``known`` lie after ``old`` up to ``new``."""
    return _steps_between(tuple(known), None if old is None else str(old), new)


@functools.lru_cache(maxsize=4096)
def _steps_between(known: tuple[str, ...], old: str | None, new: str) -> int:
    start = boundary_version(old)
    end = _v(new)
    return max(1, sum(1 for v in known if (start is None or _v(v) > start) and _v(v) <= end))


def _ngc(table: CompatTable, tag: str) -> list[dict[str, Any]]:
    tags = table.ngc_tags()
    if tag not in tags:
        return []
    out = []
    for step, later in enumerate(tags[tags.index(tag) + 1:], start=1):
        rel = table.ngc[later]
        out.append({"kind": "ngc",
                    "versions": {"torch": plain(rel.torch), "torchvision": None,
                                 "torch_tensorrt": plain(rel.torch_tensorrt), "ngc": later},
                    "changes": ["ngc"], "distance": step,
                    "install": f"docker pull {NGC_IMAGE.format(tag=later)}"})
    return out
