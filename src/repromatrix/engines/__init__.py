"""The seam between the run stage and the engines that make environments and run the runner.

An *engine* turns a stack into an environment and starts ``repros/harness/runner.py``
in it. The stack's kind decides where that can happen: a ``local`` stack is
always its own interpreter (the ``local`` engine); ``--backend`` chooses the
engine for ``pip`` and ``ngc`` stacks (``docker``, ``venv``, ``local``).

Every engine declares:

- ``preflight(stacks)``: raise ``InfraError``/``UsageError`` before any work;
- ``fingerprint(stack)``: what identifies the environment, without building it
  (an image tag, an install-spec hash, an interpreter and its packages);
- ``prepare(stack, stop)``: build or find the environment (what `repromatrix
  build` calls); a failure is a ``Prepared`` with ``ok=False``, never a raise;
- ``start(prepared, job)``: a context manager around one runner process
  (``RunnerProcess``), which it always tears down on exit;
- ``release(prepared)``: the stack is done with its environment (disk budgets);
- ``close()``: remove what this run left behind.

Engines never build a ``Result``: ``run.watch.watch`` reads the runner's files and
the process's ``EngineFacts`` and makes them, the same way for every engine.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from repromatrix.config.options import ENGINE_NAMES, RunOptions, parse_backend
from repromatrix.errors import UsageError
from repromatrix.model import Say, Settings, Stack
from repromatrix.store.record import EngineFacts

ENGINES: dict[str, str] = {  # the names are config.options.ENGINE_NAMES
    "docker": "repromatrix.engines.docker.engine:DockerEngine",
    "venv": "repromatrix.engines.venv:VenvEngine",
    "local": "repromatrix.engines.local:LocalEngine",
}
assert tuple(ENGINES) == ENGINE_NAMES, "an engine registered here is named in config.options"
__all__ = ["parse_backend"]  # re-exported: callers choose engines by these names


@dataclass(frozen=True)
class EngineContext:
    """What every engine is built with."""

    settings: Settings
    options: RunOptions
    harness_dir: Path  # runner.py, protocol.py and the _*.py helpers (paths.harness_dir())
    repros_dir: Path  # the repro scripts of the matrix's catalog
    run_id: str
    log: Say = print  # plain lines and typed stack events (model.StackEvent)


@dataclass(frozen=True)
class Prepared:
    """A stack's environment, ready to run, or why it is not."""

    stack: Stack
    ok: bool
    handle: str = ""  # an image tag, or an interpreter path
    image: dict[str, Any] | None = None  # the record's `image` field
    reason: str = ""
    log_tail: str = ""
    log_path: Path | None = None
    cached: bool = False
    duration_s: float = 0.0


@dataclass(frozen=True)
class RunnerJob:
    """One runner invocation: which repros, where its files go, on which GPU."""

    repros: tuple[str, ...]
    outdir: Path
    repro_timeout: float
    gpu: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    parallel: int = 1  # repros the runner runs at once

    def runner_args(self, runner: str, out: str, repros_dir: str) -> list[str]:
        at_once = ["--parallel", str(self.parallel)] if self.parallel > 1 else []
        return [runner, "--out", out, "--dir", repros_dir, "--repros", ",".join(self.repros),
                "--timeout", f"{self.repro_timeout:g}", *at_once]


class RunnerProcess(Protocol):
    """A started runner, as the watcher sees it."""

    def poll(self) -> bool:
        """True once the runner has ended."""

    def wait(self, seconds: float) -> None:
        """Return after ``seconds``, or sooner once the runner has ended."""

    def stop(self) -> None:
        """End it now (its whole process tree or container)."""

    def memory_killed(self) -> bool:
        """Whether a memory limit has killed a process of this runner so far."""

    def facts(self, timed_out: bool, limit_s: float) -> EngineFacts:
        """What the engine saw, once it has ended."""


class Engine(Protocol):
    name: str
    stack_kinds: tuple[str, ...]

    def preflight(self, stacks: Sequence[Stack]) -> None: ...

    def fingerprint(self, stack: Stack) -> str: ...

    def prepare(self, stack: Stack, stop: threading.Event) -> Prepared: ...

    def start(self, prepared: Prepared, job: RunnerJob) -> AbstractContextManager[RunnerProcess]: ...

    def release(self, prepared: Prepared) -> None: ...

    def close(self) -> None: ...


def engine_class(name: str) -> type:
    """The class registered as ``name`` (imported on first use)."""
    if name not in ENGINES:
        raise UsageError(f"--backend {name!r}: choose one of {', '.join(ENGINES)}")
    module, _, cls = ENGINES[name].partition(":")
    return getattr(importlib.import_module(module), cls)


def load_engine(name: str, ctx: EngineContext) -> Engine:
    """The engine registered as ``name``, constructed for this run."""
    return engine_class(name)(ctx)
