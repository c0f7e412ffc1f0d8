"""Stage 4: run a plan's stale cells and append every Result to the store as it arrives.

Which engine makes a stack's environment is decided by ``engines.choice``: a
``local`` stack always runs its own interpreter; pip/ngc stacks go to
``options.backend``, one engine or a fallback chain (``--backend local`` folds
them into one ``local`` stack on ``--python``). A stack no engine of a chain
can make here is recorded ``skip`` with the reasons. A cell is re-run only when its cache key changed
(environment fingerprint, repro + harness sources, harness version), when its
last record is ``broken`` (infrastructure, not a verdict), or with ``rerun``.
"""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from repromatrix import __version__, paths
from repromatrix.config.catalog import catalog_hashes
from repromatrix.config.flags import rerun_command
from repromatrix.config.matrix import Matrix
from repromatrix.config.options import RunOptions
from repromatrix.engines import EngineContext, Prepared
from repromatrix.engines.choice import UNAVAILABLE_PREFIX, Choice, Engines
from repromatrix.errors import UsageError
from repromatrix.model import Note, Plan, Say, Stack, StackEvent, StackGroup, Status, cell_id
from repromatrix.store.index import CellKey, recorded_keys
from repromatrix.store.record import CellRun, Result, shorten, unavailable_results
from repromatrix.store.results import ResultStore, flaky_counts, locked, prune_work
from repromatrix.textsafe import printable

from .schedule import Scheduler, StackWork, repros_at_once
from .staging import stage_catalog, staged_dir

if TYPE_CHECKING:
    from .progress import RunProgress

RETRY_STATUSES = {Status.BROKEN.value}


@dataclass
class RunSummary:
    run_id: str
    ran: int = 0
    reused: int = 0
    cells: list[str] = field(default_factory=list)  # every planned cell, run or reused
    statuses: dict[str, int] = field(default_factory=dict)
    results: list[Result] = field(default_factory=list)


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:6]


def fold_local(plan: Plan, python: str) -> Plan:
    """`--backend local`: the pip/ngc stacks' repros run as one stack ``local`` on ``python``;
    ``local`` stacks keep their own id and interpreter."""
    own = [g for g in plan.groups if g.stack.kind == "local"]
    folded = tuple(dict.fromkeys(r for g in plan.groups if g.stack.kind != "local" for r in g.repros))
    if not folded:
        return plan
    if any(g.stack.id == "local" for g in own):
        raise UsageError("--backend local folds pip/ngc stacks into a stack named 'local', but the "
                         "matrix already has a local stack with that id: give it another `id:`")
    stack = Stack(id="local", kind="local", interpreter=python, repros=folded)
    return Plan((StackGroup(stack, folded), *own))


def cache_key(fingerprint: str, repro_sha: str) -> str:
    h = hashlib.sha256()
    for part in (fingerprint, repro_sha, __version__):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:32]


def engines_for(matrix: Matrix, options: RunOptions, run_id: str,
                log: Say) -> Engines:
    """The run's engines (``--backend``: one engine, or a fallback chain)."""
    harness = paths.harness_dir()
    ctx = EngineContext(settings=matrix.settings, options=options, harness_dir=harness,
                        repros_dir=staged_dir(matrix.repros, harness, options.work),
                        run_id=run_id, log=log)
    return Engines(ctx, options.backend)


def print_line(line: str | StackEvent) -> None:
    """The default log: one line on stdout, its control characters escaped."""
    print(printable(str(line)), flush=True)


def prepare_plan(matrix: Matrix, plan: Plan, options: RunOptions,
                 log: Say = print_line) -> list[Prepared]:
    """Make (or find) every selected stack's environment: `repromatrix build`."""
    if options.backend == "local":
        plan = fold_local(plan, options.local_python)
    engines = engines_for(matrix, options, new_run_id(), log)
    groups = engines.choose(plan.groups)
    engines.say(log)
    stop = threading.Event()
    out = []
    for g in groups:
        choice = engines.choices[g.stack.id]
        if choice.engine is None:
            log(Note(g.stack.id, printable(f"not made: {choice.reason}")))
            continue
        out.append(choice.engine.prepare(g.stack, stop))
    return out


def run_plan(matrix: Matrix, plan: Plan, options: RunOptions,
             log: Say = print_line, command: Sequence[str] | None = None,
             progress: RunProgress | None = None) -> RunSummary:
    """Run the stale cells of ``plan``; every Result is appended to the store as it arrives
    (and shown by ``progress`` when given, instead of a log line per cell).

    Each Result records the command that re-runs it: ``command`` when given (bisect's),
    else `repromatrix run` with this run's options (``config.flags.rerun_command``)."""
    if options.backend == "local":
        plan = fold_local(plan, options.local_python)
    summary = RunSummary(run_id=new_run_id())
    engines = engines_for(matrix, options, summary.run_id, log)
    plan = Plan(tuple(engines.choose(plan.groups)))
    engines.say(log)
    with locked(options.results, run_id=summary.run_id, on_wait=log):
        prune_work(options.work, current=summary.run_id)
        _run_locked(matrix, plan, options, engines, summary, log, command, progress)
    return summary


def _run_locked(matrix: Matrix, plan: Plan, options: RunOptions, engines: Engines,
                summary: RunSummary, log: Say,
                command: Sequence[str] | None, progress: RunProgress | None) -> None:
    """The run itself, holding the results folder (one run per folder at a time)."""
    stage_catalog(matrix.repros, paths.harness_dir(), options.work)
    hashes = catalog_hashes(matrix.repros, paths.harness_dir())

    def again(stack_id: str, repro: str) -> tuple[str, ...]:
        return tuple(command) if command else tuple(rerun_command(matrix, options, stack_id, repro))

    work = [_stack_work(g, engines.choices[g.stack.id], hashes, summary.run_id, again,
                        engines.chain) for g in plan.groups]
    summary.cells = [cell_id(str(c.stack["id"]), c.repro) for w in work for c in w.cells.values()]
    latest = recorded_keys(options.results, summary.cells)
    work, summary.reused = stale_work(work, latest, options.rerun)
    unmade = [w for w in work if w.engine is None]
    work = [w for w in work if w.engine is not None]
    if summary.reused:
        log(f"reusing {summary.reused} recorded cell(s) (unchanged; --rerun to run them again)")
    store = ResultStore(options.results)
    if progress is not None:
        progress.start({w.group.stack.id: len(w.cells) * options.repeat for w in work},
                       summary.reused)

    def emit(result: Result) -> None:
        store.append(result)
        summary.results.append(result)
        summary.ran += 1
        summary.statuses[result.status] = summary.statuses.get(result.status, 0) + 1
        if progress is not None:
            progress.result(result)
        else:
            log(printable(f"  {result.cell}: {result.status}" + _why(result)))

    try:
        for w in unmade:  # no engine of the chain can make the stack here: skip, not broken
            for result in unavailable_results(w.cells.values(), engines.choices[w.group.stack.id].reason):
                emit(result)
        for attempt in range(1, options.repeat + 1 if work else 1):
            out_root = options.work / "out" / summary.run_id
            if options.repeat > 1:
                log(f"attempt {attempt} of {options.repeat}")
                out_root = out_root / f"attempt-{attempt}"
            Scheduler(_attempt(work, attempt), emit=emit, out_root=out_root,
                      repro_timeout=options.repro_timeout, stack_timeout=options.stack_timeout,
                      jobs=options.jobs, gpus=options.gpus, log=log,
                      repro_jobs=repros_at_once(options.repro_jobs, options.jobs,
                                                 bool(options.gpus))).run()
        for cell, counts in flaky_cells(summary.results).items():
            log(printable(f"  {cell}: flaky over {options.repeat} attempts (" +
                          ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + ")"))
    finally:
        store.close()


def _attempt(work: list[StackWork], attempt: int) -> list[StackWork]:
    if attempt == 1:
        return work
    return [StackWork(w.group, w.engine, {r: replace(c, attempt=attempt) for r, c in w.cells.items()})
            for w in work]


def flaky_cells(results: Iterable[Result]) -> dict[str, dict[str, int]]:
    """Cells whose attempts in this run disagree, with their status counts."""
    by_cell: dict[str, list[str]] = {}
    for r in results:
        by_cell.setdefault(r.cell, []).append(r.status)
    return {c: counts for c, statuses in by_cell.items() if (counts := flaky_counts(statuses))}


def _stack_work(group: StackGroup, choice: Choice, hashes: dict[str, str], run_id: str,
                again: Callable[[str, str], tuple[str, ...]] | None = None,
                chain: Sequence[str] = ()) -> StackWork:
    """A stack's cells as they will run. A stack no engine can make here is keyed on the chain
    that could not make it: reused while that holds, run once an engine can make it."""
    engine = choice.engine
    fp = engine.fingerprint(group.stack) if engine is not None \
        else UNAVAILABLE_PREFIX + "|".join(chain)
    spec = {**group.stack.spec(), "tags": list(group.stack.tags)}  # the page files bisect probes apart
    if choice.pinned_index:  # made from PyPI's build: the record says which index it stood for
        spec["pinned_index"] = choice.pinned_index
    cells = {r: CellRun(run_id=run_id, stack=spec, repro=r, repro_sha256=hashes.get(r, ""),
                        cache_key=cache_key(fp, hashes.get(r, "")), backend=choice.engine_name,
                        backend_reason=choice.reason,
                        reproduce=again(group.stack.id, r) if again else ())
             for r in group.repros}
    return StackWork(group, engine, cells)


def stale_work(work: list[StackWork], latest: Mapping[str, CellKey | Result],
               rerun: bool) -> tuple[list[StackWork], int]:
    """Work narrowed to the cells that must run, and how many recorded cells were reused."""
    out, reused = [], 0
    for w in work:
        todo = {r: c for r, c in w.cells.items() if rerun or _stale(c, latest)}
        reused += len(w.cells) - len(todo)
        if todo:
            out.append(StackWork(replace(w.group, repros=tuple(todo)), w.engine, todo))
    return out, reused


def _stale(cell: CellRun, latest: Mapping[str, CellKey | Result]) -> bool:
    rec = latest.get(cell_id(str(cell.stack["id"]), cell.repro))
    return rec is None or rec.cache_key != cell.cache_key or rec.status in RETRY_STATUSES


def _why(result: Result) -> str:
    return f"  ({shorten(result.message, 160)})" if result.message and result.status != Status.PASS.value \
        else ""
