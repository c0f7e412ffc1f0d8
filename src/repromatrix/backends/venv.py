"""The `venv` backend: one uv-built virtual environment per pip stack, reused.

Run stage, no docker: for each stack group, ``uv venv`` + ``uv pip install``
build the stack's environment once under a cache folder keyed by a hash of
what is installed (Python, the pinned requirements, the indexes), then the
repro runner runs in it exactly as with the `local` backend (whose runner
code this reuses). A failed install turns the stack's cells into `broken`
records with the install log's tail; a missing ``uv`` is an InfraError.

The cache folder is ``$REPROMATRIX_VENV_DIR``, else
``$XDG_CACHE_HOME/repromatrix/venvs`` (``~/.cache/repromatrix/venvs``).
An environment whose build did not finish is rebuilt, never used.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import InfraError, UsageError
from ..images import index_options, requirements, wheelhouse_listing
from ..model import Stack, StackGroup
from ..records import broken_records, now_iso
from . import RunContext
from .local import LocalBackend, _GroupRun

MARKER = "repromatrix-venv.json"
INDEX_PROBE_TIMEOUT = 10.0
LOG_TAIL = 3000


def venv_root() -> Path:
    env = os.environ.get("REPROMATRIX_VENV_DIR")
    if env:
        return Path(env)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "repromatrix" / "venvs"


def install_spec(stack: Stack, settings: Any) -> dict[str, Any]:
    """Everything that decides what ends up in a stack's environment."""
    local_links = [str(Path(p)) for p in settings.find_links if "://" not in p]
    return {
        "python": stack.python or settings.python,
        "requirements": requirements(stack, settings),
        "index_options": [a for opt in index_options(stack, settings) for a in shlex.split(opt)],
        "find_links": {p: wheelhouse_listing(Path(p)) for p in local_links},
    }


def spec_key(spec: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


class VenvBackend(LocalBackend):
    """Builds (or reuses) a uv environment per pip stack, then runs the runner in it."""

    name = "venv"

    def __init__(self, root: Path | None = None) -> None:
        super().__init__()
        self.root = root or venv_root()

    def preflight(self, groups: Sequence[StackGroup], ctx: RunContext) -> None:
        for g in groups:
            if g.stack.kind != "pip":
                raise UsageError(f"--backend venv builds pip stacks only; {g.stack.id} is a "
                                 f"{g.stack.kind} stack (use --backend docker or local)")
        if not (ctx.repros_dir / "runner.py").is_file():
            raise UsageError(f"{ctx.repros_dir}/runner.py is missing: is this a source checkout?")

    def fingerprint(self, stack: Stack, ctx: RunContext) -> str:
        """What the environment is built from: known before (and without) building it."""
        return "venv:" + spec_key(install_spec(stack, ctx.settings))

    def run(self, groups: Sequence[StackGroup], ctx: RunContext) -> None:
        uv = shutil.which("uv")
        if not uv:
            raise InfraError("--backend venv needs uv on PATH (pip install uv)")
        for group in groups:
            started = now_iso()
            exe, failure = self.ensure(uv, group.stack, ctx)
            sub = replace(ctx, emit=self._tagged(ctx, exe), python=None)
            if failure:
                ctx.log(f"[{group.stack.id}] broken: environment build failed")
                for rec in broken_records(group, ctx=sub, backend=self.name, image=None,
                                          reason=failure[0], log_tail=failure[1], started_at=started):
                    ctx.emit(rec)
                continue
            _GroupRun(group, sub, exe, self).run()

    def _tagged(self, ctx: RunContext, exe: str | None) -> Callable[[dict[str, Any]], None]:
        def emit(record: dict[str, Any]) -> None:
            record["backend"] = self.name
            if exe:
                record["image"] = {"tag": "venv:" + Path(exe).parents[1].name, "id": exe}
            ctx.emit(record)
        return emit

    def ensure(self, uv: str, stack: Stack, ctx: RunContext) -> tuple[str, tuple[str, str] | None]:
        """The environment's interpreter, built unless a finished one exists;
        on failure ``("", (reason, log tail))``."""
        spec = install_spec(stack, ctx.settings)
        key = spec_key(spec)
        self.root.mkdir(parents=True, exist_ok=True)
        target = self.root / key
        exe = target / "bin" / "python"
        with (self.root / f"{key}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if (target / MARKER).is_file() and exe.exists():
                ctx.log(f"[{stack.id}] reusing environment {target}")
                return str(exe), None
            ctx.log(f"[{stack.id}] building environment {target} ({' '.join(spec['requirements'])})")
            log_path = self.root / f"{key}.log"
            failure = self._build(uv, target, spec, ctx, log_path)
            if failure:
                return "", failure
            (target / MARKER).write_text(json.dumps({"stack": stack.spec(), **spec}, indent=2))
        return str(exe), None

    def _build(self, uv: str, target: Path, spec: dict[str, Any], ctx: RunContext,
               log_path: Path) -> tuple[str, str] | None:
        shutil.rmtree(target, ignore_errors=True)
        options = _reachable(spec["index_options"], ctx)
        links = [a for p in spec["find_links"] for a in ("--find-links", p)]
        steps = [
            [uv, "venv", "--quiet", "--python", spec["python"], str(target)],
            [uv, "pip", "install", "--python", str(target / "bin" / "python"),
             "--index-strategy", "unsafe-best-match", *options, *links, *spec["requirements"]],
        ]
        timeout = ctx.stack_timeout or ctx.settings.stack_timeout
        with log_path.open("w") as log:
            for cmd in steps:
                log.write("$ " + shlex.join(cmd) + "\n")
                log.flush()
                try:
                    rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=timeout,
                                        stdin=subprocess.DEVNULL, env=_uv_env(ctx)).returncode
                except subprocess.TimeoutExpired:
                    return f"environment build timed out after {timeout:g}s", _tail(log_path)
                if rc != 0:
                    return (f"environment build failed: `{shlex.join(cmd[:3])} ...` exited {rc}",
                            _tail(log_path))
        return None


def _uv_env(ctx: RunContext) -> dict[str, str]:
    env = dict(os.environ)
    if ctx.settings.ca_bundle and not env.get("SSL_CERT_FILE"):
        env["SSL_CERT_FILE"] = ctx.settings.ca_bundle
    return env


def _reachable(options: list[str], ctx: RunContext) -> list[str]:
    """Drop extra indexes that cannot be reached (pip warns and goes on; uv would stop)."""
    out: list[str] = []
    it = iter(options)
    for opt in it:
        value = next(it, "")
        if opt == "--extra-index-url" and not _index_answers(value):
            ctx.log(f"  extra index {value} is unreachable: left out of this install")
            continue
        out += [opt, value]
    return out


def _index_answers(url: str) -> bool:
    try:
        request = urllib.request.Request(url, method="HEAD")
        urllib.request.urlopen(request, timeout=INDEX_PROBE_TIMEOUT).close()
    except urllib.error.HTTPError:
        return True  # it answered
    except (OSError, ValueError):
        return False
    return True


def _tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-LOG_TAIL:]
    except OSError:
        return ""
