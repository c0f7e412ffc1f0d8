"""The `venv` backend: one uv-built virtual environment per pip stack, reused.

Run stage, no docker: for each stack group, ``uv venv`` + ``uv pip install``
build the stack's environment once under a cache folder keyed by a hash of
what is installed (Python, the pinned requirements, the indexes), then the
repro runner runs in it as a local process (``process.local_process``, like
the `local` engine). A failed install is a failed ``Prepared`` (the run stage
records the stack's cells `broken` with the log's tail); a missing ``uv`` is
an InfraError.

The cache folder is ``$REPROMATRIX_VENV_DIR``, else
``$XDG_CACHE_HOME/repromatrix/venvs`` (``~/.cache/repromatrix/venvs``); uv installs
from its own cache inside it, and ``venv_disk`` keeps both within ``--env-budget``.
An environment whose build did not finish is rebuilt, never used.

The runner keeps the bytecode of what it imports inside the environment (``.pycache``,
``bytecode_env``), even where ``PYTHONDONTWRITEBYTECODE`` is set (CI machines, images):
every stage that runs in a child interpreter imports torch (and torch-tensorrt) again,
and compiling their modules from source each time was about half of a stand-in stage.

With ``--standin tensorrt`` a stack pinning torch-tensorrt is built on the
stand-in lane (``standins.py``): its install spec says so, so it is a different
environment from the one with real TensorRT.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any

from repromatrix import envvars
from repromatrix.errors import EngineUnavailable, UsageError
from repromatrix.model import Note, Preparing, Stack
from repromatrix.paths import cache_dir
from repromatrix.textsafe import file_tail

from . import EngineContext, Prepared, RunnerJob, standins
from .diagnose import explain
from .images import index_options, requirements, wheelhouse_listing
from .indexes import check_indexes, uv_default_index
from .process import LocalProcess, local_process
from .venv_disk import MARKER, EnvDisk, estimate_bytes

INDEX_PROBE_TIMEOUT = 10.0
PYCACHE = ".pycache"  # in an environment: the bytecode of what its runs imported
LOG_TAIL = 3000


def venv_root() -> Path:
    env = envvars.read("REPROMATRIX_VENV_DIR")
    return Path(env) if env else cache_dir() / "venvs"


def install_spec(stack: Stack, settings: Any, standin: tuple[str, ...] = (),
                 harness_dir: Path | None = None) -> dict[str, Any]:
    """Everything that decides what ends up in a stack's environment (``standin``: the
    run's stand-ins, with the harness folder their sources are read from)."""
    local_links = [str(Path(p)) for p in settings.find_links if "://" not in p]
    reqs = requirements(stack, settings)
    spec = {
        "python": stack.python or settings.python,
        "requirements": reqs,
        "index_options": [a for opt in index_options(stack, settings) for a in shlex.split(opt)],
        "find_links": {p: wheelhouse_listing(Path(p)) for p in local_links},
    }
    if harness_dir is not None and standins.applies(stack, standin):
        spec["standins"] = standins.spec(stack, reqs, harness_dir)
    return spec


def spec_key(spec: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


class VenvEngine:
    """Builds (or reuses) a uv environment per pip stack; the runner runs in it."""

    name = "venv"
    stack_kinds = ("pip",)

    def __init__(self, ctx: EngineContext, root: Path | None = None) -> None:
        self.ctx = ctx
        self.root = root or venv_root()
        self._disk: EnvDisk | None = None
        self._lane: tuple[str, ...] | None = None

    @property
    def disk(self) -> EnvDisk:
        """The root's environments and uv cache within --env-budget (measured when first needed)."""
        if self._disk is None:
            self._disk = EnvDisk(self.root, self.ctx.options.env_budget_gb, self.ctx.log)
        return self._disk

    def preflight(self, stacks: Sequence[Stack]) -> None:
        for stack in stacks:
            if stack.kind != "pip":
                raise UsageError(f"--backend venv builds pip stacks only; {stack.id} is a "
                                 f"{stack.kind} stack (use --backend docker or local)")
        if not shutil.which("uv"):
            raise EngineUnavailable("--backend venv needs uv on PATH (pip install uv)")
        if self.lane and not shutil.which("cc"):
            raise EngineUnavailable("--standin tensorrt compiles its native stand-ins with cc: "
                                    "install a C compiler (e.g. apt-get install gcc)")
        if not (self.ctx.harness_dir / "runner.py").is_file():
            raise UsageError(f"{self.ctx.harness_dir}/runner.py is missing: is this a source checkout?")
        to_build = [s for s in stacks if not self._built(self.fingerprint(s)[len("venv:"):])]
        self.disk.check_fits(to_build)
        check_indexes(to_build, self.ctx.settings, where="this machine (where the venvs are built)",
                      optional_extras=True, default_index=uv_default_index(), log=self.ctx.log)

    def fingerprint(self, stack: Stack) -> str:
        """What the environment is built from: known before (and without) building it."""
        return "venv:" + spec_key(self._spec(stack))

    def _spec(self, stack: Stack) -> dict[str, Any]:
        return install_spec(stack, self.ctx.settings, self.lane, self.ctx.harness_dir)

    @property
    def lane(self) -> tuple[str, ...]:
        """The stand-ins this engine builds with (none for the matrix's wish on a GPU host)."""
        if self._lane is None:
            o = self.ctx.options
            self._lane = standins.lane_here(o.standins, o.standins_from_matrix,
                                            standins.gpu_on_host(), self.ctx.log, "venv")
        return self._lane

    def prepare(self, stack: Stack, stop: threading.Event) -> Prepared:
        """The stack's environment, built unless a finished one exists; held (never removed
        by a run) until ``release``."""
        spec = self._spec(stack)
        key = spec_key(spec)
        if spec.get("standins"):
            self.ctx.log(standins.label(stack))
        self.root.mkdir(parents=True, exist_ok=True)
        target = self.root / key
        exe = target / "bin" / "python"
        image = {"tag": f"venv:{key}", "id": str(exe)}
        t0 = time.monotonic()
        lock = self.disk.lock_path(key).open("a")
        fcntl.flock(lock, fcntl.LOCK_SH)  # a finished environment: shared with other runs
        if self._built(key):
            self.disk.hold(key, lock)
            self.ctx.log(Preparing(stack.id, f"reusing environment {target}"))
            return Prepared(stack, ok=True, handle=str(exe), image=image, cached=True)
        fcntl.flock(lock, fcntl.LOCK_UN)
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build per environment at a time
        if self._built(key):  # built meanwhile by another run
            self.disk.hold(key, lock)
            return Prepared(stack, ok=True, handle=str(exe), image=image, cached=True)
        self.disk.make_room(estimate_bytes(stack))
        self.ctx.log(Preparing(stack.id, f"building environment {target} "
                     f"({' '.join(spec['requirements'])})"))
        log_path = self.root / f"{key}.log"
        with self.disk.installing():
            failure = self._build(target, spec, log_path)
        elapsed = time.monotonic() - t0
        if failure:
            lock.close()
            reason = explain(failure[0], failure[1], log_path)
            self.ctx.log(Note(stack.id, f"environment build FAILED: {reason}"))
            return Prepared(stack, ok=False, image=image, reason=reason,
                            log_tail=failure[1], log_path=log_path, duration_s=elapsed)
        (target / MARKER).write_text(json.dumps({"stack": stack.spec(), **spec}, indent=2))
        self.disk.hold(key, lock)
        return Prepared(stack, ok=True, handle=str(exe), image=image, log_path=log_path,
                        duration_s=elapsed)

    def _built(self, key: str) -> bool:
        """Whether the environment ``key`` is finished (its marker written after the install)."""
        target = self.root / key
        return (target / MARKER).is_file() and (target / "bin" / "python").exists()

    def start(self, prepared: Prepared, job: RunnerJob) -> AbstractContextManager[LocalProcess]:
        target = Path(prepared.handle).parent.parent
        env = {**job.env, **bytecode_env(target)}
        if (target / standins.FOLDER / "standins.json").is_file():
            env[standins.ENV] = str(target / standins.FOLDER)
        job = replace(job, env=env)
        return local_process(self.ctx, prepared, job)

    def release(self, prepared: Prepared) -> None:
        """A stack is done with its environment: keep the root within --env-budget."""
        self.disk.release(str((prepared.image or {}).get("tag", "")).removeprefix("venv:"))
        self.disk.make_room()

    def close(self) -> None:
        """Environments are kept (they are the cache, within the budget); holds end."""
        self.disk.close()

    def _build(self, target: Path, spec: dict[str, Any], log_path: Path) -> tuple[str, str] | None:
        uv = shutil.which("uv") or "uv"
        shutil.rmtree(target, ignore_errors=True)
        options = _reachable(spec["index_options"], self.ctx.log)
        links = [a for p in spec["find_links"] for a in ("--find-links", p)]
        python = str(target / "bin" / "python")
        install = [uv, "pip", "install", "--cache-dir", str(self.disk.cache), "--python", python,
                   "--index-strategy", "unsafe-best-match", *options, *links]
        lane = spec.get("standins")
        if lane:
            install += standins.install_options(lane, target)
        steps: list[list[str]] = [
            [uv, "venv", "--quiet", "--cache-dir", str(self.disk.cache), "--python", spec["python"],
             str(target)],
            [*install, *spec["requirements"]],
        ]
        if lane:
            steps += standins.venv_steps(lane, install, python, target, self.ctx.harness_dir)
        timeout = self.ctx.options.build_timeout
        with log_path.open("w") as log:
            for cmd in steps:
                log.write("$ " + shlex.join(cmd) + "\n")
                log.flush()
                try:
                    rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=timeout,
                                        stdin=subprocess.DEVNULL,
                                        env=_uv_env(self.ctx.settings.ca_bundle)).returncode
                except subprocess.TimeoutExpired:
                    return f"environment build timed out after {timeout:g}s", _tail(log_path)
                if rc != 0:
                    return (f"environment build failed: `{shlex.join(cmd[:3])} ...` exited {rc}",
                            _tail(log_path))
        return None


def bytecode_env(target: Path) -> dict[str, str]:
    """The runner's variables for keeping compiled modules in environment ``target``: written
    on first import under ``target/.pycache`` (never beside the repros' own files), read after."""
    return {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(target / PYCACHE)}


def _uv_env(ca_bundle: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if ca_bundle and not env.get("SSL_CERT_FILE"):
        env["SSL_CERT_FILE"] = ca_bundle
    return env


def _reachable(options: list[str], log: Callable[[str], None]) -> list[str]:
    """Drop extra indexes that cannot be reached (pip warns and goes on; uv would stop)."""
    out: list[str] = []
    it = iter(options)
    for opt in it:
        value = next(it, "")
        if opt == "--extra-index-url" and not _index_answers(value):
            log(f"  extra index {value} is unreachable: left out of this install")
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
    return file_tail(path, LOG_TAIL, chars=True)
