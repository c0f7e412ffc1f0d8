"""What several commands share: the matrix they read, the cells they select, the script they join."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from repromatrix.config.matrix import Matrix, load_matrix
from repromatrix.config.options import load_matrix_with
from repromatrix.errors import UsageError
from repromatrix.model import Plan
from repromatrix.onefile import plain as own_bugs
from repromatrix.plan import make_plan
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


@dataclass(frozen=True)
class Selection:
    """The command that asks and the cells it selects (``-k``/``--all``, the catalog)."""

    command: str
    expr: str | None = None
    all_stacks: bool = False
    repros: tuple[Path, ...] = ()

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Selection:
        return cls(str(args.command), args.expr, bool(args.all_stacks), tuple(args.repros))


def plan_for(selection: Selection, matrix: Matrix, script_id: str | None = None) -> Plan:
    """The cells ``-k``/``--all`` select (only the script's, with ``--script``)."""
    listing = ["repromatrix", "plan", "--all", "--matrix", str(Path(matrix.path).resolve()),
               *(a for d in selection.repros for a in ("--repros", str(d.resolve())))]
    plan = make_plan(matrix.stacks, selection.expr, all_stacks=selection.all_stacks,
                     listing=listing)
    return own_bugs.only(plan, script_id) if script_id else plan


def script_spec(args: argparse.Namespace) -> own_bugs.ScriptSpec | None:
    """``--script`` (with ``--bad-if-output``) as a spec; None without one."""
    if getattr(args, "bad_if_output", None) and not args.script:
        raise UsageError("--bad-if-output needs --script (a protocol repro declares signatures)")
    if not getattr(args, "script", None):
        return None
    return own_bugs.ScriptSpec(args.script, args.bad_if_output)


def with_script(spec: own_bugs.ScriptSpec | None, matrix: Matrix, results: Path) -> Matrix:
    """``matrix`` with the ``--script`` of ``spec`` joined to its catalog (as ``spec.id``)."""
    return own_bugs.add_script(matrix, spec, results) if spec else matrix


def pairing_notes(plan: Plan) -> list[str]:
    """One line per planned stack whose torchvision the compat table pairs with less than
    checked confidence."""
    from repromatrix.config.compat import pairing_note

    notes = (pairing_note(g.stack.torch, g.stack.torchvision) for g in plan.groups)
    return list(dict.fromkeys(n for n in notes if n))
