"""`repromatrix bisect`: find the first release where a repro changes outcome."""

from __future__ import annotations

import argparse

from repromatrix.bisect.candidates import AXES
from repromatrix.config.flags import add_options
from repromatrix.config.options import ENGINE_NAMES
from repromatrix.config.resolve import run_options
from repromatrix.errors import UsageError

from .common import load, script_spec, with_script

HELP = "find the first release where a repro changes outcome"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("bisect", help=HELP)
    p.add_argument("--repro", help="a repro id of the catalog (or give --script)")
    p.add_argument("--good", required=True, help="a version where the repro passes")
    p.add_argument("--bad", required=True, help="a version where it fails")
    p.add_argument("--axis", default="torch", choices=AXES,
                   help="what the releases between --good and --bad are of (default: torch)")
    p.add_argument("--with", dest="with_", action="append", default=[], metavar="PKG[==V]",
                   help="install this in every probed environment too (repeatable); besides it a "
                        "probe installs the axis package and what the repro's META requires")
    p.add_argument("--bad-if", default="fail", help="statuses that count as bad (default: fail)")
    p.add_argument("--find-fix", action="store_true", help="search for the first good instead")
    p.add_argument("--stage", metavar="NAME", help="judge by this stage's status, not the cell's")
    p.add_argument("--base", action="append", default=[], metavar="KEY=VALUE",
                   help="pin a non-axis package of every candidate, e.g. torch_tensorrt=none "
                        "(repeatable)")
    p.add_argument("--json", action="store_true", help="machine-readable result")
    add_options(p, "select", "script", "image", "engine", "run", skip=("-k", "--all", "--backend"))
    p.add_argument("--backend", default=None, metavar="|".join(ENGINE_NAMES),
                   help="the engine, or a fallback chain such as docker|venv (default: venv, "
                        "docker for --axis ngc: one environment per release; the matrix's "
                        "defaults.backend is not used here)")
    return p


def run(args: argparse.Namespace) -> int:
    """The question (``BisectRequest``), the matrix and the probes' options, then the search
    (``repromatrix.bisect.main``)."""
    from repromatrix.bisect import BisectRequest
    from repromatrix.bisect import main as bisect_main

    if bool(args.repro) == bool(args.script):
        raise UsageError("bisect needs --repro ID (a repro of the catalog) or --script PY "
                         "(a plain script), not both")
    # one environment per release: uv venvs, unless NGC images; never the matrix's backend
    engine = "docker" if args.axis == "ngc" else "venv"
    matrix = load(args)
    options = run_options(matrix, args, defaults={"backend": engine})
    script = script_spec(args)
    matrix = with_script(script, matrix, options.results)
    request = BisectRequest(repro=script.id if script else args.repro, good=args.good,
                            bad=args.bad, axis=args.axis, bad_if=args.bad_if,
                            find_fix=args.find_fix, stage=args.stage, base=tuple(args.base),
                            json=args.json, with_=tuple(args.with_), script=bool(args.script))
    return bisect_main(request, matrix, options)
