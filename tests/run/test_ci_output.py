"""What a run tells its CI service, from one module (``run.ci``): in GitHub Actions each
stack's lines folded into a group, one ``::error::`` annotation per broken stack with its
reason escaped, and the closing summary appended to the step summary as Markdown. Outside
it nothing of this is printed.

Driven the way ``run.run_plan`` drives ``run.progress`` (typed stack events, then each
Result), like tests/run/test_progress.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.progress import Clock, console, result

from repromatrix.model import Broken, Done, Output, Preparing, Running
from repromatrix.run import ci
from repromatrix.run.progress import RunProgress

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "pip install failed\n100% of 3 wheels: none for cp313, see: log"
WORKFLOW_COMMAND = re.compile(r"::(group|endgroup|error|warning|notice|debug|add-mask|set-output|"
                              r"save-state|stop-commands)\b")


def a_run(progress: RunProgress) -> None:
    """Stack `a` runs its two cells; `b` breaks with a hostile reason; every cell of `c` is
    recorded broken (the runner never started) without a Broken event."""
    progress.start({"a": 2, "b": 1, "c": 1}, reused=1)
    progress.log(Preparing("a", "building environment /a"))
    progress.log(Preparing("b", "building environment /b"))
    progress.log(Running("a", "running 2 repro(s)"))
    progress.log(Broken("b", HOSTILE))
    progress.result(result("b", "r1", "broken", HOSTILE))
    progress.log(Output("a", "[runner] r1: running"))
    progress.result(result("a", "r1", "fail", "signature matched"))
    progress.result(result("a", "r2", "pass"))
    progress.log(Done("a", "2 cell(s) recorded"))
    progress.log(Running("c", "running 1 repro(s)"))
    progress.result(result("c", "r1", "broken", "could not import torch"))
    progress.log(Done("c", "1 cell(s) recorded"))


def ran(monkeypatch: pytest.MonkeyPatch, summary: Path | None, **env: str) -> list[str]:
    """A run's plain output (its summary included) in the environment given."""
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if summary is not None:
        monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    con, out = console(tty=False)
    with RunProgress(con, clock=Clock()) as progress:
        a_run(progress)
    progress.print_summary("run-1")
    return out.getvalue().splitlines()


def test_outside_github_actions_no_workflow_command_is_printed(monkeypatch):
    lines = ran(monkeypatch, None)
    assert not [line for line in lines if WORKFLOW_COMMAND.match(line)]
    assert "[b] broken: pip install failed\\n100% of 3 wheels: none for cp313, see: log" in lines


def test_github_actions_groups_each_stack_and_annotates_each_broken_one(monkeypatch):
    lines = ran(monkeypatch, None, GITHUB_ACTIONS="true")
    assert [line for line in lines if line.startswith("::group::")] == [
        "::group::b (broken)", "::group::a (done)", "::group::c (done)"]
    assert lines.count("::endgroup::") == 3
    errors = [line for line in lines if line.startswith("::error")]
    assert errors == [
        "::error title=broken%3A b::pip install failed%0A100%25 of 3 wheels: none for cp313, see: log",
        "::error title=broken%3A c::could not import torch"]
    assert lines.index(errors[0]) > max(i for i, line in enumerate(lines) if line.split()[:1] == ["total"])


def test_the_step_summary_gets_the_closing_table_appended(monkeypatch, tmp_path):
    summary = tmp_path / "step_summary.md"
    summary.write_text("## plan\n\n4 stacks on 1 shard\n", encoding="utf-8")  # an earlier step's
    ran(monkeypatch, summary, GITHUB_ACTIONS="true")
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("## plan\n\n4 stacks on 1 shard\n\n### repromatrix run run-1\n\n")
    table = text.split("### repromatrix run run-1\n\n", 1)[1].splitlines()
    assert table[0] == "| stack | state | pass | fail | broken | time |"
    assert table[1] == "| --- | --- | ---: | ---: | ---: | ---: |"
    rows = {row.split(" | ")[0].removeprefix("| "): row for row in table[2:]}
    assert set(rows) == {"a", "b", "c", "total"}
    assert rows["a"] == "| a | done | 1 | 1 |  | 0:00 |"
    assert rows["total"].startswith("| total | 1 reused | 1 | 1 | 2 |")
    ran(monkeypatch, summary, GITHUB_ACTIONS="true")   # a second run's table follows the first
    assert summary.read_text(encoding="utf-8").count("### repromatrix run run-1") == 2


def test_no_step_summary_variable_no_file(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    ran(monkeypatch, None, GITHUB_ACTIONS="true")
    assert ci.step_summary_file() is None and not list(tmp_path.iterdir())


def test_a_summary_that_cannot_be_written_is_said_not_raised(monkeypatch, tmp_path):
    lines = ran(monkeypatch, tmp_path / "missing" / "summary.md", GITHUB_ACTIONS="true")
    assert any(line.startswith("note: the step summary could not be written") for line in lines)


def test_workflow_command_escapes_follow_githubs_rules():
    assert ci.escape_data("50%\r\nnext: a,b") == "50%25%0D%0Anext: a,b"
    assert ci.escape_property("50%\r\nnext: a,b") == "50%25%0D%0Anext%3A a%2Cb"
    assert ci.error("x\ny", title="t: 1,2") == "::error title=t%3A 1%2C2::x%0Ay"
    assert ci.group_start("s (broken)") == "::group::s (broken)"
    assert ci.warning("50%\nx", title="a,b") == "::warning title=a%2Cb::50%25%0Ax"
    assert ci.markdown_text("a|b <i>\n") == "a\\|b &lt;i&gt;\\n"


def test_markdown_cells_stay_in_their_column():
    table = ci.markdown_table(["stack", "n"], [["a|b <i>x</i>\nnext", "1"]], right={1})
    assert table.splitlines() == ["| stack | n |", "| --- | ---: |",
                                  "| a\\|b &lt;i&gt;x&lt;/i&gt;\\nnext | 1 |"]


def test_no_other_module_prints_workflow_commands():
    found = [p.relative_to(ROOT).as_posix() for p in (ROOT / "src" / "repromatrix").rglob("*.py")
             if p.name != "ci.py" and re.search(r"::(group|endgroup|error|warning|notice)\b", p.read_text())]
    assert not found, f"workflow commands written outside run/ci.py: {found}"
