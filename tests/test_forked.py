"""repromatrix.forked: a share of a list's work made in a forked child, the rest in the
parent; the same result whether the child ran, failed, or could not be forked."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence

import pytest
from support.forks import fork_every_render

from repromatrix import forked


def squares(items: Sequence[int]) -> Iterator[list[tuple[int, int, int]]]:
    """Batches of (item, its square, the process that made it)."""
    batch = []
    for n in items:
        batch.append((n, n * n, os.getpid()))
        if len(batch) == 3:
            yield batch
            batch = []
    yield batch


def shared(items: list[int], work=squares) -> tuple[list[tuple[int, int, int]], bool]:
    """Every item's square, made as a render makes its pieces; and whether a child made some."""
    made = []
    with forked.share(items, work) as (mine, child):
        made.extend(row for batch in squares(mine) for row in batch)
        theirs = child.batches() if child is not None else None
        made.extend(row for batch in theirs or () for row in batch)
    rest = items[len(made):]
    made.extend(row for batch in squares(rest) for row in batch)
    return made, any(pid != os.getpid() for _, _, pid in made)


def test_the_child_makes_the_end_of_the_list(monkeypatch) -> None:
    forks = fork_every_render(monkeypatch)
    items = list(range(20))
    made, by_child = shared(items)
    assert forks == [1] and by_child
    assert [(n, sq) for n, sq, _ in made] == [(n, n * n) for n in items]
    assert [n for n, _, pid in made if pid != os.getpid()] == items[-int(20 * forked.CHILD_SHARE):]


def test_the_child_takes_the_end_holding_its_share_of_the_work() -> None:
    assert forked.split_at([1] * 10, 0.6) == 4
    assert forked.split_at([5, 1, 1, 1, 1, 1], 0.5) == 1  # 5 of 10 at the end
    assert forked.split_at([9, 1], 0.6) == 1  # the parent keeps at least one item
    assert forked.split_at([1, 9], 0.6) == 1


def test_a_failed_child_leaves_its_share_to_the_parent(monkeypatch) -> None:
    fork_every_render(monkeypatch)

    def failing(items: Sequence[int]) -> Iterator[list[tuple[int, int, int]]]:
        yield from squares(items[:2])
        raise RuntimeError("the child's work failed")

    items = list(range(20))
    made, by_child = shared(items, failing)
    assert not by_child
    assert [(n, sq) for n, sq, _ in made] == [(n, n * n) for n in items]


def test_no_fork_while_another_thread_is_alive(monkeypatch) -> None:
    forks = fork_every_render(monkeypatch)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not forked.can_fork()
        made, by_child = shared(list(range(20)))
    finally:
        stop.set()
        thread.join()
    assert forks == [] and not by_child
    assert [(n, sq) for n, sq, _ in made] == [(n, n * n) for n in range(20)]


def test_no_fork_while_no_core_was_idle(monkeypatch) -> None:
    forks = fork_every_render(monkeypatch)
    monkeypatch.setattr(forked, "IDLE_CORES", 1000.0)  # more idle cores than any machine has
    monkeypatch.setattr(forked, "idle_cores", lambda: 999.0)
    made, by_child = shared(list(range(20)))
    assert forks == [] and not by_child and len(made) == 20


def test_idle_cores_are_the_machines_idle_time_since_the_last_look() -> None:
    forked.idle_cores()
    spin_until = forked._cpu_ticks()
    assert spin_until is not None
    while (now := forked._cpu_ticks()) is not None and now[1] - spin_until[1] < 4 * forked.SAMPLE_TICKS:
        pass  # this process keeps one core busy meanwhile
    idle = forked.idle_cores()
    assert idle is not None and 0.0 <= idle <= (os.cpu_count() or 1) - 0.5
    assert forked.idle_cores() is None  # (no time since)


def test_too_few_items_are_not_worth_a_fork(monkeypatch) -> None:
    forks = fork_every_render(monkeypatch)
    monkeypatch.setattr(forked, "LEAST_CELLS", 50)
    made, by_child = shared(list(range(20)))
    assert forks == [] and not by_child and len(made) == 20


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork here")
def test_an_interrupted_parent_ends_its_child(monkeypatch) -> None:
    fork_every_render(monkeypatch)
    started = threading.Event()  # (never set in the child: it only sleeps)

    def endless(items: Sequence[int]) -> Iterator[list[int]]:
        started.wait()
        yield []

    with pytest.raises(KeyboardInterrupt):
        with forked.share(list(range(20)), endless) as (_, child):
            assert child is not None
            pid = child.pid
            raise KeyboardInterrupt
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # ended and reaped


def test_the_parent_prepares_what_comes_next_only_while_the_child_works(monkeypatch) -> None:
    fork_every_render(monkeypatch)
    started = os.pipe()

    def slow(items: Sequence[int]) -> Iterator[list[tuple[int, int, int]]]:
        os.read(started[0], 1)  # until the parent has asked
        yield from squares(items)

    prepared: list[str] = []
    with forked.share(list(range(20)), slow) as (_, child):
        assert child is not None
        child.meanwhile(lambda: prepared.append("working"))  # the child waits on the pipe
        child.meanwhile(lambda: 1 / 0)  # a failed preparation is the caller's to meet later
        os.write(started[1], b"x")
        theirs = list(child.batches() or ())
        child.meanwhile(lambda: prepared.append("finished"))
    for fd in started:
        os.close(fd)
    assert prepared == ["working"] and theirs

