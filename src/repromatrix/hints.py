"""Next-step commands in error messages, complete enough to paste.

CLI side. A hint repeats the command the user ran with everything it used (the
matrix, the catalog, the mirror map, the CA bundle, the wheelhouses, the
backend: ``options.reproduce_args``), changed only where the hint says.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Sequence

from .config import Matrix
from .errors import BaseImageMissing
from .model import Plan
from .options import RunOptions, reproduce_args


def selection(args: argparse.Namespace) -> str | None:
    """The run's selection as a -k expression (None: --all)."""
    if getattr(args, "expr", None):
        return str(args.expr)
    return None if getattr(args, "all_stacks", False) else "default"


def _command(verb: str, matrix: Matrix, options: RunOptions, extra: Sequence[str]) -> str:
    args = reproduce_args(matrix, options)
    if verb == "build":  # builds write no results
        at = args.index("--results")
        args = args[:at] + args[at + 2:]
    return shlex.join(["repromatrix", verb, *args, *extra])


def base_image_hint(exc: BaseImageMissing, args: argparse.Namespace, matrix: Matrix,
                    options: RunOptions, plan: Plan) -> BaseImageMissing:
    """``exc`` with the commands that map a missing base image, or leave its stacks out
    (only when the selection keeps other stacks, and naming only stacks it has)."""
    verb = str(args.command)
    sel = selection(args)
    keep = ["-k", sel] if sel else ["--all"]
    lines = [str(exc)]
    for public in exc.missing:
        mapped = [*keep, "--base-image", f"{public}=LOCAL"]
        lines.append(f"  map it: {_command(verb, matrix, options, mapped)}")
    affected = {sid for ids in exc.missing.values() for sid in ids}
    planned = [g.stack for g in plan.groups]
    rest = [s for s in planned if s.id not in affected]
    if rest and affected:
        hit = [s for s in planned if s.id in affected]
        ngc_only = all(s.kind == "ngc" for s in hit) and not any(s.kind == "ngc" for s in rest)
        leave = "ngc" if ngc_only else "(" + " or ".join(s.id for s in hit) + ")"
        expr = f"({sel}) and not {leave}" if sel else f"not {leave}"
        lines.append(f"  or leave them out: {_command(verb, matrix, options, ['-k', expr])}")
    err = BaseImageMissing("\n".join(lines))
    err.missing = exc.missing
    return err
