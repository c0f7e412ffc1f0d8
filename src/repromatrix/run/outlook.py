"""What this machine could not decide, and what another machine would add.

Run stage, after the run: the latest record of every planned cell that is still
"cannot tell" (``rules.verdict``: neither bad nor good) is sorted by what it lacked
here — a CUDA GPU, more GPUs, real TensorRT, an engine that can make its stack
(docker with registry access for NGC images), a working environment, a repro that
ran to the bug's verdict (an error or a crash that is not the bug) — so the
closing summary of `repromatrix run` / `matrix` can say what a GPU machine would
decide that this one could not. Reads records only; decides nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from repromatrix.model import Status
from repromatrix.rules.verdict import decided
from repromatrix.store.record import Result
from repromatrix.textsafe import listed

OTHER_PROBLEM = "a run that reaches the bug (an error or a crash that is not it: see its message)"

# (what was lacking, how a record says so), first match wins
NEEDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("docker with access to NVIDIA's registry (NGC images)",
     re.compile(r"^cannot be made here.*nvcr\.io")),
    ("the PyTorch wheel index (or a mirror) for their CUDA pin",
     re.compile(r"^cannot be made here.*download\.pytorch\.org")),
    ("an engine that can make the stack here", re.compile(r"^cannot be made here")),
    ("more CUDA GPUs", re.compile(r"needs CUDA devices")),
    ("real TensorRT", re.compile(r"needs real TensorRT|tensorrt is (not installed|installed but)",
                                 re.IGNORECASE)),
    ("a CUDA GPU", re.compile(r"no CUDA device|needs a CUDA build")),
    (OTHER_PROBLEM, re.compile(r"$^")),  # error, crash: by status (``_need``)
    ("an environment that builds and starts here", re.compile(r".")),  # broken, timeout, other
)


@dataclass
class Outlook:
    """Undecided cells by what they lacked (in NEEDS order), and how many were decided."""

    decided: int = 0
    lacking: dict[str, list[str]] = field(default_factory=dict)  # need -> cell ids

    @property
    def undecided(self) -> int:
        return sum(len(c) for c in self.lacking.values())

    def lines(self) -> list[str]:
        """The closing summary: nothing when every cell was decided."""
        if not self.undecided:
            return []
        out = [f"decided here: {self.decided} cell(s); cannot tell here: {self.undecided}"]
        for need, _ in NEEDS:
            cells = self.lacking.get(need)
            if cells:
                out.append(f"  {len(cells)} need {need}: {listed(cells)}")
        gpu = sum(len(self.lacking.get(n, ())) for n in ("a CUDA GPU", "more CUDA GPUs",
                                                          "real TensorRT"))
        if gpu:
            made = sum(len(self.lacking.get(need, ())) for need, _ in NEEDS[:3])
            out.append(f"  a GPU machine with TensorRT (and docker with registry access for the "
                       f"NGC stacks) would decide up to {gpu + made} more; see each cell on the "
                       f"page for its reason")
        return out


def outlook(records: Iterable[Result]) -> Outlook:
    """Sort the latest records of the planned cells by what the undecided ones lacked."""
    out = Outlook()
    for rec in records:
        if decided(rec.status, rec.evidence_level):
            out.decided += 1
            continue
        out.lacking.setdefault(_need(rec), []).append(rec.cell)
    return out


def _need(rec: Result) -> str:
    if rec.status in (Status.ERROR.value, Status.CRASH.value):
        return OTHER_PROBLEM
    if rec.status == Status.SKIP.value:
        texts = [rec.message] + [s.message for s in rec.stages if s.role == "main"
                                 and s.status == Status.SKIP.value]
        for need, pattern in NEEDS[:-1]:
            if any(pattern.search(t) for t in texts if t):
                return need
    return NEEDS[-1][0]

