"""What several commands share: the matrix they read, the cells they select, the script they join."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from repromatrix.config.matrix import Matrix, load_matrix
from repromatrix.config.options import load_matrix_with
from repromatrix.errors import UsageError
from repromatrix.model import Plan
from repromatrix.plan import make_plan
from repromatrix.scripts import plain as own_bugs
from repromatrix.textsafe import printable


def load(args: argparse.Namespace, *, overrides: bool = True) -> Matrix:
    """The matrix file and its catalog (``--repros``), with the command line's image
    overrides when the command has them."""
    if not overrides:
        return load_matrix(args.matrix, extra_repros=args.repros)
    return load_matrix_with(args.matrix, base_images=args.base_image, ca_bundle=args.ca_bundle,
                            find_links=args.find_links, repros=args.repros, log=say)


def say(line: str) -> None:
    """A note from repromatrix itself, on stderr."""
    print(printable(f"repromatrix: {line}"), file=sys.stderr)


def plan_for(args: argparse.Namespace, matrix: Matrix) -> Plan:
    """The cells ``-k``/``--all`` select (only the script's, with ``--script``)."""
    listing = ["repromatrix", "plan", "--all", "--matrix", str(Path(matrix.path).resolve()),
               *(a for d in args.repros for a in ("--repros", str(d.resolve())))]
    plan = make_plan(matrix.stacks, args.expr, all_stacks=args.all_stacks, listing=listing)
    script = getattr(args, "script_id", None)
    return own_bugs.only(plan, script) if script else plan


def with_script(args: argparse.Namespace, matrix: Matrix, results: Path) -> Matrix:
    """``matrix`` with ``--script`` joined to its catalog (its id noted in ``args``)."""
    if getattr(args, "bad_if_output", None) and not args.script:
        raise UsageError("--bad-if-output needs --script (a protocol repro declares signatures)")
    if not getattr(args, "script", None):
        return matrix
    spec = own_bugs.ScriptSpec(args.script, args.bad_if_output)
    args.script_id = spec.id
    return own_bugs.add_script(matrix, spec, results)


def pairing_notes(plan: Plan) -> list[str]:
    """One line per planned stack whose torchvision the compat table pairs with less than
    checked confidence."""
    from repromatrix.config.compat import pairing_note

    notes = (pairing_note(g.stack.torch, g.stack.torchvision) for g in plan.groups)
    return list(dict.fromkeys(n for n in notes if n))
