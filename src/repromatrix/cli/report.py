"""`repromatrix report`: render the static compatibility site from results stores."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repromatrix.config.flags import add_options
from repromatrix.config.matrix import Matrix, load_matrix
from repromatrix.config.options import DEFAULT_RESULTS, writable_folder
from repromatrix.errors import Exit, UsageError
from repromatrix.onefile import plain as own_bugs
from repromatrix.textsafe import printable

HELP = "render the static compatibility site"
DEFAULT_SITE = Path("site")


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("report", help=HELP)
    add_options(p, "select", skip=("--matrix", "-k", "--all"))
    p.add_argument("--matrix", type=Path, metavar="F",
                   help="matrix file whose repro catalog titles the page (default: ./matrix.yaml, "
                        "else the project's)")
    p.add_argument("--results", type=Path, nargs="+", action="extend", metavar="PATH",
                   help="results folders or files, merged (several, or repeated; default: results/)")
    add_page_options(p)
    return p


def add_page_options(p: argparse.ArgumentParser) -> None:
    """The page's options (`report` and `matrix`)."""
    p.add_argument("--out", type=Path, default=DEFAULT_SITE, help="site output folder")
    p.add_argument("--check", action="store_true",
                   help=f"exit {int(Exit.CONTRADICTION)} if a cell contradicts its documented "
                        f"expectation")


@dataclass(frozen=True)
class ReportRequest:
    """What `report` (and `matrix`) renders: which stores, where, by which matrix's catalog."""

    results: tuple[Path, ...] = (DEFAULT_RESULTS,)
    out: Path = DEFAULT_SITE
    check: bool = False
    matrix_file: Path | None = None  # None: ./matrix.yaml, else the project's
    repros: tuple[Path, ...] = ()

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ReportRequest:
        return cls(tuple(args.results or [DEFAULT_RESULTS]), args.out, bool(args.check),
                   args.matrix, tuple(args.repros))


def run(args: argparse.Namespace) -> int:
    return execute(ReportRequest.from_args(args))


def execute(request: ReportRequest) -> int:
    """Render the site from the request's stores; 4 with ``check`` and a contradiction."""
    from repromatrix.report.render import render_site

    paths = list(request.results)
    for path in paths:
        check_results_path(path)
    writable_folder(request.out, "--out")
    matrix = load_matrix(request.matrix_file, extra_repros=request.repros)
    catalog = own_bugs.report_catalog(matrix.repros, paths)
    summary = render_site(paths, request.out, catalog, matrix=str(matrix.path),
                          published={s.id for s in matrix.stacks}, freshness=page_freshness(matrix))
    for problem in [*summary.skipped, *summary.conflicts]:
        say_report(str(problem), err=True)
    say_report(f"{summary.index} ({summary.cells} cells on {summary.stacks} stacks, "
               f"{len(summary.contradictions)} contradicting their expectation)")
    if summary.standin:
        say_report(f"{len(summary.standin)} cell(s) decided with TensorRT stood in (◇; a record "
                   f"from real TensorRT outranks them)")
    if request.check and summary.contradictions:
        for cid in summary.contradictions:
            level = f" [◇ {summary.standin[cid]}]" if cid in summary.standin else ""
            print(printable(f"contradicts its expectation: {cid}{level}"), file=sys.stderr)
        return Exit.CONTRADICTION
    return Exit.OK


def say_report(text: str, *, err: bool = False) -> None:
    print(printable(f"report: {text}"), file=sys.stderr if err else sys.stdout)


def page_freshness(matrix: Matrix) -> dict[str, Any]:
    """The page's freshness section: the packaged table, its `checked` record, the matrix."""
    from repromatrix.config.compat import load_table
    from repromatrix.report.freshness import freshness, table_checked

    return freshness(load_table(), table_checked(), matrix.stacks)


def check_results_path(path: Path) -> None:
    """A UsageError unless ``path`` is a folder or a file holding at least one record
    (checked before the site is written, so a wrong path overwrites nothing)."""
    from repromatrix.store.lines import Skipped, scan

    if not path.exists():
        raise UsageError(f"--results {path}: no such file or folder (run `repromatrix run` first)")
    if path.is_dir():
        return
    if not path.is_file():
        raise UsageError(f"--results {path}: not a regular file or a folder")
    first: Skipped | None = None
    with path.open("rb") as fh:  # 4 MB at a time: a record line is at most 64 KB when written
        for _, _, _, item in scan(fh, str(path), limit=1 << 22):
            if not isinstance(item, Skipped):
                return
            first = first or item
    why = f" ({first.reason} on line {first.line})" if first else " (it is empty)"
    raise UsageError(printable(f"--results {path}: holds no results record{why}; give a results "
                               f"folder or one of its .jsonl files"))
