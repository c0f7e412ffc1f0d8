"""`repromatrix export`: job scripts that run the shards on many machines (``slurm``); the
catalog as OSV records that osv-scanner reads (``osv``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from repromatrix.config.flags import add_options
from repromatrix.errors import Exit

from .common import Selection, load, plan_for

HELP = "write job scripts that run the shards on many machines, or the catalog as OSV records"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("export", help=HELP)
    targets = p.add_subparsers(dest="target", required=True, metavar="TARGET")
    s = targets.add_parser("slurm", help="an sbatch job array (one task per shard) and a report job")
    add_options(s, "select")
    s.add_argument("--shards", type=int, required=True, metavar="N", help="array size")
    s.add_argument("--dir", type=Path, default=Path("slurm"), help="where the scripts go")
    s.add_argument("--backend", default="venv", choices=("venv", "local", "docker"),
                   help="backend on the nodes (default venv: no docker needed)")
    s.add_argument("--results", type=Path, default=Path("results"),
                   help="shared folder holding one store per shard (shard-K)")
    s.add_argument("--out", type=Path, default=Path("site"), help="where the report job renders")
    add_options(s, "shard", skip=("--shard",))
    s.add_argument("--sbatch", action="append", default=[], metavar="OPTION",
                   help="extra option for the shard tasks, e.g. --sbatch=--gpus-per-task=1 "
                        "--sbatch=--partition=gpu (repeatable)")
    s.add_argument("--repromatrix", metavar="COMMAND",
                   help="how a node starts repromatrix (default: this interpreter -m repromatrix)")
    s.add_argument("run_args", nargs="*", metavar="-- RUN-OPTIONS",
                   help="more `repromatrix run` options, after `--` (e.g. -- --timeout 300)")
    o = targets.add_parser("osv", help="the catalog as OSV JSON, one file per bug, and "
                           "osv-scanner/PyPI/all.zip for osv-scanner --offline (docs/check.md)")
    o.add_argument("dir", type=Path, metavar="DIR", help="where the records go")
    records = o.add_mutually_exclusive_group()
    records.add_argument("--results", type=Path, metavar="DIR",
                         help="from this store (default: the published records shipped with repromatrix)")
    records.add_argument("--from", dest="from_page", metavar="FILE|URL",
                         help="from a published page's results.json.gz")
    return p


def run(args: argparse.Namespace) -> int:
    if args.target == "osv":
        return run_osv(args)
    from repromatrix.distribute.slurm import export, make_job

    job = make_job(shards=args.shards, folder_of_results=args.results, site=args.out,
                   backend=args.backend, matrix=args.matrix, repros=args.repros, expr=args.expr,
                   all_stacks=args.all_stacks, sbatch=args.sbatch, run_args=args.run_args,
                   durations=args.durations, repromatrix=args.repromatrix)
    export(job, plan_for(Selection.from_args(args), load(args, overrides=False)), args.dir)
    return Exit.OK


def run_osv(args: argparse.Namespace) -> int:
    """Write the OSV records of the catalog, each bug's fix as ``check`` says it."""
    from repromatrix.check import osv
    from repromatrix.check import records as sources
    from repromatrix.check.candidates import releases
    from repromatrix.check.fixes import bug_fixes
    from repromatrix.config.compat import load_table

    from .check import catalog

    if args.results is not None:
        rows, source = sources.store_rows(args.results)
    elif args.from_page is not None:
        rows, source = sources.results_json_rows(args.from_page)
    else:
        rows, source = sources.snapshot_rows()
    bugs, table = catalog(), load_table()
    found = osv.advisories(bugs, bug_fixes(bugs, rows, table), rows, releases(table),
                           osv.timestamp(source.get("newest")))
    written = osv.write(args.dir, found)
    print(f"wrote {len(found)} OSV records to {args.dir}/ and {written[-1]} "
          f"(osv-scanner --offline: OSV_SCANNER_LOCAL_DB_CACHE_DIRECTORY={args.dir})")
    return Exit.OK
