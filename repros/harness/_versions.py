"""Versions for the repro protocol (not a repro: the name starts with '_').

Installed versions of the probe packages (read from metadata, never by
importing them) and PEP 440 specifiers, the subset repros use:
``>=2.4,<2.5``, ``==0.29.*``, ``~=2.6.0``. Versions are compared in PEP 440
order (release, pre, dev, post; local parts ignored unless the spec names
one): a pre-release is not its release. ``protocol`` re-exports these names.
Standard library only, Python 3.8+.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from typing import Any, Dict, Optional, Tuple

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

_PEP440 = re.compile(
    r"^\s*v?(?:(?P<epoch>\d+)!)?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre_l>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>\d+)?)?"
    r"(?:-(?P<post_n1>\d+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>\d+)?)?"
    r"(?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>\d+)?)?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$", re.IGNORECASE)
_PRE_ORDER = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}
_INF = float("inf")


def release(version: str) -> Tuple[int, ...]:
    """The numeric release of a version string: '2.4.0a0+07cecf4' -> (2, 4, 0)."""
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", version or "")
    if not m:
        raise ValueError("not a version: %r" % (version,))
    return tuple(int(p) for p in m.group(1).split("."))


def sort_key(version: str) -> Tuple[Any, ...]:
    """PEP 440 order: dev < pre (a < b < rc) < the release < post; local parts ignored.

    ``2.5.0a0`` and ``2.5.0.dev0`` sort before ``2.5``, so ``>=2.5`` does not hold
    for them and ``<2.5`` does: an NGC build of a coming release is not that
    release. A string that is not PEP 440 (TensorRT's ``10.3.0.nv24.05``)
    counts as its numeric release.
    """
    m = _PEP440.match(version or "")
    if not m:
        return (0, _trim(release(version)), (_INF,), -_INF, _INF)
    pre_l, post = m.group("pre_l"), m.group("post_n1") or m.group("post_n2")
    has_post = bool(m.group("post_n1") or m.group("post_l"))
    has_dev = bool(m.group("dev_l"))
    if pre_l:
        pre: Tuple[float, ...] = (_PRE_ORDER[pre_l.lower()], int(m.group("pre_n") or 0))
    elif has_dev and not has_post:
        pre = (-_INF,)  # 2.5.0.dev0 sorts before 2.5.0a0
    else:
        pre = (_INF,)
    return (int(m.group("epoch") or 0), _trim(release(m.group("release"))), pre,
            int(post or 0) if has_post else -_INF,
            int(m.group("dev_n") or 0) if has_dev else _INF)


def _trim(rel: Tuple[int, ...]) -> Tuple[int, ...]:
    while len(rel) > 1 and rel[-1] == 0:
        rel = rel[:-1]
    return rel


def _pad(a: Tuple[int, ...], n: int) -> Tuple[int, ...]:
    return a + (0,) * (n - len(a))


def _compare(have: str, op: str, want: str) -> bool:
    if op in ("==", "!=") and want.endswith(".*"):
        prefix = release(want[:-2])
        hit = _pad(release(have), len(prefix))[:len(prefix)] == prefix
        return hit if op == "==" else not hit
    if op == "~=":
        base = release(want)
        if len(base) < 2:
            raise ValueError("~= needs two release parts: %r" % (want,))
        return (sort_key(have) >= sort_key(want)
                and _pad(release(have), len(base))[:len(base) - 1] == base[:-1])
    h, w = sort_key(have), sort_key(want)
    if "+" in want and op in ("==", "!="):  # a local part in the spec must match exactly
        local = have.split("+", 1)[1] if "+" in have else ""
        same = h == w and local.lower() == want.split("+", 1)[1].lower()
        return same if op == "==" else not same
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
    sort_key(version)  # refuses a string with no numeric release
    for clause in spec.split(","):
        m = re.match(r"\s*(~=|==|!=|>=|<=|>|<)\s*(\S+)\s*$", clause)
        if not m:
            raise ValueError("bad version specifier: %r" % (clause,))
        if not _compare(version, m.group(1), m.group(2)):
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
