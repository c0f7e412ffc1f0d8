"""The stand-in lane for real: torch-tensorrt 2.4.0 (both bugs) and 2.5.0 (deform fixed) from
PyPI, TensorRT stood in, on a machine without a GPU (about 4 GB per environment and a few
minutes each, built once in the suite's own cache, tests/conftest.py, and shared with the
bisect below and the main command's test), and the same lane built by the docker engine at
2.4.0 (the image is removed afterwards)."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from repromatrix.cli import main as cli_main
from repromatrix.engines.venv import PYCACHE
from repromatrix.rules.verdict import REAL, STANDIN
from repromatrix.store.record import STANDIN_BAD, Result


def needs_the_lane_tools(*tools: str) -> None:
    """Skip (with the reason) without these tools on PATH or without PyPI; CI requires them
    (REPROMATRIX_REQUIRE_PYPI turns the skip of a ``pypi`` test into a failure)."""
    from support.net import pypi_reachable

    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        pytest.skip(f"needs {' and '.join(missing)} on PATH")
    if not pypi_reachable():
        pytest.skip("PyPI is not reachable from here")


# matrix.yaml's own extra index (unreachable here, so left out of the installs, as a user's
# run leaves it): the 2.4.0 environment is then the very one the bisect below builds.
NVIDIA_INDEX = "  extra_index_urls: [https://pypi.nvidia.com]\n"
MATRIX = """
defaults:
  python: "3.11"
  extra_index_urls: [https://pypi.nvidia.com]
  packages: []
repros: [deform_conv2d_device, ts_device_gpu_id, dynamo_global_partitioner_module_children,
         dynamo_trace_mixed_static_dynamic_inputs, dynamo_require_full_compilation_ignored]
stacks:
  - {kind: pip, torch: "2.4", torch_tensorrt: "2.4.0", index: pypi, tags: [default]}
  - {kind: pip, torch: "2.5", torch_tensorrt: "2.5.0", index: pypi, tags: [default]}
"""


def remove_new_images(client: Any, before: set[str]) -> None:
    """Every image that was not there ``before``, newest first: the lane's (~10 GB) and, after
    a failed build, its untagged intermediate layers."""
    import docker

    new = [i for i in client.images.list(all=True) if i.id not in before]
    for image in sorted(new, key=lambda i: i.attrs.get("Created", ""), reverse=True):
        with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
            client.images.remove(image.id, force=True)


def records(folder: Path) -> dict[str, Result]:
    out = {}
    for f in folder.glob("*/*.jsonl"):
        for line in f.read_text().splitlines():
            rec = Result.from_dict(json.loads(line))
            out[rec.cell] = rec
    return out


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.pypi
def test_both_bugs_at_a_buggy_and_a_fixed_release(tmp_path, capsys) -> None:
    needs_the_lane_tools("uv", "cc")
    (tmp_path / "matrix.yaml").write_text(textwrap.dedent(MATRIX))
    code = cli_main(["run", "--matrix", str(tmp_path / "matrix.yaml"), "--backend", "venv",
                     "--standin", "tensorrt", "--results", str(tmp_path / "results")])
    out = capsys.readouterr().out
    assert code == 0
    assert "TensorRT stood in: torch-tensorrt 2.4.0's own code" in out
    found = records(tmp_path / "results")
    gpu_24 = found["pip-torch2.4.1-trt2.4.0-pypi-py3.11--ts_device_gpu_id"]
    deform_24 = found["pip-torch2.4.1-trt2.4.0-pypi-py3.11--deform_conv2d_device"]
    deform_25 = found["pip-torch2.5.1-trt2.5.0-pypi-py3.11--deform_conv2d_device"]
    gpu_25 = found["pip-torch2.5.1-trt2.5.0-pypi-py3.11--ts_device_gpu_id"]
    for rec, stage, frame in (
            (gpu_24, "ts_compile_torch_device_standin", "torch_tensorrt/ts/_Device.py:66 in _from"),
            (gpu_25, "ts_compile_torch_device_standin", "torch_tensorrt/ts/_Device.py:66 in _from"),
            (deform_24, "trt_dynamo_compile_standin", "torch_tensorrt/dynamo/_compiler.py:185 in compile")):
        assert rec.status == "fail" and rec.evidence_level == STANDIN, rec.message
        decided = rec.stage(stage)
        assert decided is not None and decided.status == "fail" and "tensorrt" in decided.standins
        assert str(decided.evidence["raised_in"]).startswith(frame)
        assert rec.standin_note == STANDIN_BAD
        assert rec.env["standins"]["standins"][0] == "tensorrt"
    assert deform_25.status == "skip" and deform_25.evidence_level == STANDIN
    cleared = deform_25.stage("trt_dynamo_compile_standin")
    assert cleared is not None and "needs real TensorRT" in cleared.message
    assert deform_25.stage("trt_table_without_empty_strided_standin").status == "pass"
    assert deform_24.stage("trt_table_without_empty_strided_standin").status == "pass"  # control
    assert deform_24.stage("trt_empty_strided_device_standin").evidence["returned_device"] == "cpu"
    assert deform_25.stage("trt_empty_strided_device_standin").evidence["returned_device"] == "cuda:0"
    assert_the_dynamo_bugs_at_24_not_25(found)
    env = Path(str(deform_24.image["id"])).parents[1]  # the bytecode of what the runs imported
    assert list((env / PYCACHE).glob("**/site-packages/torch_tensorrt/_compile.*.pyc")), env
    assert all(s.standins == () for r in found.values() for s in r.stages if "standin" not in s.name)
    assert REAL not in {r.evidence_level for r in found.values()}
    assert_full_compilation_boundary(found)


def assert_full_compilation_boundary(found: dict[str, Result]) -> None:
    """require_full_compilation: 2.4.0 hands back a PyTorch-run segment (decided inside
    fast_partition, raised through compile_module's call of it); 2.5.0's partitioner refuses
    the model itself, a cleared skip."""
    bad = found["pip-torch2.4.1-trt2.4.0-pypi-py3.11--dynamo_require_full_compilation_ignored"]
    good = found["pip-torch2.5.1-trt2.5.0-pypi-py3.11--dynamo_require_full_compilation_ignored"]
    assert bad.status == "fail" and bad.signature == "standin_hybrid_despite_full_compilation"
    assert bad.evidence_level == STANDIN and bad.standin_note == STANDIN_BAD
    decided = bad.stage("full_compilation_standin")
    assert decided is not None and "tensorrt" in decided.standins
    assert str(decided.evidence["raised_in"]).startswith(
        "torch_tensorrt/dynamo/_compiler.py:317 in compile_module: partitioned_module, supported_ops "
        "= partitioning.fast_partition(")
    assert "_run_on_gpu_1" in decided.evidence["partition"]
    assert "require_full_compilation" not in decided.evidence["partition_kwargs"]
    assert good.status == "skip" and good.evidence_level == STANDIN, good.message
    cleared = good.stage("full_compilation_standin")
    assert cleared is not None and cleared.status == "skip" and cleared.evidence["cleared"]
    assert str(cleared.evidence["stopped_at"]).startswith(
        "torch_tensorrt/dynamo/partitioning/_adjacency_partitioner.py:207 in partition_graph")
    assert any(c["ok"] and "partitioner itself refuses" in c["what"] for c in cleared.checks)
    for rec in (bad, good):  # the controls: a supported model is one TensorRT segment; flag off, hybrid
        assert rec.stage("supported_model_standin").evidence["partition"] == ["_run_on_acc_0"]
        assert "_run_on_gpu_1" in rec.stage("flag_off_standin").evidence["partition"]


def assert_the_dynamo_bugs_at_24_not_25(found: dict[str, Result]) -> None:
    """The global partitioner's module children and trace's mixed static/dynamic inputs:
    each raised in torch-tensorrt's own frame at 2.4.0, got past it at 2.5.0."""
    for rid, stage, frame, signature in (
            ("dynamo_global_partitioner_module_children", "global_partitioner_standin",
             "torch_tensorrt/dynamo/_compiler.py:364 in compile_module", "module_child_has_no_graph"),
            ("dynamo_trace_mixed_static_dynamic_inputs", "trace_mixed_standin",
             "torch_tensorrt/dynamo/_tracer.py:81 in trace", "dynamic_shapes_node_arity")):
        bad = found[f"pip-torch2.4.1-trt2.4.0-pypi-py3.11--{rid}"]
        assert bad.status == "fail" and bad.evidence_level == STANDIN, bad.message
        decided = bad.stage(stage)
        assert decided is not None and decided.status == "fail" and "tensorrt" in decided.standins
        assert decided.signature == signature
        assert str(decided.evidence["raised_in"]).startswith(frame)
        assert bad.standin_note == STANDIN_BAD
        fixed = found[f"pip-torch2.5.1-trt2.5.0-pypi-py3.11--{rid}"]
        assert fixed.status == "skip" and fixed.evidence_level == STANDIN, fixed.message
        cleared = fixed.stage(stage)
        assert cleared is not None and "needs real TensorRT" in cleared.message
        assert "tensorrt" in cleared.standins and "raised_in" not in cleared.evidence
    partitioned = found["pip-torch2.5.1-trt2.5.0-pypi-py3.11--dynamo_global_partitioner_module_children"]
    children = dict(partitioned.stage("global_partitioner_standin").evidence["partitioned_children"])
    assert children == {"conv": "Module", "_run_on_acc_0": "GraphModule"}, children
    traced = found["pip-torch2.5.1-trt2.5.0-pypi-py3.11--dynamo_trace_mixed_static_dynamic_inputs"]
    assert traced.stage("trace_mixed_standin").evidence["placeholder_shapes"] == ["(2, 3)", "(s0, 5)"]


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.docker
@pytest.mark.pypi
def test_the_docker_engine_builds_the_lane_too(tmp_path, capsys, docker_client, local_base_image,
                                               test_ca_bundle) -> None:
    """The same lane in an image: torch-tensorrt 2.4.0's own wheel, the stand-ins compiled in
    the image (gcc from Debian where the base has no compiler), both bugs reproduced in
    torch-tensorrt's frames. The image (about 10 GB) is removed afterwards."""
    needs_the_lane_tools()
    matrix = textwrap.dedent(MATRIX).replace(
        '  - {kind: pip, torch: "2.5", torch_tensorrt: "2.5.0", index: pypi, tags: [default]}\n', "")
    matrix = matrix.replace(NVIDIA_INDEX, "  extra_index_urls: []\n")  # a build needs every index
    matrix = re.sub(r"^repros: \[.*?\]\n", "repros: [deform_conv2d_device, ts_device_gpu_id]\n", matrix,
                    flags=re.S | re.M)  # the engine is under test here; the bugs, in the test above
    matrix = matrix.replace("defaults:\n", f"defaults:\n  base_images: {{'python:3.11-slim': "
                                           f"'{local_base_image}'}}\n")
    if test_ca_bundle:
        matrix = matrix.replace("defaults:\n", f"defaults:\n  ca_bundle: {test_ca_bundle}\n")
    (tmp_path / "matrix.yaml").write_text(matrix)
    before = {i.id for i in docker_client.images.list(all=True)}
    labels: dict[str, dict[str, str]] = {}  # tag -> labels of every lane image, kept or built
    try:
        code = cli_main(["run", "--matrix", str(tmp_path / "matrix.yaml"), "--backend", "docker",
                         "--standin", "tensorrt", "--results", str(tmp_path / "results")])
    finally:
        for image in docker_client.images.list(filters={"label": "repromatrix.standins"}):
            labels.update({tag: dict(image.labels) for tag in image.tags})
        remove_new_images(docker_client, before)
    out = capsys.readouterr().out
    assert code == 0, out[-3000:]
    assert "TensorRT stood in: torch-tensorrt 2.4.0's own code" in out
    found = records(tmp_path / "results")
    gpu = found["pip-torch2.4.1-trt2.4.0-pypi-py3.11--ts_device_gpu_id"]
    deform = found["pip-torch2.4.1-trt2.4.0-pypi-py3.11--deform_conv2d_device"]
    for rec, stage, frame in (
            (gpu, "ts_compile_torch_device_standin", "torch_tensorrt/ts/_Device.py:66 in _from"),
            (deform, "trt_dynamo_compile_standin", "torch_tensorrt/dynamo/_compiler.py:185 in compile")):
        assert rec.status == "fail" and rec.evidence_level == STANDIN, rec.message
        assert rec.backend == "docker" and rec.image and rec.image["tag"].startswith("repromatrix/")
        assert labels[rec.image["tag"]]["repromatrix.standins"] == "tensorrt"
        decided = rec.stage(stage)
        assert decided is not None and decided.status == "fail" and "tensorrt" in decided.standins
        assert str(decided.evidence["raised_in"]).startswith(frame)
        assert rec.env["standins"]["standins"][0] == "tensorrt"
    assert deform.stage("trt_table_without_empty_strided_standin").status == "pass"  # control


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.pypi
def test_a_bisect_on_the_lane_names_the_release_of_the_deform_regression(tmp_path, capsys) -> None:
    """A real bisect over torch-tensorrt releases with TensorRT stood in: 2.2.0 good (cleared
    in torch-tensorrt's code), 2.4.0 bad; the probe between them (2.3.0, its wheel's missing
    torch symbols stood in) decides it, within ceil(log2 n) + 2 probes."""
    needs_the_lane_tools("uv", "cc")
    code = cli_main(["bisect", "--repro", "deform_conv2d_device", "--axis", "torch_tensorrt",
                     "--good", "2.2.0", "--bad", "2.4.0", "--base", "index=pypi",
                     "--with", "torchvision", "--backend", "venv", "--standin", "tensorrt",
                     "--results", str(tmp_path / "results"), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["result"] == "found", report.get("message")
    assert report["first_bad"]["version"] == "2.4.0" and report["last_good"]["version"] == "2.3.0"
    assert len(report["probes"]) <= 2 + 2  # 3 candidates: ceil(log2 3) + 2
    assert {p["version"] for p in report["probes"]} == {"2.2.0", "2.3.0", "2.4.0"}
    assert all("stood in" in p["note"] for p in report["probes"]), report["probes"]


# The bisect's own stacks (its --base index=pypi keeps the default NVIDIA index, and --with
# torchvision pairs one): the environments it builds for 2.3.0 and 2.4.0, reused here.
BISECT_STACKS = """
defaults:
  python: "3.11"
  extra_index_urls: ["https://pypi.nvidia.com"]
  packages: []
repros: [ts_dla_memory_sizes_ignored]
stacks:
  - {kind: pip, torch: "2.3", torch_tensorrt: "2.3.0", index: pypi, tags: [default]}
  - {kind: pip, torch: "2.4", torch_tensorrt: "2.4.0", index: pypi, tags: [default]}
"""


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.pypi
def test_the_dla_sizes_are_dropped_at_2_3_and_kept_at_2_4(tmp_path, capsys) -> None:
    """ts.compile's DLA memory sizes: 2.3.0 hands native code a spec with the defaults (the
    check, made inside _C.compile_graph, is raised through ts/_compiler.py's call of it);
    2.4.0 hands it the sizes passed, a cleared skip. convert_method_to_trt_engine drops them
    on both."""
    needs_the_lane_tools("uv", "cc")
    (tmp_path / "matrix.yaml").write_text(textwrap.dedent(BISECT_STACKS))
    code = cli_main(["run", "--matrix", str(tmp_path / "matrix.yaml"), "--backend", "venv",
                     "--standin", "tensorrt", "--results", str(tmp_path / "results")])
    assert code == 0, capsys.readouterr().out[-3000:]
    found = records(tmp_path / "results")
    bad = found["pip-torch2.3.1-trt2.3.0-pypi-py3.11--ts_dla_memory_sizes_ignored"]
    good = found["pip-torch2.4.1-trt2.4.0-pypi-py3.11--ts_dla_memory_sizes_ignored"]
    assert bad.status == "fail" and bad.signature == "dla_sizes_dropped", bad.message
    assert bad.evidence_level == STANDIN and bad.standin_note == STANDIN_BAD
    decided = bad.stage("ts_compile_dla_sizes_standin")
    assert decided is not None and "tensorrt" in decided.standins
    assert str(decided.evidence["raised_in"]).startswith(
        "torch_tensorrt/ts/_compiler.py:151 in compile: compiled_cpp_mod = _C.compile_graph(")
    assert decided.evidence["spec_carries"]["dla_local_dram_size"] == 1 << 30  # the default
    assert good.status == "skip" and good.evidence_level == STANDIN, good.message
    cleared = good.stage("ts_compile_dla_sizes_standin")
    assert cleared is not None and cleared.evidence["stopped_at"] == "_C.compile_graph"
    assert cleared.evidence["spec_carries"] == cleared.evidence["passed"]
    for rec in (bad, good):  # never fixed in convert_method_to_trt_engine
        assert rec.stage("convert_method_dla_sizes_standin").signature == "dla_sizes_dropped"


# A user's own deployment check as a plain script (no protocol, no stand-in opt-in): MONAI <=
# 1.3.2's TensorRT export calls torch_tensorrt.set_device, which is gone from 2.3.0
# (pytorch/TensorRT#3084). torch-tensorrt itself loads only with TensorRT stood in.
SET_DEVICE_SCRIPT = '''\
import sys

import torch_tensorrt

print("torch_tensorrt", torch_tensorrt.__version__)
if not callable(getattr(torch_tensorrt, "set_device", None)):
    sys.exit("BUG: torch_tensorrt.set_device is gone")
'''
# The same check where torch-tensorrt cannot load: it hides the stand-in tensorrt module, as
# a process without the stand-ins has none, and would exit 1 ("bad") on the import error.
UNLOADABLE_SCRIPT = '''\
import sys

sys.path[:] = [p for p in sys.path if "repromatrix-standins" not in p]
import torch_tensorrt  # noqa: E402
'''


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.pypi
def test_a_plain_script_bisects_on_the_lane_and_an_unloadable_torch_tensorrt_cannot_tell(
        tmp_path, capsys) -> None:
    """A plain script over the bisect's own environments above (2.2.0, 2.3.0, 2.4.0): it runs
    with TensorRT stood in, its records say so, and it names 2.3.0; a script whose
    torch-tensorrt does not load gives error (cannot tell), never bad, even with --bad-if error."""
    needs_the_lane_tools("uv", "cc")
    bisect = ["--axis", "torch_tensorrt", "--good", "2.2.0", "--bad", "2.4.0", "--base", "index=pypi",
              "--with", "torchvision", "--backend", "venv", "--standin", "tensorrt",
              "--results", str(tmp_path / "results"), "--json"]
    (tmp_path / "set_device.py").write_text(SET_DEVICE_SCRIPT)
    code = cli_main(["bisect", "--script", str(tmp_path / "set_device.py"), *bisect])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["result"] == "found", report.get("message")
    assert report["first_bad"]["version"] == "2.3.0" and report["last_good"]["version"] == "2.2.0"
    assert {p["version"]: p["status"] for p in report["probes"]} == {
        "2.2.0": "pass", "2.3.0": "fail", "2.4.0": "fail"}
    assert all("stood in" in p["note"] for p in report["probes"]), report["probes"]
    found = records(tmp_path / "results")
    for probe in report["probes"]:
        rec = found[probe["cell"]]
        assert rec.evidence_level == STANDIN and rec.standin_note, rec.message
        assert "tensorrt" in rec.stage("script").standins
    missing = found[report["first_bad"]["cell"]].stage("script").standins
    assert "libtorchtrt-missing-symbols" in missing  # 2.3.0's wheel loads only with them

    (tmp_path / "unloadable.py").write_text(UNLOADABLE_SCRIPT)
    code = cli_main(["bisect", "--script", str(tmp_path / "unloadable.py"), *bisect,
                     "--bad-if", "fail,error"])
    report = json.loads(capsys.readouterr().out)
    assert code == 2 and report["result"] == "wrong-bound", report
    assert "is not good" not in report["message"] and "cannot be verified" in report["message"]
    for probe in report["probes"]:
        assert probe["status"] == "error" and probe["verdict"] == "cannot tell", probe
        assert "torch-tensorrt did not load on the TensorRT stand-ins" in probe["note"]
        rec = records(tmp_path / "results")[probe["cell"]]
        assert "No module named 'tensorrt'" in rec.stage("script").evidence["torch_tensorrt_not_loaded"]
