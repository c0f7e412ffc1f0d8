"""`repromatrix bisect`: the glue between the pure search and the run stage.

Every probe is a normal cell (one candidate stack x the repro) run through
``run.run_plan``, so its record lands in the results store and a second
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

import argparse
import json
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import InfraError, UsageError, did_you_mean
from ..model import Plan, StackGroup, Status
from ..textsafe import printable
from . import candidates as cands
from .report import (
    Probe,
    Setup,
    infra_only,
    json_report,
    progress_line,
    text_report,
    wrong_bounds_message,
)
from .search import BoundsFailed, Found, Step, Verdict, search

BAD_IF_ALLOWED = (Status.FAIL.value, Status.ERROR.value, Status.CRASH.value, Status.TIMEOUT.value)


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


def outcome(record: dict[str, Any], stage: str | None) -> tuple[str, str]:
    """(status, one-line note) of a record, or of its stage ``stage``.

    A stage the record does not hold is "missing" (cannot tell), or "broken"
    when the whole cell was.
    """
    status, note = str(record.get("status")), _first_line(record.get("message"))
    if not stage:
        return status, note
    for s in record.get("stages") or []:
        if s.get("name") == stage:
            return str(s.get("status")), _first_line(s.get("message"))
    if status == Status.BROKEN.value:
        return status, note
    names = ", ".join(str(s.get("name")) for s in record.get("stages") or []) or "none"
    return "missing", f"no stage {stage!r} in this record (cell {status}: {note}; stages: {names})"


def _first_line(text: Any) -> str:
    lines = str(text or "").strip().splitlines()
    return lines[0][:200] if lines else ""


def classify(status: str, bad_if: Sequence[str], find_fix: bool) -> Verdict:
    """good/bad/cannot tell, turned into the search's OLD/NEW/SKIP."""
    if status in bad_if:
        return Verdict.OLD if find_fix else Verdict.NEW
    if status == Status.PASS.value:
        return Verdict.NEW if find_fix else Verdict.OLD
    return Verdict.SKIP


def command_line(args: argparse.Namespace) -> list[str]:
    """The argv that repeats this bisect (non-default options only)."""
    argv = ["repromatrix", "bisect", "--repro", args.repro, "--good", args.good, "--bad", args.bad]
    if args.axis != "torch":
        argv += ["--axis", args.axis]
    if args.stage:
        argv += ["--stage", args.stage]
    if args.bad_if != "fail":
        argv += ["--bad-if", args.bad_if]
    if args.find_fix:
        argv.append("--find-fix")
    for item in args.base:
        argv += ["--base", item]
    for flag, value in (("--matrix", args.matrix), ("--ca-bundle", args.ca_bundle),
                        ("--python", args.python), ("--timeout", args.timeout)):
        if value:
            argv += [flag, str(value)]
    for flag, values in (("--base-image", args.base_image), ("--find-links", args.find_links)):
        for v in values:
            argv += [flag, v]
    if args.backend != "docker":
        argv += ["--backend", args.backend]
    if Path(args.results) != Path("results"):
        argv += ["--results", str(args.results)]
    if args.gpus:
        argv += ["--gpus", args.gpus]
    return argv


class Bisect:
    """One bisect invocation: its matrix, candidates, probes and output streams."""

    def __init__(self, args: argparse.Namespace, out: Callable[[str], None],
                 err: Callable[[str], None]) -> None:
        from ..cli import load

        self.args, self.out, self.err = args, out, err
        self.say = err if args.json else out
        if args.backend == "local":
            raise UsageError("--backend local runs one interpreter, but a bisect needs one environment "
                             "per release: use --backend venv (uv environments) or docker")
        self.matrix = load(args)
        if args.repro not in self.matrix.repros:
            known = list(self.matrix.repros)
            raise UsageError(f"--repro {args.repro}: unknown repro{did_you_mean(args.repro, known)}; "
                             f"known: {', '.join(known) or 'none'}")
        bad_if = parse_bad_if(args.bad_if)
        self.base = cands.parse_base(args.base, args.axis)
        self.setup = Setup(args.repro, args.axis, args.find_fix, bad_if, args.stage,
                           self.matrix.settings, command_line(args))
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
        _check_installable(found, old, new, a)
        return found, old, new

    def probe(self, index: int, cand: cands.Candidate) -> Verdict:
        from ..results import latest_by_cell, load_records
        from ..run import run_plan

        a, stack = self.args, cand.stack
        assert stack is not None
        cell = f"{stack.id}--{a.repro}"
        summary = run_plan(self.matrix, Plan((StackGroup(stack, (a.repro,)),)), backend_name=a.backend,
                           results_dir=Path(a.results), rerun=a.rerun, python=a.python,
                           timeout=a.timeout, jobs=a.jobs, gpus=[g for g in a.gpus.split(",") if g],
                           keep=a.keep, log=lambda line: self.err("    " + line))
        mine = [r for r in summary.records if r.get("cell") == cell]
        record = mine[-1] if mine else latest_by_cell(load_records([Path(a.results)]).records).get(cell)
        if record is None:
            raise UsageError(f"no record for {cell} after running it (is --results writable?)")
        status, note = outcome(record, a.stage)
        verdict = classify(status, self.setup.bad_if, a.find_fix)
        self.probes[index] = Probe(index, cand, record, status, note, verdict, reused=not mine)
        return verdict

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


def _check_installable(found: list[cands.Candidate], old: int, new: int, args: argparse.Namespace) -> None:
    """Both bounds need a valid stack; say why not (naming the --base pins) otherwise."""
    pins = f" with {' '.join('--base ' + b for b in args.base)}" if args.base else ""
    valid = [c for c in found[old:new + 1] if c.stack]
    if not valid:
        raise UsageError(f"no {args.axis} release from {found[old].version} to {found[new].version} "
                         f"resolves to an installable stack{pins}: {found[old].reason}")
    flags = ("--bad", "--good") if args.find_fix else ("--good", "--bad")
    for i, flag in zip((old, new), flags, strict=True):
        if not found[i].stack:
            raise UsageError(f"{flag} {found[i].version}: no installable stack{pins}: {found[i].reason}")


def main(args: argparse.Namespace) -> int:
    """Entry point called by `repromatrix bisect` (cli.cmd_bisect)."""
    def out(line: str) -> None:
        print(printable(line, newlines=True), flush=True)

    def err(line: str) -> None:
        print(printable(line, newlines=True), file=sys.stderr, flush=True)

    return Bisect(args, out, err).run()
