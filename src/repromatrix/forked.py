"""A share of a long list's work in a forked child, on a second core, where that is safe.

Two steps of a first report on a store with no index yet are most of its CPU and split
by item: the index build parsing every record line (``store.index_files.read_files``, by
file and byte) and the report making every cell's pieces (``report.pieces``: parsing each
shown record, summarising it, rendering its markup). With a second core free, two
processes do either in about half the time. ``share`` forks once: the child works through
the end of the list and writes what it made to an unlinked temporary file, a batch at a
time, then exits without any clean-up (``os._exit``: it never touches the parent's SQLite
connections, locks or buffered output; a signal ends it without the parent's handlers);
meanwhile the parent works through the start of the list, and then reads the child's
batches back (``Child.batches``), in order: the result is the one a single process makes.

A fork copies only the thread that calls it: a lock another thread holds at that moment
stays held in the child for ever. So ``share`` forks only in a process with one thread
(``repromatrix matrix`` runs ``run`` and then ``report`` in one process, and a run may
leave threads behind), on Linux (where ``/proc/self/task`` counts every thread, those of
C libraries included), with two cores for it, half a core of them idle while it ran
(``/proc/stat``: another tenant's work leaves no core to gain), and for work of at least
``least``; otherwise the parent does all the work, as it does when the child fails.
"""
from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any, TypeVar

CHILD_SHARE = 0.6  # of the work, the child's: the parent also stores what both made
FORK = True  # False: never fork (every share is the parent's)
# the least work worth a fork (copying a large process's page tables, the child's start)
LEAST_CELLS = 1000  # cells whose pieces are made
LEAST_BYTES = 8 << 20  # of record files indexed from their start

IDLE_CORES = 0.5  # idle on average while this process ran, at least: else no fork
SAMPLE_TICKS = 10  # of CPU time (all cores), at least, to tell how idle they were

T = TypeVar("T")


def can_fork() -> bool:
    """Whether this process may fork a worker: Linux, one thread alive, two cores for it."""
    if not FORK or not sys.platform.startswith("linux") or threading.active_count() != 1:
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1 and len(os.sched_getaffinity(0)) >= 2
    except OSError:
        return False


def _cpu_ticks() -> tuple[int, int] | None:
    """The machine's idle and total CPU time so far, in ticks (``/proc/stat``), or None."""
    try:
        with open("/proc/stat", "rb") as fh:
            ticks = [int(t) for t in fh.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    return (ticks[3] + ticks[4], sum(ticks)) if len(ticks) == 8 else None


_last_ticks = _cpu_ticks()  # (when this module was imported: at the start of a command)


def _core_free() -> bool:
    """Whether a core was idle enough for a second process (``IDLE_CORES``; when it cannot be
    told, as on an idle machine): a machine busy with other work, or limiting this process
    to one core's share, runs two processes no sooner than one, and the second's start and
    hand-over cost more."""
    idle = idle_cores()
    return idle is None or idle >= IDLE_CORES


def idle_cores() -> float | None:
    """How many of the machine's cores were idle, on average, since the last call (or since
    this module was imported); None when unknown or too short a time to tell."""
    global _last_ticks
    now, before = _cpu_ticks(), _last_ticks
    _last_ticks = now
    if now is None or before is None or now[1] - before[1] < SAMPLE_TICKS:
        return None
    return (now[0] - before[0]) / (now[1] - before[1]) * (os.cpu_count() or 1)


class Child:
    """A forked child working through its share (``share``)."""

    def __init__(self, pid: int, file: IO[bytes]) -> None:
        self.pid, self.file = pid, file
        self._status: int | None = None

    def batches(self) -> Iterator[Any] | None:
        """Each batch the child made, in order, once it has finished (read inside the
        ``share`` block); None when it failed (the caller then does its share)."""
        if self._wait() != 0:
            return None
        self.file.seek(0)
        return self._read()

    def meanwhile(self, prepare: Callable[[], object]) -> None:
        """Call ``prepare`` if the child is still working, where the parent would only wait
        (what it needs next: an import); its failure is left for the caller's own use."""
        if self._status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self._status = os.waitstatus_to_exitcode(status)
                return
            with contextlib.suppress(Exception):
                prepare()

    def _read(self) -> Iterator[Any]:
        while True:
            try:
                yield pickle.load(self.file)
            except EOFError:
                return

    def _wait(self) -> int:
        if self._status is None:
            _, status = os.waitpid(self.pid, 0)
            self._status = os.waitstatus_to_exitcode(status)
        return self._status

    def stop(self) -> None:
        """End the child if it still runs (the parent failed or was interrupted)."""
        if self._status is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            self._wait()
        self.file.close()


def split_at(sizes: Sequence[int], child_share: float = CHILD_SHARE) -> int:
    """Where the child's share begins: the shortest end of ``sizes`` holding at least
    ``child_share`` of their sum (at least one item is the parent's)."""
    left = sum(sizes) * child_share
    at = len(sizes)
    while at > 1 and left > 0:
        at -= 1
        left -= sizes[at]
    return at


@contextlib.contextmanager
def share(items: Sequence[T], work: Callable[[Sequence[T]], Iterable[Any]], *,
          sizes: Sequence[int] | None = None, least: int | None = None, at: int | None = None
          ) -> Iterator[tuple[Sequence[T], Child | None]]:
    """The parent's share of ``items`` and the child doing ``work`` over the rest (each batch
    it yields pickled), from ``at`` or as ``split_at`` splits ``sizes`` (the work of each
    item; default one each), or all of ``items`` and None when the work is under ``least``
    (default ``LEAST_CELLS``), a share would be empty or no child can be forked (see the
    module's docstring). The child is ended on leaving the block."""
    sizes = [1] * len(items) if sizes is None else sizes
    least = LEAST_CELLS if least is None else least
    mine = split_at(sizes) if at is None else at
    if not 0 < mine < len(items) or sum(sizes) < least or not can_fork() or not _core_free():
        yield items, None
        return
    try:
        file = tempfile.TemporaryFile(prefix="repromatrix-")
    except OSError:  # no temporary folder to write to
        yield items, None
        return
    try:
        pid = os.fork()
    except OSError:
        file.close()
        yield items, None
        return
    if pid == 0:  # the child: its share, then out, whatever happens
        code = 1
        try:
            for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(number, signal.SIG_DFL)  # never the parent's handlers (a run's)
            for batch in work(items[mine:]):
                pickle.dump(batch, file, protocol=pickle.HIGHEST_PROTOCOL)
            file.flush()
            code = 0
        finally:
            os._exit(code)
    child = Child(pid, file)
    try:
        yield items[:mine], child
    finally:
        child.stop()
