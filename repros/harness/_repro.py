"""The repro run: runs stages, matches their exceptions, keeps the result file current.

Part of the repro protocol (``protocol.py`` re-exports every public name here and holds
the entry point, ``main``). The result file is rewritten atomically after every stage, so
the runner still knows which stage was running if the process dies; the verdict comes
from ``_outcome.py``. Standard library only, Python 3.8+.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Sequence

from _outcome import ERROR, FAIL, PASS, SKIP, derive_status, workaround_status
from _requirements import helper_module
from _signatures import Signature, exception_chain, exception_text, match_exception, raised_in, strip_ansi
from _stages import Skip, Stage
from _versions import package_version

PROTOCOL_VERSION = 1
TRACEBACK_LIMIT = 4000
RESULT_ENV = "REPROMATRIX_RESULT"


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
            reason = helper_module("_standin").missing_reason(list(standins)) if standins else None
            if reason:
                raise Skip(reason)
        except Skip as e:
            s.status, s.message = SKIP, str(e)
        if not s.status and (isolate or standins):
            s.note("isolated", True)
            try:
                value = helper_module("_isolate").run_stage(self, s, fn, args, kwargs,
                                                      standins=bool(standins))
            except Exception as e:  # the stage could not be started in a child
                self._record_exception(s, e)
        elif not s.status:
            value = self.execute(s, fn, args, kwargs)
        s.duration_s = time.time() - t0
        self.stages.append(s)
        self.running = None
        self.write()
        progress("%s/%s: %s%s" % (self.id, name, s.status, " (%s)" % s.message if s.status != PASS else ""))
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
            self._record_exception(s, e, helper_module("_isolate").read_log(log_path) if log_path else "")
        return None

    def _check_log_signatures(self, name: str, isolate: bool) -> None:
        for sig in self.signatures:
            if sig.logs and not isolate and (not sig.stage or name in sig.stage):
                raise ValueError("signature %r matches the output of stage %r, which needs "
                                 "isolate=True to have that output" % (sig.id, name))

    def _gate(self, s: Stage, requires: Sequence[str], after: Sequence[str]) -> None:
        s.require(*requires)
        if "fake_cuda" in requires:
            s.note("fake_cuda_probe", helper_module("_isolate").fake_cuda_probe())
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
        s.evidence["exception"] = bounded(exception_text(e), 1500)
        where = raised_in(e)
        if where:
            s.evidence["raised_in"] = where
        s.traceback = bounded("".join(traceback.format_exception(type(e), e, e.__traceback__)))
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


def bounded(text: str, limit: int = TRACEBACK_LIMIT) -> str:
    return text if len(text) <= limit else "..." + text[-(limit - 3):]


def progress(line: str) -> None:
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
