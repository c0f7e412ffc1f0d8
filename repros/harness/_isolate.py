"""Isolated stages and the fake-CUDA probe (not a repro: the name starts with '_').

A stage that can take the process down (fake CUDA tensors, exports or
compiles that reach into CUDA or TensorRT) runs in a child interpreter:
``r.stage(name, fn, ..., isolate=True)``. The child loads the repro script
as a module (its ``if __name__ == "__main__"`` block does not run), calls
``fn(stage, *args, **kwargs)`` with the same signature matching as an
in-process stage, and hands back the stage record and the return value
through a pickle file. Its stdout and stderr (including what C++ code such
as the TensorRT logger prints) go to a file that log signatures
(``Signature(log=...)``) are matched against, and are then copied into the
repro's own output.

A child that dies by a signal leaves no record: the stage becomes ``crash``
(or ``fail`` when a signal signature of that stage matches the output),
with the signal name and the output tail, and the repro goes on, so the
cell's verdict still comes from its main stages.

Rules for isolated stage functions: module-level (no lambdas or closures),
arguments and return value picklable (an unpicklable return value is
dropped and noted). The child runs in the same process group, so the
runner's timeout still kills it.

Standard library only, Python 3.8+.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import pickle
import subprocess
import sys
import tempfile
from typing import Any, Callable, Dict, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
LOG_TAIL = 1500
PROBE_CACHE_ENV = "REPROMATRIX_PROBE_CACHE"

FAKE_CUDA_PROBE = os.path.join(HERE, "_fake_cuda_probe.py")  # run in a child, with or without grad


# ------------------------------------------------------------------ parent

def run_stage(repro: Any, s: Any, fn: Callable[..., Any], args: Tuple[Any, ...],
              kwargs: Dict[str, Any], standins: bool = False) -> Any:
    """Run ``fn(s, *args, **kwargs)`` in a child interpreter and fill ``s`` from it
    (``standins``: on this environment's stand-ins, ``_standin.py``).

    Returns the stage function's value (None unless it passed). Raises
    ValueError for a function the child cannot find by name.
    """
    import protocol

    script, module, qualname = _locate(fn)
    tmp = tempfile.mkdtemp(prefix="repro-stage-")
    job, out, log = (os.path.join(tmp, n) for n in ("job.json", "out.pickle", "output.log"))
    meta = {"script": script, "module": module, "qualname": qualname, "stage": s.name,
            "role": s.role, "repro": repro.id, "sys_path": list(sys.path), "log": log,
            "args": os.path.join(tmp, "args.pickle"), "standins": standins,
            "signatures": [sig.to_dict() for sig in repro.signatures]}
    try:
        with open(meta["args"], "wb") as f:
            pickle.dump((args, kwargs), f)
    except Exception as e:
        _cleanup(tmp)
        raise TypeError("isolated stage %r: its arguments cannot be pickled: %s: %s"
                        % (s.name, type(e).__name__, e)) from e
    with open(job, "w") as f:
        json.dump(meta, f)
    sys.stdout.flush()
    sys.stderr.flush()
    with open(log, "wb") as logf:
        env = _standin_module().child_env() if standins else None
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), job, out], env=env,
                              stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    output = _read(log)
    _echo(s.name, output)
    try:
        with open(out, "rb") as f:
            done = pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError):
        done = None
    finally:
        _cleanup(tmp)
    if done is not None:
        _restore(s, done["stage"])
        if done.get("value_dropped"):
            s.note("return_value_dropped", done["value_dropped"])
        if s.status != protocol.PASS and output.strip():
            s.evidence.setdefault("log_tail", output[-LOG_TAIL:])
        return done.get("value")
    _died(repro, s, proc.returncode, output)
    return None


def _locate(fn: Callable[..., Any]) -> Tuple[str, str, str]:
    qualname = getattr(fn, "__qualname__", "")
    module = getattr(fn, "__module__", None) or ""
    if not qualname or "<" in qualname or module not in sys.modules:
        raise ValueError("an isolated stage needs a module-level function, got %r" % (fn,))
    script = getattr(sys.modules[module], "__file__", None) or ""
    if module == "__main__" and not script:
        raise ValueError("an isolated stage's function must live in a script file")
    return os.path.abspath(script) if script else "", module, qualname


def _standin_module() -> Any:
    return _harness_module("_standin")


def _outcome() -> Any:
    return _harness_module("_outcome")


def _harness_module(name: str) -> Any:
    """A harness module beside this file (this file also runs as a child's script)."""
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    return importlib.import_module(name)


def _restore(s: Any, d: Dict[str, Any]) -> None:
    s.status, s.message = d["status"], d["message"]
    s.standins = list(d.get("standins") or [])
    s.evidence.update(d.get("evidence") or {})
    s.checks.extend(d.get("checks") or [])
    s.signature = d.get("signature")
    s.traceback = d.get("traceback", "")


def _died(repro: Any, s: Any, rc: int, output: str) -> None:
    """The child left no record: a death by signal, or an exit without a result."""
    import protocol

    name = _outcome().signal_name(rc)
    s.evidence["log_tail"] = output[-LOG_TAIL:]
    s.traceback = output[-protocol.TRACEBACK_LIMIT:]
    last = _last_line(output)
    if name:
        s.evidence["signal"] = name
        sig = protocol.match_signal(repro.signatures, name, output, s.name)
        why = "stage process died by %s%s" % (name, ": " + last if last else "")
        s.status = _outcome().ended_status(False, name, sig is not None)
        s.message = "signature %s matched: %s" % (sig.id, why) if sig else why
        s.signature = sig.id if sig else None
    else:
        s.status = _outcome().ended_status(False, None)
        s.message = "stage process exited with code %s without a result%s" % (
            rc, ": " + last if last else "")


def _last_line(output: str) -> str:
    """The most telling line of a dying process's output (C++ 'what():' first)."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ln.startswith("what():"):
            return ln[len("what():"):].strip()[:300]
    lines = [ln for ln in lines if not ln.startswith("frame #")]
    return lines[-1][:300] if lines else ""


def _read(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _echo(name: str, output: str) -> None:
    if output:
        sys.stdout.write("[repro] --- output of isolated stage %s ---\n%s" % (name, output))
        if not output.endswith("\n"):
            sys.stdout.write("\n")
        sys.stdout.write("[repro] --- end of %s ---\n" % (name,))
        sys.stdout.flush()


def _cleanup(tmp: str) -> None:
    for n in os.listdir(tmp):
        try:
            os.remove(os.path.join(tmp, n))
        except OSError:
            pass
    try:
        os.rmdir(tmp)
    except OSError:
        pass


# ------------------------------------------------------------- fake CUDA

_PROBE: Dict[str, Any] = {}


def fake_cuda_probe() -> Dict[str, Any]:
    """Whether fake CUDA stand-ins work here, probed in child processes (never assumed).

    ``{"ok": bool, "reason": str, "with_grad": str}``; cached for the process,
    and across repros in ``$REPROMATRIX_PROBE_CACHE/.fake_cuda_probe.json``
    when the runner sets that directory.
    """
    if _PROBE:
        return _PROBE
    cache = os.environ.get(PROBE_CACHE_ENV)
    path = os.path.join(cache, ".fake_cuda_probe.%s.json" % _exe_key()) if cache else None
    if path and os.path.isfile(path):
        try:
            with open(path) as f:
                _PROBE.update(json.load(f))
            return _PROBE
        except (OSError, ValueError):
            pass
    ok, reason = _probe_child(False)
    result = {"ok": ok, "reason": reason}
    if ok:
        grad_ok, grad_reason = _probe_child(True)
        result["with_grad"] = "ok" if grad_ok else grad_reason
    _PROBE.update(result)
    if path:
        import protocol

        protocol.write_json_atomic(path, result)
    return _PROBE


def _probe_child(grad: bool) -> Tuple[bool, str]:
    try:
        import torch
    except Exception as e:  # pragma: no cover - the runner marks this broken first
        return False, "torch is not importable: %s" % (e,)
    proc = subprocess.run([sys.executable, FAKE_CUDA_PROBE, "with-grad" if grad else "without-grad"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                          timeout=600)
    output = proc.stdout.decode("utf-8", "replace")
    if proc.returncode == 0 and "fake CUDA ok" in output:
        return True, ""
    name = _outcome().signal_name(proc.returncode)
    how = "died by %s" % name if name else "exited with code %s" % proc.returncode
    return False, "fake CUDA probe (torch %s, parameters %s grad) %s: %s" % (
        torch.__version__, "with" if grad else "without", how, _last_line(output))


def _exe_key() -> str:
    import hashlib

    return hashlib.sha256(sys.executable.encode()).hexdigest()[:12]


def fake_cuda_reason() -> Optional[str]:
    """Why the 'fake_cuda' requirement is unmet (None when the probe passed)."""
    probe = fake_cuda_probe()
    return None if probe["ok"] else probe["reason"]


# ------------------------------------------------------------------- child

def _child(job_path: str, out_path: str) -> int:
    with open(job_path) as f:
        job = json.load(f)
    for p in reversed(job["sys_path"]):
        if p not in sys.path:
            sys.path.insert(0, p)
    import protocol

    if job["module"] == "__main__":
        spec = importlib.util.spec_from_file_location("__repro_isolated__", job["script"])
        mod = importlib.util.module_from_spec(spec)
        sys.modules["__repro_isolated__"] = mod
        spec.loader.exec_module(mod)
        sys.modules["__main__"] = mod  # pickled arguments refer to the script as __main__
    else:
        mod = importlib.import_module(job["module"])
    with open(job["args"], "rb") as f:
        args, kwargs = pickle.load(f)
    fn: Any = mod
    for part in job["qualname"].split("."):
        fn = getattr(fn, part)
    sigs = [protocol.Signature.from_dict(d) for d in job["signatures"]]
    r = protocol.Repro(job["repro"], sigs, None)
    s = protocol.Stage(job["stage"], job["role"])
    if job.get("standins"):
        s.standins = _standin_module().activate()
    value = r.execute(s, fn, tuple(args), dict(kwargs), log_path=job["log"])
    done = {"stage": dict(s.to_dict(), traceback=s.traceback), "value": None}
    if s.status == protocol.PASS and value is not None:
        try:
            pickle.dumps(value)
            done["value"] = value
        except Exception as e:
            done["value_dropped"] = "%s: %s" % (type(e).__name__, e)
    tmp = out_path + ".tmp"
    with open(tmp, "wb") as f:
        pickle.dump(done, f)
    os.replace(tmp, out_path)
    return 0


def read_log(path: Optional[str]) -> str:
    """What this process printed so far into ``path`` (C stdio flushed first)."""
    if not path:
        return ""
    sys.stdout.flush()
    sys.stderr.flush()
    flush_c_stdio()
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def flush_c_stdio() -> None:
    """Flush C stdio buffers (C++ iostreams synced with stdio go through them)."""
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except Exception:
        pass


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1], sys.argv[2]))
