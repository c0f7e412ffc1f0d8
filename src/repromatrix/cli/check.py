"""`repromatrix check`: which known bugs an environment has, and the smallest upgrade.

Like pip-audit: exit 0 when no known bug of the catalog affects it, 1 when one does (not
``--ignore``d), 2 for bad input. The environment is an interpreter (``--python``, default
the ``python3`` on PATH), pins (``torch==2.4.1 ...``), a requirements file (``-r``) or an
NGC release (``--ngc``); the records are the snapshot shipped in the package, a store
(``--results``) or a published page's ``results.json`` (``--from``).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repromatrix.config.options import DEFAULT_RESULTS
from repromatrix.errors import Exit, UsageError, did_you_mean

if TYPE_CHECKING:
    from concurrent.futures import Future

HELP = "which known bugs an environment has, and the smallest upgrade that avoids them"
FORMATS = ("text", "json")
DEFAULT_PYTHON = "python3"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("check", help=HELP, description=HELP + ". Exit 0: none; 1: at least one; "
                       "2: bad input.")
    p.add_argument("pins", nargs="*", metavar="PKG==V",
                   help="the environment as pins, e.g. torch==2.4.1 torch-tensorrt==2.4.0 "
                        "torchvision==0.19.1")
    given = p.add_mutually_exclusive_group()
    given.add_argument("--python", metavar="PATH",
                       help=f"the interpreter to check: its installed distributions, read in a "
                            f"child process without importing torch (default: the "
                            f"{DEFAULT_PYTHON} on PATH)")
    given.add_argument("-r", "--requirement", type=Path, metavar="FILE",
                       help="a requirements file or pip freeze output; - reads standard input "
                            "(pip freeze | repromatrix check -r -)")
    given.add_argument("--ngc", metavar="TAG", help="an NGC PyTorch release, e.g. 25.01")
    records = p.add_mutually_exclusive_group()
    records.add_argument("--results", type=Path, metavar="DIR",
                         help="answer from this store (default: the published records shipped "
                              "with repromatrix)")
    records.add_argument("--from", dest="from_page", metavar="FILE|URL",
                         help="answer from a published page's results.json")
    p.add_argument("--ignore", action="append", default=[], metavar="BUG",
                   help="a bug (repro id) that does not count (repeatable)")
    p.add_argument("--run", action="store_true",
                   help="also run the catalog now on the interpreter (--python; the local engine) "
                        "and say where the run disagrees with the records")
    p.add_argument("--run-results", type=Path, default=DEFAULT_RESULTS, metavar="DIR",
                   help=f"where --run records its results (default: {DEFAULT_RESULTS}/)")
    p.add_argument("--format", choices=FORMATS, default="text",
                   help="text, or json (its schema: repromatrix/data/check.schema.json)")
    return p


@dataclass(frozen=True)
class CheckRequest:
    """What `check` answers: one environment input, one source of records, the ignored bugs."""

    pins: tuple[str, ...] = ()
    python: str | None = None
    requirement: Path | None = None
    ngc: str | None = None
    results: Path | None = None
    from_page: str | None = None
    ignore: tuple[str, ...] = ()
    format: str = "text"
    run: bool = False
    run_results: Path = DEFAULT_RESULTS

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> CheckRequest:
        request = cls(tuple(args.pins), args.python, args.requirement, args.ngc, args.results,
                      args.from_page, tuple(args.ignore), args.format, args.run, args.run_results)
        inputs = [name for name, value in (("pins", request.pins), ("--python", request.python),
                                           ("-r", request.requirement), ("--ngc", request.ngc))
                  if value]
        if len(inputs) > 1:
            raise UsageError(f"give one environment: {' and '.join(inputs)} were both given")
        if request.run and inputs and inputs != ["--python"]:
            raise UsageError(f"--run runs an interpreter (--python), not {inputs[0]}")
        return request


def run(args: argparse.Namespace) -> int:
    return execute(CheckRequest.from_args(args))


def execute(request: CheckRequest) -> int:
    """Answer the request on stdout; the exit code (0 none affects it, 1 one does)."""
    from repromatrix.check.command import check_answer
    from repromatrix.config.compat import load_table

    probing = _probe_meanwhile(request)
    bugs = catalog()
    for bug in request.ignore:
        if bug not in bugs:
            raise UsageError(f"--ignore {bug}: no such bug in the catalog{did_you_mean(bug, bugs)}; "
                             f"known: {', '.join(sorted(bugs))}")
    env = environment(request, probing)
    rows, source = records(request)
    result = check_answer(bugs, rows, source, env, load_table(), request.ignore)
    if request.run:
        from repromatrix.check.decide import compare_run

        result = compare_run(result, run_now(request))
    if request.format == "json":
        sys.stdout.write(json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    else:
        from repromatrix.check.text import render

        sys.stdout.write(render(result))
    return Exit.AFFECTED if result["exit"] else Exit.OK


def catalog() -> dict[str, dict[str, Any]]:
    """The built-in bugs, each as its META says."""
    from repromatrix import paths
    from repromatrix.check.command import catalog_bugs
    from repromatrix.config.catalog import load_catalog

    return catalog_bugs(load_catalog(paths.repros_dir()))


def _probe_meanwhile(request: CheckRequest) -> Future[dict[str, Any]] | None:
    """The interpreter's distributions (``--python`` without ``--run``), read by its child
    process in a thread while the catalog loads; None for other inputs."""
    if request.run or request.pins or request.requirement is not None or request.ngc is not None:
        return None
    from concurrent.futures import ThreadPoolExecutor

    from repromatrix.engines.interpreter import distributions_probe

    pool = ThreadPoolExecutor(max_workers=1)
    probing = pool.submit(distributions_probe, request.python or DEFAULT_PYTHON, label="--python")
    pool.shutdown(wait=False)  # (its one thread ends with the probe)
    return probing


def environment(request: CheckRequest, probing: Future[dict[str, Any]] | None = None
                ) -> dict[str, Any]:
    from repromatrix.check import environment as inputs

    if request.pins:
        return inputs.from_pins(request.pins)
    if request.requirement is not None:
        return inputs.from_requirements(request.requirement)
    if request.ngc is not None:
        return inputs.from_ngc(request.ngc)
    from repromatrix.engines.interpreter import distributions_probe, env_probe

    python = request.python or DEFAULT_PYTHON
    if probing is not None:
        return inputs.from_probe(python, probing.result())
    # its installed distributions, torch not imported; --run's full probe where it runs
    probe = env_probe if request.run else distributions_probe
    return inputs.from_probe(python, probe(python, label="--python"))


def records(request: CheckRequest) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from repromatrix.check import records as sources

    if request.results is not None:
        return sources.store_rows(request.results)
    if request.from_page is not None:
        return sources.results_json_rows(request.from_page)
    return sources.snapshot_rows()


def run_now(request: CheckRequest) -> list[dict[str, Any]]:
    """Run every repro of the catalog on the interpreter through `run`'s own ``execute``
    (the local engine; recorded in ``run_results``), its progress on stderr; the rows of
    what it recorded."""
    import contextlib

    from repromatrix.check.decide import row_of
    from repromatrix.config.matrix import load_matrix
    from repromatrix.config.options import writable_folder
    from repromatrix.config.resolve import run_options
    from repromatrix.engines.interpreter import resolve_python
    from repromatrix.store.index import recorded_shown

    from . import run as run_command
    from .common import Selection

    python = resolve_python(request.python or DEFAULT_PYTHON)
    results = writable_folder(request.run_results, "--run-results")
    folder = results / ".work" / "check"
    folder.mkdir(parents=True, exist_ok=True)
    matrix_file = folder / "matrix.yaml"
    matrix_file.write_text(f"stacks: [{{kind: local, id: local, interpreter: {json.dumps(python)}, "
                           f"tags: [default]}}]\n", encoding="utf-8")
    matrix = load_matrix(matrix_file)
    options = run_options(matrix, {"backend": "local", "python": python, "results": results})
    with contextlib.redirect_stdout(sys.stderr):
        run_command.execute(run_command.RunRequest(Selection("run"), matrix, options))
    cells = [f"local--{r}" for r in matrix.repros]
    return [row_of(r.to_dict()) for r in recorded_shown(results, cells).values()]
