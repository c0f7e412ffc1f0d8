"""The repro protocol: stages, signatures, requirements, checks, result file.

Container side of the flow (matrix -> plan -> images -> run -> results ->
report): every repro script in ``repros/`` builds its verdict through this
module, and ``runner.py`` reads what it writes. Standard library only (torch
is only touched through the objects a repro hands in), Python 3.8+.

A repro is a sequence of named **stages**. Each stage runs a function and
ends ``pass`` (completed, every check held), ``fail`` (an exception matched
one of the repro's **signatures**: the known bug), ``error`` (an exception
that matches none: something new), or ``skip`` (a requirement is missing,
with the reason). Stages have a role:

- ``main``: the user's workflow; the cell's verdict is derived from these;
- ``workaround``: the documented workaround, reported separately;
- ``info``: supporting evidence (CPU stand-ins with fake CUDA tensors,
  emulations, inspections); shown on the page, never a verdict.

The cell status (``derive_status``, from ``_outcome.py``: the rule's one place) follows
ARCHITECTURE.md: ``fail`` when a main stage matched a signature, else ``error`` when one
failed otherwise, else ``skip`` when one could not run, else ``pass`` only if every main
stage completed and at least one of them checked an output numerically
(``Stage.check_close``). A workflow that merely ran is not a pass.

The result goes to the file named by ``--result PATH`` (or the environment
variable ``REPROMATRIX_RESULT``), rewritten atomically after every stage so
that the runner still knows which stage was running if the process dies.
Nothing is ever parsed from stdout.

Usage in a repro::

    SIGNATURES = [Signature("gpu_id", exc="AttributeError",
                            pattern=r"'torch\\.device' object has no attribute 'gpu_id'")]

    def main(r):
        model = r.stage("compile", compile_fn, requires=["cuda", "torch_tensorrt"])
        r.stage("run", run_fn, model, after=["compile"])

    if __name__ == "__main__":
        protocol.main(META, SIGNATURES, main)
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import sys
import time
import traceback
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

if os.path.dirname(os.path.abspath(__file__)) not in sys.path:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _outcome import BROKEN, CRASH, ERROR, FAIL, PASS, SKIP, TIMEOUT, derive_status, workaround_status  # noqa: E402,F401
from _versions import DISTRIBUTIONS, package_version, release, version_matches, when_matches  # noqa: E402,F401

PROTOCOL_VERSION = 1
TRACEBACK_LIMIT = 4000
RESULT_ENV = "REPROMATRIX_RESULT"

ROLES = ("main", "workaround", "info")

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


# -------------------------------------------------------------- signatures

class Signature:
    """A known bug's fingerprint, as data.

    id       short name recorded in the result when it matches
    exc      exception type name(s), simple ('RuntimeError') or qualified
             ('torch.jit.Error'); any exception in the chain may match
    pattern  regex (or list of regexes, all required) searched in the text of
             the exception chain ('Type: message' lines, ANSI codes removed),
             or, for a signal signature, in the process's output tail
    stage    stage name(s) the signature applies to (None: any stage)
    signal   e.g. 'SIGSEGV': the signature describes a process death
    when     {package: spec}: only on these versions (e.g. {'torch': '<2.13'})
    log      regex (or list, all required) searched in what an isolated stage
             printed (the TensorRT logger reports errors there, not in the
             exception); only isolated stages have that output
    frame    regex searched in the innermost torch-tensorrt frame the exception
             passed through ('torch_tensorrt/ts/_Device.py:66 in _from: <source
             line>'): where the bug is. Only signatures with a frame can match a
             stage that runs on stand-ins (``r.stage(..., standins=[...])``)
    """

    def __init__(self, id: str, exc: Union[str, Sequence[str], None] = None,
                 pattern: Union[str, Sequence[str], None] = None,
                 stage: Union[str, Sequence[str], None] = None,
                 signal: Optional[str] = None, when: Optional[Dict[str, str]] = None,
                 note: str = "", log: Union[str, Sequence[str], None] = None,
                 frame: Optional[str] = None) -> None:
        self.id = id
        self.exc = _tuple(exc)
        self.patterns = _tuple(pattern)
        self.stage = _tuple(stage)
        self.signal = signal
        self.when = dict(when or {})
        self.note = note
        self.logs = _tuple(log)
        self.frame = frame
        for p in self.patterns + self.logs + _tuple(frame):
            re.compile(p)

    def to_dict(self) -> Dict[str, Any]:
        return {"id": self.id, "exc": list(self.exc), "pattern": list(self.patterns),
                "stage": list(self.stage), "signal": self.signal, "when": self.when,
                "note": self.note, "log": list(self.logs), "frame": self.frame}

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> Signature:
        return cls(d["id"], exc=d.get("exc"), pattern=d.get("pattern"), stage=d.get("stage"),
                   signal=d.get("signal"), when=d.get("when"), note=d.get("note", ""),
                   log=d.get("log"), frame=d.get("frame"))

    def _applies(self, stage: Optional[str], versions: Optional[Dict[str, Optional[str]]]) -> bool:
        if self.stage and stage not in self.stage:
            return False
        return when_matches(self.when, versions)

    def _text_matches(self, text: str, log: str = "") -> bool:
        return all(re.search(p, text, re.S) for p in self.patterns) \
            and all(re.search(p, strip_ansi(log), re.S) for p in self.logs)

    def matches_exception(self, exc: BaseException, stage: Optional[str] = None,
                          versions: Optional[Dict[str, Optional[str]]] = None, log: str = "") -> bool:
        """Whether this (non-signal) signature describes ``exc`` raised in ``stage``
        (``log``: what the stage printed, for ``log`` patterns)."""
        if self.signal or not self._applies(stage, versions):
            return False
        if self.exc and not any(_type_matches(e, self.exc) for e in exception_chain(exc)):
            return False
        if self.frame and not re.search(self.frame, raised_in(exc) or ""):
            return False
        return self._text_matches(exception_text(exc), log)

    def matches_text(self, exc_types: Sequence[str], text: str, stage: Optional[str] = None,
                     versions: Optional[Dict[str, Optional[str]]] = None, log: str = "",
                     frame: str = "") -> bool:
        """Match recorded text (type names + message, and the recorded ``raised_in``
        frame) instead of a live exception."""
        if self.signal or not self._applies(stage, versions):
            return False
        if self.frame and not re.search(self.frame, frame):
            return False
        if self.exc and not any(_name_matches(t, self.exc) for t in exc_types):
            return False
        return self._text_matches(strip_ansi(text), log)

    def matches_signal(self, signal_name: str, output: str, stage: Optional[str] = None,
                       versions: Optional[Dict[str, Optional[str]]] = None) -> bool:
        """Whether this signature describes a death by ``signal_name`` with ``output``."""
        if not self.signal or self.signal != signal_name or not self._applies(stage, versions):
            return False
        return self._text_matches(strip_ansi(output))


def _tuple(v: Union[str, Sequence[str], None]) -> Tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, str):
        return (v,)
    return tuple(v)


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def exception_chain(exc: BaseException) -> List[BaseException]:
    """``exc`` and its causes/contexts, outermost first, without cycles."""
    out: List[BaseException] = []
    cur: Optional[BaseException] = exc
    while cur is not None and all(cur is not e for e in out):
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def type_names(exc: BaseException) -> List[str]:
    """Simple and qualified names of the exception's classes (MRO), chain included."""
    names: List[str] = []
    for e in exception_chain(exc):
        for cls in type(e).__mro__:
            names.extend([cls.__name__, "%s.%s" % (cls.__module__, cls.__qualname__)])
    return names


def _type_matches(exc: BaseException, wanted: Tuple[str, ...]) -> bool:
    for cls in type(exc).__mro__:
        if cls.__name__ in wanted or "%s.%s" % (cls.__module__, cls.__qualname__) in wanted:
            return True
    return False


def _name_matches(name: str, wanted: Tuple[str, ...]) -> bool:
    return name in wanted or name.rsplit(".", 1)[-1] in wanted


def exception_text(exc: BaseException) -> str:
    """'module.Type: message' for every exception in the chain, ANSI codes removed."""
    lines = []
    for e in exception_chain(exc):
        cls = type(e)
        lines.append("%s.%s: %s" % (cls.__module__, cls.__qualname__, e))
    return strip_ansi("\n".join(lines))


def raised_in(exc: BaseException, package: str = "torch_tensorrt") -> Optional[str]:
    """'torch_tensorrt/<file>:<line> in <function>: <source line>' of the innermost frame of
    ``package`` the exception (or the first of its chain that has one) passed through."""
    marker = os.sep + package + os.sep
    for e in exception_chain(exc):
        frames = [f for f in traceback.extract_tb(e.__traceback__) if marker in f.filename]
        if frames:
            f = frames[-1]
            where = package + os.sep + f.filename.rsplit(marker, 1)[1]
            return "%s:%s in %s: %s" % (where, f.lineno, f.name, (f.line or "").strip())
    return None


def match_exception(signatures: Iterable[Signature], exc: BaseException, stage: Optional[str] = None,
                    versions: Optional[Dict[str, Optional[str]]] = None,
                    log: str = "") -> Optional[Signature]:
    """The first signature describing ``exc`` in ``stage``, or None."""
    for sig in signatures:
        if sig.matches_exception(exc, stage, versions, log):
            return sig
    return None


def match_signal(signatures: Iterable[Signature], signal_name: str, output: str,
                 stage: Optional[str] = None,
                 versions: Optional[Dict[str, Optional[str]]] = None) -> Optional[Signature]:
    """The first signal signature describing a death by ``signal_name``, or None."""
    for sig in signatures:
        if sig.matches_signal(signal_name, output, stage, versions):
            return sig
    return None


# ------------------------------------------------------------ requirements

class Skip(Exception):
    """Raised inside a stage to end it as ``skip`` with a reason."""


class CheckFailed(AssertionError):
    """A stage's check did not hold (an output differed, a precondition broke)."""


def _cuda_reason() -> Optional[str]:
    try:
        import torch
    except Exception as e:  # pragma: no cover - the runner marks this broken first
        return "torch is not importable: %s" % (e,)
    if getattr(torch.version, "cuda", None) is None:
        return "no CUDA device: torch %s is a CPU-only build" % (torch.__version__,)
    try:
        if torch.cuda.is_available() and torch.cuda.device_count() > 0:
            return None
    except Exception as e:
        return "no CUDA device: %s" % (str(e).splitlines()[0] if str(e) else type(e).__name__,)
    return "no CUDA device: torch.cuda.is_available() is False"


def _cuda_build_reason() -> Optional[str]:
    try:
        import torch
    except Exception as e:  # pragma: no cover - the runner marks this broken first
        return "torch is not importable: %s" % (e,)
    if getattr(torch.version, "cuda", None) is None:
        return "needs a CUDA build of torch; torch %s is CPU-only" % (torch.__version__,)
    return None


def _helper(name: str) -> Any:
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
        return _helper("_isolate").fake_cuda_reason()
    if spec:
        have = package_version(name)
        if have is None:
            return "%s is not installed (needs %s%s)" % (name, name, spec)
        if not version_matches(have, spec):
            return "needs %s%s, found %s" % (name, spec, have)
        return None
    return _import_reason(name)


# ------------------------------------------------------------------ stages

class Stage:
    """One named step: a repro's stage function receives it to record evidence and checks."""

    def __init__(self, name: str, role: str = "main") -> None:
        if role not in ROLES:
            raise ValueError("role must be one of %s" % (ROLES,))
        self.name = name
        self.role = role
        self.status = ""
        self.message = ""
        self.evidence: Dict[str, Any] = {}
        self.checks: List[Dict[str, Any]] = []
        self.signature: Optional[str] = None
        self.traceback = ""
        self.duration_s = 0.0
        self.standins: List[str] = []  # what was stood in while it ran (_standin.py)

    def note(self, key: str, value: Any) -> None:
        """Record a piece of evidence (kept JSON-safe)."""
        self.evidence[key] = _jsonable(value)

    def skip(self, reason: str) -> None:
        raise Skip(reason)

    def require(self, *reqs: str) -> None:
        """Skip this stage unless every requirement holds."""
        for req in reqs:
            reason = requirement_reason(req)
            if reason:
                raise Skip(reason)

    def check(self, condition: Any, what: str, **evidence: Any) -> None:
        """A non-numerical assertion; raises ``CheckFailed`` when it does not hold."""
        ok = bool(condition)
        entry = {"what": what, "ok": ok, "numeric": False}
        entry.update({k: _jsonable(v) for k, v in evidence.items()})
        self.checks.append(entry)
        if not ok:
            raise CheckFailed("check failed: %s %s" % (what, _brief(evidence)))

    def check_close(self, actual: Any, expected: Any, what: str = "output vs eager",
                    rtol: float = 1e-3, atol: float = 1e-4) -> float:
        """Check tensors (or nested tuples/lists of them) agree within tolerance.

        |actual - expected| <= atol + rtol * |expected| elementwise, shapes
        equal. Returns the largest absolute difference.
        """
        pairs = list(_flatten_pairs(actual, expected))
        worst, ok, why = 0.0, True, ""
        for a, e in pairs:
            if tuple(a.shape) != tuple(e.shape):
                ok, why = False, "shape %s != %s" % (tuple(a.shape), tuple(e.shape))
                break
            a32, e32 = a.detach().float().cpu(), e.detach().float().cpu()
            diff = (a32 - e32).abs()
            if diff.numel():
                worst = max(worst, float(diff.max().item()))
                if not bool((diff <= atol + rtol * e32.abs()).all().item()):
                    ok, why = False, "values differ beyond tolerance"
        entry = {"what": what, "ok": ok and bool(pairs), "numeric": True, "tensors": len(pairs),
                 "max_abs_diff": worst, "rtol": rtol, "atol": atol}
        self.checks.append(entry)
        if not pairs:
            raise CheckFailed("check_close(%s): no tensors to compare" % (what,))
        if not ok:
            raise CheckFailed("check_close(%s): %s (max abs diff %.3g, rtol %g, atol %g)"
                              % (what, why, worst, rtol, atol))
        return worst

    @property
    def checked_numerically(self) -> bool:
        return any(c["numeric"] and c["ok"] for c in self.checks)

    def to_dict(self) -> Dict[str, Any]:
        d = {"name": self.name, "role": self.role, "status": self.status,
             "duration_s": round(self.duration_s, 3), "message": self.message,
             "evidence": self.evidence, "checks": self.checks, "standins": list(self.standins)}
        if self.signature:
            d["signature"] = self.signature
        return d


def _flatten_pairs(a: Any, e: Any) -> Iterable[Tuple[Any, Any]]:
    if isinstance(a, (list, tuple)) and isinstance(e, (list, tuple)):
        if len(a) != len(e):
            raise CheckFailed("check_close: %d outputs vs %d expected" % (len(a), len(e)))
        for x, y in zip(a, e):
            for pair in _flatten_pairs(x, y):
                yield pair
    elif isinstance(a, dict) and isinstance(e, dict):
        for k in sorted(e):
            for pair in _flatten_pairs(a.get(k), e[k]):
                yield pair
    elif hasattr(a, "shape") and hasattr(e, "shape"):
        yield a, e
    else:
        raise CheckFailed("check_close: cannot compare %s with %s" % (type(a).__name__, type(e).__name__))


def _brief(evidence: Dict[str, Any]) -> str:
    return ", ".join("%s=%s" % (k, v) for k, v in evidence.items())


def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set)):
        return [_jsonable(x) for x in v]
    return str(v)


# ------------------------------------------------------------------- repro

class Repro:
    """One repro run: runs stages, keeps the result file current."""

    def __init__(self, repro_id: str, signatures: Sequence[Signature] = (),
                 result_path: Optional[str] = None) -> None:
        self.id = repro_id
        self.signatures = list(signatures)
        self.result_path = result_path
        self.stages: List[Stage] = []
        self.first_traceback = ""
        self.started = time.time()
        self.running: Optional[str] = None
        self.running_role = "main"
        self.complete = False
        self.write()

    def stage(self, name: str, fn: Callable[..., Any], *args: Any, requires: Sequence[str] = (),
              after: Sequence[str] = (), role: str = "main", isolate: bool = False,
              standins: Sequence[str] = (), **kwargs: Any) -> Any:
        """Run ``fn(stage, *args, **kwargs)`` as stage ``name``; its return value, or None.

        ``requires`` are checked first (unmet -> skip); ``after`` names stages
        that must have passed (otherwise skip, naming them). ``isolate=True``
        runs the function in a child process (``_isolate.py``): a death by a
        signal is recorded on this stage and the repro goes on. ``standins``
        (e.g. ['tensorrt']) opts the stage into the environment's stand-ins
        (``_standin.py``): it runs isolated, skips where there are none, and only
        signatures with a ``frame`` can match it.
        """
        self._check_log_signatures(name, isolate)
        s = Stage(name, role)
        self.running, self.running_role = name, role
        self.write()
        t0 = time.time()
        value = None
        try:
            self._gate(s, requires, after)
            reason = _helper("_standin").missing_reason(list(standins)) if standins else None
            if reason:
                raise Skip(reason)
        except Skip as e:
            s.status, s.message = SKIP, str(e)
        if not s.status and (isolate or standins):
            s.note("isolated", True)
            try:
                value = _helper("_isolate").run_stage(self, s, fn, args, kwargs,
                                                      standins=bool(standins))
            except Exception as e:  # the stage could not be started in a child
                self._record_exception(s, e)
        elif not s.status:
            value = self.execute(s, fn, args, kwargs)
        s.duration_s = time.time() - t0
        self.stages.append(s)
        self.running = None
        self.write()
        _progress("%s/%s: %s%s" % (self.id, name, s.status, " (%s)" % s.message if s.status != PASS else ""))
        return value if s.status == PASS else None

    def execute(self, s: Stage, fn: Callable[..., Any], args: Sequence[Any], kwargs: Dict[str, Any],
                log_path: Optional[str] = None) -> Any:
        """Run the stage function in this process and record how it ended on ``s``.

        ``log_path``: the file this process's output goes to (isolated
        stages), read for the signatures' ``log`` patterns.
        """
        try:
            value = fn(s, *args, **kwargs)
            s.status = PASS
            s.message = s.message or self._pass_message(s)
            return value
        except Skip as e:
            s.status, s.message = SKIP, str(e)
        except Exception as e:
            self._record_exception(s, e, _helper("_isolate").read_log(log_path) if log_path else "")
        return None

    def _check_log_signatures(self, name: str, isolate: bool) -> None:
        for sig in self.signatures:
            if sig.logs and not isolate and (not sig.stage or name in sig.stage):
                raise ValueError("signature %r matches the output of stage %r, which needs "
                                 "isolate=True to have that output" % (sig.id, name))

    def _gate(self, s: Stage, requires: Sequence[str], after: Sequence[str]) -> None:
        s.require(*requires)
        if "fake_cuda" in requires:
            s.note("fake_cuda_probe", _helper("_isolate").fake_cuda_probe())
        for dep in after:
            prior = self.status_of(dep)
            if prior != PASS:
                raise Skip("needs stage %r to pass (it was %s)" % (dep, prior or "not run"))

    @staticmethod
    def _pass_message(s: Stage) -> str:
        checks = [c["what"] for c in s.checks if c["ok"]]
        return "completed; checked: %s" % ", ".join(checks) if checks else "completed"

    def _record_exception(self, s: Stage, e: Exception, log: str = "") -> None:
        sigs = [x for x in self.signatures if x.frame] if s.standins else self.signatures
        sig = match_exception(sigs, e, s.name, log=log)
        s.status = FAIL if sig else ERROR
        s.signature = sig.id if sig else None
        s.message = _first_line(e)
        root = exception_chain(e)[-1]
        if root is not e:
            s.message += " | caused by " + _first_line(root)
        if sig:
            s.message = "signature %s matched: %s" % (sig.id, s.message)
            for p in sig.logs[:1]:
                m = re.search(r"[^\n]*(?:%s)[^\n]*" % p, strip_ansi(log))
                s.message += " | logged: %s" % m.group(0).strip()[:300] if m else ""
        s.evidence["exception"] = _bounded(exception_text(e), 1500)
        where = raised_in(e)
        if where:
            s.evidence["raised_in"] = where
        s.traceback = _bounded("".join(traceback.format_exception(type(e), e, e.__traceback__)))
        if not self.first_traceback and s.role == "main":
            self.first_traceback = s.traceback

    def status_of(self, name: str) -> Optional[str]:
        for s in self.stages:
            if s.name == name:
                return s.status
        return None

    def stage_by_name(self, name: str) -> Optional[Stage]:
        for s in self.stages:
            if s.name == name:
                return s
        return None

    def result(self) -> Dict[str, Any]:
        stages = [s.to_dict() for s in self.stages]
        status, sig, message = derive_status(stages)
        tb = self.first_traceback
        for s in self.stages:
            if s.role == "main" and s.status in (FAIL, ERROR):
                tb = s.traceback
                break
        return {"protocol_version": PROTOCOL_VERSION, "repro": self.id, "complete": self.complete,
                "running": self.running, "running_role": self.running_role, "status": status,
                "signature": sig, "message": message,
                "workaround": workaround_status(stages), "stages": stages, "traceback": tb,
                "duration_s": round(time.time() - self.started, 3),
                "signatures": [x.to_dict() for x in self.signatures],
                "versions": {k: package_version(k) for k in ("python", "torch", "torchvision",
                                                             "torch_tensorrt", "tensorrt", "onnx")}}

    def write(self) -> None:
        if self.result_path:
            write_json_atomic(self.result_path, self.result())

    def finish(self) -> Dict[str, Any]:
        self.complete = True
        res = self.result()
        if self.result_path:
            write_json_atomic(self.result_path, res)
        return res


def _first_line(e: BaseException) -> str:
    """'Type: first line'; for TorchScript interpreter errors, also the last line (the cause)."""
    lines = [ln for ln in strip_ansi(str(e)).strip().splitlines() if ln.strip()]
    text = lines[0] if lines else ""
    if len(lines) > 1 and "TorchScript interpreter" in text:
        text += " ... " + lines[-1].strip()
    return "%s: %s" % (type(e).__name__, text)


def _bounded(text: str, limit: int = TRACEBACK_LIMIT) -> str:
    return text if len(text) <= limit else "..." + text[-(limit - 3):]


def _progress(line: str) -> None:
    sys.stdout.write("[repro] %s\n" % (line,))
    sys.stdout.flush()


def write_json_atomic(path: str, data: Dict[str, Any]) -> None:
    """Write JSON to ``path`` through a temporary file and ``os.replace``."""
    tmp = "%s.tmp%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True, default=str)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def result_path_from(argv: Sequence[str]) -> Optional[str]:
    """``--result PATH`` from argv, else $REPROMATRIX_RESULT, else None."""
    args = list(argv)
    for i, a in enumerate(args):
        if a == "--result" and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--result="):
            return a.split("=", 1)[1]
    return os.environ.get(RESULT_ENV) or None


def main(meta: Dict[str, Any], signatures: Sequence[Signature], body: Callable[[Repro], None],
         argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of a repro script: run ``body`` and write the result file.

    An exception escaping ``body`` (outside any stage) is recorded as an
    ``error`` stage named 'harness'. The exit code is always 0 once the
    result is written: the status travels in the file.
    """
    r = Repro(meta["id"], signatures, result_path_from(sys.argv[1:] if argv is None else argv))
    try:
        body(r)
    except Exception:
        s = Stage("harness", "main")
        s.status, s.message = ERROR, "exception outside any stage: %s" % (sys.exc_info()[1],)
        s.traceback = _bounded(traceback.format_exc())
        r.first_traceback = r.first_traceback or s.traceback
        r.stages.append(s)
    res = r.finish()
    _progress("%s: %s (%s)" % (r.id, res["status"], res["message"]))
    return 0
