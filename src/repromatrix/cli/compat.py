"""`repromatrix compat update`: the compatibility table against the package index."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "the compatibility table (data/compat.yaml)"
PYPI_URL = "https://pypi.org"  # releases.update's default, not imported: every command builds this parser


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("compat", help=HELP)
    actions = p.add_subparsers(dest="compat_command", required=True, metavar="ACTION")
    u = actions.add_parser("update", help="propose the rows the table lacks, from PyPI's metadata")
    u.add_argument("--check", action="store_true", help="exit 1 when the table (or, with --matrix, "
                   "the matrix file) is behind the index")
    u.add_argument("--write", action="store_true", help="apply the proposal to the table (and add "
                   "the missing stacks to --matrix) and record the `checked` date")
    u.add_argument("--stanza", action="store_true",
                   help="print only the matrix.yaml stacks of torch minors that have none yet "
                        "(in --matrix, default the project's matrix.yaml)")
    u.add_argument("--table", type=Path, metavar="F",
                   help="the table file (default: the packaged compat.yaml)")
    u.add_argument("--matrix", type=Path, metavar="F", help="a matrix file whose pip stacks should "
                   "reach the table's newest torch minor")
    u.add_argument("--index", default=PYPI_URL, metavar="URL", help="package index (PEP 691)")
    u.add_argument("--from", dest="recorded", type=Path, metavar="DIR",
                   help="read recorded index answers from DIR instead of the network")
    u.add_argument("--record", type=Path, metavar="DIR",
                   help="also write the answers read (trimmed) into DIR, for --from")
    return p


def run(args: argparse.Namespace) -> int:
    from repromatrix.releases.update import update

    return update(table=args.table, matrix=args.matrix, index_url=args.index,
                  recorded=args.recorded, record=args.record, check=args.check, write=args.write,
                  stanza_only=args.stanza)
