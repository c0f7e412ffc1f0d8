"""Prepare environments and run stacks in parallel, the same way for every engine.

Run stage. One preparer thread makes the next environments (image builds,
venv installs) while ``jobs`` worker threads run prepared stacks, one GPU
each when GPUs are given. Each worker starts the engine's runner process in
its context manager and hands it to ``watch.watch``; a failed preparation
becomes ``broken`` Results for that stack's cells and the others go on.
Ctrl-C (or SIGTERM, which the CLI turns into it) stops the threads, lets each
worker leave its context (process groups ended, containers removed), and
asks every engine to ``close`` what is left.
"""

from __future__ import annotations

import os
import queue
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from repromatrix.engines import Engine, Prepared, RunnerJob
from repromatrix.engines.standins import gpu_on_host
from repromatrix.model import Broken, Done, Note, Say, StackGroup
from repromatrix.store.record import CellRun, Result, broken_results

from .watch import Interrupted, watch

JOIN_GRACE_S = 10.0
MAX_REPROS_AT_ONCE = 4  # the default's ceiling: each repro is a torch process (memory)


def repros_at_once(asked: int | None, jobs: int, gpus: bool = False) -> int:
    """How many repros one stack's runner runs at once: ``asked`` (--repro-jobs) when given;
    1 where GPUs are given or this machine has an NVIDIA GPU (repros never share a GPU
    unasked); else
    the cores this process may use, shared among the ``jobs`` stacks that run at once, at most
    MAX_REPROS_AT_ONCE."""
    if asked:
        return asked
    if gpus or gpu_on_host():
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(MAX_REPROS_AT_ONCE, (cores or 1) // max(1, jobs)))


class RecordFailed(Exception):
    """A finished cell's record could not be appended to the store."""


@dataclass(frozen=True)
class StackWork:
    """One stack group to run: its engine, and the constant part of each cell's Result."""

    group: StackGroup
    engine: Engine | None  # None: no engine can make the stack here (never scheduled)
    cells: Mapping[str, CellRun]  # repro id -> CellRun


class Scheduler:
    """Runs ``work`` with one preparer thread and ``jobs`` worker threads."""

    def __init__(self, work: Sequence[StackWork], *, emit: Callable[[Result], None], out_root: Path,
                 repro_timeout: float, stack_timeout: float, jobs: int = 1,
                 gpus: Sequence[str] = (), log: Say = print, repro_jobs: int = 1) -> None:
        self.work, self.out_root, self.log = list(work), out_root, log
        self.repro_jobs = max(1, repro_jobs)
        self.repro_timeout, self.stack_timeout = repro_timeout, stack_timeout
        self.jobs = max(1, jobs)
        self.stop = threading.Event()
        self.prepared: queue.Queue[tuple[StackWork, Prepared] | None] = queue.Queue(self.jobs)
        self.gpus: queue.Queue[str] = queue.Queue()
        for gpu in gpus:
            self.gpus.put(gpu)
        self.use_gpus = bool(gpus)
        self._emit_lock = threading.Lock()
        self._emit = emit
        self.failure: BaseException | None = None
        self._ended: list[threading.Event] = []

    def emit(self, result: Result) -> None:
        with self._emit_lock:
            self._emit(result)

    def run(self) -> None:
        targets = [self._preparer] + [self._worker] * self.jobs
        self._ended = [threading.Event() for _ in targets]
        threads = [threading.Thread(target=self._guard, args=(fn, ended), daemon=True,
                                    name=f"repromatrix-{i}")
                   for i, (fn, ended) in enumerate(zip(targets, self._ended, strict=True))]
        try:
            for t in threads:
                t.start()
            for ended in self._ended:
                while not ended.wait(0.2):
                    pass
        except BaseException:
            # Ctrl-C or SIGTERM: let the workers leave their contexts (processes ended,
            # containers removed). Waiting on events, not Thread.join: a join interrupted
            # by a signal may return at once afterwards.
            self.stop.set()
            deadline = time.monotonic() + JOIN_GRACE_S
            for ended in self._ended:
                ended.wait(max(0.0, deadline - time.monotonic()))
            raise
        finally:
            for engine in {id(w.engine): w.engine for w in self.work}.values():
                engine.close()
        if self.failure is not None:
            raise self.failure

    def _guard(self, fn: Callable[[], None], ended: threading.Event) -> None:
        try:
            fn()
        except Interrupted:
            pass
        except BaseException as exc:  # noqa: BLE001 - a thread must not die silently
            if not isinstance(exc, KeyboardInterrupt):
                self.log(f"internal error in {threading.current_thread().name}: {exc!r}")
            self.failure = self.failure or exc
            self.stop.set()
        finally:
            ended.set()

    def _put(self, item: tuple[StackWork, Prepared] | None) -> bool:
        while not self.stop.is_set():
            try:
                self.prepared.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def _preparer(self) -> None:
        try:
            for work in self.work:
                if self.stop.is_set():
                    return
                if not self._put((work, work.engine.prepare(work.group.stack, self.stop))):
                    return
        finally:
            for _ in range(self.jobs):
                if not self._put(None):
                    break

    def _worker(self) -> None:
        while not self.stop.is_set():
            try:
                item = self.prepared.get(timeout=0.2)
            except queue.Empty:
                continue
            if item is None:
                return
            work, prepared = item
            if not prepared.ok:
                self.log(Broken(work.group.stack.id, prepared.reason))
                for result in broken_results(_with_image(work, prepared).values(), prepared.reason,
                                             prepared.log_tail):
                    self.emit(result)
                continue
            gpu = self.gpus.get() if self.use_gpus else None
            try:
                self._run_one(work, prepared, gpu)
            finally:
                if gpu is not None:
                    self.gpus.put(gpu)
            work.engine.release(prepared)

    def _run_one(self, work: StackWork, prepared: Prepared, gpu: str | None) -> None:
        sid = work.group.stack.id
        outdir = self.out_root / sid
        _fresh(outdir)
        job = RunnerJob(repros=work.group.repros, outdir=outdir, repro_timeout=self.repro_timeout,
                        gpu=gpu, parallel=self.repro_jobs)
        cells = _with_image(work, prepared)
        emitted: set[str] = set()

        def emit(result: Result) -> None:
            try:
                self.emit(result)
            except Exception as exc:
                raise RecordFailed(f"recording {result.repro} failed: {exc!r}") from exc
            emitted.add(result.repro)  # recorded only once its record is on disk

        try:
            with work.engine.start(prepared, job) as proc:
                watch(proc, outdir, cells, emit, limit_s=self.stack_timeout, stop=self.stop,
                      log=self.log, stack=sid)
            self.log(Done(sid, f"{len(emitted)} cell(s) recorded"))
        except Interrupted:
            self.log(Note(sid, "interrupted"))
            raise
        except Exception as exc:  # noqa: BLE001 - an engine failure breaks this stack only
            left = [c for r, c in cells.items() if r not in emitted]
            why = (f"the run stopped watching this stack: {exc}" if isinstance(exc, RecordFailed)
                   else f"the runner could not be started: {exc}")
            self.log(Broken(sid, why))
            for result in broken_results(left, why):
                self.emit(result)


def _with_image(work: StackWork, prepared: Prepared) -> dict[str, CellRun]:
    """The cells, with the prepared environment's image recorded (when it has one)."""
    if prepared.image is None:
        return dict(work.cells)
    return {r: replace(c, image=prepared.image) for r, c in work.cells.items()}


def _fresh(outdir: Path) -> None:
    if outdir.exists():
        shutil.rmtree(outdir)
    outdir.mkdir(parents=True)
