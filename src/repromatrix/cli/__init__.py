"""The command line: one module per command, each with ``add_parser`` and ``run``.

``main`` parses, runs the command and maps a harness fault to its exit code
(``errors.Exit``): 0 done (bugs reproducing is a normal outcome), 1 an unexpected
harness fault, 2 bad input, 3 infrastructure unavailable, 4 ``report --check``
found a contradiction, 130 interrupted (recorded results are kept). Text from
records and from subprocesses is printed through ``textsafe.printable``.
"""

from __future__ import annotations

import argparse
import signal
import sys
import traceback
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from repromatrix import __version__
from repromatrix.errors import Exit, HarnessError
from repromatrix.textsafe import printable

from . import bisect, build, check, compat, env, export, init, matrix, plan, report, run, store

DESCRIPTION = ("Compatibility matrix and reproduction harness for the PyTorch deployment stack "
               "(torch / torchvision / torch-tensorrt / NGC): run known bugs' repros on many "
               "environments, render the matrix as a static site, bisect a regression.")
# in the order `--help` lists them
COMMANDS: dict[str, ModuleType] = {
    "plan": plan, "build": build, "run": run, "report": report, "matrix": matrix,
    "bisect": bisect, "export": export, "compat": compat, "store": store, "init": init, "env": env,
    "check": check,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="repromatrix", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"repromatrix {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS.values():
        command.add_parser(sub)
    return parser


def _stop_on_sigterm() -> None:
    """SIGTERM (CI cancel, `kill`, nox shutting down) unwinds like Ctrl-C, so containers
    and runner processes are removed and recorded results are kept."""
    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _stop_on_sigterm()
    try:
        return int(COMMANDS[args.command].run(args))
    except HarnessError as exc:
        print(f"repromatrix: error: {printable(exc, newlines=True)}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("repromatrix: interrupted; recorded results are kept", file=sys.stderr)
        return Exit.INTERRUPTED
    except Exception:
        traceback.print_exc()
        print("repromatrix: internal error (a harness fault, please report it)", file=sys.stderr)
        return Exit.FAULT
