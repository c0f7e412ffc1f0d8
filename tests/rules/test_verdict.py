"""rules.verdict: the one rule for what a record says about its bug, and on what evidence."""

from __future__ import annotations

import itertools
import sqlite3

import pytest

from repromatrix.model import Status
from repromatrix.rules.verdict import (
    BAD,
    CANNOT_TELL,
    CPU,
    DECIDED_SQL,
    GOOD,
    GPU,
    REAL,
    STANDIN,
    contradicts,
    evidence_level,
    of_record,
    said,
)

CLEARED = {"name": "compile", "role": "main", "status": "skip", "standins": ["tensorrt"],
           "evidence": {"cleared": True}}
BLOCKED = {**CLEARED, "evidence": {}}
RAISED = {"name": "compile", "role": "main", "status": "fail", "standins": ["tensorrt"]}
PLAIN_FAIL = {"name": "export", "role": "main", "status": "fail", "standins": []}


@pytest.mark.parametrize("status, stages, env, expected", [
    ("fail", [PLAIN_FAIL], {"gpus": ["H200"]}, (BAD, GPU)),
    ("fail", [PLAIN_FAIL], {"cuda_available": False}, (BAD, CPU)),
    ("fail", [RAISED], {}, (BAD, STANDIN)),
    ("pass", [], {"cuda_available": True}, (GOOD, GPU)),
    ("skip", [CLEARED], {}, (GOOD, STANDIN)),  # torch-tensorrt's code cleared the bug's point
    ("skip", [CLEARED, BLOCKED], {}, (CANNOT_TELL, "")),  # one stand-in stage did not
    ("skip", [], {"gpus": ["H200"]}, (CANNOT_TELL, "")),
    ("error", [PLAIN_FAIL], {}, (CANNOT_TELL, "")),  # a failure that is not the bug's signature
    ("crash", [], {}, (CANNOT_TELL, "")),
    ("timeout", [], {}, (CANNOT_TELL, "")),
    ("broken", [], {}, (CANNOT_TELL, "")),
])
def test_what_a_record_says(status, stages, env, expected):
    found = of_record(status, stages, env)
    assert (found.said, found.level) == expected
    assert found.decided is (expected[0] != CANNOT_TELL)
    assert bool(found.words) is found.decided


def test_the_sql_form_is_the_same_rule():
    """``DECIDED_SQL`` (what the store's queries select) holds for exactly the records
    ``said`` decides, over every status and evidence level."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE records (status TEXT, evidence TEXT)")
    pairs = list(itertools.product([s.value for s in Status], [REAL, STANDIN, "", None]))
    conn.executemany("INSERT INTO records VALUES (?, ?)", pairs)
    chosen = set(conn.execute(f"SELECT status, evidence FROM records r WHERE {DECIDED_SQL}"))
    assert chosen == {(s, e) for s, e in pairs if said(s, e or "") != CANNOT_TELL}


@pytest.mark.parametrize("expected, status, evidence, contradicted", [
    ("fail", "pass", REAL, True), ("pass", "fail", REAL, True),
    ("fail", "skip", STANDIN, True),  # a cleared stand-in skip is a pass, wherever it is read
    ("fail", "fail", STANDIN, False), ("fail", "crash", "", False), ("fail", "error", "", False),
    ("pass", "skip", "", False), ("skip", "pass", REAL, False),  # an expectation that cannot tell
])
def test_a_contradiction_is_a_decided_record_saying_the_opposite(expected, status, evidence,
                                                                  contradicted):
    assert contradicts(expected, status, evidence) is contradicted


def test_evidence_level_reads_the_main_stages_only():
    info = {**RAISED, "role": "info"}
    assert evidence_level("fail", [info, PLAIN_FAIL]) == REAL
    assert evidence_level("skip", [{**CLEARED, "role": "workaround"}]) == ""


def test_untold_names_the_stage_that_raised_and_its_exception_s_first_line():
    from repromatrix.rules.verdict import UNTOLD_LIMIT, untold

    stages = [{"name": "eager", "role": "main", "status": "pass", "message": "completed"},
              {"name": "probe", "role": "info", "status": "error", "message": "KeyError: 'x'"},
              {"name": "compile", "role": "main", "status": "error",
               "message": "\n  RuntimeError: mode (<Fake object at 0x7f4a92f898d0>)  differs\nmore"}]
    assert untold("error", "", "compile: RuntimeError ...", stages) == \
        "compile: RuntimeError: mode (<Fake object at 0x…>) differs"
    # a decided record has no line; one with no such stage falls back on its own message
    assert untold("fail", "real", "m", stages) == "" and untold("skip", "standin", "m", []) == ""
    assert untold("crash", "", "killed by signal 11 (SIGSEGV)\ntail", stages) == \
        "killed by signal 11 (SIGSEGV)"
    assert untold("timeout", "", "", []) == "timeout, with no message"
    skip = [{"name": "export", "role": "main", "status": "skip", "message": "needs torch>=2.5.0a0"}]
    assert untold("skip", "", "", skip) == "export: needs torch>=2.5.0a0"
    long = untold("error", "", "x" * 999, [])
    assert len(long) == UNTOLD_LIMIT and long.endswith("…")
