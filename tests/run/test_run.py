"""The run stage: records appended per cell, unchanged cells reused, changed ones re-run.

Drives the real runner through the `local` backend with a real torch interpreter.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from repromatrix import paths
from repromatrix.config.catalog import source_hashes
from repromatrix.config.matrix import load_matrix
from repromatrix.config.options import RunOptions
from repromatrix.plan import make_plan
from repromatrix.run.cells import run_plan
from repromatrix.store.results import load_records

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "repros"
PY = os.environ.get("REPROMATRIX_TEST_PY_T213") or os.environ.get("REPROMATRIX_TEST_PY_T214")

pytestmark = [pytest.mark.torch]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    if not PY or not Path(PY).exists():
        pytest.skip("no torch interpreter: set REPROMATRIX_TEST_PY_T213 or _T214")
    repros = tmp_path / "repros"
    repros.mkdir()  # the user's repros only: protocol and runner come from the harness
    for name in ("fx_pass.py", "fx_garbage.py"):
        shutil.copy(FIXTURES / name, repros / name)
    (tmp_path / "matrix.yaml").write_text(  # the folder joins the built-in catalog: run these two
        "repros: [fx_pass, fx_garbage]\n"
        f"stacks:\n  - {{kind: local, id: here, interpreter: {PY}, tags: [default]}}\n")
    return tmp_path


def run(project: Path, **kw):
    matrix = load_matrix(project / "matrix.yaml")
    plan = make_plan(matrix.stacks)
    return run_plan(matrix, plan, RunOptions(results=project / "results", **kw), log=lambda _: None)


def test_unchanged_cells_are_reused_and_changed_ones_rerun(project):
    first = run(project)
    assert first.ran == 2 and first.reused == 0
    assert first.statuses == {"pass": 1, "error": 1}
    stored = load_records([project / "results"]).records
    assert sorted(r.cell for r in stored) == ["here--fx_garbage", "here--fx_pass"]
    assert all(r.cache_key for r in stored)

    second = run(project)
    assert second.ran == 0 and second.reused == 2

    src = project / "repros" / "fx_pass.py"
    src.write_text(src.read_text() + "\n# edited\n")
    third = run(project)
    assert [r.cell for r in third.results] == ["here--fx_pass"] and third.reused == 1

    forced = run(project, rerun=True)
    assert forced.ran == 2
    assert len(load_records([project / "results"]).records) == 5


def test_harness_change_changes_every_repro_hash(tmp_path):
    harness = tmp_path / "harness"
    shutil.copytree(paths.harness_dir(), harness)
    before = source_hashes(FIXTURES, harness)
    proto = harness / "protocol.py"
    proto.write_text(proto.read_text() + "\n# edited\n")
    after = source_hashes(FIXTURES, harness)
    assert set(before) == set(after) and all(before[k] != after[k] for k in before)


def test_shared_helper_change_makes_every_cell_stale(project):
    helper = project / "repros" / "_helpers.py"
    helper.write_text("X = 1\n")
    run(project)
    helper.write_text("X = 2\n")
    assert run(project).ran == 2
