"""`repromatrix build`: make the environments (images, venvs) of the selected stacks."""

from __future__ import annotations

import argparse
from pathlib import Path

from repromatrix.config.flags import add_options
from repromatrix.config.options import DEFAULT_RESULTS, run_options
from repromatrix.errors import BaseImageMissing, Exit
from repromatrix.textsafe import printable

from .common import load, plan_for
from .hints import base_image_hint

HELP = "make the environments (images, venvs) of the selected stacks"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("build", help=HELP)
    add_options(p, "select", "image", "engine")
    p.add_argument("--push", metavar="REGISTRY/PREFIX",
                   help="docker: push every ready image there (content-hash tags)")
    p.add_argument("--work-dir", type=Path, default=DEFAULT_RESULTS / ".work",
                   help="where build contexts and logs go")
    return p


def run(args: argparse.Namespace) -> int:
    from repromatrix.run.cells import prepare_plan

    matrix = load(args)
    plan = plan_for(args, matrix)
    options = run_options(matrix, args)
    try:
        prepared = prepare_plan(matrix, plan, options)
    except BaseImageMissing as exc:
        raise base_image_hint(exc, args, matrix, options, plan) from None
    for p in prepared:
        state = "cached" if p.cached else ("built" if p.ok else "FAILED")
        extra = f"  {p.reason}  (log: {p.log_path})" if not p.ok else ""
        print(printable(f"{state:7} {p.stack.id}  {p.handle}{extra}"))
    failed = sum(not p.ok for p in prepared)
    print(f"{len(prepared) - failed} environment(s) ready, {failed} failed")
    return Exit.INFRA if failed else Exit.OK
