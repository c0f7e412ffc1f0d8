"""`repromatrix plan`: list the selected cells (or split them into shards)."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from repromatrix.config.flags import add_options
from repromatrix.config.matrix import load_matrix
from repromatrix.errors import Exit
from repromatrix.model import Plan
from repromatrix.textsafe import printable

from .common import Selection, pairing_notes, plan_for

HELP = "list the selected cells"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("plan", help=HELP)
    add_options(p, "select")
    p.add_argument("--format", choices=("table", "json"), default="table",
                   help="a table to read, or JSON (cells with their stacks) for scripts")
    p.add_argument("--shards", type=int, metavar="N",
                   help="split the selected stacks into N shards balanced by expected cost")
    add_options(p, "shard", skip=("--shard",))
    return p


@dataclass(frozen=True)
class PlanRequest:
    """What `plan` lists: the selection, how, and the shards to split it into."""

    selection: Selection
    matrix_file: Path | None = None
    format: str = "table"
    shards: int | None = None
    durations: tuple[Path, ...] = ()

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> PlanRequest:
        return cls(Selection.from_args(args), args.matrix, args.format, args.shards,
                   tuple(args.durations))


def run(args: argparse.Namespace) -> int:
    return execute(PlanRequest.from_args(args))


def execute(request: PlanRequest) -> int:
    """Print the selected cells (or their shards) as a table or JSON."""
    matrix = load_matrix(request.matrix_file, extra_repros=request.selection.repros)
    plan = plan_for(request.selection, matrix)
    if request.shards is not None:
        from repromatrix.distribute.shard import (
            assign,
            assignment_json,
            format_assignment,
            recorded_durations,
        )

        durations = list(request.durations)
        shards = assign(plan, request.shards, recorded_durations(durations))
        if request.format == "json":
            print(json.dumps(assignment_json(shards, durations_from=[str(p) for p in durations]),
                             indent=2))
        else:
            print(format_assignment(shards))
        return Exit.OK
    if request.format == "json":
        cells = [{"cell": c.id, "stack": c.stack.spec(), "repro": c.repro, "tags": list(c.stack.tags)}
                 for c in plan.cells]
        print(json.dumps(cells, indent=2))
        return Exit.OK
    print(format_plan(plan))
    for line in pairing_notes(plan):
        print(printable(f"note: {line}"))
    return Exit.OK


def format_plan(plan: Plan) -> str:
    rows = [("cell", "kind", "torch", "torch_tensorrt", "repro")]
    rows += [(c.id, c.stack.kind, c.stack.torch or "-", c.stack.torch_tensorrt or "-", c.repro)
             for c in plan.cells]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.append(f"{len(plan.cells)} cells on {len(plan.groups)} stacks")
    return "\n".join(lines)
