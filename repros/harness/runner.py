"""The in-container runner: probe the stack once, run each repro in isolation.

Container side of the run stage. The host (docker or local backend) starts::

    python repros/harness/runner.py --out DIR [--repros id1,id2] [--timeout S] [--dir REPROS]
                                    [--parallel N]
    python repros/harness/runner.py --probe PATH|-        # only the environment probe

and reads back files, never stdout:

- ``DIR/env.json``: the probe (keys below); it has an ``"error"`` key when
  torch could not be imported, and then every repro is recorded ``broken``.
- ``DIR/<repro id>.json`` per repro, as it finishes, written atomically:
  repro, status, stages, signature, workaround, message, traceback,
  duration_s, exit_code, signal (+ log_tail, running).
- ``DIR/<repro id>.log``: the repro's stdout and stderr.

Every repro runs in its own process group with a timeout, ``--parallel`` of them at once
(the host asks for more than one only where no GPU is shared by them). A death by signal
becomes ``crash`` (signal name and output tail attached) unless the repro
declared that death as a signature of the stage that was running (then
``fail``); a hang becomes ``timeout`` (the whole group is killed); a missing
or unreadable result becomes ``error``. One repro's segfault never affects
another's record.

Probe keys: probe_version, python, python_executable, platform, torch,
torch_git, torch_cuda, cudnn, torchvision, torch_tensorrt, tensorrt, onnx,
onnxscript, onnxruntime, cuda_available, cuda_device_count, gpus (name,
capability, memory_gib), gpu, gpu_capability, driver, cuda_driver, ngc,
ngc_env, distributions (every installed distribution: name -> version),
probe_errors, error.

Standard library only; Python 3.8+.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import protocol  # noqa: E402
from _outcome import ended_status, file_tail, signal_name  # noqa: E402

BUILT_IN = os.path.dirname(HERE)  # the built-in repros: the folder this harness sits in
LOG_TAIL = 4000
NGC_VARS = ("NVIDIA_PYTORCH_VERSION", "PYTORCH_VERSION", "PYTORCH_BUILD_VERSION",
            "PYTORCH_BUILD_NUMBER", "NVIDIA_BUILD_ID", "CUDA_VERSION", "CUDA_DRIVER_VERSION",
            "CUDNN_VERSION", "TRT_VERSION", "TENSORRT_VERSION", "NCCL_VERSION",
            "TORCH_CUDA_ARCH_LIST", "NVIDIA_REQUIRE_CUDA")
DEFAULT_TIMEOUT = 600.0
KILL_GRACE_S = 5.0


# ------------------------------------------------------------------- probe

def probe() -> Dict[str, Any]:
    """Describe the stack this interpreter sees. Never raises."""
    env: Dict[str, Any] = {"probe_version": 1, "python": platform.python_version(),
                           "python_executable": sys.executable, "platform": platform.platform(),
                           "machine": platform.machine(), "probe_errors": {}}
    for name in ("torchvision", "torch_tensorrt", "tensorrt", "onnx", "onnxscript", "onnxruntime"):
        env[name] = protocol.package_version(name)
    env["ngc_env"] = {k: os.environ[k] for k in NGC_VARS if k in os.environ}
    env["ngc"] = os.environ.get("NVIDIA_PYTORCH_VERSION") or None
    env["distributions"] = _safe(env, "distributions", _distributions) or {}
    env["standins"] = _safe(env, "standins", _standins)
    _probe_torch(env)
    env["driver"] = _driver_version(env["probe_errors"])
    return env


def _standins() -> Optional[Dict[str, Any]]:
    """The stand-ins the engine made for this environment (None: none; _standin.py)."""
    import _standin

    found = _standin.manifest()
    if found is not None:
        found.pop("log", None)
    return found


def _distributions() -> Dict[str, str]:
    """Every installed distribution, by normalized name (what `pip freeze` would pin)."""
    from importlib import metadata

    out = {}  # type: Dict[str, str]
    for dist in metadata.distributions():
        name = dist.metadata["Name"] if dist.metadata else None
        if name:
            out.setdefault(re.sub(r"[-_.]+", "-", name).lower(), dist.version)
    return dict(sorted(out.items()))


def _probe_torch(env: Dict[str, Any]) -> None:
    try:
        import torch
    except BaseException as e:  # noqa: BLE001 - a broken stack is data
        env["torch"] = protocol.package_version("torch")
        env["error"] = "import torch failed: %s: %s" % (type(e).__name__, e)
        return
    env["torch"] = torch.__version__
    env["torch_git"] = getattr(torch.version, "git_version", None)
    env["torch_cuda"] = getattr(torch.version, "cuda", None)
    env["cudnn"] = _safe(env, "cudnn", lambda: _cudnn(torch))
    env["cuda_available"] = bool(_safe(env, "cuda", torch.cuda.is_available))
    env["cuda_device_count"] = int(_safe(env, "cuda", torch.cuda.device_count) or 0) \
        if env["cuda_available"] else 0
    env["gpus"] = [_gpu(torch, i) for i in range(env["cuda_device_count"])]
    env["gpu"] = env["gpus"][0]["name"] if env["gpus"] else None
    env["gpu_capability"] = env["gpus"][0]["capability"] if env["gpus"] else None
    env["cuda_driver"] = _safe(env, "cuda_driver", _cuda_driver_api) if env["cuda_available"] else None


def _safe(env: Dict[str, Any], key: str, fn: Any) -> Any:
    try:
        return fn()
    except Exception as e:
        env["probe_errors"][key] = "%s: %s" % (type(e).__name__, e)
        return None


def _cudnn(torch: Any) -> Optional[str]:
    v = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    if not v:
        return None
    major, rest = divmod(int(v), 10000) if v >= 10000 else divmod(int(v), 1000)
    minor, patch = divmod(rest, 100)
    return "%d.%d.%d" % (major, minor, patch)


def _gpu(torch: Any, i: int) -> Dict[str, Any]:
    p = torch.cuda.get_device_properties(i)
    return {"index": i, "name": p.name, "capability": "%d.%d" % (p.major, p.minor),
            "memory_gib": round(p.total_memory / 2 ** 30, 1)}


def _cuda_driver_api() -> Optional[str]:
    import ctypes
    lib = ctypes.CDLL("libcuda.so.1")
    v = ctypes.c_int()
    if lib.cuDriverGetVersion(ctypes.byref(v)) != 0:
        return None
    return "%d.%d" % (v.value // 1000, (v.value % 1000) // 10)


def _driver_version(errors: Dict[str, str]) -> Optional[str]:
    try:
        with open("/proc/driver/nvidia/version") as f:
            m = re.search(r"Kernel Module(?: for [^ ]+)?\s+([0-9.]+)", f.read())
            if m:
                return m.group(1)
    except OSError:
        pass
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, timeout=30)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.decode().splitlines()[0].strip()
    except (OSError, subprocess.SubprocessError) as e:
        if not isinstance(e, FileNotFoundError):
            errors["driver"] = str(e)
    return None


def start_probe(out_dir: str) -> subprocess.Popen[bytes]:
    """Probe in a child process (a crashing ``import torch`` must not kill the runner)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--probe", os.path.join(out_dir, "env.json")]
    proc = _spawn(cmd, os.path.join(out_dir, "probe.log"))
    _CURRENT.append(proc)
    return proc


def finish_probe(proc: subprocess.Popen[bytes], out_dir: str, timeout: float) -> Dict[str, Any]:
    """Wait for the probe; a probe that failed leaves an env.json with an "error" key."""
    _CURRENT.remove(proc)
    rc, timed_out = _wait(proc, timeout)
    path = os.path.join(out_dir, "env.json")
    try:
        with open(path) as f:
            env = json.load(f)
    except (OSError, ValueError):
        env = {"python_executable": sys.executable, "python": platform.python_version()}
        why = "timed out after %gs" % timeout if timed_out else "exited with %s" % _describe_rc(rc)
        env["error"] = "environment probe %s: %s" % (why, file_tail(os.path.join(out_dir, "probe.log"), 1500))
        protocol.write_json_atomic(path, env)
    return env


# --------------------------------------------------------------- processes

def _spawn(cmd: List[str], log_path: str, env: Optional[Dict[str, str]] = None) -> subprocess.Popen[bytes]:
    log = open(log_path, "wb")
    try:
        return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
    finally:
        log.close()


_CURRENT: List[subprocess.Popen[bytes]] = []  # the repros running now (one per worker)
_STOPPING = False  # set by SIGTERM: no worker starts another repro


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> tuple[Optional[int], bool]:
    _CURRENT.append(proc)
    try:
        if _STOPPING:  # SIGTERM came between this repro's start and its listing: end it too
            _signal_group(proc.pid, signal.SIGKILL)
        return proc.wait(timeout=timeout), False
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return proc.returncode, True
    finally:
        _CURRENT.remove(proc)


def _on_term(signum: int, frame: Any) -> None:
    """Stopped from outside (stack timeout, Ctrl-C): take the running repros down too."""
    global _STOPPING
    _STOPPING = True
    for proc in list(_CURRENT):
        _signal_group(proc.pid, signal.SIGKILL)
    sys.exit(128 + signum)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the whole process group, SIGKILL it after a grace period."""
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    _signal_group(proc.pid, signal.SIGKILL)  # also children that outlived the leader
    proc.wait()


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _describe_rc(rc: Optional[int]) -> str:
    name = signal_name(rc) if rc is not None and rc < 0 else None
    return "signal %s" % name if name else "exit code %s" % rc


# ------------------------------------------------------------------ repros

def discover(repros_dir: str) -> List[str]:
    """Repro ids in a folder: its top-level ``<id>.py`` files, but its own helpers
    (``_*.py``) and copies of a harness module (this folder's ``*.py``: never used)."""
    harness = set(os.listdir(HERE))
    return sorted(f[:-3] for f in os.listdir(repros_dir)
                  if f.endswith(".py") and not f.startswith("_") and f not in harness)


def run_repro(repro_id: str, repros_dir: str, out_dir: str, timeout: float) -> Dict[str, Any]:
    """Run one repro in its own process group and classify how it ended."""
    script = os.path.join(repros_dir, repro_id + ".py")
    partial = os.path.join(out_dir, ".%s.partial.json" % repro_id)
    log_path = os.path.join(out_dir, repro_id + ".log")
    if not os.path.isfile(script):
        return _bare(repro_id, protocol.ERROR, "no repro script %s" % script)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([HERE] + [p for p in [env.get("PYTHONPATH")] if p])
    env[protocol.RESULT_ENV] = partial
    env["REPROMATRIX_PROBE_CACHE"] = out_dir  # one fake-CUDA probe per run (_isolate.py)
    env.setdefault("PYTHONUNBUFFERED", "1")
    t0 = time.time()
    proc = _spawn([sys.executable, script, "--result", partial], log_path, env)
    rc, timed_out = _wait(proc, timeout)
    result = classify(repro_id, _read_json(partial), rc, timed_out, file_tail(log_path, LOG_TAIL), timeout)
    result["duration_s"] = round(time.time() - t0, 3)
    return result


def _read_json(path: str) -> Optional[Dict[str, Any]]:
    """The result file's content; ``{}`` when it exists but is not a JSON object."""
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError:
        return None
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _bare(repro_id: str, status: str, message: str, **extra: Any) -> Dict[str, Any]:
    out = {"repro": repro_id, "status": status, "stages": [], "signature": None,
           "workaround": None, "message": message, "traceback": "", "duration_s": 0.0,
           "exit_code": None, "signal": None}
    out.update(extra)
    return out


def classify(repro_id: str, partial: Optional[Dict[str, Any]], rc: Optional[int], timed_out: bool,
             log_tail: str, timeout: float) -> Dict[str, Any]:
    """Turn a repro process's end (result file, exit code, output) into one result."""
    sig_name = None if timed_out else signal_name(rc, shell_status=True)  # the script wrapper's 128+N
    base = {"exit_code": rc if (rc is not None and rc >= 0) else None, "signal": sig_name,
            "log_tail": log_tail[-LOG_TAIL:]}
    unreadable = partial is not None and not _valid(partial)
    if unreadable:
        partial = None
    if partial and partial.get("complete"):
        res = dict(partial)
        res.update(base)
        if rc not in (0, None) or timed_out:
            res["message"] = "%s [then the process ended with %s after writing its result]" % (
                res.get("message", ""), "a timeout" if timed_out else _describe_rc(rc))
        return _finalize(res)
    if timed_out:
        why = "killed after the %gs time limit" % timeout
    elif sig_name:
        why = "process died by %s" % sig_name
    elif unreadable:
        why = "the result file could not be parsed (exit code %s)" % rc
    else:
        why = "exited with code %s without a result" % rc if partial is None \
            else "exited with code %s before finishing (result incomplete)" % rc
    return _interrupted(repro_id, partial, base, timed_out, why, sig_name)


def _valid(d: Dict[str, Any]) -> bool:
    return isinstance(d.get("stages"), list) and isinstance(d.get("status"), str) \
        and all(isinstance(s, dict) and "name" in s and "status" in s for s in d["stages"])


def _interrupted(repro_id: str, partial: Optional[Dict[str, Any]], base: Dict[str, Any], timed_out: bool,
                 why: str, sig_name: Optional[str]) -> Dict[str, Any]:
    """A repro that did not finish: attribute the end to the running stage."""
    status = ended_status(timed_out, sig_name)
    stages = list((partial or {}).get("stages") or [])
    running = (partial or {}).get("running")
    matched = None
    if sig_name and partial:
        sigs = [protocol.Signature.from_dict(d) for d in partial.get("signatures") or []]
        matched = protocol.match_signal(sigs, sig_name, base["log_tail"], running,
                                        partial.get("versions"))
    if running:
        stage_status = ended_status(timed_out, sig_name, matched is not None)
        st = {"name": running, "role": _role_hint(partial, running), "status": stage_status,
              "duration_s": 0.0, "message": why, "evidence": {"log_tail": base["log_tail"][-1500:]},
              "checks": []}
        if matched:
            st["signature"] = matched.id
            st["message"] = "signature %s matched: %s" % (matched.id, why)
        stages.append(st)
    res = _bare(repro_id, status, "", stages=stages, running=running, **base)
    res["traceback"] = base["log_tail"]
    if matched:
        res["status"], res["signature"], res["message"] = protocol.derive_status(stages)
    else:
        where = " in stage %r" % running if running else ""
        res["message"] = "%s%s" % (why, where)
    res["workaround"] = protocol.workaround_status(stages)
    return res


def _role_hint(partial: Optional[Dict[str, Any]], running: str) -> str:
    return (partial or {}).get("running_role") or "main"


def _finalize(res: Dict[str, Any]) -> Dict[str, Any]:
    for key in ("signatures", "versions", "complete", "protocol_version", "running_role"):
        res.pop(key, None)
    for key, default in (("traceback", ""), ("signature", None), ("workaround", None),
                         ("message", ""), ("exit_code", None), ("signal", None)):
        res.setdefault(key, default)
    return res


def broken(repro_id: str, reason: str) -> Dict[str, Any]:
    return _bare(repro_id, protocol.BROKEN, reason)


# -------------------------------------------------------------------- main

def run_all(out_dir: str, repros: Sequence[str], repros_dir: str, timeout: float,
            probe_timeout: float = 300.0, parallel: int = 1) -> int:
    """Probe once and run every repro, ``parallel`` at a time (each in its own process
    group, whatever the number); the probe overlaps the first repros (one torch import less
    on the critical path) and is settled before any result is written."""
    os.makedirs(out_dir, exist_ok=True)
    _say("probing the environment with %s" % sys.executable)
    probe_proc = start_probe(out_dir)
    pending = list(reversed(repros))  # popped from the end: the given order
    lock = threading.Lock()
    settled = []  # type: List[Dict[str, Any]]

    def env_now() -> Dict[str, Any]:
        with lock:
            if not settled:
                settled.append(_settle_probe(probe_proc, out_dir, probe_timeout))
            return settled[0]

    def next_repro() -> Optional[str]:
        with lock:
            return pending.pop() if pending and not _STOPPING else None

    def work() -> None:
        repro_id = next_repro()
        while repro_id is not None:
            known = settled[0] if settled else None
            if known is not None and known.get("error"):
                res = broken(repro_id, known["error"])
            else:
                _say("%s: running (timeout %gs)" % (repro_id, timeout))
                res = run_repro(repro_id, repros_dir, out_dir, timeout)
            env = env_now()
            if env.get("error"):
                res = broken(repro_id, env["error"])
            protocol.write_json_atomic(os.path.join(out_dir, repro_id + ".json"), _finalize(res))
            _say("%s: %s (%.1fs) %s" % (repro_id, res["status"], res.get("duration_s") or 0.0,
                                        (res.get("message") or "")[:200]))
            repro_id = next_repro()

    workers = [threading.Thread(target=work, daemon=True)
               for _ in range(max(1, min(parallel, len(repros))))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()  # interruptible: SIGTERM's handler runs here, in the main thread
    env_now()
    return 0


def _settle_probe(proc: subprocess.Popen[bytes], out_dir: str, timeout: float) -> Dict[str, Any]:
    env = finish_probe(proc, out_dir, timeout)
    _say("torch %s, torchvision %s, torch_tensorrt %s, cuda %s" % (
        env.get("torch"), env.get("torchvision"), env.get("torch_tensorrt"),
        env.get("gpu") or "none"))
    return env


def _say(line: str) -> None:
    sys.stdout.write("[runner] %s\n" % line)
    sys.stdout.flush()


def _parse(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Run repros and write one result file per repro.")
    p.add_argument("--out", help="directory for env.json and <repro>.json")
    p.add_argument("--repros", default="", help="comma-separated repro ids (default: all)")
    p.add_argument("--dir", default=BUILT_IN, help="directory holding the repro scripts")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per repro")
    p.add_argument("--parallel", type=int, default=1, help="repros run at once (default 1)")
    p.add_argument("--probe", metavar="PATH", help="only write the probe to PATH ('-': stdout)")
    return p.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parse(argv)
    if args.probe:
        env = probe()
        if args.probe == "-":
            sys.stdout.write(json.dumps(env, indent=1, sort_keys=True) + "\n")
        else:
            protocol.write_json_atomic(args.probe, env)
        return 0
    if not args.out:
        sys.stderr.write("runner: --out DIR is required\n")
        return 2
    signal.signal(signal.SIGTERM, _on_term)
    repros_dir = os.path.abspath(args.dir)
    repros = [r for r in args.repros.split(",") if r] or discover(repros_dir)
    return run_all(os.path.abspath(args.out), repros, repros_dir, args.timeout,
                   parallel=args.parallel)


if __name__ == "__main__":
    sys.exit(main())
