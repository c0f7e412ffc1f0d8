"""The environment probe of an interpreter, seen from the host.

Used by `repromatrix env` and `check --run`. The probe itself is
``repros/harness/runner.py --probe``: it runs in the interpreter under test, so the
host never imports torch. ``check --python`` reads only the installed distributions
(``distributions_probe``: importlib.metadata in the interpreter, torch not imported).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from repromatrix.errors import HarnessError, UsageError
from repromatrix.paths import harness_dir as default_harness_dir
from repromatrix.textsafe import bounded, printable, signal_name

PROBE_TIMEOUT = 300.0
TAIL_CHARS = 1500


def resolve_python(python: str) -> str:
    """An interpreter path (``python3`` is looked up on PATH); UsageError if absent."""
    if "/" in python:
        if not Path(python).is_file():
            raise UsageError(f"--python {python}: no such interpreter")
        return python
    found = shutil.which(python)
    if not found:
        raise UsageError(f"--python {python}: not found on PATH")
    return found


def env_probe(python: str, harness_dir: Path | None = None,
              timeout: float = PROBE_TIMEOUT, *, label: str = "--python") -> dict[str, Any]:
    """Run the runner's probe with ``python`` and return it.

    A stack whose torch cannot be imported still yields a probe (with an
    ``error`` key); an interpreter that cannot run at all, crashes or prints
    something other than the probe's JSON object is the user's input, so a
    UsageError (exit 2) whose message starts with ``label`` (the option or
    matrix key the interpreter came from).
    """
    exe = resolve_python(python)
    runner = (harness_dir or default_harness_dir()) / "runner.py"
    if not runner.is_file():
        raise HarnessError(f"{runner} is missing: is this a source checkout?")
    ran = _json_of([exe, str(runner), "--probe", "-"], timeout, f"{label} {python}")
    if ran is None:
        return {"python_executable": exe, "error": f"environment probe timed out after {timeout:g}s"}
    proc, data = ran
    if isinstance(data, dict):
        return data
    raise UsageError(f"{label} {python}: not a working Python interpreter: the environment probe "
                     f"({runner} --probe) {_how_it_ended(proc.returncode)} and printed "
                     f"{'no JSON' if data is None else 'JSON that is not an object'}; "
                     f"its output ends with:\n{_tail(proc.stdout + proc.stderr)}")


def _json_of(command: list[str], timeout: float, named: str
             ) -> tuple[subprocess.CompletedProcess[bytes], Any] | None:
    """Run ``command`` (an interpreter's) and parse what it printed as JSON (None for output
    that is not JSON); None when it overran ``timeout``; a UsageError naming ``named`` when it
    cannot be run."""
    try:
        proc = subprocess.run(command, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None
    except OSError as exc:
        raise UsageError(f"{named}: cannot run it: {exc.strerror or exc}") from None
    try:
        return proc, json.loads(proc.stdout.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return proc, None


def _how_it_ended(code: int) -> str:
    name = signal_name(code)
    return f"was killed by {name}" if name else f"exited {code}"


def _tail(output: bytes) -> str:
    text = output.decode("utf-8", "replace").strip()
    if not text:
        return "  (nothing)"
    return printable(bounded(text, TAIL_CHARS), newlines=True)


# run by the interpreter under test: its installed distributions (name -> version, as pip
# freeze would pin them), its Python and the NGC release it is in; torch is never imported
_DISTRIBUTIONS = r"""
import json, os, re, sys
from importlib import metadata
found = {}
for dist in metadata.distributions():
    try:
        name = dist.metadata["Name"]
    except Exception:
        name = None
    if name:
        found.setdefault(re.sub(r"[-_.]+", "-", name).lower(), dist.version)
json.dump({"python": "%d.%d.%d" % sys.version_info[:3], "python_executable": sys.executable,
           "distributions": found, "ngc": os.environ.get("NVIDIA_PYTORCH_VERSION") or None},
          sys.stdout)
"""
_TENSORRT = ("tensorrt", "tensorrt-cu13", "tensorrt-cu12", "tensorrt-cu11")


def distributions_probe(python: str, timeout: float = 60.0, *, label: str = "--python"
                        ) -> dict[str, Any]:
    """What is installed in ``python``, read by it from its distributions' metadata
    (``importlib.metadata``: no package is imported, a fraction of a second): the probe's keys
    ``check`` reads (python, python_executable, distributions, ngc, torch, torchvision,
    torch_tensorrt, tensorrt, cuda: the CUDA build of torch's local part, ``+cu128`` ->
    12.8; ``error`` when torch is not installed). Bad interpreters as ``env_probe``."""
    exe = resolve_python(python)
    ran = _json_of([exe, "-c", _DISTRIBUTIONS], timeout, f"{label} {python}")
    if ran is None:
        return {"python_executable": exe, "error": f"reading its distributions timed out after "
                                                   f"{timeout:g}s"}
    proc, data = ran
    if not isinstance(data, dict) or not isinstance(data.get("distributions"), dict):
        raise UsageError(f"{label} {python}: not a working Python interpreter: reading its "
                         f"distributions (importlib.metadata) {_how_it_ended(proc.returncode)} "
                         f"and printed no such JSON; its output ends with:\n"
                         f"{_tail(proc.stdout + proc.stderr)}")
    dists = {str(k): str(v) for k, v in data["distributions"].items()}
    data["distributions"] = dists
    for key, name in (("torch", "torch"), ("torchvision", "torchvision"),
                      ("torch_tensorrt", "torch-tensorrt")):
        data[key] = dists.get(name)
    data["tensorrt"] = next((dists[n] for n in _TENSORRT if n in dists), None)
    local = (data["torch"] or "").partition("+")[2]
    cuda = re.fullmatch(r"cu(\d+)(\d)", local)
    data["cuda"] = f"{cuda.group(1)}.{cuda.group(2)}" if cuda else None
    if not data["torch"]:
        data["error"] = "torch is not installed (no torch distribution)"
    return data
