"""How a repro or one of its stages ended, and the status that makes: the container
side's verdict rules, in one place (ARCHITECTURE.md, "Outcomes").

``derive_status`` is the cell's verdict from its stage records (``protocol`` writes it
into every result file; the runner uses it for a repro that died in a stage a signal
signature names). ``ended_status`` is the status of a process that left no result (a
repro the runner ran, an isolated stage's child). ``signal_name`` and ``file_tail`` read
the facts those rules need. The host's side of the same rules is
``store.record.make_result`` (a cell the runner left no result for).

Not a repro (the name starts with '_'). Standard library only, Python 3.8+.
"""

from __future__ import annotations

import os
import signal
from typing import Any, Dict, Optional, Sequence, Tuple

PASS, FAIL, ERROR, CRASH, TIMEOUT, SKIP, BROKEN = (
    "pass", "fail", "error", "crash", "timeout", "skip", "broken")
WORST_FIRST = (FAIL, CRASH, TIMEOUT, ERROR, SKIP)  # the status a set of stages takes


def derive_status(stages: Sequence[Dict[str, Any]]) -> Tuple[str, Optional[str], str]:
    """(status, signature id, message) of a cell from its stage records: the main stages
    only, worst first (``fail`` before ``crash``, ``timeout``, ``error``, ``skip``);
    ``pass`` unless every one of them passed without checking an output numerically."""
    main = [s for s in stages if s.get("role", "main") == "main"]
    if not main:
        return ERROR, None, "the repro ran no main stage"
    for wanted in WORST_FIRST:
        for s in main:
            if s["status"] == wanted:
                return wanted, s.get("signature"), "%s: %s" % (s["name"], s.get("message") or wanted)
    unchecked = [s["name"] for s in main if s["status"] == PASS and not _checked(s)]
    if len(unchecked) == len(main):
        return ERROR, None, "the workflow completed but no output was checked against eager"
    return PASS, None, "every main stage passed; output checked against eager"


def workaround_status(stages: Sequence[Dict[str, Any]]) -> Optional[str]:
    """Status of the workaround stages (worst first, ``pass`` only when one checked an
    output numerically), or None without one."""
    ws = [s for s in stages if s.get("role") == "workaround"]
    for wanted in WORST_FIRST:
        if any(s["status"] == wanted for s in ws):
            return wanted
    if ws and not any(_checked(s) for s in ws):
        return ERROR
    return PASS if ws else None


def _checked(stage: Dict[str, Any]) -> bool:
    return any(c.get("numeric") and c.get("ok") for c in stage.get("checks", ()))


def ended_status(timed_out: bool, signal_died: Optional[str], matched: bool = False) -> str:
    """The status of a process that left no result: ``timeout`` when it was killed at its
    time limit; ``fail`` when its death by ``signal_died`` matched a signal signature of
    the running stage (``matched``), ``crash`` for any other death by a signal; else
    ``error`` (it exited without a result)."""
    if timed_out:
        return TIMEOUT
    if signal_died:
        return FAIL if matched else CRASH
    return ERROR


def signal_name(returncode: Optional[int], shell_status: bool = False) -> Optional[str]:
    """The signal that ended a process (``"SIGSEGV"``), from its return code; else None.

    ``subprocess`` reports a death by signal N of its own child as ``-N``: always read
    (the runner's probe and repros, an isolated stage's child, the fake-CUDA probe). A
    process that runs its work in a child of its own reports that child's death as exit
    status ``128 + N`` (a shell, ``docker run``, the script wrapper
    ``onefile/_wrapper.py``, the runner after SIGTERM): read only with ``shell_status``,
    by a caller whose child may be one of those (the runner, for its repros).
    """
    if returncode is None:
        return None
    if returncode < 0:
        num = -returncode
    elif shell_status and 128 < returncode < 160:
        num = returncode - 128
    else:
        return None
    try:
        return signal.Signals(num).name
    except ValueError:
        return "SIG%d" % num


def file_tail(path: str, limit: int) -> str:
    """The last ``limit`` bytes of the file at ``path``, decoded (a character cut in two
    shows as U+FFFD); "" when it cannot be read."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""
