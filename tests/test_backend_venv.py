"""The `venv` backend: fingerprints known before building, failed installs are `broken`."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from repromatrix.backends import RunContext
from repromatrix.backends.venv import VenvBackend, _reachable, install_spec
from repromatrix.errors import UsageError
from repromatrix.model import Settings, Stack, StackGroup
from repromatrix.paths import repros_dir

STACK = Stack(id="pip-torch2.14.1-pypi-py3.11", kind="pip", python="3.11", torch="2.14.1",
              index="pypi")


def context(tmp_path: Path, emitted: list[dict[str, Any]], **settings: Any) -> RunContext:
    return RunContext(run_id="r1", settings=Settings(**settings), repros_dir=repros_dir(),
                      repro_hashes={}, emit=emitted.append, work_dir=tmp_path / "work",
                      log=lambda line: None)


def test_fingerprint_follows_what_is_installed_and_builds_nothing(tmp_path) -> None:
    backend = VenvBackend(tmp_path / "venvs")
    ctx = context(tmp_path, [], packages=("onnx",))
    a = backend.fingerprint(STACK, ctx)
    assert a == backend.fingerprint(STACK, ctx)
    assert a != backend.fingerprint(Stack(**{**STACK.__dict__, "torch": "2.14.0"}), ctx)
    assert a != backend.fingerprint(STACK, context(tmp_path, [], packages=("onnx", "onnxscript")))
    assert not (tmp_path / "venvs").exists()
    assert install_spec(STACK, ctx.settings)["requirements"] == ["torch==2.14.1", "onnx"]


def test_only_pip_stacks(tmp_path) -> None:
    ngc = Stack(id="ngc-26.08", kind="ngc", ngc="26.08")
    with pytest.raises(UsageError, match="builds pip stacks only"):
        VenvBackend(tmp_path).preflight([StackGroup(ngc, ("onnx_export_device",))],
                                        context(tmp_path, []))


def test_unreachable_extra_indexes_are_left_out(tmp_path) -> None:
    opts = ["--extra-index-url", "https://no-such-host.invalid/simple", "--find-links", "/w"]
    assert _reachable(opts, context(tmp_path, [])) == ["--find-links", "/w"]


@pytest.mark.slow
@pytest.mark.torch
def test_a_failed_install_gives_broken_records_with_the_log(tmp_path) -> None:
    if not shutil.which("uv"):
        pytest.skip("uv is not on PATH (pip install uv)")
    wheels = tmp_path / "empty-wheelhouse"
    wheels.mkdir()
    stack = Stack(id="pip-nothing", kind="pip", python="3.11", packages=("repromatrix-no-such-pkg==0.0.1",))
    emitted: list[dict[str, Any]] = []
    ctx = context(tmp_path, emitted, find_links=(str(wheels),))
    backend = VenvBackend(tmp_path / "venvs")
    backend.run([StackGroup(stack, ("onnx_export_device",))], ctx)
    assert [r["status"] for r in emitted] == ["broken"]
    assert emitted[0]["backend"] == "venv"
    assert "environment build failed" in emitted[0]["message"]
    assert "repromatrix-no-such-pkg" in emitted[0]["traceback"]
    assert not list((tmp_path / "venvs").glob("*/repromatrix-venv.json")), "no half-built env is kept"
