"""`repromatrix export slurm`: a Slurm job array that runs the shards, and a report job.

Writes three files into ``--dir``:

    shard.sbatch   a job array 1..N; task K runs ``repromatrix run --shard K/N`` into
                   ``<results>/shard-K`` (one store per shard, no shared writes)
    report.sbatch  renders the page from every shard's store (``report --results ...``)
    submit.sh      submits the array, then the report job with ``--dependency=afterany``
                   so the page is rendered even when a shard failed

Clusters rarely have docker: the default backend is ``venv`` (one uv environment per
pip stack, on the node) and ``local`` stacks run as they are. NGC stacks run inside
their container through enroot/pyxis or Apptainer (see the recipe in docs/many-machines.md). Paths are
made absolute and the job works in the current folder, which should be on a file
system the nodes share.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from repromatrix.errors import UsageError
from repromatrix.model import Plan

SCRIPTS = ("shard.sbatch", "report.sbatch", "submit.sh")


@dataclass(frozen=True)
class SlurmJob:
    """What the scripts need; every path absolute."""

    shards: int
    command: tuple[str, ...]                 # how a node starts repromatrix
    select: tuple[str, ...]                  # --matrix/--repros/-k/--all as given
    run_args: tuple[str, ...]                # backend and everything after `--`
    workdir: Path
    results: Path
    site: Path
    logs: Path
    sbatch: tuple[str, ...] = ()             # extra #SBATCH lines for the shard tasks
    durations: tuple[Path, ...] = field(default_factory=tuple)
    catalog: tuple[str, ...] = ()            # --matrix/--repros: the report's titles too


def _q(words: Sequence[str | Path]) -> str:
    return " ".join(shlex.quote(str(w)) for w in words)


def render_shard(job: SlurmJob) -> str:
    """The array script: task K runs shard K/N into its own store."""
    durations = ["--durations", *job.durations] if job.durations else []
    run = _q([*job.command, "run", *job.select, *job.run_args, *durations])
    head = [f"#SBATCH {line}" for line in (
        "--job-name=repromatrix-shard", f"--array=1-{job.shards}",
        f"--chdir={shlex.quote(str(job.workdir))}",
        f"--output={shlex.quote(str(job.logs / 'shard-%a.out'))}", *job.sbatch)]
    return "\n".join([
        "#!/bin/bash",
        f"# repromatrix shards: array task K runs shard K/{job.shards} "
        "(written by `repromatrix export slurm`)",
        *head,
        "set -euo pipefail",
        'k="${SLURM_ARRAY_TASK_ID:?submit with sbatch (an array task)}"',
        f'exec {run} --shard "$k/{job.shards}" --results {shlex.quote(str(job.results))}/shard-"$k"',
        "",
    ])


def render_report(job: SlurmJob) -> str:
    """The report job: every shard store that exists, merged into one page."""
    return "\n".join([
        "#!/bin/bash",
        "# repromatrix report: merges every shard's store (written by `repromatrix export slurm`)",
        "#SBATCH --job-name=repromatrix-report",
        f"#SBATCH --chdir={shlex.quote(str(job.workdir))}",
        f"#SBATCH --output={shlex.quote(str(job.logs / 'report.out'))}",
        "set -euo pipefail",
        "stores=()",
        f"for k in $(seq 1 {job.shards}); do",
        f"  d={shlex.quote(str(job.results))}/shard-$k",
        '  if [ -d "$d" ]; then stores+=("$d"); else echo "shard $k left no results ($d)" >&2; fi',
        "done",
        f'exec {_q([*job.command, "report", *job.catalog])} --results "${{stores[@]}}" '
        f"--out {shlex.quote(str(job.site))}",
        "",
    ])


def render_submit(job: SlurmJob) -> str:
    """Submit the array, then the report after all of it (afterany: failures included)."""
    return "\n".join([
        "#!/bin/sh",
        "# Submit the shards, then the report once every shard has ended.",
        "set -eu",
        'here=$(cd "$(dirname "$0")" && pwd)',
        f"mkdir -p {shlex.quote(str(job.logs))}",
        'array=$(sbatch --parsable "$here/shard.sbatch")',
        'array=${array%%;*}',
        'report=$(sbatch --parsable --dependency=afterany:"$array" "$here/report.sbatch")',
        'report=${report%%;*}',
        f'echo "shards: job $array (array 1-{job.shards}); report: job $report (afterany:$array)"',
        "",
    ])


def write_scripts(job: SlurmJob, dest: Path) -> list[Path]:
    """Write the three scripts (executable) into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for name, text in zip(SCRIPTS, (render_shard(job), render_report(job), render_submit(job)),
                          strict=True):
        path = dest / name
        path.write_text(text, encoding="utf-8")
        path.chmod(0o755)
        out.append(path)
    return out


def make_job(*, shards: int, folder_of_results: Path, site: Path, backend: str,
             matrix: Path | None = None, repros: Sequence[Path] = (), expr: str | None = None,
             all_stacks: bool = False,
             sbatch: Sequence[str] = (), run_args: Sequence[str] = (),
             durations: Sequence[Path] = (), repromatrix: str | None = None,
             cwd: Path | None = None) -> SlurmJob:
    """A SlurmJob from `export slurm`'s options; paths made absolute (against ``cwd``)."""
    from .shard import check_count

    cwd = cwd or Path.cwd()
    check_count(shards)
    absolute = lambda p: Path(os.path.abspath(cwd / p))  # noqa: E731
    for opt in sbatch:
        if not opt.startswith("--") or "\n" in opt:
            raise UsageError(f"--sbatch {opt!r}: give one long sbatch option, e.g. --sbatch=--time=2:00:00")
    bad = [a for a in run_args if a.split("=", 1)[0] in ("--shard", "--results", "--durations")]
    if bad:
        raise UsageError(f"{bad[0]!r} after `--`: export slurm sets it per shard; use its own option")
    catalog = [*(["--matrix", str(absolute(matrix))] if matrix else []),
               *[x for r in repros for x in ("--repros", str(absolute(r)))]]
    select = [*catalog, *(["-k", expr] if expr else []), *(["--all"] if all_stacks else [])]
    command = (tuple(shlex.split(repromatrix)) if repromatrix
               else (sys.executable, "-m", "repromatrix"))
    if not command:
        raise UsageError("--repromatrix '': give the command that starts repromatrix on a node")
    results = absolute(folder_of_results)
    return SlurmJob(shards=shards, command=command, select=tuple(select),
                    run_args=("--backend", backend, *run_args), workdir=cwd.resolve(),
                    results=results, site=absolute(site), logs=results / "slurm-logs",
                    sbatch=tuple(sbatch), durations=tuple(absolute(p) for p in durations),
                    catalog=tuple(catalog))


def export(job: SlurmJob, plan: Plan, folder: Path) -> list[Path]:
    """Write the scripts for ``plan`` (already selected) into ``folder`` and print the
    assignment; the scripts written, ``submit.sh`` last."""
    from .shard import assign, format_assignment, recorded_durations

    shards = assign(plan, job.shards, recorded_durations(job.durations))
    written = write_scripts(job, folder)
    job.logs.mkdir(parents=True, exist_ok=True)
    print(format_assignment(shards))
    print(f"wrote {', '.join(str(p) for p in written)}")
    print(f"submit with: sh {shlex.quote(str(written[-1]))}")
    return written
