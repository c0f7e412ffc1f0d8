"""The container side's layout: the harness in ``repros/harness/``, a repro is a top-level
``<id>.py`` of a repro folder, and a user's folder brings its own ``_*.py`` helpers."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from repromatrix import paths
from repromatrix.config.catalog import catalog_hashes, harness_files, load_catalog
from repromatrix.run.staging import stage_catalog

BUILT_IN = (
    "deform_conv2d_device",
    "dynamic_unet_shapes",
    "dynamo_global_partitioner_module_children",
    "dynamo_require_full_compilation_ignored",
    "dynamo_trace_mixed_static_dynamic_inputs",
    "export_capture_pre_autograd_graph_removed",
    "export_dynamic_shapes_var_kwargs",
    "export_dynamic_shapes_var_kwargs_nested",
    "export_program_call_removed",
    "export_strict_default_changed",
    "onnx_dynamic_axes_names_dropped",
    "onnx_export_device",
    "onnx_export_dynamo_default",
    "onnx_export_fallback_removed",
    "onnx_export_unknown_kwargs_refused",
    "onnx_fuse_batchnorm_bias_collision",
    "onnx_gru_linear_before_reset",
    "onnx_ts_rshift_signed",
    "onnx_unbind_size_one",
    "pt2e_quant_removed",
    "torchscript_device_mix",
    "trt_convert_method_inputs_dropped",
    "trt_full_like_decomposition",
    "trt_import_root_logger",
    "trt_save_retrace_needs_inputs",
    "trt_save_torchscript_refused",
    "trt_unbacked_output_shape",
    "ts_device_gpu_id",
    "ts_dla_memory_sizes_ignored",
    "tv_masks_to_boxes_empty",
)
USER_REPRO = '''"""A user's repro: the harness's protocol and its own helper."""
import protocol
from protocol import Signature

import _mine

META = {"id": "user_bug", "title": "a user's bug"}
SIGNATURES = [Signature("never", exc="KeyError", pattern="never")]


def stage_helper(s):
    s.note("helper", _mine.WHO)
    s.note("protocol", protocol.__file__)


def main(r):
    r.stage("helper", stage_helper)


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
'''


def harness_module(name: str) -> Any:
    """A module of the harness, imported as a repro imports it (its folder on sys.path)."""
    sys.path.insert(0, str(paths.harness_dir()))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(paths.harness_dir()))


def test_the_harness_is_its_own_folder_and_no_part_of_the_catalog() -> None:
    harness = paths.harness_dir()
    assert harness == paths.repros_dir() / "harness" and (harness / "runner.py").is_file()
    assert tuple(load_catalog(paths.repros_dir())) == BUILT_IN
    names = {p.relative_to(harness).as_posix() for p in harness_files(harness)}
    assert {"protocol.py", "runner.py", "_outcome.py", "_standin.py"} <= names


@pytest.fixture
def built_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the built-in folder whose harness holds a stray module that is no repro."""
    root = tmp_path / "repros"
    shutil.copytree(paths.repros_dir(), root, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "harness" / "stray.py").write_text("raise SystemExit('the stray module ran')\n")
    monkeypatch.setattr(paths, "repros_dir", lambda: root)
    return root


def test_a_stray_file_in_the_harness_folder_is_never_a_repro(built_in: Path, tmp_path: Path) -> None:
    assert paths.harness_dir() == built_in / "harness"
    assert tuple(load_catalog(built_in)) == BUILT_IN
    out = tmp_path / "out"
    subprocess.run([sys.executable, str(built_in / "harness" / "runner.py"), "--out", str(out)],
                   check=True, capture_output=True, timeout=300)
    assert sorted(p.stem for p in out.glob("[!.]*.json") if p.name != "env.json") == list(BUILT_IN)


def test_the_repro_hash_covers_every_harness_file(built_in: Path) -> None:
    catalog = load_catalog(built_in)
    before = catalog_hashes(catalog, paths.harness_dir())
    (built_in / "harness" / "stray.py").write_text("# edited\n")
    after = catalog_hashes(catalog, paths.harness_dir())
    assert all(before[rid] != after[rid] for rid in catalog)


def test_a_user_repro_runs_on_the_harness_with_its_own_helper(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    strays = {n: f"raise SystemExit('the stray {n} was used')\n"
              for n in ("protocol.py", "runner.py", "_outcome.py")}
    files = {"user_bug.py": USER_REPRO, "_mine.py": 'WHO = "the user\'s helper"\n', **strays}
    for name, text in files.items():
        (mine / name).write_text(text)
    catalog = load_catalog(mine)
    assert list(catalog) == ["user_bug"], "neither helpers nor copies of the harness are repros"
    staged = stage_catalog(catalog, paths.harness_dir(), tmp_path / "work")
    assert sorted(p.name for p in staged.iterdir()) == ["_mine.py", "user_bug.py"]
    runner = harness_module("runner")
    out = tmp_path / "out"
    out.mkdir()
    result = runner.run_repro("user_bug", str(staged), str(out), 60.0)
    stage = result["stages"][0]
    assert stage["status"] == "pass", json.dumps(result, indent=1)
    assert stage["evidence"]["helper"] == "the user's helper"
    assert stage["evidence"]["protocol"] == str(paths.harness_dir() / "protocol.py")


def test_the_standin_sources_are_real_files_summed_alike_on_both_sides() -> None:
    from repromatrix.engines import standins

    _standin = harness_module("_standin")
    assert _standin.sources_sha256() == standins.source_sha256(paths.harness_dir())
    module = Path(_standin.source(_standin.TENSORRT_MODULE)).read_text()
    compile(module, "tensorrt.py", "exec")
    assert "%(" not in module and "%(" not in Path(_standin.source(_standin.MISSING_SYMBOLS_C)).read_text()
