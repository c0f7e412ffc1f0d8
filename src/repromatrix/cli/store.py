"""`repromatrix store merge`: one results store from many, losing and doubling nothing."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from repromatrix.errors import Exit
from repromatrix.textsafe import printable

HELP = "results stores: merge them (to keep one across runs)"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("store", help=HELP)
    actions = p.add_subparsers(dest="store_command", required=True, metavar="ACTION")
    m = actions.add_parser("merge", help="add every record of SRC (folders, files) that DIR lacks")
    m.add_argument("sources", nargs="+", type=Path, metavar="SRC",
                   help="results folders (any depth) or JSONL files")
    m.add_argument("--into", type=Path, required=True, metavar="DIR", help="the store to merge into")
    return p


def run(args: argparse.Namespace) -> int:
    from repromatrix.store.merge import merge_stores

    summary = merge_stores(args.sources, args.into)
    for problem in summary.skipped:
        print(printable(f"store merge: skipped {problem}"), file=sys.stderr)
    extra = f" ({summary.differing} differing from a record of the same run and cell)" \
        if summary.differing else ""
    print(printable(f"store merge: {summary.added} record(s) added{extra}, {summary.present} already "
                    f"in {args.into}"))
    return Exit.OK
