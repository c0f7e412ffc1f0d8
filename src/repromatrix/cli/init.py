"""`repromatrix init`: a starter matrix.yaml, repros/ and noxfile.py in the user's folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from repromatrix.config.starter import write_starter
from repromatrix.errors import Exit
from repromatrix.textsafe import printable

HELP = "write a starter matrix.yaml, repros/ (one example repro) and noxfile.py into a folder"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("init", help=HELP)
    p.add_argument("folder", nargs="?", type=Path, default=Path("."),
                   help="where to write them (default: the current folder); never overwrites")
    return p


def run(args: argparse.Namespace) -> int:
    for path in write_starter(args.folder):
        print(printable(f"wrote {path}"))
    where = "" if args.folder.resolve() == Path.cwd().resolve() else f"cd {args.folder} && "
    print(printable(f"next: {where}repromatrix plan   (then `repromatrix matrix`, or `nox -s matrix`)"))
    return Exit.OK
