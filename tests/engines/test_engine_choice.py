"""A fallback chain of engines (`--backend docker|venv`): each stack gets the first engine
that works here, the choice is said and recorded, and a stack no engine can make is `skip`
with every engine's reason (never `broken`). One engine still insists.

Real docker daemon, real uv; the environments that get built are tiny (an install that
fails at once), so no torch is downloaded.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from repromatrix import paths
from repromatrix.config import compat
from repromatrix.config.matrix import load_matrix
from repromatrix.config.options import RunOptions
from repromatrix.engines import parse_backend
from repromatrix.errors import BaseImageMissing, UsageError
from repromatrix.model import Plan, Settings, Stack, StackGroup
from repromatrix.run.cells import run_plan

ABSENT = "repromatrix-test/absent-base:0"  # never built, never pullable here
NO_SUCH_PKG = "repromatrix-no-such-pkg==0.0.1"


def needs_uv() -> None:
    if not shutil.which("uv"):
        pytest.skip("uv is not on PATH (pip install uv)")


def matrix_with(settings: Settings):
    m = load_matrix()
    return replace(m, settings=settings)


@pytest.fixture
def empty_wheelhouse(tmp_path, monkeypatch) -> Path:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    monkeypatch.setenv("REPROMATRIX_VENV_DIR", str(tmp_path / "venvs"))
    return wheels


def pip_stack(sid: str = "pip-chain-test") -> Stack:
    return Stack(id=sid, kind="pip", python="3.11", packages=(NO_SUCH_PKG,))


def test_a_chain_is_parsed_and_bad_chains_name_the_value():
    assert parse_backend("docker|venv") == ("docker", "venv")
    assert parse_backend("venv") == ("venv",)
    with pytest.raises(UsageError, match=r"'docker\|vnev'.*unknown engine 'vnev'.*did you mean"):
        parse_backend("docker|vnev")
    with pytest.raises(UsageError, match="twice"):
        parse_backend("venv|venv")
    with pytest.raises(UsageError, match="cannot be part of a fallback chain"):
        parse_backend("docker|local")


def test_a_bad_chain_in_the_matrix_names_file_and_key(tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text('defaults: {backend: "docker|podman"}\nstacks:\n  - {kind: pip, torch: "2.14"}\n')
    proc = subprocess.run([sys.executable, "-m", "repromatrix.cli", "run", "--matrix", str(f),
                           "--results", str(tmp_path / "r"), "--all"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert f"{f}: defaults.backend" in proc.stderr and "podman" in proc.stderr
    assert not (tmp_path / "r").exists(), "nothing is written for bad input"


def test_pypi_stands_in_only_for_the_same_cuda_build():
    assert "13.0" in compat.pypi_same_build("2.14.1", "cu130")
    assert compat.pypi_same_build("2.14.1", "cu126") == ""  # PyPI's 2.14.1 is the 13.0 build
    assert compat.pypi_same_build("2.4.1", "cu124") == ""  # PyPI's 2.4.1 is the 12.1 build
    assert compat.pypi_same_build("9.9.9", "cu130") == ""  # unknown: never assumed


def test_on_the_lane_pypi_s_build_of_the_same_releases_takes_the_place_of_an_unreachable_index():
    """The shipped default stack of the reported bug (torch 2.4.1, torch-tensorrt 2.4.0, cu124):
    PyPI's 2.4.1 is another CUDA build, so only the stand-in lane (torch-tensorrt's own code)
    may take it, and then it is the environment of the matrix's own 2.4.0 lane stack."""
    from repromatrix.engines.choice import pypi_instead
    from repromatrix.engines.venv import install_spec, spec_key

    matrix = load_matrix()
    by_id = {s.id: s for s in matrix.stacks}
    pinned = by_id["pip-torch2.4.1-trt2.4.0-cu124-py3.11"]
    assert pypi_instead(pinned, ()) is None, "without the lane: not the same build, not made"
    made, why = pypi_instead(pinned, ("tensorrt",))
    assert (made.id, made.index, made.cuda, made.torch_tensorrt) == (pinned.id, "pypi", "12.1", "2.4.0")
    assert "same releases" in why and "CUDA 12.1" in why and "cu124's CUDA 12.4" in why
    lane_stack = by_id["pip-torch2.4.1-trt2.4.0-pypi-py3.11"]  # matrix.yaml's published lane stack
    harness = paths.harness_dir()
    assert spec_key(install_spec(made, matrix.settings, ("tensorrt",), harness)) == \
        spec_key(install_spec(lane_stack, matrix.settings, ("tensorrt",), harness)), \
        "the same environment as the lane's own stack: nothing else is built"
    same, why = pypi_instead(replace(pinned, torch="2.14.1", index="cu130", cuda="13.0"), ())
    assert same.cuda == "13.0" and "the same as cu130" in why  # the same build needs no lane
    for index in ("pypi", "cpu", None, "https://mirror.example/whl"):
        assert pypi_instead(replace(pinned, index=index), ("tensorrt",)) is None
    assert pypi_instead(replace(pinned, torch_tensorrt=None), ("tensorrt",)) is None


@pytest.mark.docker
def test_docker_without_the_base_image_falls_back_to_venv_and_says_why(
        docker_client, empty_wheelhouse, tmp_path):
    needs_uv()
    settings = Settings(base_images={"python:3.11-slim": ABSENT}, find_links=(str(empty_wheelhouse),))
    lines: list[str] = []
    summary = run_plan(matrix_with(settings), Plan((StackGroup(pip_stack(), ("onnx_export_device",)),)),
                       RunOptions(backend="docker|venv", results=tmp_path / "results"),
                       log=lambda line: lines.append(str(line)))
    [rec] = summary.results
    assert rec.backend == "venv"
    assert "first of the chain that works here" in rec.backend_reason
    assert ABSENT in rec.backend_reason, rec.backend_reason  # docker's reason, recorded
    assert rec.status == "broken" and NO_SUCH_PKG.split("=")[0] in rec.traceback  # venv really ran
    said = [line for line in lines if line.startswith("engine venv for")]
    assert len(said) == 1 and "pip-chain-test" in said[0], lines


@pytest.mark.docker
def test_one_engine_still_insists(docker_client, tmp_path):
    settings = Settings(base_images={"python:3.11-slim": ABSENT})
    with pytest.raises(BaseImageMissing, match=ABSENT):
        run_plan(matrix_with(settings), Plan((StackGroup(pip_stack(), ("onnx_export_device",)),)),
                 RunOptions(backend="docker", results=tmp_path / "results"), log=lambda _: None)
    assert not (tmp_path / "results").exists()


@pytest.mark.docker
def test_a_stack_no_engine_can_make_is_skip_with_every_reason_and_reused(docker_client, tmp_path):
    ngc = Stack(id="ngc-26.09", kind="ngc", ngc="26.09", torch="2.9.0a0", python="3.12")
    settings = Settings(base_images={"nvcr.io/nvidia/pytorch:26.09-py3": ABSENT})
    plan = Plan((StackGroup(ngc, ("onnx_export_device", "deform_conv2d_device")),))
    options = RunOptions(backend="docker|venv", results=tmp_path / "results")
    first = run_plan(matrix_with(settings), plan, options, log=lambda _: None)
    assert [r.status for r in first.results] == ["skip", "skip"]
    rec = first.results[0]
    assert rec.backend == "" and rec.message.startswith("cannot be made here by docker|venv")
    assert ABSENT in rec.message and "venv makes pip stacks only" in rec.message
    again = run_plan(matrix_with(settings), plan, options, log=lambda _: None)
    assert again.ran == 0 and again.reused == 2, "unchanged: nothing is recorded twice"


@pytest.mark.docker
def test_no_daemon_passes_docker_over_for_every_stack(empty_wheelhouse, tmp_path, monkeypatch):
    needs_uv()
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    settings = Settings(find_links=(str(empty_wheelhouse),))
    plan = Plan((StackGroup(pip_stack("pip-a"), ("onnx_export_device",)),
                 StackGroup(pip_stack("pip-b"), ("onnx_export_device",))))
    lines: list[str] = []
    summary = run_plan(matrix_with(settings), plan,
                       RunOptions(backend="docker|venv", results=tmp_path / "results"),
                       log=lambda line: lines.append(str(line)))
    assert {r.backend for r in summary.results} == {"venv"}
    assert all("cannot reach the docker daemon" in r.backend_reason for r in summary.results)
    said = [line for line in lines if line.startswith("engine venv")]
    assert len(said) == 1 and "pip-a, pip-b" in said[0], "said once for both stacks"


@pytest.mark.pypi
def test_an_unreachable_cuda_index_falls_back_to_pypi_only_for_the_same_build(tmp_path, monkeypatch):
    """The PyTorch index does not answer (a closed loopback port stands for it): a cu130 pin
    takes PyPI's torch 2.14.1 (the same CUDA 13.0 build, per the table) and says so; a
    cu126 pin is not the same build and cannot be made here, unless it is on the stand-in
    lane (torch-tensorrt 2.4.0 on cu124: PyPI's build of the same releases, said)."""
    needs_uv()
    if not shutil.which("cc"):
        pytest.skip("the stand-in lane compiles its native stand-ins with cc")
    from repromatrix.engines import images, indexes
    from repromatrix.run.cells import engines_for

    monkeypatch.setattr(images, "TORCH_INDEX", "http://127.0.0.1:9/whl")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    monkeypatch.setenv("REPROMATRIX_VENV_DIR", str(tmp_path / "venvs"))
    try:
        indexes.check_indexes([Stack(id="pypi-probe", kind="pip", python="3.11", torch="2.14.1",
                                     index="pypi")], Settings(), where="here")
    except indexes.IndexUnreachable as exc:
        pytest.skip(f"PyPI is not reachable here: {str(exc).splitlines()[1]}")
    same = Stack(id="s130", kind="pip", python="3.11", torch="2.14.1", index="cu130", cuda="13.0")
    other = Stack(id="s126", kind="pip", python="3.11", torch="2.14.1", index="cu126", cuda="12.6")
    lane = Stack(id="s124", kind="pip", python="3.11", torch="2.4.1", torchvision="0.19.1",
                 torch_tensorrt="2.4.0", tensorrt="10.1.0", index="cu124", cuda="12.4")
    engines = engines_for(matrix_with(Settings()), RunOptions(backend="docker|venv", standins=("tensorrt",),
                                                             results=tmp_path / "r"), "r1", print)
    groups = engines.choose([StackGroup(same, ("onnx_export_device",)),
                             StackGroup(other, ("onnx_export_device",)),
                             StackGroup(lane, ("deform_conv2d_device",))])
    made = engines.choices["s130"]
    assert made.engine_name == "venv" and made.stack.index == "pypi" and made.stack.id == "s130"
    assert "cu130 unreachable" in made.reason and "the same as cu130" in made.reason
    assert groups[0].stack.index == "pypi", "the run makes the PyPI build it chose"
    assert made.pinned_index == "cu130"
    skipped = engines.choices["s126"]
    assert skipped.engine is None and "127.0.0.1" in skipped.reason
    on_lane = engines.choices["s124"]
    assert on_lane.engine_name == "venv" and (on_lane.stack.index, on_lane.stack.cuda) == ("pypi", "12.1")
    assert "cu124 unreachable" in on_lane.reason and "same releases" in on_lane.reason
    assert on_lane.pinned_index == "cu124" and groups[2].stack.id == "s124"
    assert not (tmp_path / "venvs").exists() or not any((tmp_path / "venvs").iterdir()), \
        "choosing builds nothing"
