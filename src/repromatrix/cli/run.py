"""`repromatrix run`: run the selected cells and record their results."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repromatrix.config.flags import add_options
from repromatrix.config.matrix import Matrix
from repromatrix.config.options import RunOptions
from repromatrix.config.resolve import run_options
from repromatrix.errors import BaseImageMissing, Exit
from repromatrix.onefile.plain import ScriptSpec
from repromatrix.textsafe import listed, printable

from .common import Selection, load, pairing_notes, plan_for, say, script_spec, with_script
from .hints import base_image_hint

if TYPE_CHECKING:
    from repromatrix.distribute.shard import ShardSpec

HELP = "run the selected cells and record results"
RUN_GROUPS = ("select", "image", "engine", "run", "shard", "script")


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("run", help=HELP)
    add_options(p, *RUN_GROUPS)
    return p


@dataclass(frozen=True)
class RunRequest:
    """What `run` (and `matrix`) runs: the loaded matrix, its selection, resolved options."""

    selection: Selection
    matrix: Matrix  # with the command line's image overrides
    options: RunOptions
    shard: ShardSpec | None = None
    durations: tuple[Path, ...] = ()
    script: ScriptSpec | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunRequest:
        """The request ``args`` ask for; a bad value fails here, before any work."""
        from repromatrix.distribute.shard import parse_shard

        shard = parse_shard(args.shard) if args.shard else None  # a bad K/N fails first
        matrix = load(args)
        options = run_options(matrix, args)
        return cls(Selection.from_args(args), matrix, options, shard, tuple(args.durations),
                   script_spec(args))


def run(args: argparse.Namespace) -> int:
    return execute(RunRequest.from_args(args))


def execute(request: RunRequest) -> int:
    """Run the request's cells, record them, say what happened; the exit code."""
    from repromatrix.distribute.shard import shard_plan
    from repromatrix.run.cells import run_plan
    from repromatrix.run.outlook import outlook
    from repromatrix.run.progress import RunProgress
    from repromatrix.store.index import recorded_shown

    options = request.options
    matrix = with_script(request.script, request.matrix, options.results)
    plan = plan_for(request.selection, matrix, request.script.id if request.script else None)
    if request.shard is not None:
        plan = shard_plan(plan, request.shard, list(request.durations), options.results)
        if not plan.groups:
            return Exit.OK
    for line in pairing_notes(plan):
        print(printable(f"note: {line}"), file=sys.stderr)
    try:
        with RunProgress() as progress:
            summary = run_plan(matrix, plan, options, log=progress.log, progress=progress)
    except BaseImageMissing as exc:
        raise base_image_hint(exc, request.selection, matrix, options, plan) from None
    progress.print_summary(summary.run_id)
    counts = ", ".join(f"{n} {s}" for s, n in sorted(summary.statuses.items())) or "nothing new"
    print(printable(f"run {summary.run_id}: {summary.ran} cell(s) run ({counts}), {summary.reused} "
                    f"reused; results in {options.results}/"))
    for line in outlook(recorded_shown(options.results, summary.cells).values()).lines():
        print(printable(line))
    code = all_broken(summary)
    if not code:  # some stacks broken, others tested: say why, the exit stays 0
        say_why_broken(summary.results)
    return code


def say_why_broken(results: Sequence[Any]) -> None:
    """Each reason cells ended `broken` (nothing tested there), with the stacks it hit."""
    stacks: dict[str, list[str]] = {}
    for r in results:
        if r.status == "broken" and r.stack_id not in stacks.setdefault(r.message, []):
            stacks[r.message].append(r.stack_id)
    for reason, ids in stacks.items():
        say(f"broken on {len(ids)} stack(s) ({listed(ids)}): {reason}")


def all_broken(summary: Any) -> Exit:
    """Exit 3 when every cell of the run is `broken`: nothing was tested, say why."""
    if not summary.results or summary.reused or any(r.status != "broken" for r in summary.results):
        return Exit.OK
    reasons = list(dict.fromkeys(r.message for r in summary.results))
    more = f" (and {len(reasons) - 3} other reason(s))" if len(reasons) > 3 else ""
    say("error: every cell is broken, nothing was tested: " + " | ".join(reasons[:3]) + more)
    return Exit.INFRA
