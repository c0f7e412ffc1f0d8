"""Shards: split a plan's stacks over N machines, balanced by expected cost. Pure.

Flow: plan -> **shard** -> run. A stack is the unit (one image, one container),
so a shard is a set of whole stacks. Each stack's expected cost is a setup
cost for its kind (pulling a ~20 GB NGC image costs far more than building a
pip image) plus, for every selected cell, its recorded duration when a results
store has one, else a per-kind default.

The assignment is longest-first onto the least-loaded shard (ties: lower
shard), stacks taken by (cost, id): a pure function of the selected stacks,
N and the durations, independent of the matrix's order. Every machine that
runs ``--shard K/N`` must therefore see the same selection and the same
durations (``--durations``), or shards would overlap or leave stacks out.
Shards are numbered 1..N (a Kubernetes completion index is K-1).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repromatrix.errors import UsageError
from repromatrix.model import Plan, StackGroup

# Seconds, for a stack with no record: image pull/build + start, and one cell.
SETUP_S: Mapping[str, float] = {"ngc": 900.0, "pip": 240.0, "local": 5.0}
CELL_S: Mapping[str, float] = {"ngc": 90.0, "pip": 60.0, "local": 30.0}
UNKNOWN_KIND = "pip"
MAX_SHARDS = 1000
_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class ShardSpec:
    """Shard ``index`` of ``count``, 1-based (``--shard 2/4``)."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass(frozen=True)
class Shard:
    """The stacks one machine runs, in matrix order, and their expected seconds."""

    spec: ShardSpec
    groups: tuple[StackGroup, ...]
    expected_s: float

    @property
    def plan(self) -> Plan:
        return Plan(self.groups)

    @property
    def stack_ids(self) -> tuple[str, ...]:
        return tuple(g.stack.id for g in self.groups)


def check_count(count: Any, option: str = "--shards") -> int:
    """``count`` as a shard count (1..MAX_SHARDS), else a UsageError naming the option."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_SHARDS:
        raise UsageError(f"{option} {count!r}: the number of shards must be an integer "
                         f"from 1 to {MAX_SHARDS}")
    return count


def parse_shard(text: str) -> ShardSpec:
    """``"K/N"`` -> ShardSpec(K, N); 1 <= K <= N, else a UsageError saying what is wrong."""
    m = _SPEC.match(str(text))
    if not m:
        raise UsageError(f"--shard {text!r}: expected K/N with whole numbers, e.g. --shard 2/4 "
                         "(shard 2 of 4)")
    index, count = int(m.group(1)), int(m.group(2))
    if not 1 <= count <= MAX_SHARDS:
        raise UsageError(f"--shard {text!r}: N must be from 1 to {MAX_SHARDS}")
    if not 1 <= index <= count:
        raise UsageError(f"--shard {text!r}: K must be between 1 and N ({count}); "
                         "shards are numbered from 1")
    return ShardSpec(index, count)


def recorded_durations(paths: Sequence[Path]) -> dict[str, float]:
    """Each cell's duration (seconds) in its latest usable record under ``paths``.

    Records with no positive duration, and ``broken`` ones (they never ran), are ignored.
    A path that does not exist is a UsageError: a typo would silently unbalance shards.
    """
    from repromatrix.store.results import latest_by_cell, load_records

    for p in paths:
        if not Path(p).exists():
            raise UsageError(f"--durations {p}: no such file or folder")
    records = (r for r in load_records(paths).records if r.status != "broken")
    out: dict[str, float] = {}
    for cid, rec in latest_by_cell(records).items():
        d = rec.duration_s
        if isinstance(d, (int, float)) and not isinstance(d, bool) and d > 0:
            out[cid] = float(d)
    return out


def stack_cost(group: StackGroup, durations: Mapping[str, float] | None = None) -> float:
    """Expected seconds for one stack: setup by kind + each cell (recorded, else default)."""
    kind = group.stack.kind if group.stack.kind in SETUP_S else UNKNOWN_KIND
    durations = durations or {}
    cells = sum(durations.get(c.id, CELL_S[kind]) for c in group.cells)
    return round(SETUP_S[kind] + cells, 3)


def assign(plan: Plan, count: int, durations: Mapping[str, float] | None = None) -> tuple[Shard, ...]:
    """All ``count`` shards of ``plan`` (some may be empty when there are fewer stacks)."""
    check_count(count)
    costs = {g.stack.id: stack_cost(g, durations) for g in plan.groups}
    if len(costs) != len(plan.groups):
        raise UsageError("the plan names a stack twice; cannot shard it")
    loads = [0.0] * count
    where: dict[str, int] = {}
    for sid in sorted(costs, key=lambda s: (-costs[s], s)):
        target = min(range(count), key=lambda i: (loads[i], i))
        where[sid] = target
        loads[target] += costs[sid]
    return tuple(
        Shard(ShardSpec(i + 1, count),
              tuple(g for g in plan.groups if where[g.stack.id] == i),
              round(loads[i], 3))
        for i in range(count))


def select_shard(plan: Plan, spec: ShardSpec,
                 durations: Mapping[str, float] | None = None) -> Shard:
    """Shard ``spec.index`` of ``spec.count`` of ``plan``."""
    return assign(plan, spec.count, durations)[spec.index - 1]


def assignment_id(shards: Iterable[Shard]) -> str:
    """A short digest of which stack goes where: equal on every machine that agrees."""
    mapping = [[str(s.spec), list(s.stack_ids)] for s in shards]
    return hashlib.sha256(json.dumps(mapping).encode()).hexdigest()[:12]


def assignment_json(shards: Sequence[Shard], *, durations_from: Sequence[str] = ()) -> dict[str, Any]:
    """The assignment as printed by ``repromatrix plan --shards N --format json``."""
    return {
        "count": len(shards),
        "assignment": assignment_id(shards),
        "durations_from": list(durations_from),
        "shards": [{
            "shard": str(s.spec), "index": s.spec.index,
            "stacks": list(s.stack_ids),
            "cells": [c.id for c in s.plan.cells],
            "expected_s": s.expected_s,
        } for s in shards],
    }


def format_assignment(shards: Sequence[Shard]) -> str:
    """A human table: one line per shard with its stacks and expected time."""
    lines = [f"{'shard':>7}  {'expected':>9}  {'cells':>5}  stacks"]
    for s in shards:
        lines.append(f"{str(s.spec):>7}  {_hms(s.expected_s):>9}  {len(s.plan.cells):>5}  "
                     f"{', '.join(s.stack_ids) or '-'}")
    lines.append(f"{sum(len(s.groups) for s in shards)} stacks on {len(shards)} shards "
                 f"(assignment {assignment_id(shards)})")
    return "\n".join(lines)


def _hms(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}"


def shard_plan(plan: Plan, spec: ShardSpec, durations_from: Sequence[Path], results: Path,
               log: Any = print) -> Plan:
    """For `run --shard K/N`: the shard's plan, announced; its results folder always exists
    (an empty shard still leaves a folder for the merge to read)."""
    shards = assign(plan, spec.count, recorded_durations(durations_from))
    mine = shards[spec.index - 1]
    Path(results).mkdir(parents=True, exist_ok=True)
    what = ", ".join(mine.stack_ids) or "no stacks (fewer stacks than shards)"
    log(f"shard {spec} (assignment {assignment_id(shards)}): {len(mine.plan.cells)} cell(s) "
        f"on {what}; expected {_hms(mine.expected_s)}")
    return mine.plan
