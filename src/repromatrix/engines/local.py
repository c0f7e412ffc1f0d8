"""The `local` engine: an interpreter that already exists; nothing is built.

A ``local`` stack (``interpreter: /x/python``) always runs here, whatever
``--backend`` says. ``--backend local`` also runs pip/ngc stacks here: the run
stage folds them into one stack ``local`` on ``--python`` (inside an NGC
container you already have, on a GPU box without docker, in CI).

Fingerprint: the interpreter's path and the size and mtime of every installed
distribution's metadata (cheap and exact: no ``import torch``); the runner's
own probe is the one that imports torch, once per stack per run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import subprocess
import sys
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement

from repromatrix.config.catalog import NOT_PACKAGES, package_name, read_repro
from repromatrix.errors import ConfigError, UsageError
from repromatrix.model import Note, Stack
from repromatrix.paths import PACKAGE_DIR

from . import EngineContext, Prepared, RunnerJob
from .interpreter import resolve_python
from .process import LocalProcess, local_process

SITE_TIMEOUT = 60.0
_SITE_SCRIPT = "import json, sys; print(json.dumps([sys.prefix] + sys.path))"
_INSTALLED_SCRIPT = PACKAGE_DIR / "onefile" / "_installed.py"  # run by the stack's interpreter


class LocalEngine:
    """Runs the runner with each stack's own interpreter."""

    name = "local"
    stack_kinds = ("local",)

    def __init__(self, ctx: EngineContext) -> None:
        self.ctx = ctx
        self._paths: dict[str, list[str]] = {}
        self._said: set[tuple[str, str]] = set()  # (stack, interpreter) whose gaps were said

    def interpreter(self, stack: Stack) -> str:
        return resolve_python(stack.interpreter or self.ctx.options.local_python)

    def preflight(self, stacks: Sequence[Stack]) -> None:
        for stack in stacks:
            self.interpreter(stack)
        if not (self.ctx.harness_dir / "runner.py").is_file():
            raise UsageError(f"{self.ctx.harness_dir}/runner.py is missing: is this a source checkout?")

    def fingerprint(self, stack: Stack) -> str:
        exe = self.interpreter(stack)
        return "local:" + exe + ":" + installed_digest(self._sys_path(exe))

    def _sys_path(self, exe: str) -> list[str]:
        if exe not in self._paths:
            self._paths[exe] = interpreter_paths(exe)
        return self._paths[exe]

    def prepare(self, stack: Stack, stop: threading.Event) -> Prepared:
        exe = self.interpreter(stack)
        return Prepared(stack, ok=True, handle=exe, cached=True)

    def start(self, prepared: Prepared, job: RunnerJob) -> AbstractContextManager[LocalProcess]:
        self._say_what_is_missing(prepared, job)
        return local_process(self.ctx, prepared, job)

    def _say_what_is_missing(self, prepared: Prepared, job: RunnerJob) -> None:
        """A local interpreter is used as it is (nothing is installed into it): say which
        packages the job's repros require that it lacks (torchvision and torch-tensorrt
        too), since their stages will skip; once per stack and interpreter."""
        said = (prepared.stack.id, str(prepared.handle))
        if said in self._said:
            return
        self._said.add(said)
        wanted: dict[str, list[str]] = {}  # requirement -> the repros that require it
        for rid in job.repros:
            with contextlib.suppress(ConfigError, OSError):
                for req in read_repro(self.ctx.repros_dir / f"{rid}.py").requires:
                    if package_name(req) not in (*NOT_PACKAGES, "torch"):  # torch: the runner says so
                        wanted.setdefault(req.strip(), []).append(rid)
        missing: dict[str, list[str]] = {}  # package -> the repros whose requirement it fails
        for req in absent_packages(str(prepared.handle), list(wanted)):
            missing.setdefault(package_name(req), []).extend(wanted[req])
        if missing:
            self.ctx.log(Note(prepared.stack.id, "this interpreter lacks " + "; ".join(
                f"{name} (required by {', '.join(dict.fromkeys(rids))})"
                for name, rids in missing.items())
                + ": the stages that need it skip (a local stack is used as it is; install "
                "them into it to run those stages)"))

    def release(self, prepared: Prepared) -> None:
        """Nothing to free: the interpreter is the user's."""

    def close(self) -> None:
        """Nothing outlives a local run: every runner's process group ends with its context."""


def absent_packages(exe: str, requirements: Sequence[str]) -> list[str]:
    """Which of ``requirements`` (PEP 508: ``onnx>=1.16; python_version >= "3.9"``) name a
    distribution the interpreter ``exe`` has not installed, leaving out those whose
    environment marker does not hold there; names compare normalised (``ruamel.yaml``,
    ``ruamel-yaml``). Empty when it cannot tell: the runner's own checks still say so."""
    if not requirements:
        return []
    try:
        proc = subprocess.run([exe, str(_INSTALLED_SCRIPT)], capture_output=True,
                              timeout=SITE_TIMEOUT, stdin=subprocess.DEVNULL, check=False)
        found = json.loads(proc.stdout.decode("utf-8", "replace"))
        installed, env = set(found["installed"]), dict(found["env"])
    except (OSError, subprocess.TimeoutExpired, ValueError, KeyError, TypeError):
        return []
    return [req for req in requirements
            if _applies(req, env) and package_name(req) not in installed]


def _applies(requirement: str, env: dict[str, str]) -> bool:
    """Whether ``requirement``'s environment marker (if any) holds in ``env``; one that
    cannot be read counts as holding."""
    try:
        marker = Requirement(requirement).marker
        return marker is None or marker.evaluate(env)
    except (InvalidRequirement, InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return True


def interpreter_paths(exe: str) -> list[str]:
    """``sys.prefix`` and ``sys.path`` of an interpreter (a plain start: no torch import)."""
    try:
        proc = subprocess.run([exe, "-c", _SITE_SCRIPT], capture_output=True, timeout=SITE_TIMEOUT,
                              stdin=subprocess.DEVNULL, check=False)
        paths = json.loads(proc.stdout.decode("utf-8", "replace"))
    except (OSError, subprocess.TimeoutExpired, ValueError):
        paths = None
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise UsageError(f"--python {exe}: it does not run as a Python interpreter "
                         f"(`{exe} -c 'import sys'` failed)")
    return paths


def installed_digest(paths: Sequence[str]) -> str:
    """A hash of every installed distribution's metadata (name, size, mtime) on ``paths``."""
    h = hashlib.sha256()
    for entry in paths:
        if not entry:
            continue
        folder = Path(entry)
        if not folder.is_dir():
            continue
        for meta in sorted(folder.glob("*.dist-info/METADATA")) + sorted(folder.glob("*.egg-info/PKG-INFO")):
            with contextlib.suppress(OSError):
                st = meta.stat()
                h.update(f"{meta}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    h.update(sys.platform.encode())
    return h.hexdigest()[:16]
