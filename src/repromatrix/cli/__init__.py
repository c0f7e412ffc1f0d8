"""The command line: parse arguments, chain the stages, map errors to exit codes.

Exit codes: 0 done (bugs reproducing is a normal outcome); 1 unexpected harness
fault; 2 bad input (config, arguments); 3 infrastructure unavailable (no
daemon, base image missing, results folder held by another run); 4 `--check`
found a cell contradicting its documented expectation; 130 interrupted
(Ctrl-C, SIGTERM; recorded results are kept). Text from records and from
subprocesses is printed through ``textsafe.printable``.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from repromatrix import __version__
from repromatrix.config.matrix import STANDINS, Matrix, load_matrix
from repromatrix.config.options import (
    DEFAULT_RESULTS,
    ENGINE_NAMES,
    RunOptions,
    load_matrix_with,
    run_options,
    writable_folder,
)
from repromatrix.distribute.shard import parse_shard, shard_plan
from repromatrix.errors import BaseImageMissing, HarnessError, UsageError
from repromatrix.model import Plan
from repromatrix.plan import make_plan
from repromatrix.run.outlook import outlook
from repromatrix.scripts import plain as own_bugs
from repromatrix.store.index import recorded_latest
from repromatrix.textsafe import listed, printable

from .hints import base_image_hint

EXIT_CONTRADICTION = 4
EXIT_INFRA = 3
DEFAULT_SITE = Path("site")
DESCRIPTION = ("Compatibility matrix and reproduction harness for the PyTorch deployment stack "
               "(torch / torchvision / torch-tensorrt / NGC): run known bugs' repros on many "
               "environments, render the matrix as a static site, bisect a regression.")


def _add_repros_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repros", action="append", default=[], type=Path, metavar="DIR",
                   help="a folder of your own repros, joined to the built-in catalog (repeatable; "
                        "a repros/ beside --matrix joins too)")


def _add_script_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--script", type=Path, metavar="PY",
                   help="a plain script as the repro: exit 0 good, 125 cannot tell, other exits "
                        "bad, a signal a crash")
    p.add_argument("--bad-if-output", metavar="REGEX",
                   help="with --script: bad when the output matches (for bugs that print)")


def _add_matrix_args(p: argparse.ArgumentParser) -> None:
    _add_repros_arg(p)
    p.add_argument("--matrix", type=Path, help="matrix file (default: the project's matrix.yaml)")
    p.add_argument("-k", dest="expr", metavar="EXPR",
                   help="select cells among the whole matrix: words, globs, and/or/not "
                        "(without -k: the stacks tagged default)")
    p.add_argument("--all", dest="all_stacks", action="store_true",
                   help="select the whole matrix, not only the default stacks")


def _add_image_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--base-image", action="append", default=[], metavar="PUBLIC=LOCAL",
                   help="map a public base image to a local/internal one (repeatable)")
    p.add_argument("--ca-bundle", metavar="PEM",
                   help="extra CA bundle added to every image (default: the host's, from PIP_CERT, "
                        "SSL_CERT_FILE, REQUESTS_CA_BUNDLE or pip's config; 'none' for none)")
    p.add_argument("--find-links", action="append", default=[], metavar="DIR",
                   help="local wheelhouse for pip (repeatable)")


def _add_backend_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--registry", metavar="REGISTRY/PREFIX",
                   help="docker: pull a missing image from here before building it")
    p.add_argument("--backend", default=None, metavar="|".join(ENGINE_NAMES),
                   help="how pip/ngc stacks become environments: one engine, or a fallback chain "
                        "such as docker|venv (each stack gets the first whose checks pass here); "
                        "default: the matrix's defaults.backend, else docker. local stacks always "
                        "run their own interpreter")
    p.add_argument("--python", metavar="PATH",
                   help="interpreter for --backend local (default: $REPROMATRIX_PYTHON, python3)")
    p.add_argument("--build-timeout", type=float, metavar="S",
                   help="time limit for making one environment (default: matrix build_timeout)")
    p.add_argument("--env-budget", type=float, metavar="GB",
                   help="venv: disk for environments and their uv cache; finished ones are removed "
                        "least recently used first past it (default: half of free disk + theirs)")


def _add_run_args(p: argparse.ArgumentParser) -> None:
    _add_backend_arg(p)
    p.add_argument("--results", type=Path, default=DEFAULT_RESULTS, help="results store folder")
    p.add_argument("--rerun", action="store_true", help="run cells even if a record is current")
    p.add_argument("--timeout", type=float, metavar="S",
                   help="per-repro time limit in seconds (default: matrix repro_timeout)")
    p.add_argument("--stack-timeout", type=float, metavar="S",
                   help="time limit for one stack's whole runner (default: matrix stack_timeout)")
    p.add_argument("--repeat", type=int, metavar="N", default=1,
                   help="run each cell N times; cells whose attempts disagree are flaky")
    p.add_argument("--image-budget", type=float, metavar="GB",
                   help="docker: remove images this run built or pulled, least recently used "
                        "first, once its finished stacks' images pass GB")
    p.add_argument("--jobs", "-j", type=int, default=1, help="stacks run at once")
    p.add_argument("--gpus", default="", help="GPU ids to spread stacks over, e.g. 0,1")
    p.add_argument("--keep", action="store_true", help="keep containers for debugging")
    p.add_argument("--standin", action="append", default=[], choices=STANDINS,
                   help="tensorrt: pip stacks get torch-tensorrt's own wheel and stand-ins for "
                        "TensorRT, so stages that opt in run its code without a GPU (never where "
                        "a real TensorRT imports; default: matrix standins)")


def _add_shard_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shard", metavar="K/N",
                   help="run only shard K of N (see `plan --shards N`); every shard needs the "
                        "same selection and --durations")
    _add_durations_arg(p)


def _add_durations_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--durations", type=Path, nargs="+", action="extend", default=[], metavar="PATH",
                   help="results folders/files whose recorded durations weigh the shards")


def _add_report_args(p: argparse.ArgumentParser, results: bool = True) -> None:
    if results:
        _add_repros_arg(p)
        p.add_argument("--matrix", type=Path,
                       help="matrix file whose repro catalog titles the page (default: the project's)")
        p.add_argument("--results", type=Path, nargs="+", action="extend",
                       help="results folders or files, merged (several, or repeated; "
                            "default: results/)")
    p.add_argument("--out", type=Path, default=DEFAULT_SITE, help="site output folder")
    p.add_argument("--check", action="store_true",
                   help=f"exit {EXIT_CONTRADICTION} if a cell contradicts its documented expectation")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="repromatrix", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"repromatrix {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("plan", help="list the selected cells")
    _add_matrix_args(p)
    p.add_argument("--format", choices=("table", "json"), default="table",
                   help="a table to read, or JSON (cells with their stacks) for scripts")
    p.add_argument("--shards", type=int, metavar="N",
                   help="split the selected stacks into N shards balanced by expected cost")
    _add_durations_arg(p)

    p = sub.add_parser("build", help="make the environments (images, venvs) of the selected stacks")
    _add_matrix_args(p)
    _add_image_args(p)
    _add_backend_arg(p)
    p.add_argument("--push", metavar="REGISTRY/PREFIX",
                   help="docker: push every ready image there (content-hash tags)")
    p.add_argument("--work-dir", type=Path, default=DEFAULT_RESULTS / ".work",
                   help="where build contexts and logs go")

    p = sub.add_parser("run", help="run the selected cells and record results")
    _add_matrix_args(p)
    _add_image_args(p)
    _add_run_args(p)
    _add_shard_args(p)
    _add_script_args(p)

    p = sub.add_parser("report", help="render the static compatibility site")
    _add_report_args(p)

    p = sub.add_parser("matrix", help="build + run + report")
    _add_matrix_args(p)
    _add_image_args(p)
    _add_run_args(p)
    _add_shard_args(p)
    _add_report_args(p, results=False)

    p = sub.add_parser("bisect", help="find the first release where a repro changes outcome")
    p.add_argument("--repro", help="a repro id of the catalog (or give --script)")
    _add_script_args(p)
    _add_repros_arg(p)
    p.add_argument("--with", dest="with_", action="append", default=[], metavar="PKG[==V]",
                   help="install this in every probed environment too (repeatable); besides it a "
                        "probe installs the axis package and what the repro's META requires")
    p.add_argument("--good", required=True, help="a version where the repro passes")
    p.add_argument("--bad", required=True, help="a version where it fails")
    p.add_argument("--axis", default="torch", choices=("torch", "torch_tensorrt", "ngc"),
                   help="what the releases between --good and --bad are of (default: torch)")
    p.add_argument("--matrix", type=Path,
                   help="matrix file whose defaults (indexes, CA bundle, mirrors) probes take "
                        "(default: the project's)")
    p.add_argument("--bad-if", default="fail", help="statuses that count as bad (default: fail)")
    p.add_argument("--find-fix", action="store_true", help="search for the first good instead")
    p.add_argument("--stage", metavar="NAME", help="judge by this stage's status, not the cell's")
    p.add_argument("--base", action="append", default=[], metavar="KEY=VALUE",
                   help="pin a non-axis package of every candidate, e.g. torch_tensorrt=none "
                        "(repeatable)")
    p.add_argument("--json", action="store_true", help="machine-readable result")
    _add_image_args(p)
    _add_run_args(p)
    p.set_defaults(backend=None)  # bisect: venv for torch / torch_tensorrt, docker for ngc

    p = sub.add_parser("export", help="write job scripts that run the shards on many machines")
    from repromatrix.distribute.slurm import add_parser as add_slurm

    add_slurm(p.add_subparsers(dest="target", required=True, metavar="TARGET"), _add_matrix_args)

    from repromatrix.releases.update import add_parser as add_compat

    add_compat(sub)
    from repromatrix.store.merge import add_parser as add_store

    add_store(sub)

    p = sub.add_parser("init", help="write a starter matrix.yaml, repros/ (one example repro) and "
                                    "noxfile.py into a folder")
    p.add_argument("folder", nargs="?", type=Path, default=Path("."),
                   help="where to write them (default: the current folder); never overwrites")

    p = sub.add_parser("env", help="print the environment probe of an interpreter as JSON")
    p.add_argument("--python", metavar="PATH", default=sys.executable,
                   help="the interpreter to probe (default: the one running repromatrix)")
    return parser


def load(args: argparse.Namespace, *, overrides: bool = True) -> Matrix:
    """The matrix file and its catalog (``--repros``), with the command line's image
    overrides when the command has them."""
    if not overrides:
        return load_matrix(args.matrix, extra_repros=args.repros)
    return load_matrix_with(args.matrix, base_images=args.base_image, ca_bundle=args.ca_bundle,
                            find_links=args.find_links, repros=args.repros, log=lambda line: print(
                                f"repromatrix: {line}", file=sys.stderr))


def plan_for(args: argparse.Namespace, matrix: Matrix) -> Plan:
    listing = ["repromatrix", "plan", "--all", "--matrix", str(Path(matrix.path).resolve()),
               *(a for d in args.repros for a in ("--repros", str(d.resolve())))]
    plan = make_plan(matrix.stacks, args.expr, all_stacks=args.all_stacks, listing=listing)
    script = getattr(args, "script_id", None)
    return own_bugs.only(plan, script) if script else plan


def with_script(args: argparse.Namespace, matrix: Matrix, results: Path) -> Matrix:
    """``matrix`` with ``--script`` joined to its catalog (its id noted in ``args``)."""
    if getattr(args, "bad_if_output", None) and not args.script:
        raise UsageError("--bad-if-output needs --script (a protocol repro declares signatures)")
    if not getattr(args, "script", None):
        return matrix
    spec = own_bugs.ScriptSpec(args.script, args.bad_if_output)
    args.script_id = spec.id
    return own_bugs.add_script(matrix, spec, results)


def cmd_plan(args: argparse.Namespace) -> int:
    matrix = load(args, overrides=False)
    plan = plan_for(args, matrix)
    if args.shards is not None:
        from repromatrix.distribute.shard import (
            assign,
            assignment_json,
            format_assignment,
            recorded_durations,
        )

        shards = assign(plan, args.shards, recorded_durations(args.durations))
        if args.format == "json":
            print(json.dumps(assignment_json(shards, durations_from=[str(p) for p in args.durations]),
                             indent=2))
        else:
            print(format_assignment(shards))
        return 0
    if args.format == "json":
        cells = [{"cell": c.id, "stack": c.stack.spec(), "repro": c.repro, "tags": list(c.stack.tags)}
                 for c in plan.cells]
        print(json.dumps(cells, indent=2))
        return 0
    print(format_plan(plan))
    for line in pairing_notes(plan):
        print(printable(f"note: {line}"))
    return 0


def pairing_notes(plan: Plan) -> list[str]:
    """One line per planned stack whose torchvision the compat table pairs with less than
    checked confidence."""
    from repromatrix.config.compat import pairing_note

    notes = (pairing_note(g.stack.torch, g.stack.torchvision) for g in plan.groups)
    return list(dict.fromkeys(n for n in notes if n))


def format_plan(plan: Plan) -> str:
    rows = [("cell", "kind", "torch", "torch_tensorrt", "repro")]
    rows += [(c.id, c.stack.kind, c.stack.torch or "-", c.stack.torch_tensorrt or "-", c.repro)
             for c in plan.cells]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.append(f"{len(plan.cells)} cells on {len(plan.groups)} stacks")
    return "\n".join(lines)


def cmd_build(args: argparse.Namespace) -> int:
    from repromatrix.run.cells import prepare_plan

    matrix = load(args)
    plan = plan_for(args, matrix)
    options = run_options(matrix, args)
    try:
        prepared = prepare_plan(matrix, plan, options)
    except BaseImageMissing as exc:
        raise base_image_hint(exc, args, matrix, options, plan) from None
    for p in prepared:
        state = "cached" if p.cached else ("built" if p.ok else "FAILED")
        extra = f"  {p.reason}  (log: {p.log_path})" if not p.ok else ""
        print(printable(f"{state:7} {p.stack.id}  {p.handle}{extra}"))
    failed = sum(not p.ok for p in prepared)
    print(f"{len(prepared) - failed} environment(s) ready, {failed} failed")
    return EXIT_INFRA if failed else 0


def cmd_run(args: argparse.Namespace) -> int:
    from repromatrix.run.cells import run_plan
    from repromatrix.run.progress import RunProgress

    shard = parse_shard(args.shard) if args.shard else None  # a bad K/N fails before any work
    matrix = load(args)
    options: RunOptions = run_options(matrix, args)
    matrix = with_script(args, matrix, options.results)
    plan = plan_for(args, matrix)
    if shard is not None:
        plan = shard_plan(plan, shard, args.durations, args.results)
        if not plan.groups:
            return 0
    for line in pairing_notes(plan):
        print(printable(f"note: {line}"), file=sys.stderr)
    try:
        with RunProgress() as progress:
            summary = run_plan(matrix, plan, options, log=progress.log, progress=progress)
    except BaseImageMissing as exc:
        raise base_image_hint(exc, args, matrix, options, plan) from None
    progress.print_summary(summary.run_id)
    counts = ", ".join(f"{n} {s}" for s, n in sorted(summary.statuses.items())) or "nothing new"
    print(printable(f"run {summary.run_id}: {summary.ran} cell(s) run ({counts}), {summary.reused} reused; "
          f"results in {options.results}/"))
    for line in outlook(recorded_latest(options.results, summary.cells).values()).lines():
        print(printable(line))
    code = _all_broken(summary)
    if not code:  # some stacks broken, others tested: say why, the exit stays 0
        _say_why_broken(summary.results)
    return code


def _say_why_broken(results: Sequence[Any]) -> None:
    """Each reason cells ended `broken` (nothing tested there), with the stacks it hit."""
    stacks: dict[str, list[str]] = {}
    for r in results:
        if r.status == "broken" and r.stack_id not in stacks.setdefault(r.message, []):
            stacks[r.message].append(r.stack_id)
    for reason, ids in stacks.items():
        print(printable(f"repromatrix: broken on {len(ids)} stack(s) ({listed(ids)}): {reason}"),
              file=sys.stderr)


def _all_broken(summary: Any) -> int:
    """Exit 3 when every cell of the run is `broken`: nothing was tested, say why."""
    if not summary.results or summary.reused or any(r.status != "broken" for r in summary.results):
        return 0
    reasons = list(dict.fromkeys(r.message for r in summary.results))
    more = f" (and {len(reasons) - 3} other reason(s))" if len(reasons) > 3 else ""
    print(printable("repromatrix: error: every cell is broken, nothing was tested: "
                    + " | ".join(reasons[:3]) + more), file=sys.stderr)
    return EXIT_INFRA


def cmd_report(args: argparse.Namespace, results: Sequence[Path] | None = None) -> int:
    from repromatrix.report.render import render_site

    paths = list(results or args.results or [DEFAULT_RESULTS])
    for path in paths:
        check_results_path(path)
    writable_folder(args.out, "--out")
    matrix = load(args, overrides=False)
    catalog = own_bugs.report_catalog(matrix.repros, paths)
    summary = render_site(paths, args.out, catalog, matrix=str(matrix.path),
                          published={s.id for s in matrix.stacks}, freshness=page_freshness(matrix))
    for problem in [*summary.skipped, *summary.conflicts]:
        print(printable(f"report: {problem}"), file=sys.stderr)
    print(printable(f"report: {summary.index} ({summary.cells} cells on {summary.stacks} stacks, "
                    f"{len(summary.contradictions)} contradicting their expectation)"))
    if summary.standin:
        print(printable(f"report: {len(summary.standin)} cell(s) decided with TensorRT stood in (◇; "
                        f"a record from real TensorRT outranks them)"))
    if args.check and summary.contradictions:
        for cid in summary.contradictions:
            level = f" [◇ {summary.standin[cid]}]" if cid in summary.standin else ""
            print(printable(f"contradicts its expectation: {cid}{level}"), file=sys.stderr)
        return EXIT_CONTRADICTION
    return 0


def page_freshness(matrix: Matrix) -> dict[str, Any]:
    """The page's freshness section: the packaged table, its `checked` record, the matrix."""
    from repromatrix.config.compat import load_table
    from repromatrix.report.fresh import freshness, table_checked

    return freshness(load_table(), table_checked(), matrix.stacks)


def check_results_path(path: Path) -> None:
    """A UsageError unless ``path`` is a folder or a file holding at least one record
    (checked before the site is written, so a wrong path overwrites nothing)."""
    from repromatrix.store.reader import Skipped, scan

    if not path.exists():
        raise UsageError(f"--results {path}: no such file or folder (run `repromatrix run` first)")
    if path.is_dir():
        return
    if not path.is_file():
        raise UsageError(f"--results {path}: not a regular file or a folder")
    first: Skipped | None = None
    with path.open("rb") as fh:
        for _, _, _, item in scan(fh, str(path)):
            if not isinstance(item, Skipped):
                return
            first = first or item
    why = f" ({first.reason} on line {first.line})" if first else " (it is empty)"
    raise UsageError(printable(f"--results {path}: holds no results record{why}; give a results "
                               f"folder or one of its .jsonl files"))


def cmd_matrix(args: argparse.Namespace) -> int:
    ran = cmd_run(args)
    reported = cmd_report(args, results=[args.results])
    return ran or reported


def cmd_bisect(args: argparse.Namespace) -> int:
    from repromatrix.bisect import BisectRequest
    from repromatrix.bisect import main as bisect_main

    if bool(args.repro) == bool(args.script):
        raise UsageError("bisect needs --repro ID (a repro of the catalog) or --script PY "
                         "(a plain script), not both")
    if args.backend is None:  # one environment per release: uv venvs, unless NGC images
        args.backend = "docker" if args.axis == "ngc" else "venv"
    matrix = load(args)
    options = run_options(matrix, args)
    matrix = with_script(args, matrix, options.results)
    request = BisectRequest(repro=args.repro or args.script_id, good=args.good, bad=args.bad,
                            axis=args.axis, bad_if=args.bad_if, find_fix=args.find_fix,
                            stage=args.stage, base=tuple(args.base), json=args.json,
                            with_=tuple(args.with_), script=bool(args.script))
    return bisect_main(request, matrix, options)


def cmd_export(args: argparse.Namespace) -> int:
    from repromatrix.distribute.slurm import export

    return export(args, plan_for(args, load(args, overrides=False)))


def cmd_compat(args: argparse.Namespace) -> int:
    from repromatrix.releases.update import cmd_compat as update

    return update(args)


def cmd_store(args: argparse.Namespace) -> int:
    from repromatrix.store.merge import cmd_store as store

    return store(args)


def cmd_init(args: argparse.Namespace) -> int:
    from repromatrix.config.starter import write_starter

    for path in write_starter(args.folder):
        print(printable(f"wrote {path}"))
    where = "" if args.folder.resolve() == Path.cwd().resolve() else f"cd {args.folder} && "
    print(printable(f"next: {where}repromatrix plan   (then `repromatrix matrix`, or `nox -s matrix`)"))
    return 0


def cmd_env(args: argparse.Namespace) -> int:
    from repromatrix.backends.interpreter import env_probe

    print(json.dumps(env_probe(args.python), indent=2, sort_keys=True))
    return 0


COMMANDS: dict[str, Any] = {
    "plan": cmd_plan, "build": cmd_build, "run": cmd_run, "report": cmd_report,
    "matrix": cmd_matrix, "bisect": cmd_bisect, "export": cmd_export, "init": cmd_init,
    "env": cmd_env, "compat": cmd_compat, "store": cmd_store,
}


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
        return COMMANDS[args.command](args)
    except HarnessError as exc:
        print(f"repromatrix: error: {printable(exc, newlines=True)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("repromatrix: interrupted; recorded results are kept", file=sys.stderr)
        return 130
    except Exception:
        traceback.print_exc()
        print("repromatrix: internal error (a harness fault, please report it)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
