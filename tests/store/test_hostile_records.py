"""Hostile text from a repro (issue 19): nothing lost, nothing raw on a terminal, every
record line bounded. Real runs of the runner on a real torch interpreter, through the CLI
with stdout a pipe (not a TTY), as in a CI log."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from repromatrix.store.record import RECORD_LIMIT

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "hostile"
PY = os.environ.get("REPROMATRIX_TEST_PY_T213") or os.environ.get("REPROMATRIX_TEST_PY_T214")
REPROS = ("hostile_noisy", "hostile_surrogate", "hostile_after", "hostile_huge", "hostile_many")

pytestmark = [pytest.mark.torch]


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    if not PY or not Path(PY).exists():
        pytest.skip("no torch interpreter: set REPROMATRIX_TEST_PY_T213 or _T214")
    root = tmp_path_factory.mktemp("hostile")
    shutil.copytree(FIXTURES, root / "repros")
    (root / "matrix.yaml").write_text(
        f"repros: [{', '.join(REPROS)}]\n"
        f"stacks:\n  - {{kind: local, id: here, interpreter: {PY}, tags: [default]}}\n")
    proc = subprocess.run([sys.executable, "-m", "repromatrix.cli", "run", "--matrix",
                           str(root / "matrix.yaml"), "--results", str(root / "results"),
                           "--ca-bundle", "none"],
                          capture_output=True, timeout=600)
    lines = [line for f in sorted((root / "results").rglob("*.jsonl"))
             for line in f.read_bytes().splitlines()]
    records = {json.loads(line)["repro"]: json.loads(line) for line in lines}
    return proc, lines, records


def test_a_lone_surrogate_is_recorded_escaped_and_the_next_cell_runs(hostile_run):
    proc, _, records = hostile_run
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    assert set(records) == set(REPROS), records.keys()
    bad = records["hostile_surrogate"]
    assert bad["status"] == "error"
    assert "/x/image-\\udcff.png" in bad["message"], bad["message"]
    assert bad["stages"][0]["evidence"]["file"] == "/x/image-\\udcff.png"
    after = records["hostile_after"]
    assert after["status"] == "pass", after["message"]


def test_one_record_line_is_bounded_and_says_what_was_cut(hostile_run):
    _, lines, records = hostile_run
    assert max(len(line) + 1 for line in lines) <= RECORD_LIMIT
    huge = records["hostile_huge"]
    assert huge["traceback"].startswith("[record cut to fit 64 KB (")
    check = huge["stages"][0]["checks"][0]
    assert check["ok"] is True and "characters]" in check["what"] and check["what"].startswith("WWW")
    many = records["hostile_many"]
    assert "stages dropped" in many["traceback"].splitlines()[0]
    assert 0 < len(many["stages"]) < 600 and many["stages"][0]["name"] == "stage_000"


def test_nothing_raw_reaches_a_non_tty_stdout(hostile_run):
    proc, _, records = hostile_run
    out = proc.stdout + proc.stderr
    for raw in (b"\x1b", b"\x07", b"\x00"):
        assert raw not in out, out[-3000:]
    text = out.decode()
    assert "[here] [runner] hostile_noisy: error (" in text  # the runner's line, relayed
    assert "RuntimeError: bad \\x1b]0;pwned\\x07" in text.split("[runner] hostile_noisy: error")[1]
    assert "here--hostile_noisy: error  (noisy: RuntimeError: bad \\x1b]0;pwned" in text  # [i/n]
    assert "\x1b]0;pwned" in records["hostile_noisy"]["message"]  # kept as is in the record


def test_the_store_keeps_a_record_that_was_not_escaped(tmp_path):
    """A Result made elsewhere than make_result (a migration, a test) with a lone surrogate
    is still written, as a JSON escape, and reads back with it escaped, as the runner
    writes it (text that cannot be UTF-8 reaches no index, page or terminal raw)."""
    from repromatrix.store.record import Result
    from repromatrix.store.results import ResultStore, load_records

    rec = Result(run_id="r1", cell="s--x", stack={"id": "s"}, repro="x", status="error",
                 message=os.fsdecode(b"/x/image-\xff.png"), host="h")
    store = ResultStore(tmp_path, index=False)
    path = store.append(rec)
    assert b"\\udcff" in path.read_bytes()
    assert [r.message for r in load_records([tmp_path]).records] == ["/x/image-\\udcff.png"]


def test_a_cell_counts_as_recorded_only_once_its_record_is_written(tmp_path):
    """The store refuses one record (a full disk): that cell gets a `broken` record that says
    so, instead of being lost while the next cell takes a false reason."""
    if not PY or not Path(PY).exists():
        pytest.skip("no torch interpreter: set REPROMATRIX_TEST_PY_T213 or _T214")
    from repromatrix.config.matrix import load_matrix
    from repromatrix.config.options import RunOptions
    from repromatrix.plan import make_plan
    from repromatrix.run.cells import _stack_work, engines_for
    from repromatrix.run.schedule import Scheduler

    shutil.copytree(FIXTURES, tmp_path / "repros")
    (tmp_path / "matrix.yaml").write_text(
        "repros: [hostile_noisy, hostile_after]\n"
        f"stacks:\n  - {{kind: local, id: here, interpreter: {PY}, tags: [default]}}\n")
    matrix = load_matrix(tmp_path / "matrix.yaml")
    options = RunOptions(results=tmp_path / "results")
    engines = engines_for(matrix, options, "run-1", lambda _: None)
    (group,) = engines.choose(make_plan(matrix.stacks).groups)
    work = _stack_work(group, engines.choices[group.stack.id], {}, "run-1")
    written = []

    def emit(result):
        if result.repro == "hostile_noisy" and result.status != "broken":
            raise OSError(28, "No space left on device")
        written.append(result)

    Scheduler([work], emit=emit, out_root=tmp_path / "out", repro_timeout=120, stack_timeout=300,
              log=lambda _: None).run()
    by_repro = {r.repro: r for r in written}
    assert set(by_repro) == {"hostile_noisy", "hostile_after"}
    assert by_repro["hostile_noisy"].status == "broken"
    assert "recording hostile_noisy failed" in by_repro["hostile_noisy"].message
    assert "No space left on device" in by_repro["hostile_noisy"].message
