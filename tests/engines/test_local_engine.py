"""The local engine and the one Result constructor: a real interpreter, real runner, real records."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from repromatrix.config.matrix import load_matrix
from repromatrix.config.options import RunOptions
from repromatrix.engines.interpreter import env_probe
from repromatrix.errors import UsageError
from repromatrix.model import Plan, Stack, StackGroup
from repromatrix.plan import make_plan
from repromatrix.run.cells import fold_local, run_plan
from repromatrix.store.record import SCHEMA_VERSION, CellRun, EngineFacts, Result, make_result
from repromatrix.store.results import load_records

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "data" / "repros"
RECORD_KEYS = {"schema_version", "run_id", "cell", "stack", "repro", "repro_sha256", "cache_key",
               "attempt", "status", "stages", "signature", "workaround", "message", "traceback",
               "duration_s", "exit_code", "signal", "env", "image", "backend", "backend_reason",
               "reproduce", "harness_version", "host", "started_at", "finished_at"}


def torch_python() -> str:
    for name in ("REPROMATRIX_TEST_PY_T213", "REPROMATRIX_TEST_PY_T214"):
        py = os.environ.get(name)
        if py and Path(py).exists():
            return py
    pytest.skip("no torch interpreter: set REPROMATRIX_TEST_PY_T213 or _T214")


def user_project(tmp_path: Path, python: str, repros: tuple[str, ...], stack_id: str = "here") -> Path:
    """A user's folder: a matrix with one local stack and only their repro scripts
    (protocol and runner come from the harness)."""
    (tmp_path / "repros").mkdir()
    for name in repros:
        shutil.copy(FIXTURES / f"{name}.py", tmp_path / "repros")
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(f"repros: [{', '.join(repros)}]\n"  # the folder joins the built-in catalog
                      f"stacks:\n  - {{kind: local, id: {stack_id}, interpreter: {python}}}\n")
    return matrix


def run(matrix_path: Path, plan: Plan | None = None, **options) -> list[Result]:
    matrix = load_matrix(matrix_path)
    opts = RunOptions(results=matrix_path.parent / "results", **options)
    summary = run_plan(matrix, plan or make_plan(matrix.stacks, all_stacks=True), opts,
                       log=lambda _line: None)
    return summary.results


@pytest.mark.torch
def test_every_ending_becomes_one_result(tmp_path):
    repros = ("fx_checked", "fx_segfault", "fx_hang", "fx_garbage")
    matrix = user_project(tmp_path, torch_python(), repros)
    stack = load_matrix(matrix).stacks[0]
    plan = Plan((StackGroup(stack, (*repros, "fx_missing")),))
    out = run(matrix, plan, repro_timeout=8, repro_jobs=1)  # one at a time: in the given order
    by = {r.repro: r for r in out}
    assert [r.repro for r in out] == [*repros, "fx_missing"]  # emitted as each finished
    assert {k: r.status for k, r in by.items()} == {
        "fx_checked": "fail", "fx_segfault": "crash", "fx_hang": "timeout", "fx_garbage": "error",
        "fx_missing": "error"}
    for r in out:
        assert set(r.to_dict()) == RECORD_KEYS and r.schema_version == SCHEMA_VERSION
        assert r.backend == "local" and r.cell == f"here--{r.repro}" and r.image is None
        assert r.env["torch"] and r.cache_key and r.stack["interpreter"] == torch_python()
    assert by["fx_checked"].signature == "known_bug" and by["fx_checked"].repro_sha256
    assert by["fx_segfault"].signal == "SIGSEGV"
    stored = load_records([tmp_path / "results"]).records
    assert sorted(r.cell for r in stored) == sorted(r.cell for r in out)


@pytest.mark.torch
@pytest.mark.parametrize("backend", ["docker", "venv", "local"])
def test_a_local_stack_keeps_its_id_and_interpreter_under_every_backend(tmp_path, backend):
    py = torch_python()
    matrix = user_project(tmp_path, py, ("fx_checked",), stack_id="mine")
    out = run(matrix, backend=backend, python=sys.executable)
    assert [(r.cell, r.stack["interpreter"], r.status) for r in out] == [
        ("mine--fx_checked", py, "fail")]
    assert out[0].env["python_executable"] == py


def test_backend_local_folds_pip_stacks_and_keeps_local_ones():
    pip = StackGroup(Stack(id="pip-a", kind="pip", torch="2.4.1"), ("r1", "r2"))
    ngc = StackGroup(Stack(id="ngc-24.05", kind="ngc", ngc="24.05"), ("r2", "r3"))
    own = StackGroup(Stack(id="mine", kind="local", interpreter="/x/python"), ("r1",))
    folded = fold_local(Plan((pip, own, ngc)), "/y/python")
    assert [(g.stack.id, g.stack.interpreter, g.repros) for g in folded.groups] == [
        ("local", "/y/python", ("r1", "r2", "r3")), ("mine", "/x/python", ("r1",))]
    clash = StackGroup(Stack(id="local", kind="local", interpreter="/x/python"), ("r1",))
    with pytest.raises(UsageError, match="already has a local stack"):
        fold_local(Plan((pip, clash)), "/y/python")


def test_interpreter_without_torch_gives_broken_results(tmp_path, monkeypatch):
    site = tmp_path / "site" / "torch"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text("raise ImportError('no libtorch here')\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    matrix = user_project(tmp_path, sys.executable, ("fx_checked",))
    out = run(matrix)
    assert [r.status for r in out] == ["broken"] and "no libtorch here" in out[0].message


def test_a_missing_interpreter_is_refused_before_any_work(tmp_path):
    matrix = user_project(tmp_path, "/nonexistent/python", ("fx_checked",))
    with pytest.raises(UsageError, match="no such interpreter"):
        run(matrix)
    assert not (tmp_path / "results").exists()


CELL = CellRun(run_id="r1", stack={"id": "st", "kind": "pip"}, repro="a", repro_sha256="h",
               cache_key="k", backend="docker", image={"tag": "t", "id": "i"})


def test_make_result_from_the_runner_file():
    runner = {"repro": "a", "status": "pass", "message": "ok\nsecond line", "stages": [
        {"name": "s", "status": "pass", "duration_s": 1, "message": "", "evidence": {"x": 1}},
        {"name": "bad", "status": "nonsense"}]}
    r = make_result(CELL, runner, {"torch": "2.14.1"}, None)
    assert (r.status, r.message, r.cell, r.cache_key) == ("pass", "ok", "st--a", "k")
    assert [s.name for s in r.stages] == ["s"] and r.stages[0].role == "main"
    assert r.env == {"torch": "2.14.1"} and r.image == {"tag": "t", "id": "i"}
    assert Result.from_dict(json.loads(json.dumps(r.to_dict()))) == r


@pytest.mark.parametrize("runner, env, facts, status, words", [
    ("garbage", {}, None, "error", "not a result object"),
    ({"status": "weird"}, {}, None, "error", "unknown status"),
    (None, {"torch": "x"}, EngineFacts(timed_out=True, limit_s=5), "timeout", "stack timeout (5s)"),
    (None, {"torch": "x"}, EngineFacts(oom_killed=True), "crash", "out of memory"),
    (None, {}, EngineFacts(exit_code=1), "broken", "never started"),
    (None, {"error": "import torch failed"}, EngineFacts(exit_code=0), "broken", "import torch"),
    (None, {"torch": "x"}, EngineFacts(exit_code=1), "error", "stopped early"),
    (None, None, EngineFacts(reason="image build failed: E"), "broken", "image build failed"),
])
def test_make_result_without_a_usable_runner_file(runner, env, facts, status, words):
    r = make_result(CELL, runner, env, facts)
    assert r.status == status and words in r.message
    if facts is not None and facts.timed_out:
        assert r.signal == "SIGKILL"


def test_records_of_schema_1_are_upgraded():
    v1 = {"schema_version": 1, "run_id": "r", "cell": "s--a", "repro": "a", "status": "fail",
          "stack": {"id": "s"}, "stages": [{"name": "x", "status": "fail"}]}
    r = Result.from_dict(v1)
    assert r.schema_version == SCHEMA_VERSION and r.attempt == 1 and r.stages[0].role == "main"
    with pytest.raises(ValueError, match="unknown schema_version 99"):
        Result.from_dict({**v1, "schema_version": 99})


@pytest.mark.torch
def test_env_probe_of_a_torch_interpreter():
    env = env_probe(torch_python())
    assert env["torch"] and env["python_executable"] and "error" not in env


@pytest.mark.torch
def test_repeat_records_every_attempt_and_finds_the_flaky_cell(tmp_path, monkeypatch):
    from repromatrix.bisect.command import classify
    from repromatrix.bisect.search import Verdict
    from repromatrix.run.cells import flaky_cells
    from repromatrix.store.results import flaky_counts, latest_attempts

    monkeypatch.setenv("FX_FLAKY_COUNTER", str(tmp_path / "counter"))
    matrix = user_project(tmp_path, torch_python(), ("fx_checked", "fx_flaky"))
    out = run(matrix, repeat=3)
    # the attempts follow one another; within one, the two repros may run at once
    # (--repro-jobs), so their records come in the order they end
    assert [r.attempt for r in out] == [1, 1, 2, 2, 3, 3]
    assert sorted((r.attempt, r.repro, r.status) for r in out) == [
        (1, "fx_checked", "fail"), (1, "fx_flaky", "fail"), (2, "fx_checked", "fail"),
        (2, "fx_flaky", "pass"), (3, "fx_checked", "fail"), (3, "fx_flaky", "fail")]
    assert flaky_cells(out) == {"here--fx_flaky": {"fail": 2, "pass": 1}}
    loaded = load_records([tmp_path / "results"])
    assert len(loaded.records) == 6 and not loaded.conflicts, "attempts are not conflicts"
    attempts = latest_attempts(loaded.records)
    assert flaky_counts(r.status for r in attempts["here--fx_flaky"]) == {"fail": 2, "pass": 1}
    assert flaky_counts(r.status for r in attempts["here--fx_checked"]) is None
    assert classify("flaky", ("fail",), False) is Verdict.SKIP

    from repromatrix.report.render import render_site

    render_site([tmp_path / "results"], tmp_path / "site")
    html = (tmp_path / "site" / "index.html").read_text()
    [flaky_td] = re.findall(r'<td class="cell[^"]*flaky[^"]*" data-cell="([^"]+)"', html)
    assert flaky_td == "here--fx_flaky" and "flaky: 2 fail, 1 pass" in html


@pytest.mark.torch
def test_a_local_stack_says_which_required_packages_it_lacks(tmp_path):
    """Nothing is installed into a local interpreter: the run says up front which packages
    the repros require that it lacks (their stages skip), and names none it has."""
    matrix = user_project(tmp_path, torch_python(), ("fx_checked",))
    repro = tmp_path / "repros" / "fx_checked.py"
    repro.write_text(repro.read_text().replace('"requires": []',
                                               '"requires": ["torch", "pip", "cuda", "fake_cuda", '
                                               '"no-such-dist-here>=1", "torch_tensorrt"]'))
    said: list[str] = []
    loaded = load_matrix(matrix)
    run_plan(loaded, make_plan(loaded.stacks, all_stacks=True),
             RunOptions(results=tmp_path / "results", repeat=2),  # said once, not per attempt
             log=lambda item: said.append(str(item)))
    assert [line for line in said if "lacks" in line] == [
        "[here] this interpreter lacks no-such-dist-here (required by fx_checked); "
        "torch-tensorrt (required by fx_checked): the stages that need it skip (a local stack "
        "is used as it is; install them into it to run those stages)"]


def test_the_missing_package_note_follows_markers_and_normalised_names(tmp_path):
    """What a local interpreter lacks: a requirement whose environment marker rules it out
    there is not named; names compare normalised (``PyYAML`` is ``pyyaml``, not
    ``py.yaml``, which is ``py-yaml``: ``markup.safe`` is not ``MarkupSafe``)."""
    from repromatrix.engines.local import absent_packages

    wanted = ["Jinja2>=2", "py.yaml", "PYYAML", "py_yaml", "markup.safe",
              "MarkupSafe; python_version < '3'",
              "no-such-dist-a; python_version < '3'", "no-such-dist-b; python_version >= '3'",
              "no-such-dist-c; sys_platform == 'no-such-platform'", "no_such.dist-d",
              "no-such-dist-e; python_version >= 'bad marker"]
    assert absent_packages(sys.executable, wanted) == [
        "py.yaml", "py_yaml", "markup.safe", "no-such-dist-b; python_version >= '3'", "no_such.dist-d",
        "no-such-dist-e; python_version >= 'bad marker"]
    assert absent_packages(str(tmp_path / "no-python"), wanted) == []  # cannot tell: says nothing
