"""A share of a long list's work in a forked child, on a second core, where that is safe.

Flow: report.pieces -> **report.forked** -> report.pieces. A full render makes the pieces
of every cell (``report.cell.make_pieces``: parsing each shown record, summarising it,
rendering its markup), most of its CPU; with a second core free, two processes do it in
about half the time. ``share`` forks once: the child works through the end of the list
and writes what it made to an unlinked temporary file, a batch at a time, then exits
without any clean-up (``os._exit``: it never touches the parent's SQLite connections,
locks or buffered output); meanwhile the parent works through the start of the list, and
then reads the child's batches back (``Child.batches``).

A fork copies only the thread that calls it: a lock another thread holds at that moment
stays held in the child for ever. So ``share`` forks only in a process with one thread
(``repromatrix matrix`` runs ``run`` and then ``report`` in one process, and a run may
leave threads behind), on Linux (where ``/proc/self/task`` counts every thread, those of
C libraries included), with two cores for it, and for at least ``MIN_ITEMS`` items;
otherwise the parent does all the work, as it does when the child fails. The result is
the same either way (``tests/report/test_forked.py``).
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

MIN_ITEMS = 1000  # fewer: a fork (copying the page tables of a large process) is not worth it
CHILD_SHARE = 0.6  # of the items, the child's (the end of the list)

T = TypeVar("T")


def can_fork() -> bool:
    """Whether this process may fork a worker: Linux, one thread alive, two cores for it."""
    if not sys.platform.startswith("linux") or threading.active_count() != 1:
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1 and len(os.sched_getaffinity(0)) >= 2
    except OSError:
        return False


class Child:
    """A forked child working through its share (``share``)."""

    def __init__(self, pid: int, file: IO[bytes]) -> None:
        self.pid, self.file = pid, file
        self._status: int | None = None

    def batches(self) -> Iterator[Any] | None:
        """Each batch the child made, in order, once it has finished; None when it failed
        (the caller then does its share)."""
        if self._wait() != 0:
            return None
        self.file.seek(0)
        return self._read()

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


@contextlib.contextmanager
def share(items: Sequence[T], work: Callable[[Sequence[T]], Iterable[Any]]
          ) -> Iterator[tuple[Sequence[T], Child | None]]:
    """The parent's share of ``items`` and the child doing ``work`` over the rest (each batch
    it yields pickled), or all of ``items`` and None when no child can be forked (see the
    module's docstring). The child is ended on leaving the block."""
    if len(items) < MIN_ITEMS or not can_fork():
        yield items, None
        return
    mine = len(items) - int(len(items) * CHILD_SHARE)
    file = tempfile.TemporaryFile(prefix="repromatrix-report-")
    try:
        pid = os.fork()
    except OSError:
        file.close()
        yield items, None
        return
    if pid == 0:  # the child: its share, then out, whatever happens
        code = 1
        try:
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
