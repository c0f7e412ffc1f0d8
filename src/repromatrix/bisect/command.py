"""`repromatrix bisect`: the glue between the pure search and the run stage.

Every probe is a normal cell (one candidate stack x the repro) run through
``run.cells.run_plan``, so its record lands in the results store and a second
bisect over the same releases reuses it instead of building or running
anything. The verdict is read from the record: the cell's status, or one
stage's status with ``--stage``. ``broken``, ``timeout``, ``skip`` and any
status that is neither ``pass`` nor in ``--bad-if`` mean "cannot tell".

Outcomes leave through the error classes, so the exit codes are the
documented ones (cli.main): wrong bounds are a UsageError (2), bounds that
could not be verified because the infrastructure failed an InfraError (3),
Ctrl-C a KeyboardInterrupt (130) after the resume command is printed. Every
line printed has its control characters escaped (record fields reach it).
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from repromatrix import paths
from repromatrix.config.flags import reproduce_args
from repromatrix.config.matrix import Matrix
from repromatrix.config.options import RunOptions
from repromatrix.errors import InfraError, UsageError, did_you_mean
from repromatrix.model import Plan, StackGroup, Status, cell_id
from repromatrix.onefile.plain import NOT_LOADED, read_wrapper
from repromatrix.onefile.standalone import export
from repromatrix.rules.verdict import BAD, GOOD, said
from repromatrix.store.index import recorded_shown
from repromatrix.store.record import Result, shorten
from repromatrix.store.results import flaky_counts, latest_attempts, load_records
from repromatrix.textsafe import first_line, printable

from . import candidates as cands
from .paste import Probe, Setup, infra_only, json_report, progress_line, text_report, wrong_bounds_message
from .search import BoundsFailed, Found, Step, Verdict, search

BAD_IF_ALLOWED = (Status.FAIL.value, Status.ERROR.value, Status.CRASH.value, Status.TIMEOUT.value)


@dataclass(frozen=True)
class BisectRequest:
    """What to bisect; how probes run is the RunOptions beside it."""

    repro: str
    good: str
    bad: str
    axis: str = "torch"
    bad_if: str = "fail"
    find_fix: bool = False
    stage: str | None = None
    base: tuple[str, ...] = ()
    json: bool = False
    with_: tuple[str, ...] = ()  # --with PKG[==V]: what the bug needs besides the axis package
    script: bool = False  # the repro is a plain script (--script): it is named by its path


def parse_bad_if(text: str) -> tuple[str, ...]:
    """``fail,error`` -> ('fail', 'error'); pass/broken/skip are never "bad"."""
    out = tuple(dict.fromkeys(s.strip() for s in text.split(",") if s.strip()))
    if not out:
        raise UsageError("--bad-if: name at least one status, e.g. fail or fail,error")
    for s in out:
        if s in (Status.BROKEN.value, Status.SKIP.value):
            raise UsageError(f"--bad-if {s}: {s} says nothing about the bug (the environment could "
                             f"not be built, or a precondition is missing): it is always 'cannot tell'")
        if s == Status.PASS.value:
            raise UsageError("--bad-if pass: pass is good; to find where a failure went away use --find-fix")
        if s not in BAD_IF_ALLOWED:
            raise UsageError(f"--bad-if {s}: not a status{did_you_mean(s, BAD_IF_ALLOWED)}; "
                             f"choose from {', '.join(BAD_IF_ALLOWED)}")
    return out


def outcome(record: Result, stage: str | None) -> tuple[str, str]:
    """(status, one-line note) of a record, or of its stage ``stage``.

    A stage the record does not hold is "missing" (cannot tell), or "broken"
    when the whole cell was.
    """
    status, note = record.status, _first_line(record.message)
    if not stage:
        return status, note
    found = record.stage(stage)
    if found is not None:
        return found.status, _first_line(found.message)
    if status == Status.BROKEN.value:
        return status, note
    names = ", ".join(s.name for s in record.stages) or "none"
    return "missing", f"no stage {stage!r} in this record (cell {status}: {note}; stages: {names})"


def verdict_status(record: Result, status: str, stage: str | None) -> str:
    """The status a probe's verdict is read from: a whole record as ``rules.verdict`` reads it
    (``fail`` where it says the bug is there, ``pass`` where it says it is not: a stand-in
    ``skip`` whose torch-tensorrt code ran clean past the bug's point is one), else its own
    status, for ``--bad-if`` to name; a plain script whose torch-tensorrt did not load on the
    stand-ins reads as ``skip`` (cannot tell, whatever ``--bad-if`` names); a stage's status
    (``--stage``) and attempts that disagree as they are."""
    if status != "flaky" and any(s.evidence.get(NOT_LOADED) for s in record.stages):
        return Status.SKIP.value
    if stage or status == "flaky":
        return status
    found = said(status, record.evidence_level)
    return Status.FAIL.value if found == BAD else Status.PASS.value if found == GOOD else status


def _first_line(text: Any) -> str:
    return shorten(first_line(text or "", limit=None), 300)


def classify(status: str, bad_if: Sequence[str], find_fix: bool) -> Verdict:
    """good/bad/cannot tell, turned into the search's OLD/NEW/SKIP."""
    if status in bad_if:
        return Verdict.OLD if find_fix else Verdict.NEW
    if status == Status.PASS.value:
        return Verdict.NEW if find_fix else Verdict.OLD
    return Verdict.SKIP


def command_line(request: BisectRequest, matrix: Matrix, options: RunOptions) -> list[str]:
    """The argv that repeats this bisect (non-default options only)."""
    r = request
    argv = ["repromatrix", "bisect", *(() if r.script else ("--repro", r.repro)),
            "--good", r.good, "--bad", r.bad]
    if r.axis != "torch":
        argv += ["--axis", r.axis]
    if r.stage:
        argv += ["--stage", r.stage]
    if r.bad_if != "fail":
        argv += ["--bad-if", r.bad_if]
    if r.find_fix:
        argv.append("--find-fix")
    for item in r.base:
        argv += ["--base", item]
    for item in r.with_:
        argv += ["--with", item]
    argv += reproduce_args(matrix, options)
    if options.gpus:
        argv += ["--gpus", ",".join(options.gpus)]
    return argv


class Bisect:
    """One bisect invocation: its matrix, candidates, probes and output streams."""

    def __init__(self, request: BisectRequest, matrix: Matrix, options: RunOptions,
                 out: Callable[[str], None], err: Callable[[str], None]) -> None:
        self.args, self.options, self.out, self.err = request, options, out, err
        args = request
        self.say = err if args.json else out
        if options.backend == "local":
            raise UsageError("--backend local runs one interpreter, but a bisect needs one environment "
                             "per release: use --backend venv (uv environments) or docker")
        self.matrix = matrix
        if args.repro not in self.matrix.repros:
            known = list(self.matrix.repros)
            raise UsageError(f"--repro {args.repro}: unknown repro{did_you_mean(args.repro, known)}; "
                             f"known: {', '.join(known) or 'none'}")
        bad_if = parse_bad_if(args.bad_if)
        repro = self.matrix.repros[args.repro]
        self.base = cands.bug_base(args.axis, repro.requires, args.with_,
                                   cands.parse_base(args.base, args.axis))
        self.setup = Setup(args.repro, args.axis, args.find_fix, bad_if, args.stage,
                           self.matrix.settings, command_line(request, matrix, options),
                           script=export(repro.path, paths.harness_dir(), repro.title),
                           rule=_rule(repro.path))
        self.probes: dict[int, Probe] = {}
        self._steps = 0

    def bounds(self) -> tuple[list[cands.Candidate], int, int]:
        a = self.args
        good = cands.resolve_bound(a.axis, a.good, "--good")
        bad = cands.resolve_bound(a.axis, a.bad, "--bad")
        cands.check_order(a.axis, good, bad, a.find_fix)
        found = cands.candidates(a.axis, self.base, self.matrix.settings, self.matrix.repros, a.repro)
        versions = [c.version for c in found]
        gi, bi = versions.index(good), versions.index(bad)
        old, new = (bi, gi) if a.find_fix else (gi, bi)
        _check_installable(found, old, new, a.axis, a.base, a.find_fix)
        return found, old, new

    def probe(self, index: int, cand: cands.Candidate) -> Verdict:
        from repromatrix.run.cells import run_plan

        a, stack = self.args, cand.stack
        assert stack is not None
        cell = cell_id(stack.id, a.repro)
        matrix = replace(self.matrix, settings=cands.probe_settings(self.matrix.settings, stack))
        summary = run_plan(matrix, Plan((StackGroup(stack, (a.repro,)),)), self.options,
                           log=lambda line: self.err(f"    {line}"),
                           command=[*self.setup.command, "--rerun"])
        mine = [r for r in summary.results if r.cell == cell]
        attempts = mine or self._recorded(cell)
        if not attempts:
            raise UsageError(f"no record for {cell} after running it (is --results writable?)")
        record = attempts[-1]
        status, note = outcome(record, a.stage)
        flaky = flaky_counts(outcome(r, a.stage)[0] for r in attempts)
        if flaky:
            status = "flaky"
            note = "cannot tell: attempts disagree (" + ", ".join(
                f"{n} {s}" for s, n in sorted(flaky.items())) + ")"
        verdict = classify(verdict_status(record, status, a.stage),
                           self.setup.bad_if, a.find_fix)
        if verdict is not Verdict.SKIP and record.standin_note and status != "flaky":
            note = f"{record.standin_note}; {note}"
        if record.built_note:
            note = f"{note}; {record.built_note}"
        self.probes[index] = Probe(index, cand, record, status, note, verdict, reused=not mine)
        return verdict

    def _recorded(self, cell: str) -> list[Result]:
        """A reused probe's record from the store's index; every attempt of its run only when
        this bisect repeats cells (the one case that reads the logs)."""
        if self.options.repeat > 1:
            return latest_attempts(load_records([self.options.results]).records).get(cell, [])
        found = recorded_shown(self.options.results, [cell]).get(cell)
        return [found] if found is not None else []

    def on_step(self, step: Step) -> None:
        self._steps += 1
        self.say(progress_line(self.setup, step, self.probes[step.index], bounds=self._steps <= 2))

    def run(self) -> int:
        found, self._old, self._new = self.bounds()
        untestable = {i for i, c in enumerate(found) if c.stack is None}
        inside = sum(1 for i in range(self._old + 1, self._new) if i not in untestable)
        self.say(f"bisecting {self.args.repro} over {inside} {self.args.axis} release(s) between "
                 f"{found[self._old].version} and {found[self._new].version} "
                 f"(bounds first; {len(untestable & set(range(self._old, self._new)))} not installable)")
        try:
            result = search(found, self.probe, old=self._old, new=self._new, untestable=untestable,
                            on_step=self.on_step)
        except KeyboardInterrupt:
            self.err(self._interrupted(found))
            raise
        return self.finish(result, found)

    def finish(self, result: Found | BoundsFailed, found: list[cands.Candidate]) -> int:
        if self.args.json:
            self.out(json.dumps(json_report(self.setup, result, self.probes, found), indent=2))
        if isinstance(result, BoundsFailed):
            message = wrong_bounds_message(self.setup, result, self.probes)
            raise (InfraError if infra_only(result, self.probes) else UsageError)(message)
        if not self.args.json:
            self.out("")
            self.out(text_report(self.setup, result, self.probes, found))
        return 0

    def _interrupted(self, found: list[cands.Candidate]) -> str:
        lo, hi = self._old, self._new
        for i, p in self.probes.items():
            if p.verdict is Verdict.OLD and lo < i < hi:
                lo = i
            elif p.verdict is Verdict.NEW and lo < i < hi:
                hi = i
        return (f"interrupted after {len(self.probes)} probe(s); their results are recorded. "
                f"The change lies between {found[lo].version} and {found[hi].version}.\n"
                f"To resume (recorded probes are reused), run:\n  {shlex.join(self.setup.command)}")


def _check_installable(found: list[cands.Candidate], old: int, new: int, axis: str,
                       base: Sequence[str], find_fix: bool) -> None:
    """Both bounds need a valid stack; say why not (naming the --base pins) otherwise."""
    pins = f" with {' '.join('--base ' + b for b in base)}" if base else ""
    valid = [c for c in found[old:new + 1] if c.stack]
    if not valid:
        raise UsageError(f"no {axis} release from {found[old].version} to {found[new].version} "
                         f"resolves to an installable stack{pins}: {found[old].reason}")
    flags = ("--bad", "--good") if find_fix else ("--good", "--bad")
    for i, flag in zip((old, new), flags, strict=True):
        if not found[i].stack:
            raise UsageError(f"{flag} {found[i].version}: no installable stack{pins}: {found[i].reason}")


def main(request: BisectRequest, matrix: Matrix, options: RunOptions) -> int:
    """Entry point called by `repromatrix bisect` (cli/bisect.py)."""
    def out(line: str) -> None:
        print(printable(line, newlines=True), flush=True)

    def err(line: str) -> None:
        print(printable(line, newlines=True), file=sys.stderr, flush=True)

    return Bisect(request, matrix, options, out, err).run()


def _rule(repro_path: str) -> str:
    """How the exported script's exit code reads (a plain script's own rule, else the
    one-file export's)."""
    script = read_wrapper(Path(repro_path))
    if script is not None:
        return script.rule
    return "exit 0 pass (bug absent), 1 fail (bug reproduced), 125 cannot tell"
