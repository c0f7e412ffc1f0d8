"""Work shared with a forked child (``repromatrix.forked``) however little: a render's cells'
pieces, an index build's files."""

from __future__ import annotations

import os
import time

import pytest

from repromatrix import forked


def fork_every_render(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make every render and index build fork, however few its cells or bytes; the forks made (a list
    that grows with each), or skip when this process may not fork (``forked.can_fork``:
    off Linux, one core, another thread alive)."""
    deadline = time.monotonic() + 2.0  # a thread just joined may linger in /proc a moment
    while not forked.can_fork() and time.monotonic() < deadline:
        time.sleep(0.01)
    if not forked.can_fork():
        pytest.skip("this process may not fork a worker (not Linux, one core, or threads alive)")
    forks: list[int] = []
    real_fork = os.fork

    def counted_fork() -> int:
        forks.append(1)
        return real_fork()

    monkeypatch.setattr(forked, "IDLE_CORES", 0.0)  # however busy the machine is
    monkeypatch.setattr(forked, "LEAST_CELLS", 1)
    monkeypatch.setattr(forked, "LEAST_BYTES", 1)
    monkeypatch.setattr(forked.os, "fork", counted_fork)
    return forks
