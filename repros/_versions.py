"""Versions for the repro protocol (not a repro: the name starts with '_').

Installed versions of the probe packages (read from metadata, never by
importing them) and PEP 440-style specifiers, the subset repros use:
``>=2.4,<2.5``, ``==0.29.*``, ``~=2.6.0``. ``protocol`` re-exports these
names. Standard library only, Python 3.8+.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from typing import Dict, Optional, Tuple

# distribution names tried, in order, for each probe package name
DISTRIBUTIONS = {
    "torch": ("torch",),
    "torchvision": ("torchvision",),
    "torch_tensorrt": ("torch_tensorrt", "torch-tensorrt"),
    "tensorrt": ("tensorrt", "tensorrt-cu13", "tensorrt-cu12", "tensorrt_cu13_bindings",
                 "tensorrt_cu12_bindings"),
    "onnx": ("onnx",),
    "onnxscript": ("onnxscript",),
    "onnxruntime": ("onnxruntime", "onnxruntime-gpu"),
}


# ---------------------------------------------------------------- versions

def release(version: str) -> Tuple[int, ...]:
    """The numeric release of a version string: '2.4.0a0+07cecf4' -> (2, 4, 0).

    Pre-release, dev and local parts are dropped on purpose: an NGC build of
    torch '2.4.0a0+...' is torch 2.4 for every range a repro declares.
    """
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", version or "")
    if not m:
        raise ValueError("not a version: %r" % (version,))
    return tuple(int(p) for p in m.group(1).split("."))


def _pad(a: Tuple[int, ...], n: int) -> Tuple[int, ...]:
    return a + (0,) * (n - len(a))


def _compare(have: Tuple[int, ...], op: str, want: str) -> bool:
    if op in ("==", "!=") and want.endswith(".*"):
        prefix = release(want[:-2])
        hit = _pad(have, len(prefix))[:len(prefix)] == prefix
        return hit if op == "==" else not hit
    w = release(want)
    n = max(len(have), len(w))
    h, w = _pad(have, n), _pad(w, n)
    if op == "~=":
        base = release(want)
        return h >= w and _pad(have, len(base))[:len(base) - 1] == base[:-1]
    return {"==": h == w, "!=": h != w, ">=": h >= w, "<=": h <= w,
            ">": h > w, "<": h < w}[op]


def version_matches(version: Optional[str], spec: str) -> bool:
    """Whether ``version`` satisfies a PEP 440-style ``spec`` ('>=2.4,<2.5').

    A missing version satisfies nothing (except an empty spec).
    """
    if not spec.strip():
        return True
    if not version:
        return False
    have = release(version)
    for clause in spec.split(","):
        m = re.match(r"\s*(~=|==|!=|>=|<=|>|<)\s*(\S+)\s*$", clause)
        if not m:
            raise ValueError("bad version specifier: %r" % (clause,))
        if not _compare(have, m.group(1), m.group(2)):
            return False
    return True


def package_version(name: str) -> Optional[str]:
    """Installed version of a probe package name, without importing it."""
    if name == "python":
        return platform.python_version()
    if name == "ngc":
        return os.environ.get("NVIDIA_PYTORCH_VERSION") or None
    try:
        from importlib import metadata
    except ImportError:  # pragma: no cover - Python < 3.8
        return None
    for dist in DISTRIBUTIONS.get(name, (name,)):
        try:
            return metadata.version(dist)
        except Exception:
            continue
    mod = sys.modules.get(name)
    return getattr(mod, "__version__", None) if mod else None


def when_matches(when: Optional[Dict[str, str]], versions: Optional[Dict[str, Optional[str]]] = None) -> bool:
    """Whether every ``{package: spec}`` in ``when`` holds for the installed stack."""
    for name, spec in (when or {}).items():
        have = (versions or {}).get(name) if versions and name in versions else package_version(name)
        if not version_matches(have, spec):
            return False
    return True
