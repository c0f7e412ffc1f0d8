"""Stage 4: run a plan's stale cells on a backend and append every record to the store.

A cell is re-run only when its cache key changed (environment fingerprint,
repro + protocol + runner source, harness version), when its last record is
`broken` (infrastructure, not a verdict), or when `rerun` is asked for.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from . import __version__
from .backends import Backend, RunContext
from .catalog import source_hashes
from .config import Matrix
from .errors import UsageError
from .model import Plan, Stack, StackGroup, Status

BACKENDS = ("docker", "local", "venv")
RETRY_STATUSES = {Status.BROKEN.value}


@dataclass
class RunSummary:
    run_id: str
    ran: int = 0
    reused: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:6]


def get_backend(name: str) -> Backend:
    if name == "docker":
        from .backends.docker import DockerBackend
        return DockerBackend()
    if name == "local":
        from .backends.local import LocalBackend
        return LocalBackend()
    if name == "venv":
        from .backends.venv import VenvBackend
        return VenvBackend()
    raise UsageError(f"--backend {name!r}: choose one of {', '.join(BACKENDS)}")


def local_plan(plan: Plan, python: str, stack_id: str = "local") -> Plan:
    """Point every selected cell at one interpreter: the `local` backend's plan."""
    repros = tuple(dict.fromkeys(c.repro for c in plan.cells))
    stack = Stack(id=stack_id, kind="local", interpreter=python, repros=repros)
    return Plan((StackGroup(stack, repros),))


def cache_key(fingerprint: str, repro_sha: str) -> str:
    h = hashlib.sha256()
    for part in (fingerprint, repro_sha, __version__):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:32]


def fingerprint(backend: Backend, stack: Stack, ctx: RunContext) -> str:
    """What identifies the environment: the backend's own fingerprint, else the spec."""
    fp = getattr(backend, "fingerprint", None)
    if fp is not None:
        return str(fp(stack, ctx))
    return json.dumps(stack.spec(), sort_keys=True)


def stale_groups(plan: Plan, keys: dict[str, str], latest: dict[str, dict[str, Any]],
                 rerun: bool) -> tuple[list[StackGroup], int]:
    """Groups narrowed to the cells that must run, and how many were reused."""
    groups, reused = [], 0
    for g in plan.groups:
        todo = tuple(c.repro for c in g.cells if rerun or _stale(c.id, keys[c.id], latest))
        reused += len(g.repros) - len(todo)
        if todo:
            groups.append(replace(g, repros=todo))
    return groups, reused


def _stale(cid: str, key: str, latest: dict[str, dict[str, Any]]) -> bool:
    rec = latest.get(cid)
    return rec is None or rec.get("cache_key") != key or rec.get("status") in RETRY_STATUSES


def run_plan(matrix: Matrix, plan: Plan, *, backend_name: str, results_dir: Path,
             rerun: bool = False, python: str | None = None, timeout: float | None = None,
             jobs: int = 1, gpus: Sequence[str] = (), keep: bool = False,
             work_dir: Path | None = None, log: Callable[[str], None] = print) -> RunSummary:
    """Run the stale cells of `plan`; every record is appended as it arrives."""
    from .results import ResultStore, latest_by_cell, load_records

    backend = get_backend(backend_name)
    if backend_name == "local" and (python or any(g.stack.kind != "local" for g in plan.groups)):
        plan = local_plan(plan, python or _default_python())  # local stacks keep their interpreter
    summary = RunSummary(run_id=new_run_id())
    store = ResultStore(results_dir)
    keys: dict[str, str] = {}

    def emit(record: dict[str, Any]) -> None:
        record["cache_key"] = keys.get(record.get("cell", ""), record.get("cache_key"))
        store.append(record)
        summary.records.append(record)
        summary.ran += 1
        st = str(record.get("status"))
        summary.statuses[st] = summary.statuses.get(st, 0) + 1
        log(f"  {record.get('cell')}: {st}" + _why(record))

    ctx = make_context(matrix, run_id=summary.run_id, emit=emit,
                       work_dir=work_dir or results_dir / ".work", repro_timeout=timeout,
                       jobs=jobs, gpus=gpus, keep=keep, python=python, log=log)
    hashes = ctx.repro_hashes
    backend.preflight(plan.groups, ctx)
    for g in plan.groups:
        fp = fingerprint(backend, g.stack, ctx)
        keys.update({c.id: cache_key(fp, hashes.get(c.repro, "")) for c in g.cells})
    latest = latest_by_cell(load_records([results_dir]).records) if results_dir.exists() else {}
    groups, summary.reused = stale_groups(plan, keys, latest, rerun)
    if summary.reused:
        log(f"reusing {summary.reused} recorded cell(s) (unchanged; --rerun to run them again)")
    if groups:
        backend.run(groups, ctx)
    return summary


def make_context(matrix: Matrix, *, work_dir: Path, run_id: str | None = None,
                 emit: Callable[[dict[str, Any]], None] | None = None,
                 repro_timeout: float | None = None, jobs: int = 1, gpus: Sequence[str] = (),
                 keep: bool = False, python: str | None = None,
                 log: Callable[[str], None] = print) -> RunContext:
    """The RunContext every backend (and `repromatrix build`) works with."""
    work_dir.mkdir(parents=True, exist_ok=True)
    return RunContext(run_id=run_id or new_run_id(), settings=matrix.settings,
                      repros_dir=matrix.repros_dir, repro_hashes=source_hashes(matrix.repros_dir),
                      emit=emit or (lambda _record: None), work_dir=work_dir,
                      repro_timeout=repro_timeout, jobs=jobs, gpus=tuple(gpus), keep=keep,
                      python=python, log=log)


def _why(record: dict[str, Any]) -> str:
    msg = str(record.get("message") or "").strip().splitlines()
    return f"  ({msg[0][:120]})" if msg and record.get("status") != Status.PASS.value else ""


def _default_python() -> str:
    return os.environ.get("REPROMATRIX_PYTHON") or "python3"
