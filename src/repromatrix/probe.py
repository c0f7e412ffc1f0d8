"""The environment probe of an interpreter, seen from the host.

Used by `repromatrix env`. The probe itself is
``repros/runner.py --probe``: it runs in the interpreter under test, so the
host never imports torch.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .errors import HarnessError, UsageError
from .paths import repros_dir as default_repros_dir

PROBE_TIMEOUT = 300.0


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


def env_probe(python: str, repros_dir: Path | None = None,
              timeout: float = PROBE_TIMEOUT) -> dict[str, Any]:
    """Run the runner's probe with ``python`` and return it.

    A stack whose torch cannot be imported still yields a probe (with an
    ``error`` key); an interpreter that cannot run at all raises.
    """
    exe = resolve_python(python)
    runner = (repros_dir or default_repros_dir()) / "runner.py"
    try:
        proc = subprocess.run([exe, str(runner), "--probe", "-"], capture_output=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"python_executable": exe, "error": f"environment probe timed out after {timeout:g}s"}
    except OSError as exc:
        raise UsageError(f"--python {python}: cannot run it: {exc}") from None
    try:
        data = json.loads(proc.stdout.decode("utf-8", "replace"))
    except ValueError:
        tail = (proc.stdout + proc.stderr).decode("utf-8", "replace")[-1500:]
        raise HarnessError(f"the probe of {exe} printed no JSON (exit {proc.returncode}): {tail}") \
            from None
    if not isinstance(data, dict):
        raise HarnessError(f"the probe of {exe} printed {type(data).__name__}, not an object")
    return data
