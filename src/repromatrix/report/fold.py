"""The grid's folds: a repro column, or a stack row, whose every cell cannot tell.

Flow: the cells' verdicts (``rules.verdict``, kept per cell as ``verdict``) + the catalog's
META ``requires`` -> **report.fold** -> the grid (``render.repro_view`` and ``patch``: a
column; ``stacks.matrix_rows`` and ``patch``: a row). A folded column leaves the grid for
one line above it, a folded row keeps its stack's header and says in one cell what would
decide it: the machine its repros' META asks for (a CUDA GPU, with TensorRT), or, for a
stack whose environment never came up, a machine that can build it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from repromatrix.model import Repro
from repromatrix.rules.verdict import CANNOT_TELL

TENSORRT = ("torch_tensorrt", "torch-tensorrt", "tensorrt")


def machine(requires: Iterable[str]) -> str:
    """The machine a repro's META ``requires`` asks for, in words ("" when it names none):
    ``a CUDA GPU``, ``a CUDA GPU with TensorRT``."""
    names = [str(r).strip().lower() for r in requires]
    gpu = any(n == "cuda" or n.startswith("gpus") for n in names)
    tensorrt = any(n.split("=")[0].split(">")[0].split("<")[0].strip() in TENSORRT for n in names)
    if gpu:
        return "a CUDA GPU with TensorRT" if tensorrt else "a CUDA GPU"
    return "TensorRT" if tensorrt else ""


def ended(cells: Sequence[Mapping[str, Any]]) -> str:
    """How the cells ended, most first: ``15 skip``, ``3 error, 1 skip``."""
    counts = Counter(str(c["status"]) for c in cells)
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items(), key=lambda i: (-i[1], i[0])))


def undecided(cells: Sequence[Mapping[str, Any]]) -> bool:
    """Whether there are cells and none says yes or no about its bug (``rules.verdict``)."""
    return bool(cells) and all(c["verdict"] == CANNOT_TELL for c in cells)


def column_fold(cells: Sequence[Mapping[str, Any]], repro: Repro | None) -> dict[str, Any] | None:
    """A repro's column folded into one line (None: it stays): its shown cells all cannot
    tell; the line says how they ended and what machine would decide them."""
    if not undecided(cells):
        return None
    wanted = machine(repro.requires) if repro else ""
    return {"cells": len(cells), "ended": ended(cells),
            "needs": f"needs {wanted}" if wanted else "no machine that ran it could decide it"}


def row_fold(cells: Sequence[Mapping[str, Any] | None],
             repros: Mapping[str, Repro]) -> dict[str, Any] | None:
    """A stack's row folded into one cell (None: it stays): its cells all cannot tell; the
    cell says how they ended and what would decide them: a machine that can build the
    environment when every cell is ``broken``, else the machine every one of its repros asks
    for (their META ``requires``), if they agree."""
    present = [c for c in cells if c is not None]
    if not undecided(present):
        return None
    if all(c["status"] == "broken" for c in present):
        needs = "needs a machine that can build its environment"
    else:
        wanted = {machine(repros[c["repro"]].requires) if c["repro"] in repros else ""
                  for c in present}
        one = wanted.pop() if len(wanted) == 1 else ""
        needs = f"needs {one}" if one else "the machines that ran this stack could not decide"
    return {"cells": len(present), "ended": ended(present), "needs": needs}
