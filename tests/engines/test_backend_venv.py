"""The `venv` engine: fingerprints known before building, failed installs are `broken`,
the runner keeps its bytecode in the environment."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from repromatrix.config.options import RunOptions
from repromatrix.engines import EngineContext
from repromatrix.engines.venv import PYCACHE, VenvEngine, _reachable, bytecode_env, install_spec
from repromatrix.errors import UsageError
from repromatrix.model import Plan, Settings, Stack, StackGroup
from repromatrix.paths import harness_dir, repros_dir
from repromatrix.run.cells import run_plan

STACK = Stack(id="pip-torch2.14.1-pypi-py3.11", kind="pip", python="3.11", torch="2.14.1",
              index="pypi")


def engine(tmp_path: Path, **settings: Any) -> VenvEngine:
    ctx = EngineContext(settings=Settings(**settings), options=RunOptions(results=tmp_path / "r"),
                        harness_dir=harness_dir(), repros_dir=repros_dir(), run_id="r1",
                        log=lambda line: None)
    return VenvEngine(ctx, tmp_path / "venvs")


def test_fingerprint_follows_what_is_installed_and_builds_nothing(tmp_path) -> None:
    eng = engine(tmp_path, packages=("onnx",))
    a = eng.fingerprint(STACK)
    assert a == eng.fingerprint(STACK)
    assert a != eng.fingerprint(Stack(**{**STACK.__dict__, "torch": "2.14.0"}))
    assert a != engine(tmp_path, packages=("onnx", "onnxscript")).fingerprint(STACK)
    assert not (tmp_path / "venvs").exists()
    assert install_spec(STACK, eng.ctx.settings)["requirements"] == ["torch==2.14.1", "onnx"]


def test_only_pip_stacks(tmp_path) -> None:
    ngc = Stack(id="ngc-26.08", kind="ngc", ngc="26.08")
    with pytest.raises(UsageError, match="builds pip stacks only"):
        engine(tmp_path).preflight([ngc])


def test_the_runner_keeps_bytecode_in_the_environment_not_beside_the_sources(tmp_path) -> None:
    """Where PYTHONDONTWRITEBYTECODE is set (CI machines, images), an import in the runner
    still leaves its compiled module, under the environment, none beside the repro's file."""
    sources, env_dir = tmp_path / "repros", tmp_path / "env"
    sources.mkdir()
    (sources / "stagemod.py").write_text("VALUE = 1\n")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **bytecode_env(env_dir)}
    subprocess.run([sys.executable, "-c", "import stagemod"], cwd=sources, env=env, check=True)
    assert list((env_dir / PYCACHE).glob("**/stagemod.*.pyc"))
    assert not (sources / "__pycache__").exists()


def test_unreachable_extra_indexes_are_left_out() -> None:
    opts = ["--extra-index-url", "https://no-such-host.invalid/simple", "--find-links", "/w"]
    assert _reachable(opts, lambda line: None) == ["--find-links", "/w"]


@pytest.mark.slow
@pytest.mark.torch
def test_a_failed_install_gives_broken_results_with_the_log(tmp_path, monkeypatch) -> None:
    if not shutil.which("uv"):
        pytest.skip("uv is not on PATH (pip install uv)")
    wheels = tmp_path / "empty-wheelhouse"
    wheels.mkdir()
    monkeypatch.setenv("REPROMATRIX_VENV_DIR", str(tmp_path / "venvs"))
    stack = Stack(id="pip-nothing", kind="pip", python="3.11",
                  packages=("repromatrix-no-such-pkg==0.0.1",))
    prepared = engine(tmp_path, find_links=(str(wheels),)).prepare(stack, threading.Event())
    assert not prepared.ok and "environment build failed" in prepared.reason
    assert "repromatrix-no-such-pkg" in prepared.log_tail
    assert not list((tmp_path / "venvs").glob("*/repromatrix-venv.json")), "no half-built env is kept"

    from repromatrix.config.matrix import load_matrix

    matrix = load_matrix()
    matrix = type(matrix)(matrix.path, Settings(find_links=(str(wheels),)), matrix.stacks,
                          matrix.repros, matrix.repros_dir)
    summary = run_plan(matrix, Plan((StackGroup(stack, ("onnx_export_device",)),)),
                       RunOptions(backend="venv", results=tmp_path / "results"), log=lambda _: None)
    assert [(r.status, r.backend) for r in summary.results] == [("broken", "venv")]
    assert "environment build failed" in summary.results[0].message
    assert "repromatrix-no-such-pkg" in summary.results[0].traceback
