"""Requirements: why a stage cannot run here (no CUDA device, a package missing or too old).

Part of the repro protocol (``protocol.py`` re-exports ``requirement_reason``); the lazy
import of the harness's heavier helpers (``helper_module``) lives here too. Standard
library only (torch is imported only to ask about CUDA), Python 3.8+.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
from typing import Any, Optional

from _versions import package_version, version_matches


def _cuda_build_reason(cpu_only: str = "needs a CUDA build of torch; torch %s is CPU-only") -> Optional[str]:
    """Why torch is no CUDA build (``cpu_only``, given its version), None when it is one."""
    try:
        import torch
    except Exception as e:  # pragma: no cover - the runner marks this broken first
        return "torch is not importable: %s" % (e,)
    if getattr(torch.version, "cuda", None) is None:
        return cpu_only % (torch.__version__,)
    return None


def _cuda_reason() -> Optional[str]:
    reason = _cuda_build_reason("no CUDA device: torch %s is a CPU-only build")
    if reason:
        return reason
    import torch
    try:
        if torch.cuda.is_available() and torch.cuda.device_count() > 0:
            return None
    except Exception as e:
        return "no CUDA device: %s" % (str(e).splitlines()[0] if str(e) else type(e).__name__,)
    return "no CUDA device: torch.cuda.is_available() is False"


def helper_module(name: str) -> Any:
    """A ``_*.py`` helper next to this file (imported lazily: most repros never need it)."""
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    return importlib.import_module(name)


def _gpus_reason(spec: str) -> Optional[str]:
    reason = _cuda_reason()
    if reason:
        return reason
    import torch
    n = torch.cuda.device_count()
    return None if version_matches(str(n), spec) else "needs CUDA devices %s, found %d" % (spec, n)


def _import_reason(name: str) -> Optional[str]:
    if name in sys.modules:
        return None
    if package_version(name) is None:
        try:
            if importlib.util.find_spec(name) is None:
                return "%s is not installed" % (name,)
        except Exception:
            return "%s is not installed" % (name,)
    try:
        importlib.import_module(name)
    except Exception as e:
        first = str(e).splitlines()[0] if str(e) else ""
        return "%s is installed but failed to import: %s: %s" % (name, type(e).__name__, first)
    return None


def requirement_reason(req: str) -> Optional[str]:
    """Why requirement ``req`` is unmet (None when it holds).

    Forms: 'cuda' (a usable CUDA device); 'cuda_build' (torch built with CUDA);
    'fake_cuda' (fake CUDA stand-ins work: probed in a child process, since
    a CUDA build alone is not enough, see _isolate.py); 'gpus>=2'; a package name
    ('torch_tensorrt', 'torchvision', 'onnx', 'onnxscript', 'tensorrt', ...), imported to make sure it works;
    a package with a spec ('torch>=2.5', 'torchvision>=0.17').
    """
    m = re.match(r"^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(.*)$", req)
    if not m:
        raise ValueError("bad requirement: %r" % (req,))
    name, spec = m.group(1), m.group(2).strip()
    if name == "cuda" and not spec:
        return _cuda_reason()
    if name == "gpus":
        return _gpus_reason(spec)
    if name == "cuda_build" and not spec:
        return _cuda_build_reason()
    if name == "fake_cuda" and not spec:
        return helper_module("_isolate").fake_cuda_reason()
    if spec:
        have = package_version(name)
        if have is None:
            return "%s is not installed (needs %s%s)" % (name, name, spec)
        if not version_matches(have, spec):
            return "needs %s%s, found %s" % (name, spec, have)
        return None
    return _import_reason(name)
