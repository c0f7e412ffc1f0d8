"""The real command line in a child process, for tests of what a user sees."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

MEMORY_CAP = 1 << 30  # a run that needs more than 1 GiB to refuse a config is a bug


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def repromatrix(*args: str, env: dict[str, str] | None = None,
                stdin: str | None = None) -> subprocess.CompletedProcess:
    """``python -m repromatrix.cli ARGS`` under a 1 GiB memory cap and a 2-minute limit
    (``stdin``: what is piped in)."""
    return subprocess.run([sys.executable, "-m", "repromatrix.cli", *args], capture_output=True,
                          text=True, timeout=120, preexec_fn=_cap_memory, input=stdin,
                          env={**os.environ, **(env or {})})
