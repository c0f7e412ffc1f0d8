"""`repromatrix matrix`: build + run + report, the main job (`nox -s matrix`)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from repromatrix.config.flags import add_options

from . import report
from . import run as run_command

HELP = "build + run + report"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("matrix", help=HELP)
    add_options(p, *run_command.RUN_GROUPS, skip=("--script", "--bad-if-output"))
    report.add_page_options(p)
    return p


@dataclass(frozen=True)
class MatrixRequest:
    """The run (which builds the environments it needs) and the page rendered from its store."""

    run: run_command.RunRequest
    report: report.ReportRequest

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> MatrixRequest:
        ran = run_command.RunRequest.from_args(args)
        page = report.ReportRequest(results=(ran.options.results,), out=args.out,
                                    check=bool(args.check), matrix_file=args.matrix,
                                    repros=tuple(args.repros))
        return cls(ran, page)


def run(args: argparse.Namespace) -> int:
    return execute(MatrixRequest.from_args(args))


def execute(request: MatrixRequest) -> int:
    """Run, then render the page whatever the run's exit; the run's code first."""
    ran = run_command.execute(request.run)
    reported = report.execute(request.report)
    return ran or reported
