"""`repromatrix check`: which known bugs an environment has, and the smallest upgrade.

Like pip-audit: exit 0 when no known bug of the catalog affects it, 1 when one does (not
``--ignore``d; with ``--strict`` also when one cannot be told), 2 for bad input. The answer:
a short table (``check.table``; ``--verbose``: every bug with its evidence, ``check.text``),
Markdown or JSON, on stdout or ``--output``; under GitHub Actions also the step summary and
an annotation per bug found (``run.ci``). The environment is an interpreter (``--python``, default
the ``python3`` on PATH), pins (``torch==2.4.1 ...``), a requirements file (``-r``) or an
NGC release (``--ngc``); the records are the snapshot shipped in the package, a store
(``--results``) or a published page's ``results.json.gz`` (``--from``).
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
from repromatrix.model import KINDS
from repromatrix.textsafe import printable

if TYPE_CHECKING:
    from concurrent.futures import Future

HELP = "which known bugs an environment has, and the smallest upgrade that avoids them"
FORMATS = ("columns", "markdown", "json", "text")  # text: columns' former name
DEFAULT_PYTHON = "python3"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("check", help=HELP, description=HELP + ". Exit 0: none; 1: at least one "
                       "(with --strict: or one that cannot be told); 2: bad input; 3: --from "
                       "unreachable.")
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
                         help="answer from a published page's results.json.gz")
    p.add_argument("--ignore", action="append", default=[], metavar="BUG",
                   help="a bug (repro id) that does not count (repeatable)")
    p.add_argument("--kind", action="append", default=[], metavar="KIND",
                   help=f"answer only for bugs of this kind ({', '.join(KINDS)}; repeatable or "
                        f"comma-separated)")
    p.add_argument("--run", action="store_true",
                   help="also run the catalog (--kind: those kinds) now on the interpreter "
                        "(--python; the local engine) and say where the run disagrees with the records")
    p.add_argument("--run-results", type=Path, default=DEFAULT_RESULTS, metavar="DIR",
                   help=f"where --run records its results (default: {DEFAULT_RESULTS}/)")
    p.add_argument("--format", choices=FORMATS, default="columns",
                   help="columns (a table, the default; text is its former name), markdown (for a "
                        "pull-request comment), or json (its schema: "
                        "repromatrix/data/check.schema.json)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="every bug with the record or rule behind its answer (columns); every "
                        "bug in the table (markdown)")
    p.add_argument("-o", "--output", type=Path, metavar="FILE",
                   help="write the answer there instead of stdout (stdout says where)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 also when a bug cannot be told (not only when one affects it)")
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
    format: str = "columns"
    run: bool = False
    run_results: Path = DEFAULT_RESULTS
    verbose: bool = False
    output: Path | None = None
    strict: bool = False
    kinds: tuple[str, ...] = ()  # --kind: only bugs of these kinds (model.KINDS' keys); () all

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> CheckRequest:
        request = cls(tuple(args.pins), args.python, args.requirement, args.ngc, args.results,
                      args.from_page, tuple(args.ignore),
                      "columns" if args.format == "text" else args.format, args.run,
                      args.run_results, args.verbose, args.output, args.strict,
                      kinds_given(args.kind))
        inputs = [name for name, value in (("pins", request.pins), ("--python", request.python),
                                           ("-r", request.requirement), ("--ngc", request.ngc))
                  if value]
        if len(inputs) > 1:
            raise UsageError(f"give one environment: {' and '.join(inputs)} were both given")
        if request.run and inputs and inputs != ["--python"]:
            raise UsageError(f"--run runs an interpreter (--python), not {inputs[0]}")
        return request


def kinds_given(values: list[str]) -> tuple[str, ...]:
    """``--kind`` values (repeatable, comma-separated, a kind's key or its words) as
    ``model.KINDS``' keys, in their order; a value that names none is refused."""
    by_words = {words: key for key, words in KINDS.items()}
    wanted = set()
    for value in (v.strip() for given in values for v in given.split(",")):
        if not value:
            continue
        key = value if value in KINDS else by_words.get(value)
        if key is None:
            raise UsageError(f"--kind {printable(value)}: no such kind{did_you_mean(value, KINDS)}; "
                             f"one of {', '.join(KINDS)}")
        wanted.add(key)
    return tuple(k for k in KINDS if k in wanted)


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
    answered = {k: b for k, b in bugs.items() if not request.kinds or b["kind"] in request.kinds}
    result = check_answer(answered, rows, source, env, load_table(), request.ignore)
    if request.kinds:
        result["kinds"] = list(request.kinds)
    if request.run:
        from repromatrix.check.decide import compare_run

        result = compare_run(result, run_now(request, sorted(answered) if request.kinds else None))
    from repromatrix.check import table

    code = exit_code(result, request.strict)
    result["exit"] = code
    packages = table.packages_of(bugs)
    answer = formatted(result, packages, request)
    if request.output is None:
        sys.stdout.write(answer)
    else:
        write_output(request.output, answer)
        sys.stdout.write(f"{table.counts(result)['affected']} known bug(s) affect this environment; "
                         f"the answer ({request.format}) is in {printable(str(request.output))}; "
                         f"exit {code}\n")
    tell_ci(result, packages, request.strict)
    return Exit.AFFECTED if code else Exit.OK


def exit_code(result: dict[str, Any], strict: bool) -> int:
    """1 when a defect not ignored affects the environment, or (``strict``) cannot be told
    (a breaking change or user error never counts: ``decide.counted``)."""
    from repromatrix.check.decide import CANNOT_TELL, counted

    untold = strict and any(b["verdict"] == CANNOT_TELL and counted(b) for b in result["bugs"])
    return 1 if result["exit"] or untold else 0


def formatted(result: dict[str, Any], packages: dict[str, str], request: CheckRequest) -> str:
    """The answer in the request's format."""
    from repromatrix.check import table

    if request.format == "json":
        return json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if request.format == "markdown":
        return table.markdown(result, packages, result["exit"], every=request.verbose)
    if request.verbose:
        from repromatrix.check.text import render

        return render(result)
    return table.columns(result, packages, result["exit"])


def write_output(path: Path, answer: str) -> None:
    try:
        path.write_text(answer, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--output {printable(str(path))}: cannot write it "
                         f"({exc.strerror or exc})") from None


def tell_ci(result: dict[str, Any], packages: dict[str, str], strict: bool) -> None:
    """Under GitHub Actions: the Markdown answer appended to the step summary, and on stderr
    (never mixed with the answer; the runner reads workflow commands on both streams) an
    error annotation per bug that affects the environment, a warning per bug that cannot be
    told under ``--strict`` (``run.ci``'s)."""
    from repromatrix.check import table
    from repromatrix.check.decide import AFFECTED, CANNOT_TELL, counted
    from repromatrix.check.table import APPLIES
    from repromatrix.run import ci

    if not ci.on_github_actions():
        return
    try:
        ci.append_step_summary("\n" + table.markdown(result, packages, result["exit"]))
    except OSError as exc:  # the answer is given: a summary it cannot write is only said
        sys.stderr.write(f"note: the step summary could not be written: {printable(str(exc))}\n")
    kinds = {AFFECTED: ci.error, APPLIES: ci.notice, **({CANNOT_TELL: ci.warning} if strict else {})}
    titles = {b["id"]: b["title"] for b in result["bugs"]}
    counts = {b["id"] for b in result["bugs"] if counted(b)}
    for row in table.rows(result, packages, (AFFECTED, CANNOT_TELL)):
        if row.verdict not in kinds or (row.verdict == CANNOT_TELL and row.bug not in counts):
            continue  # a breaking change that cannot be told is not warned of
        said = {AFFECTED: "affects this environment", APPLIES: "applies to this environment (a "
                f"{row.kind}: told, not counted)"}.get(row.verdict, "cannot be told here")
        message = (f"{row.bug} {said} ({row.package} {row.installed}): "
                   f"{printable(titles[row.bug])}. Fixed in: {row.fixed_in}. "
                   f"Workaround: {row.workaround}. {row.link}")
        sys.stderr.write(kinds[row.verdict](message, title=f"repromatrix check: {row.bug}") + "\n")


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


def run_now(request: CheckRequest, repros: list[str] | None = None) -> list[dict[str, Any]]:
    """Run the repros of the catalog (``repros``: only these, the bugs ``--kind`` answers
    for) on the interpreter through `run`'s own ``execute`` (the local engine; recorded in
    ``run_results``), its progress on stderr; the rows of what it recorded."""
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
    only = "" if repros is None else f"repros: {json.dumps(repros)}, "
    matrix_file.write_text(f"stacks: [{{kind: local, id: local, interpreter: {json.dumps(python)}, "
                           f"{only}tags: [default]}}]\n", encoding="utf-8")
    matrix = load_matrix(matrix_file)
    options = run_options(matrix, {"backend": "local", "python": python, "results": results})
    with contextlib.redirect_stdout(sys.stderr):
        run_command.execute(run_command.RunRequest(Selection("run"), matrix, options))
    cells = [f"local--{r}" for r in (matrix.repros if repros is None else repros)]
    return [row_of(r.to_dict()) for r in recorded_shown(results, cells).values()]
