"""The run stage: records appended per cell, unchanged cells reused, changed ones re-run.

Drives the real runner through the `local` backend with a real torch interpreter.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from repromatrix import paths
from repromatrix.config import load_matrix
from repromatrix.plan import make_plan
from repromatrix.results import load_records
from repromatrix.run import run_plan

FIXTURES = Path(__file__).parent / "data" / "repros"
PY = os.environ.get("REPROMATRIX_TEST_PY_T213") or os.environ.get("REPROMATRIX_TEST_PY_T214")

pytestmark = [pytest.mark.torch]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    if not PY or not Path(PY).exists():
        pytest.skip("no torch interpreter: set REPROMATRIX_TEST_PY_T213 or _T214")
    repros = tmp_path / "repros"
    repros.mkdir()
    for name in ("protocol.py", "runner.py"):
        shutil.copy(paths.repros_dir() / name, repros / name)
    for name in ("fx_pass.py", "fx_garbage.py"):
        shutil.copy(FIXTURES / name, repros / name)
    (tmp_path / "matrix.yaml").write_text(
        f"stacks:\n  - {{kind: local, id: here, interpreter: {PY}, tags: [default]}}\n")
    return tmp_path


def run(project: Path, **kw):
    matrix = load_matrix(project / "matrix.yaml")
    plan = make_plan(matrix.stacks)
    return run_plan(matrix, plan, backend_name="local",
                    results_dir=project / "results", python=PY, log=lambda _: None, **kw)


def test_unchanged_cells_are_reused_and_changed_ones_rerun(project):
    first = run(project)
    assert first.ran == 2 and first.reused == 0
    assert first.statuses == {"pass": 1, "error": 1}
    stored = load_records([project / "results"]).records
    assert sorted(r["cell"] for r in stored) == ["local--fx_garbage", "local--fx_pass"]
    assert all(r["cache_key"] for r in stored)

    second = run(project)
    assert second.ran == 0 and second.reused == 2

    src = project / "repros" / "fx_pass.py"
    src.write_text(src.read_text() + "\n# edited\n")
    third = run(project)
    assert [r["cell"] for r in third.records] == ["local--fx_pass"] and third.reused == 1

    forced = run(project, rerun=True)
    assert forced.ran == 2
    assert len(load_records([project / "results"]).records) == 5


def test_shared_protocol_change_makes_every_cell_stale(project):
    run(project)
    proto = project / "repros" / "protocol.py"
    proto.write_text(proto.read_text() + "\n# edited\n")
    assert run(project).ran == 2


def test_shared_helper_change_makes_every_cell_stale(project):
    helper = project / "repros" / "_helpers.py"
    helper.write_text("X = 1\n")
    run(project)
    helper.write_text("X = 2\n")
    assert run(project).ran == 2
