"""Advisory locks that say who holds them.

One `repromatrix run` per results folder (``store.results.locked``); the engines
can take one per environment being built. ``flock`` on a lock file: the kernel
releases it when the holder exits, however it exits (kill -9 included), so a
lock is never stale. The holder writes who it is (pid, host, run id, since
when) into the file; a second process reads that to say whom it waits for.

The file descriptor is not inherited by child processes (PEP 446), so a runner
or container client left behind cannot keep the lock alive. The lock file is
never deleted (deleting it would let two processes lock two different files).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from repromatrix.errors import HarnessError, ResultsBusy
from repromatrix.textsafe import printable

NOTE_RETRIES = 20  # a new holder writes its note right after locking: give it a moment
NOTE_RETRY_S = 0.05


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, as written into the lock file."""

    pid: int
    host: str
    run_id: str | None
    since: str
    what: str = ""

    def __str__(self) -> str:
        run = f"run {self.run_id} " if self.run_id else ""
        return printable(f"{run}(pid {self.pid} on {self.host}, since {self.since})")


def read_holder(path: Path | str) -> Holder | None:
    """The note in a lock file, or None when it is empty or unreadable."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8") or "null")
        return Holder(**data) if isinstance(data, dict) else None
    except (OSError, ValueError, TypeError):
        return None


def _alive_here(holder: Holder) -> bool:
    if holder.host != socket.gethostname():
        return True  # cannot tell from here: trust the note
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def describe_holder(path: Path | str) -> str:
    """Who holds the lock at ``path``, for a message."""
    for _ in range(NOTE_RETRIES):
        holder = read_holder(path)
        if holder is not None and _alive_here(holder):
            return str(holder)
        time.sleep(NOTE_RETRY_S)  # empty, or a dead holder's note not yet overwritten
    return "another process (it has not written who it is)"


def _stderr(line: str) -> None:
    import sys

    print(printable(line), file=sys.stderr, flush=True)


@contextmanager
def hold(path: Path | str, *, what: str, wait: bool = True, run_id: str | None = None,
         on_wait: Callable[[str], None] | None = None,
         busy: type[HarnessError] = ResultsBusy) -> Iterator[Holder]:
    """Hold the lock at ``path`` for the ``with`` block.

    When another process holds it: with ``wait``, say whom we wait for through
    ``on_wait`` (default: stderr) and block until it is released (Ctrl-C
    interrupts); without, raise ``busy`` naming the holder.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            message = f"{what} is in use by {describe_holder(path)}"
            if not wait:
                raise busy(f"{message}; wait for it to finish or use another folder") from None
            (on_wait or _stderr)(f"{message}; waiting for it to finish")
            fcntl.flock(fd, fcntl.LOCK_EX)
        me = Holder(os.getpid(), socket.gethostname(), run_id,
                    time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), what)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(asdict(me)).encode(), 0)
        os.fsync(fd)
        try:
            yield me
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the lock
