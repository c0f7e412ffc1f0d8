"""Shards: a stable, cost-balanced assignment of whole stacks, and clear errors for bad K/N."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.records import make_record

from repromatrix.cli import main
from repromatrix.config.matrix import load_matrix
from repromatrix.distribute.shard import (
    CELL_S,
    SETUP_S,
    ShardSpec,
    assign,
    assignment_id,
    parse_shard,
    recorded_durations,
    select_shard,
    stack_cost,
)
from repromatrix.errors import UsageError
from repromatrix.model import Plan, Stack, StackGroup
from repromatrix.paths import PROJECT_ROOT
from repromatrix.store.record import Result
from repromatrix.store.results import ResultStore


def group(sid: str, kind: str = "pip", n: int = 2) -> StackGroup:
    return StackGroup(Stack(id=sid, kind=kind), tuple(f"r{i}" for i in range(n)))


groups = st.lists(
    st.tuples(st.sampled_from(("pip", "ngc", "local")), st.integers(0, 6)),
    max_size=30,
).map(lambda specs: Plan(tuple(group(f"s{i:02d}", k, n) for i, (k, n) in enumerate(specs))))
durations = st.dictionaries(st.sampled_from([f"s{i:02d}--r{j}" for i in range(30) for j in range(6)]),
                            st.floats(0.1, 5000), max_size=40)


@settings(max_examples=200, deadline=None)
@given(plan=groups, count=st.integers(1, 12), durs=durations)
def test_every_stack_in_exactly_one_shard_in_matrix_order(plan, count, durs):
    shards = assign(plan, count, durs)
    assert [s.spec for s in shards] == [ShardSpec(i, count) for i in range(1, count + 1)]
    placed = [sid for s in shards for sid in s.stack_ids]
    assert sorted(placed) == sorted(g.stack.id for g in plan.groups)
    order = [g.stack.id for g in plan.groups]
    for s in shards:
        assert list(s.stack_ids) == [sid for sid in order if sid in s.stack_ids]
        assert s.expected_s == pytest.approx(sum(stack_cost(g, durs) for g in s.groups))


@settings(max_examples=200, deadline=None)
@given(plan=groups, count=st.integers(1, 12), durs=durations, seed=st.integers(0, 2**32))
def test_stable_whatever_the_matrix_order(plan, count, durs, seed):
    shuffled = list(plan.groups)
    random.Random(seed).shuffle(shuffled)
    a, b = assign(plan, count, durs), assign(Plan(tuple(shuffled)), count, durs)
    assert [set(s.stack_ids) for s in a] == [set(s.stack_ids) for s in b]
    assert assignment_id(a) == assignment_id(assign(plan, count, durs))


@settings(max_examples=200, deadline=None)
@given(plan=groups, count=st.integers(1, 12), durs=durations)
def test_balanced_within_one_stack(plan, count, durs):
    """Longest-first: the busiest shard exceeds the idlest by at most its smallest stack."""
    shards = assign(plan, count, durs)
    loads = [s.expected_s for s in shards]
    busiest = max(shards, key=lambda s: s.expected_s)
    if busiest.groups:
        smallest = min(stack_cost(g, durs) for g in busiest.groups)
        assert max(loads) - min(loads) <= smallest + 1e-6


def test_an_ngc_stack_weighs_more_than_pip_and_records_override_defaults():
    ngc, pip = group("ngc-24.01", "ngc"), group("pip-a", "pip")
    assert stack_cost(ngc) == SETUP_S["ngc"] + 2 * CELL_S["ngc"] > stack_cost(pip)
    assert stack_cost(pip, {"pip-a--r0": 1.5}) == SETUP_S["pip"] + 1.5 + CELL_S["pip"]
    # one NGC stack weighs as much as three pip stacks: it gets a shard of its own
    plan = Plan((ngc, *(group(f"pip-{i}") for i in range(3))))
    one, two = assign(plan, 2)
    assert (one.stack_ids, len(two.groups)) == (("ngc-24.01",), 3)


def test_select_shard_and_empty_shards():
    plan = Plan((group("a"), group("b")))
    shards = assign(plan, 3)
    assert select_shard(plan, ShardSpec(2, 3)) == shards[1]
    assert [len(s.groups) for s in shards] == [1, 1, 0] and shards[2].expected_s == 0


@pytest.mark.parametrize("text, spec", [("1/1", ShardSpec(1, 1)), ("2/4", ShardSpec(2, 4)),
                                        (" 3 / 3 ", ShardSpec(3, 3))])
def test_parse_shard(text, spec):
    assert parse_shard(text) == spec and str(spec) == text.replace(" ", "")


@pytest.mark.parametrize("text, message", [
    ("0/3", "K must be between 1 and N"), ("4/3", "K must be between 1 and N"),
    ("2", "expected K/N"), ("a/b", "expected K/N"), ("-1/2", "expected K/N"), ("1/0", "N must be from 1 to"),
    ("", "expected K/N"), ("1/2/3", "expected K/N"),
])
def test_bad_shard_names_the_value(text, message):
    with pytest.raises(UsageError, match=message) as info:
        parse_shard(text)
    assert repr(text) in str(info.value)


def test_durations_from_the_store_latest_usable_record(tmp_path):
    store = ResultStore(tmp_path / "res")
    for over in ({"run_id": "r1", "duration_s": 7.0, "finished_at": "2026-01-01T00:00:00Z"},
                 {"run_id": "r2", "duration_s": 9.0, "finished_at": "2026-01-02T00:00:00Z"},
                 {"repro": "other", "status": "broken", "duration_s": 99.0},
                 {"repro": "zero", "duration_s": 0.0}):
        store.append(Result.from_dict(make_record(**over)))
    cell = make_record()["cell"]
    assert recorded_durations([store.root]) == {cell: 9.0}
    with pytest.raises(UsageError, match="--durations .*nope: no such file"):
        recorded_durations([tmp_path / "nope"])


CPU = ["--matrix", "examples/cpu-only.yaml", "--all"]


def test_plan_shards_json_is_stable_and_complete(capsys, monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)
    assert main(["plan", *CPU, "--shards", "3", "--format", "json"]) == 0
    first = capsys.readouterr().out
    assert main(["plan", *CPU, "--shards", "3", "--format", "json"]) == 0
    assert capsys.readouterr().out == first
    data = json.loads(first)
    assert data["count"] == 3 and [s["shard"] for s in data["shards"]] == ["1/3", "2/3", "3/3"]
    assert main(["plan", *CPU, "--format", "json"]) == 0
    every = {c["cell"] for c in json.loads(capsys.readouterr().out)}
    cells = [c for s in data["shards"] for c in s["cells"]]
    example = load_matrix(PROJECT_ROOT / "examples" / "cpu-only.yaml")  # two stacks, its repros on each
    assert sorted(cells) == sorted(every) and len(every) == sum(len(s.repros) for s in example.stacks)


@pytest.mark.parametrize("argv, message", [
    (["run", *CPU, "--shard", "4/3"], "--shard '4/3': K must be between 1 and N (3)"),
    (["matrix", *CPU, "--shard", "two/3"], "--shard 'two/3': expected K/N"),
    (["plan", *CPU, "--shards", "0"], "--shards 0: the number of shards"),
    (["plan", *CPU, "--shards", "2", "--durations", "no/such/dir"], "--durations no/such/dir"),
])
def test_bad_shard_arguments_exit_2(argv, message, capsys, monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_empty_shard_runs_nothing_and_leaves_a_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)
    out = tmp_path / "shard-3"
    assert main(["run", *CPU, "--shard", "3/3", "--results", str(out)]) == 0
    assert out.is_dir() and not any(out.iterdir())
    assert "shard 3/3" in capsys.readouterr().out
