"""What one record says about its bug: bad, good or cannot tell, and on what evidence.

The one rule. The page's answers, grid, advice and repro pages, the feed, expectations and
contradictions, ``check`` (command and page), bisect and run's outlook all read it:

    fail                                   bad
    pass                                   good
    skip whose stand-in stages all cleared good (torch-tensorrt's code ran clean past the
                                           bug's point, TensorRT stood in)
    anything else (error, crash, timeout,  cannot tell: an error or a crash is a problem
    skip, broken)                          that is not the bug's signature

and the evidence that decided it (``level``): a GPU, TensorRT stood in, or a CPU (fake CUDA
tensors). ``evidence_level`` (``real``, ``standin`` or "") is what the store keeps per record
and ranks by: a real verdict outranks a stand-in one (``store.reader.outranks``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

BAD, GOOD, CANNOT_TELL = "bad", "good", "cannot tell"
REAL, STANDIN = "real", "standin"  # a record's evidence level: the real stack, or stand-ins
GPU, CPU = "gpu", "cpu"  # a real verdict's machine
LEVEL_WORDS = {GPU: "GPU", STANDIN: "TensorRT stood in", CPU: "CPU or fake CUDA"}
# the statuses whose verdict an expectation or a bisect may name
EXPECTED = {"fail": BAD, "pass": GOOD}
UNTOLD_LIMIT = 200  # characters of ``untold``'s line
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")  # an object's address: differs run to run
# ``said`` in SQL over a records row ``r`` (its ``status`` and ``evidence`` columns)
DECIDED_SQL = "(r.status IN ('pass', 'fail') OR (r.status = 'skip' AND r.evidence = 'standin'))"


class Verdict(NamedTuple):
    """What a record says about its bug (``said``) and what decided it (``level``: ``gpu``,
    ``standin``, ``cpu``; "" when it says nothing)."""

    said: str
    level: str

    @property
    def decided(self) -> bool:
        return self.said != CANNOT_TELL

    @property
    def words(self) -> str:
        """The evidence in words ("" when nothing was decided)."""
        return LEVEL_WORDS.get(self.level, "")


def said(status: str, evidence: str) -> str:
    """``bad``, ``good`` or ``cannot tell`` of a record's status and evidence level."""
    if status == "fail":
        return BAD
    if status == "pass" or (status == "skip" and evidence == STANDIN):
        return GOOD
    return CANNOT_TELL


def decided(status: str, evidence: str) -> bool:
    """Whether a record says yes or no about its bug."""
    return said(status, evidence) != CANNOT_TELL


def on_gpu(env: Any) -> bool:
    """Whether a record's environment probe saw a CUDA GPU."""
    return isinstance(env, (dict, Mapping)) and (bool(env.get("gpus")) or env.get("cuda_available") is True)


def verdict(status: str, evidence: str, gpu: bool) -> Verdict:
    """The verdict of a record whose status, evidence level and GPU are known."""
    found = said(status, evidence)
    if found == CANNOT_TELL:
        return Verdict(found, "")
    return Verdict(found, STANDIN if evidence == STANDIN else GPU if gpu else CPU)


def of_record(status: str, stages: Iterable[Any], env: Any) -> Verdict:
    """The verdict of a record's JSON parts (its stages as dicts, its environment probe)."""
    return verdict(status, evidence_level(status, stages), on_gpu(env))


def contradicts(expected_status: str, status: str, evidence: str) -> bool:
    """Whether a record says the opposite of what its expectation's status says (a record or
    an expectation that cannot tell never contradicts)."""
    want = EXPECTED.get(expected_status, CANNOT_TELL)
    got = said(status, evidence)
    return CANNOT_TELL not in (want, got) and want != got


def evidence_level(status: str, stages: Iterable[Any]) -> str:
    """``real`` (a fail or pass on the real stack), ``standin`` (a fail raised in a stage that
    stood TensorRT in, a pass with such a main stage (a plain script's), or a skip whose main
    stand-in stages all cleared the bug's point), or "" (no verdict), from a status and stage
    dicts (a record's JSON, unparsed; ``dict`` is tried before the abstract ``Mapping``,
    whose check is slow)."""
    main = [s for s in stages if isinstance(s, (dict, Mapping)) and s.get("role", "main") == "main"]
    if status == "fail":
        first = next((s for s in main if s.get("status") == "fail"), None)
        return STANDIN if first is not None and first.get("standins") else REAL
    if status == "pass":
        return STANDIN if any(s.get("standins") for s in main) else REAL
    stood_in = [s for s in main if s.get("standins")]
    if status == "skip" and stood_in and all(_cleared(s) for s in stood_in):
        return STANDIN
    return ""


def _cleared(stage: Mapping[str, Any]) -> bool:
    """A stand-in stage that ran torch-tensorrt's code clean past where the bug would be."""
    evidence = stage.get("evidence")
    return stage.get("status") == "skip" and isinstance(evidence, Mapping) \
        and bool(evidence.get("cleared"))


def untold(status: str, evidence: str, message: str, stages: Iterable[Any]) -> str:
    """Why a record cannot tell about its bug, in one line ("" when it says yes or no): the
    first main stage that ended with the record's status (for an ``error``, the stage that
    raised: the new problem, which is not the bug's signature), its name and its message's
    first line (an exception's type and message), else the record's own message's first
    line. Object addresses read ``0x…``, so one problem reads the same on every record."""
    if said(status, evidence) != CANNOT_TELL:
        return ""
    main = [s for s in stages if isinstance(s, (dict, Mapping)) and s.get("role", "main") == "main"]
    first = next((s for s in main if s.get("status") == status and _first_line(s.get("message"))), None)
    line = f"{first.get('name')}: {_first_line(first.get('message'))}" if first is not None \
        else _first_line(message) or f"{status}, with no message"
    line = _ADDRESS.sub("0x…", line)
    return line if len(line) <= UNTOLD_LIMIT else line[:UNTOLD_LIMIT - 1] + "…"


def _first_line(text: Any) -> str:
    """The first line of ``text`` that is not blank, its white space collapsed."""
    for line in str(text or "").splitlines():
        if line.strip():
            return " ".join(line.split())
    return ""
