"""`repromatrix build`: make the environments (images, venvs) of the selected stacks."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from repromatrix.config.flags import add_options
from repromatrix.config.matrix import Matrix
from repromatrix.config.options import DEFAULT_RESULTS, RunOptions
from repromatrix.config.resolve import run_options
from repromatrix.errors import BaseImageMissing, Exit
from repromatrix.model import Plan
from repromatrix.textsafe import printable

from .common import Selection, load, plan_for
from .hints import base_image_hint

HELP = "make the environments (images, venvs) of the selected stacks"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("build", help=HELP)
    add_options(p, "select", "image", "engine", "build")
    return p


@dataclass(frozen=True)
class BuildRequest:
    """What `build` makes: the loaded matrix, the planned stacks, resolved options."""

    selection: Selection
    matrix: Matrix  # with the command line's image overrides
    plan: Plan
    options: RunOptions

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> BuildRequest:
        matrix = load(args)
        selection = Selection.from_args(args)
        plan = plan_for(selection, matrix)
        options = run_options(matrix, args, defaults={"work_dir": DEFAULT_RESULTS / ".work"})
        return cls(selection, matrix, plan, options)


def run(args: argparse.Namespace) -> int:
    return execute(BuildRequest.from_args(args))


def execute(request: BuildRequest) -> int:
    """Make the request's environments and say each one's state; 3 if any failed."""
    from repromatrix.run.cells import prepare_plan

    try:
        prepared = prepare_plan(request.matrix, request.plan, request.options)
    except BaseImageMissing as exc:
        raise base_image_hint(exc, request.selection, request.matrix, request.options,
                              request.plan) from None
    for p in prepared:
        state = "cached" if p.cached else ("built" if p.ok else "FAILED")
        extra = f"  {p.reason}  (log: {p.log_path})" if not p.ok else ""
        print(printable(f"{state:7} {p.stack.id}  {p.handle}{extra}"))
    failed = sum(not p.ok for p in prepared)
    print(f"{len(prepared) - failed} environment(s) ready, {failed} failed")
    return Exit.INFRA if failed else Exit.OK
