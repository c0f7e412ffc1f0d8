"""`repromatrix env`: the environment probe of an interpreter, as JSON."""

from __future__ import annotations

import argparse
import json
import sys

from repromatrix.errors import Exit

HELP = "print the environment probe of an interpreter as JSON"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("env", help=HELP)
    p.add_argument("--python", metavar="PATH", default=sys.executable,
                   help="the interpreter to probe (default: the one running repromatrix)")
    return p


def run(args: argparse.Namespace) -> int:
    from repromatrix.engines.interpreter import env_probe

    print(json.dumps(env_probe(args.python), indent=2, sort_keys=True))
    return Exit.OK
