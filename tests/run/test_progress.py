"""The terminal view of a run: plain lines for CI logs, a live table on a TTY, a closing summary.

Fed the way ``run.run_plan`` feeds it (log lines, then each Result); the last test drives a
real run through the local backend.
"""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from support.progress import Clock, console, result

from repromatrix.config.matrix import load_matrix
from repromatrix.config.options import RunOptions
from repromatrix.model import Broken, Done, Note, Output, Preparing, Running
from repromatrix.plan import make_plan
from repromatrix.run.cells import run_plan
from repromatrix.run.progress import RunProgress, fmt_seconds

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "repros"
PY = os.environ.get("REPROMATRIX_TEST_PY_T213") or os.environ.get("REPROMATRIX_TEST_PY_T214")


def test_plain_lines_count_cells_and_estimate_the_rest():
    con, out = console(tty=False)
    clock = Clock()
    with RunProgress(con, clock=clock, github=False) as progress:
        assert not progress.live_mode
        progress.start({"a": 2, "b": 2}, reused=1)
        progress.log(Preparing("a", "building environment /x"))
        progress.log(Running("a", "running 2 repro(s) with python"))
        progress.log(Output("a", "[runner] r1: running (timeout 600s)"))
        clock.now += 10
        progress.result(result("a", "r1", "fail", "signature matched"))
        clock.now += 10
        progress.result(result("a", "r2", "pass"))
        progress.log(Broken("b", "image build failed"))
    lines = out.getvalue().splitlines()
    assert "[a] [runner] r1: running (timeout 600s)" in lines   # CI logs keep every line
    assert "[1/4] a--r1: fail  (signature matched)  [elapsed 0:10, ~0:30 left]" in lines
    assert "[2/4] a--r2: pass  [elapsed 0:20, ~0:20 left]" in lines
    assert progress.stacks["a"].state == "done" and progress.stacks["b"].state == "broken"
    con.file = io.StringIO()
    progress.print_summary("run-1")
    table = con.file.getvalue()
    assert "run run-1" in table and "1 reused" in table
    rows = {line.split()[0]: line.split() for line in table.splitlines()
            if line.split() and line.split()[0] in ("a", "b", "total")}
    assert rows["a"][:4] == ["a", "done", "1", "1"] and rows["total"][-1] == "0:20"


def test_live_table_shows_states_and_what_each_stack_runs_now():
    con, out = console(tty=True)
    clock = Clock()
    with RunProgress(con, clock=clock) as progress:
        assert progress.live_mode
        progress.start({"a": 1, "b": 1, "c": 1})
        progress.log(Running("a", "running 1 repro(s) with python"))
        progress.log(Output("a", "[runner] dynamic_unet_shapes: running (timeout 600s)"))
        progress.log(Preparing("b", "reusing environment /venvs/b"))
        progress.log("a line about nothing in particular")
        clock.now += 5
        render = Console(file=io.StringIO(), width=120)
        render.print(progress.render())
        view = render.file.getvalue()
    assert "0/3 cells" in view and "elapsed 0:05" in view
    states = {line.split()[0]: line.split()[1] for line in view.splitlines()
              if line.split() and line.split()[0] in ("a", "b", "c")}
    assert states == {"a": "running", "b": "preparing", "c": "waiting"}
    assert "dynamic_unet_shapes: running" in view
    shown = out.getvalue()
    assert "a line about nothing in particular" in shown        # printed above the live table
    assert "[a] [runner]" not in shown                          # shown in the table instead


def test_live_table_prints_what_a_runner_says_besides_its_progress():
    """A traceback from a runner that dies is printed above the table, not swallowed."""
    con, out = console(tty=True)
    with RunProgress(con, clock=Clock()) as progress:
        progress.start({"a": 1})
        progress.log(Running("a", "running 1 repro(s)"))
        progress.log(Output("a", "[runner] r1: running"))
        progress.log(Output("a", "ModuleNotFoundError: No module named 'torch'"))
    shown = out.getvalue()
    assert "[a] ModuleNotFoundError: No module named 'torch'" in shown
    assert "[a] [runner] r1: running" not in shown


def test_a_repeated_stack_is_done_only_after_its_last_attempt():
    con, _ = console(tty=False)
    with RunProgress(con, github=False) as progress:
        progress.start({"a": 2})  # one cell, --repeat 2
        progress.log(Running("a", "running 1 repro(s)"))
        progress.result(result("a", "r1", "pass"))
        progress.log(Done("a", "1 cell(s) recorded"))
        assert progress.stacks["a"].state == "waiting"
        progress.log(Preparing("a", "reusing environment /a"))
        assert progress.stacks["a"].state == "preparing"
        progress.log(Running("a", "running 1 repro(s)"))
        progress.result(result("a", "r1", "fail"))
        progress.log(Done("a", "1 cell(s) recorded"))
        assert progress.stacks["a"].state == "done"


def test_a_broken_stack_says_broken_in_plain_lines():
    con, out = console(tty=False)
    with RunProgress(con, github=False) as progress:
        progress.start({"b": 1})
        progress.log(Broken("b", "the runner could not be started: no python"))
    assert "[b] broken: the runner could not be started: no python" in out.getvalue().splitlines()


def test_state_comes_from_the_event_type_never_its_wording():
    con, _ = console(tty=False)
    with RunProgress(con, github=False) as progress:
        progress.start({"a": 1, "b": 1})
        progress.log("[a] running 1 repro(s) with python")   # a plain line: no state change
        progress.log(Note("b", "broken: in words only"))
        assert progress.stacks["a"].state == "waiting" and progress.stacks["b"].state == "waiting"
        progress.log(Running("a", "anything"))
        progress.log(Broken("b", "anything"))
        assert progress.stacks["a"].state == "running" and progress.stacks["b"].state == "broken"


def test_github_actions_folds_each_stack_into_one_group():
    """Two stacks whose lines interleave come out as two whole groups, each closed when
    its stack ends; cell lines stay outside the groups."""
    con, out = console(tty=False)
    with RunProgress(con, github=True) as progress:
        progress.start({"a": 1, "b": 1})
        progress.log(Preparing("a", "building environment /a"))
        progress.log(Preparing("b", "building environment /b"))
        progress.log(Running("a", "running 1 repro(s)"))
        progress.log(Broken("b", "environment build FAILED"))
        progress.log(Output("a", "[runner] r1: running"))
        progress.result(result("a", "r1", "pass"))
        progress.log(Done("a", "1 cell(s) recorded"))
    lines = out.getvalue().splitlines()
    b = lines.index("::group::b (broken)")
    assert lines[b + 1:b + 4] == ["[b] building environment /b",
                                  "[b] broken: environment build FAILED", "::endgroup::"]
    a = lines.index("::group::a (done)")
    assert lines[a + 1:a + 5] == ["[a] building environment /a", "[a] running 1 repro(s)",
                                  "[a] [runner] r1: running", "[a] 1 cell(s) recorded"]
    assert lines[a + 5] == "::endgroup::"
    assert any(line.startswith("[1/2] a--r1: pass") for line in lines[:a])


def test_fmt_seconds():
    assert (fmt_seconds(5), fmt_seconds(65), fmt_seconds(3725)) == ("0:05", "1:05", "1:02:05")


@pytest.mark.torch
def test_a_real_run_feeds_the_progress_and_its_summary(tmp_path):
    if not PY or not Path(PY).exists():
        pytest.skip("no torch interpreter: set REPROMATRIX_TEST_PY_T213 or _T214")
    (tmp_path / "repros").mkdir()
    for name in ("fx_pass.py", "fx_garbage.py"):
        shutil.copy(FIXTURES / name, tmp_path / "repros" / name)
    (tmp_path / "matrix.yaml").write_text(  # the folder joins the built-in catalog: list ours
        f"repros: [fx_pass, fx_garbage]\n"
        f"stacks:\n  - {{kind: local, id: here, interpreter: {PY}, tags: [default]}}\n")
    matrix = load_matrix(tmp_path / "matrix.yaml")
    con, out = console(tty=False)
    with RunProgress(con) as progress:
        summary = run_plan(matrix, make_plan(matrix.stacks), RunOptions(results=tmp_path / "results"),
                           log=progress.log, progress=progress)
    assert summary.ran == 2
    lines = out.getvalue().splitlines()
    assert any(line.startswith("[here] running 2 repro(s)") for line in lines)
    assert sorted(line.split()[1] for line in lines if line.startswith(("[1/2]", "[2/2]"))) == [
        "here--fx_garbage:", "here--fx_pass:"]
    assert progress.stacks["here"].state == "done"
    assert progress.counts() == summary.statuses


def test_plain_lines_escape_hostile_text_and_cut_reasons_at_a_word():
    con, out = console(tty=False)
    with RunProgress(con, clock=Clock()) as progress:
        progress.start({"a": 2}, reused=0)
        progress.log("[a] [runner] says \x1b]0;pwned\x07\x1b[2J\x00")
        reason = "the environment could not be built because " + "dependency " * 30
        progress.result(result("a", "r1", "broken", reason))
        progress.result(result("a", "r2", "error", "bad \x1b[2J"))
    text = out.getvalue()
    assert "\x1b" not in text and "\x07" not in text and "\x00" not in text
    assert "says \\x1b]0;pwned\\x07\\x1b[2J\\x00" in text
    line = next(ln for ln in text.splitlines() if "a--r1" in ln)
    shown = line.split("(", 1)[1].rsplit(")", 1)[0]
    assert shown.endswith("dependency…") and len(shown) <= 120, shown
    assert "a--r2: error  (bad \\x1b[2J)" in text
