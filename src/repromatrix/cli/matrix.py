"""`repromatrix matrix`: build + run + report, the main job (`nox -s matrix`)."""

from __future__ import annotations

import argparse

from repromatrix.config.flags import add_options

from . import report
from . import run as run_command

HELP = "build + run + report"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("matrix", help=HELP)
    add_options(p, *run_command.RUN_GROUPS, skip=("--script", "--bad-if-output"))
    report.add_page_options(p)
    return p


def run(args: argparse.Namespace) -> int:
    ran = run_command.run(args)
    reported = report.run(args, results=[args.results])
    return ran or reported
