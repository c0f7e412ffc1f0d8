"""Property tests for the pure bisection (repromatrix.bisect.search)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repromatrix.bisect.search import BoundsFailed, Found, Verdict, budget, choose, level, search


@st.composite
def histories(draw: st.DrawFn) -> tuple[int, int, int, set[int], set[int]]:
    """(n, first_new, old, new, untestable-when-probed, known-untestable) for a monotone list."""
    n = draw(st.integers(2, 300))
    old = draw(st.integers(0, n - 2))
    new = draw(st.integers(old + 1, n - 1))
    first_new = draw(st.integers(old + 1, new))
    inside = list(range(old + 1, new))
    flaky = set(draw(st.lists(st.sampled_from(inside), unique=True))) if inside else set()
    known = {i for i in flaky if draw(st.booleans())}
    return n, first_new, old, new, flaky - known, known


def run(n: int, first_new: int, old: int, new: int, skips: set[int], known: set[int]):
    calls: list[int] = []

    def probe(i: int, cand: int) -> Verdict:
        assert i == cand and i not in known, "known-untestable candidates are never probed"
        calls.append(i)
        if i in skips:
            return Verdict.SKIP
        return Verdict.NEW if i >= first_new else Verdict.OLD

    return search(list(range(n)), probe, old=old, new=new, untestable=known), calls


@settings(max_examples=400, deadline=None)
@given(histories())
def test_finds_the_first_new_or_an_exact_ambiguous_span(h) -> None:
    n, first_new, old, new, skips, known = h
    result, calls = run(n, first_new, old, new, skips, known)
    assert isinstance(result, Found)
    assert old <= result.last_old < first_new <= result.first_new <= new
    assert result.untested == tuple(range(result.last_old + 1, result.first_new))
    assert all(i in skips | known for i in result.untested), "only untestable points hide the answer"
    assert result.exact == (result.first_new == first_new and result.last_old == first_new - 1)
    assert first_new in result.span
    assert len(calls) == len(set(calls)), "no candidate is probed twice"


@settings(max_examples=400, deadline=None)
@given(histories())
def test_probe_count_is_logarithmic_plus_skips(h) -> None:
    n, first_new, old, new, skips, known = h
    result, calls = run(n, first_new, old, new, skips, known)
    skipped = sum(1 for i in calls if i in skips)
    assert len(calls) <= math.ceil(math.log2(n)) + 2 + skipped
    inside = new - old - 1 - len(known)
    assert len(calls) - skipped <= 2 + budget(inside)


@settings(max_examples=200, deadline=None)
@given(histories(), st.data())
def test_probe_order_is_stable_when_resuming_from_a_narrower_window(h, data) -> None:
    """Restarting with the bounds of any intermediate window probes exactly what remained."""
    n, first_new, old, new, _, _ = h
    full, calls = run(n, first_new, old, new, set(), set())
    assert isinstance(full, Found)
    k = data.draw(st.integers(1, len(full.steps) - 1))
    step = full.steps[k]
    resumed, again = run(n, first_new, step.lo, step.hi, set(), set())
    assert (resumed.last_old, resumed.first_new) == (full.last_old, full.first_new)
    assert again[:2] == [step.lo, step.hi]
    assert again[2:] == calls[k + 1:]


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 500), st.data())
def test_the_coarsest_grid_point_is_probed_whatever_the_bounds(n, data) -> None:
    """The pick depends on the bounds only through the budget: the top grid point wins if allowed."""
    lo = data.draw(st.integers(0, n - 2))
    hi = data.draw(st.integers(lo + 1, n - 1))
    inside = list(range(lo + 1, hi))
    if not inside:
        return
    c, top = len(inside), max(inside, key=level)
    half = (1 << (budget(c) - 1)) - 1
    rank = inside.index(top)
    pick = choose(inside)
    assert pick - lo - 1 <= half and hi - pick - 1 <= half, "both halves fit the budget"
    if rank <= half and c - 1 - rank <= half:
        assert pick == top


@pytest.mark.parametrize(("old_says", "new_says", "wrong"), [
    (Verdict.NEW, Verdict.NEW, [("old", Verdict.NEW)]),
    (Verdict.OLD, Verdict.OLD, [("new", Verdict.OLD)]),
    (Verdict.SKIP, Verdict.NEW, [("old", Verdict.SKIP)]),
    (Verdict.NEW, Verdict.OLD, [("old", Verdict.NEW), ("new", Verdict.OLD)]),
])
def test_both_bounds_are_verified_before_searching(old_says, new_says, wrong) -> None:
    calls: list[int] = []

    def probe(i: int, _: int) -> Verdict:
        calls.append(i)
        return {2: old_says, 9: new_says}.get(i, Verdict.OLD)

    result = search(list(range(12)), probe, old=2, new=9)
    assert isinstance(result, BoundsFailed)
    assert calls == [2, 9], "nothing inside is probed when a bound is wrong"
    names = {2: "old", 9: "new"}
    assert [(names[w.index], w.got) for w in result.wrong] == wrong


def test_a_known_example_probes_the_coarse_grid() -> None:
    seq = [Verdict.OLD] * 5 + [Verdict.NEW] * 11
    a = search(list(range(16)), lambda i, _: seq[i], old=0, new=15)
    b = search(list(range(16)), lambda i, _: seq[i], old=3, new=12)
    assert [s.index for s in a.steps] == [0, 15, 8, 4, 6, 5]
    assert [s.index for s in b.steps] == [3, 12, 8, 4, 6, 5]
    assert (a.last_old, a.first_new) == (b.last_old, b.first_new) == (4, 5)


def test_an_all_untestable_window_is_ambiguous_not_a_guess() -> None:
    seq = {0: Verdict.OLD, 4: Verdict.NEW}
    result = search(list("abcde"), lambda i, _: seq.get(i, Verdict.SKIP), old=0, new=4)
    assert isinstance(result, Found) and not result.exact
    assert (result.last_old, result.first_new, result.untested) == (0, 4, (1, 2, 3))
    assert result.span == ("b", "c", "d", "e")


def test_bad_bounds_are_a_programming_error() -> None:
    with pytest.raises(ValueError):
        search([1, 2, 3], lambda i, _: Verdict.OLD, old=2, new=1)
