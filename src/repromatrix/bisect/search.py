"""Bisect, the pure part: find where an ordered list of candidates changes state.

No I/O. ``search`` walks positions of the *full* candidate list (every release
on the axis, oldest first) and asks a ``probe`` callback for a verdict:
``OLD`` (behaves like the older bound), ``NEW`` (like the newer bound) or
``SKIP`` (cannot tell: broken install, timeout, unrelated error). It verifies
both bounds first, then narrows the window between them until no testable
candidate is left inside it.

Probe order is stable, so recorded probes are reused (cargo-bisect-rustc
#372 is the anti-example). Each candidate has a fixed *level* from its
position in the full list (how many times two divides it; position 0 is the
top), and each step probes the highest-level candidate among those that keep
both halves within the remaining probe budget. Two bisects with different
bounds over the same releases therefore probe the same coarse grid points,
and a new release appended to the list changes no existing level.

Probe count: the budget of a window with ``c`` untested candidates is
``c.bit_length()`` (= ceil(log2(c + 1))) verdicts; every verdict at least
halves it and a skip never raises it, so a search over ``n`` candidates makes
at most ``ceil(log2 n) + 2`` verdict probes (the 2 are the bounds) plus one
probe per skip.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")
TOP_LEVEL = 1 << 30


class Verdict(str, enum.Enum):
    """What one probe says about one candidate."""

    OLD = "old"    # like the older bound (good when hunting a regression)
    NEW = "new"    # like the newer bound (bad when hunting a regression)
    SKIP = "skip"  # cannot tell: never counted as either

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Step:
    """One probe and the window it left: ``lo`` is OLD, ``hi`` is NEW."""

    index: int
    verdict: Verdict
    lo: int
    hi: int
    left: int     # untested, testable candidates still strictly inside (lo, hi)
    budget: int   # at most this many more verdict probes are needed


@dataclass(frozen=True)
class Found(Generic[T]):
    """The change lies between ``last_old`` and ``first_new``.

    ``untested`` are the candidates strictly between them that could not be
    tested (skipped probes, or known untestable): when it is not empty the
    first NEW candidate is one of ``untested`` or ``first_new`` (ambiguous).
    """

    candidates: Sequence[T]
    last_old: int
    first_new: int
    untested: tuple[int, ...]
    steps: tuple[Step, ...]

    @property
    def exact(self) -> bool:
        return not self.untested

    @property
    def span(self) -> tuple[T, ...]:
        """The candidates that may be the first NEW one, oldest first."""
        return tuple(self.candidates[i] for i in (*self.untested, self.first_new))


@dataclass(frozen=True)
class WrongBound:
    """A bound did not give the verdict it must have (``expected``)."""

    index: int
    expected: Verdict
    got: Verdict


@dataclass(frozen=True)
class BoundsFailed(Generic[T]):
    """The search stopped before narrowing: one or both bounds are wrong."""

    candidates: Sequence[T]
    wrong: tuple[WrongBound, ...]
    steps: tuple[Step, ...]


def level(index: int) -> int:
    """How coarse a grid point ``index`` is: trailing zero bits (0 is the top)."""
    return TOP_LEVEL if index == 0 else (index & -index).bit_length() - 1


def budget(count: int) -> int:
    """Verdict probes that always suffice for ``count`` untested candidates."""
    return count.bit_length()


def choose(remaining: Sequence[int]) -> int:
    """The next probe among ``remaining`` (sorted positions strictly inside the window).

    Ranks ``r`` allowed: both sides keep at most ``2**(budget-1) - 1``
    candidates. Among them the highest level wins; ties go to the most
    central rank, then the older candidate.
    """
    c = len(remaining)
    half = (1 << (budget(c) - 1)) - 1
    first, last = c - 1 - half, half
    middle = (c - 1) / 2
    ranks = range(max(first, 0), min(last, c - 1) + 1)
    best = max(ranks, key=lambda r: (level(remaining[r]), -abs(r - middle), -r))
    return remaining[best]


def search(candidates: Sequence[T], probe: Callable[[int, T], Verdict], *, old: int, new: int,
           untestable: Collection[int] = (), on_step: Callable[[Step], None] | None = None,
           ) -> Found[T] | BoundsFailed[T]:
    """Find the first candidate after ``old`` that behaves like ``new``.

    ``probe(index, candidate)`` is called at most once per candidate; indexes
    in ``untestable`` are never probed. Both bounds are probed first and must
    answer OLD and NEW respectively.
    """
    if not 0 <= old < new < len(candidates):
        raise ValueError(f"bounds out of order or range: old={old}, new={new}, n={len(candidates)}")
    skip = set(untestable) - {old, new}
    steps: list[Step] = []

    def ask(i: int, lo: int, hi: int) -> Verdict:
        verdict = Verdict(probe(i, candidates[i]))
        if verdict is Verdict.SKIP:
            skip.add(i)
        elif i not in (old, new):
            lo, hi = (i, hi) if verdict is Verdict.OLD else (lo, i)
        rest = _remaining(lo, hi, skip)
        step = Step(i, verdict, lo, hi, len(rest), budget(len(rest)))
        steps.append(step)
        if on_step:
            on_step(step)
        return verdict

    wrong = [WrongBound(i, want, got) for i, want in ((old, Verdict.OLD), (new, Verdict.NEW))
             if (got := ask(i, old, new)) is not want]
    if wrong:
        return BoundsFailed(candidates, tuple(wrong), tuple(steps))
    lo, hi = old, new
    while rest := _remaining(lo, hi, skip):
        i = choose(rest)
        verdict = ask(i, lo, hi)
        if verdict is Verdict.OLD:
            lo = i
        elif verdict is Verdict.NEW:
            hi = i
    untested = tuple(i for i in range(lo + 1, hi))
    return Found(candidates, lo, hi, untested, tuple(steps))


def _remaining(lo: int, hi: int, skip: Collection[int]) -> list[int]:
    return [i for i in range(lo + 1, hi) if i not in skip]
