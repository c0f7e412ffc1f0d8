"""The environment probe of an interpreter, seen from the host.

Used by `repromatrix env`. The probe itself is
``repros/harness/runner.py --probe``: it runs in the interpreter under test, so the
host never imports torch.
"""

from __future__ import annotations

import json
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
    try:
        proc = subprocess.run([exe, str(runner), "--probe", "-"], capture_output=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"python_executable": exe, "error": f"environment probe timed out after {timeout:g}s"}
    except OSError as exc:
        raise UsageError(f"{label} {python}: cannot run it: {exc.strerror or exc}") from None
    try:
        data = json.loads(proc.stdout.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict):
        return data
    raise UsageError(f"{label} {python}: not a working Python interpreter: the environment probe "
                     f"({runner} --probe) {_how_it_ended(proc.returncode)} and printed "
                     f"{'no JSON' if data is None else 'JSON that is not an object'}; "
                     f"its output ends with:\n{_tail(proc.stdout + proc.stderr)}")


def _how_it_ended(code: int) -> str:
    name = signal_name(code)
    return f"was killed by {name}" if name else f"exited {code}"


def _tail(output: bytes) -> str:
    text = output.decode("utf-8", "replace").strip()
    if not text:
        return "  (nothing)"
    return printable(bounded(text, TAIL_CHARS), newlines=True)
