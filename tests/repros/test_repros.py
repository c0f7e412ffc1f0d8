"""The repros, run for real through the runner, and their signatures against real text.

Four real stacks: torch 2.14.1 + torchvision 0.29.1 and 2.12.1 + 0.27.1 and 2.9.1 + 0.24.1
(CUDA builds with onnx and onnxscript, no GPU here), and torch 2.13.0+cpu (no torchvision,
no onnx). CPU stages run and are asserted on; GPU and TensorRT stages must come out `skip`
with the right reason, never `pass`. When a GPU is present the GPU assertions are not made
(the cell may then pass). The bugs decided on a CPU are asserted on both sides of their
release boundary: `fail` with the signature on the last bad interpreter, `pass` with the
check named on the first fixed one.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REPROS = ROOT / "repros"
sys.path.insert(0, str(REPROS))
sys.path.insert(0, str(REPROS / "harness"))

import protocol  # noqa: E402

from repromatrix.config.catalog import load_catalog  # noqa: E402

IDS = list(load_catalog(REPROS))  # every repro of the catalog, as the host finds them
INTERPRETERS = ("t214", "t213", "t212", "t29")
# Each interpreter's run is one repro process after another, about one core busy: the runs
# the session's tests need go two at a time, in this order, started by the first one asked for.
AT_ONCE = 2
_RUNS: dict[str, Future] = {}


def interpreter(name: str) -> str | None:
    """Interpreter ``name``'s path (REPROMATRIX_TEST_PY_<NAME>), or None where it is not set."""
    py = os.environ.get("REPROMATRIX_TEST_PY_" + name.upper())
    return py if py and Path(py).exists() else None


def _run_all(python: str, out: Path) -> dict:
    tmp = out / "tmp"  # the repros' temporary folders: all of them removed when they end
    tmp.mkdir()
    proc = subprocess.run([python, str(REPROS / "harness" / "runner.py"), "--out", str(out),
                           "--timeout", "300"],
                          capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "TMPDIR": str(tmp)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = {r: json.loads((out / f"{r}.json").read_text()) for r in IDS}
    results["env"] = json.loads((out / "env.json").read_text())
    # what the repros make there is named after them (or after an isolated stage); torch
    # leaves its own things there on purpose (torchinductor_<user>, a RemoteModule template)
    results["left_in_tmp"] = sorted(p.name for p in tmp.iterdir()
                                    if p.name.startswith((*IDS, "repro-stage-")))
    return results


def interpreters_asked(session: pytest.Session) -> list[str]:
    """The interpreters this module's selected tests use (as a fixture or a parameter)."""
    asked = set()
    for item in session.items:
        if Path(str(item.fspath)) == Path(__file__):
            callspec = getattr(item, "callspec", None)
            asked |= {*item.fixturenames, callspec.params.get("name") if callspec else None}
    return [n for n in INTERPRETERS if n in asked]


def results_on(name: str, request: pytest.FixtureRequest) -> dict:
    """Every repro run once per session on interpreter ``name`` (REPROMATRIX_TEST_PY_<NAME>)."""
    python = interpreter(name)
    if python is None:
        pytest.skip(f"REPROMATRIX_TEST_PY_{name.upper()} is not set to a torch interpreter")
    factory = request.getfixturevalue("tmp_path_factory")
    if not _RUNS:
        pool = ThreadPoolExecutor(AT_ONCE, thread_name_prefix="repros-on")
        for other in interpreters_asked(request.session):
            if (py := interpreter(other)) is not None:
                _RUNS[other] = pool.submit(_run_all, py, factory.mktemp(other))
        pool.shutdown(wait=False)
    if name not in _RUNS:  # (a test the session's selection did not show)
        done: Future = Future()
        done.set_result(_run_all(python, factory.mktemp(name)))
        _RUNS[name] = done
    return _RUNS[name].result()


@pytest.fixture(scope="module")
def t214(request):
    return results_on("t214", request)


@pytest.fixture(scope="module")
def t213(request):
    return results_on("t213", request)


@pytest.fixture(scope="module")
def t212(request):
    return results_on("t212", request)


@pytest.fixture(scope="module")
def t29(request):
    return results_on("t29", request)


def stages(result: dict) -> dict[str, dict]:
    return {s["name"]: s for s in result["stages"]}


def meta(rid: str) -> dict:
    """A repro's META, read as the host reads it (a literal, never imported)."""
    tree = ast.parse((REPROS / f"{rid}.py").read_text())
    return next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                and any(getattr(t, "id", None) == "META" for t in n.targets))


def needs_gpu(rid: str) -> bool:
    """Whether META says the verdict needs a CUDA device (``cuda`` or ``gpus...``)."""
    return any(re.match(r"\s*(cuda|gpus)\b", req) for req in meta(rid)["requires"])


def expected_status(rid: str, env: dict) -> str | None:
    """The status of META's first ``expect`` rule that holds for the run's probed torch,
    torchvision, onnxscript and onnxruntime (None where the stack has none of a rule's)."""
    probed = {key: env.get(key) for key in ("torch", "torchvision", "onnx", "onnxscript",
                                            "onnxruntime")}
    for rule in meta(rid)["expect"]:
        if protocol.when_matches(rule["when"], probed):
            return rule["status"]
    return None


def assert_gpu_stages_skipped(result: dict, env: dict, names: list[str]) -> None:
    """Without a GPU these stages skip, naming the missing CUDA device; never a pass."""
    if env.get("cuda_available"):
        return
    st = stages(result)
    for name in names:
        assert st[name]["status"] == "skip", (name, st[name])
        assert "no CUDA device" in st[name]["message"] or "needs stage" in st[name]["message"]
    assert result["status"] != "pass"


# ------------------------------------------------- every interpreter: no crash, no error

@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.parametrize("name", INTERPRETERS)
def test_no_crash_or_error_on_a_cpu_host(name, request):
    """CPU stages run for real on torch 2.9.1, 2.12.1, 2.13.0 and 2.14.1: no cell and no stage
    crashes or errors (fake CUDA aborts torch 2.9.x unless probed and isolated)."""
    res = results_on(name, request)
    if res["env"].get("cuda_available"):
        pytest.skip("a GPU is present: the GPU stages decide these cells")
    for rid in IDS:
        bad = [(s["name"], s["status"], s["message"][:200]) for s in res[rid]["stages"]
               if s["status"] in ("crash", "error", "timeout")]
        assert res[rid]["status"] not in ("crash", "error", "timeout", "broken"), (rid, res[rid]["message"])
        assert not bad, (rid, bad)
        if needs_gpu(rid):
            assert res[rid]["status"] == "skip", (rid, res[rid]["message"])  # the verdict needs a GPU
        elif res[rid]["status"] == "skip":  # decided on a CPU, unless the stack lacks a package
            assert "is not installed" in res[rid]["message"], (rid, res[rid]["message"])
        else:  # decided on a CPU: what META expects on this torch
            assert res[rid]["status"] == expected_status(rid, res["env"]), (rid, res[rid]["message"])
    ran = [s for rid in IDS for s in res[rid]["stages"] if s["status"] in ("pass", "fail")]
    assert len(ran) >= 5  # CPU evidence was produced, not only skips
    assert res["left_in_tmp"] == [], "a repro left its temporary files behind"


# ---------------------------------------------------------- torch 2.14.1 + tv

@pytest.mark.torch
@pytest.mark.slow
def test_deform_conv2d_on_214(t214):
    res, st = t214["deform_conv2d_device"], stages(t214["deform_conv2d_device"])
    assert st["fake_export"]["status"] == "pass" and st["fake_export"]["evidence"]["isolated"]
    assert st["fake_export"]["evidence"]["mask_device"] == "cuda:0"
    emu = st["emulated_trt240_decomposition"]
    assert emu["status"] == "fail" and emu["signature"] == "fake_device_mismatch"
    assert "cuda:0 and cpu" in emu["evidence"]["exception"]
    cuda1 = st["emulated_trt250_decomposition_cuda1"]
    assert cuda1["status"] == "fail" and cuda1["signature"] == "mask_on_default_device_2_13"
    assert_gpu_stages_skipped(res, t214["env"], ["eager", "trt_compile", "trt_run", "trt_compile_cuda1",
                                                 "workaround"])
    assert_standin_stages_skipped(res)
    if not t214["env"].get("cuda_available"):
        assert res["status"] == "skip" and res["workaround"] == "skip"


@pytest.mark.torch
@pytest.mark.slow
def test_dynamic_unet_on_214(t214):
    """The model itself is valid at 200/300/400: eager, script, trace and export all accept it;
    only the reporter's skip arithmetic (a separate stand-in) is refused, as in the issue."""
    res, st = t214["dynamic_unet_shapes"], stages(t214["dynamic_unet_shapes"])
    for name in ("eager_shapes", "script_and_trace", "symbolic_export"):
        assert st[name]["role"] == "info" and st[name]["status"] == "pass", (name, st[name]["message"])
    assert sum(c["numeric"] and c["ok"] for c in st["script_and_trace"]["checks"]) == 6
    assert sum(c["numeric"] and c["ok"] for c in st["symbolic_export"]["checks"]) == 3
    skip_add = st["reporter_skip_arithmetic"]
    assert skip_add["status"] == "pass"
    assert "must match the size of tensor b" in skip_add["evidence"]["refusal"]
    assert_gpu_stages_skipped(res, t214["env"], ["trt_dynamo_compile", "workaround", "ts_dynamic_compile"])
    if not t214["env"].get("cuda_available"):  # without torch-tensorrt: cannot tell, never fail
        assert res["status"] == "skip" and res["signature"] is None


@pytest.mark.torch
@pytest.mark.slow
def test_onnx_export_on_214(t214):
    res, st = t214["onnx_export_device"], stages(t214["onnx_export_device"])
    first = st["fake_first_op"]
    assert first["status"] == "fail" and first["signature"] == "first_op_fake_mismatch"
    assert "cpu and cuda:0!" in first["evidence"]["exception"]  # the seed's text
    fake = st["fake_dynamo_export"]
    assert fake["status"] == "fail" and fake["signature"] == "export_fake_mismatch"
    assert "step 1/3" in fake["evidence"]["exception"]
    assert fake["evidence"]["dropped_kwargs"] == []  # opset 13, dynamic_axes, do_constant_folding
    conv = st["fake_export_conv_mixed"]
    assert conv["status"] == "fail" and conv["signature"] == "fake_conv_device_checked"
    assert_gpu_stages_skipped(res, t214["env"], ["legacy_export", "dynamo_export", "workaround_legacy",
                                                 "workaround_dynamo"])


@pytest.mark.torch
@pytest.mark.slow
def test_torchscript_device_mix_on_214(t214):
    res, st = t214["torchscript_device_mix"], stages(t214["torchscript_device_mix"])
    assert st["trace_cpu_inspect"]["status"] == "pass"
    assert st["trace_cpu_inspect"]["evidence"]["cpu_device_literals"] >= 2
    frozen = st["freeze_cpu_inspect"]
    assert frozen["status"] == "pass" and frozen["evidence"]["parameters_after_freeze"] == 0
    assert frozen["evidence"]["cpu_device_literals_after_freeze"] >= 1  # arange(size, device=cpu) survives
    assert st["frozen_dtype_standin"]["signature"] == "frozen_constants_do_not_move"
    # the reporter's failing path (the stock CPU trace run on CUDA) decides; the fix is apart
    assert st["export_run_cuda"]["role"] == "main" and st["workaround"]["role"] == "workaround"
    assert st["trace_cuda_run_cuda"]["role"] == "info"
    assert_gpu_stages_skipped(res, t214["env"], ["export_run_cuda", "trace_cuda_run_cuda",
                                                 "trace_cpu_freeze_run_cuda", "workaround",
                                                 "script_freeze_cpu_to_cuda"])
    if not t214["env"].get("cuda_available"):  # cannot tell without CUDA, never pass
        assert res["status"] == "skip" and res["workaround"] == "skip"


@pytest.mark.torch
@pytest.mark.slow
def test_ts_device_gpu_id_on_214(t214):
    res = t214["ts_device_gpu_id"]
    assert_gpu_stages_skipped(res, t214["env"], [s["name"] for s in res["stages"]
                                                 if not s["name"].endswith("_standin")])
    assert_standin_stages_skipped(res)


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.parametrize("rid", ["dynamo_global_partitioner_module_children",
                                 "dynamo_trace_mixed_static_dynamic_inputs"])
def test_dynamo_trt_repros_on_214(t214, rid):
    """Without torch-tensorrt both skip cleanly: the stand-in stage says what it needs."""
    res = t214[rid]
    assert_gpu_stages_skipped(res, t214["env"], [s["name"] for s in res["stages"]
                                                 if not s["name"].endswith("_standin")])
    assert_standin_stages_skipped(res)


def assert_standin_stages_skipped(result: dict) -> None:
    """Without stand-ins in the environment (no --standin tensorrt) they skip, saying so."""
    standin = [s for s in result["stages"] if s["name"].endswith("_standin")]
    assert standin
    for s in standin:
        assert s["status"] == "skip" and "--standin tensorrt" in s["message"], s
        assert s["standins"] == []


# ------------------------------------------------- torch 2.9.1: fake CUDA probed, not assumed

@pytest.mark.torch
@pytest.mark.slow
def test_fake_cuda_is_probed_and_isolated_on_29(t29):
    assert t29["env"]["torch"].startswith("2.9.")
    st = stages(t29["deform_conv2d_device"])
    probe = st["fake_export"]["evidence"]["fake_cuda_probe"]
    assert probe["ok"] is True  # the stand-ins (parameters without grad) work
    assert "SIGABRT" in probe["with_grad"] and "driver version is insufficient" in probe["with_grad"]
    assert st["fake_export"]["status"] == "pass"
    assert st["emulated_trt240_decomposition"]["signature"] == "fake_device_propagation"  # <= 2.12 text
    assert st["emulated_trt250_decomposition_cuda1"]["signature"] == "mask_on_default_device"
    unet = stages(t29["dynamic_unet_shapes"])  # strided convs: no pooling parity guard on 2.9
    assert unet["symbolic_export"]["status"] == "pass", unet["symbolic_export"]["message"]
    onnx = stages(t29["onnx_export_device"])
    assert onnx["fake_first_op"]["signature"] == "first_op_fake_propagation"
    assert onnx["fake_export_conv_mixed"]["status"] == "pass"  # fake conv unchecked before 2.14


# --------------------------------------------------------- torch 2.13.0+cpu

@pytest.mark.torch
@pytest.mark.slow
def test_all_repros_on_213_cpu_build(t213):
    env = t213["env"]
    assert env["torch"].startswith("2.13.0") and env["torch_cuda"] is None
    deform = stages(t213["deform_conv2d_device"])
    for name in ("fake_export", "emulated_trt240_decomposition"):
        assert deform[name]["status"] == "skip" and "torchvision" in deform[name]["message"]
    assert deform["eager"]["status"] == "skip" and "CPU-only build" in deform["eager"]["message"]
    unet = stages(t213["dynamic_unet_shapes"])
    assert [unet[n]["status"] for n in ("eager_shapes", "script_and_trace", "symbolic_export",
                                        "reporter_skip_arithmetic")] == ["pass"] * 4
    onnx = stages(t213["onnx_export_device"])
    # a CPU-only build still makes fake CUDA tensors (probed): the stand-ins run
    assert onnx["fake_first_op"]["signature"] == "first_op_fake_mismatch"
    assert onnx["fake_export_conv_mixed"]["status"] == "pass"
    assert onnx["fake_dynamo_export"]["status"] == "skip" and "onnx" in onnx["fake_dynamo_export"]["message"]
    ts = stages(t213["torchscript_device_mix"])
    assert ts["trace_cpu_inspect"]["status"] == "pass"
    assert ts["frozen_dtype_standin"]["signature"] == "frozen_constants_do_not_move"
    for rid in IDS:
        if needs_gpu(rid):
            assert t213[rid]["status"] == "skip", (rid, t213[rid]["message"])
    for rid in ("onnx_ts_rshift_signed", "onnx_dynamic_axes_names_dropped", "onnx_export_fallback_removed"):
        assert t213[rid]["status"] == "skip" and "onnx is not installed" in t213[rid]["message"], rid


# ------------------------- CPU-decided bugs: both sides of each release boundary

def assert_fails_with(result: dict, stage: str, signature: str) -> dict:
    """The cell fails on ``stage`` with ``signature`` (the known bug, not something new)."""
    st = stages(result)[stage]
    assert st["status"] == "fail" and st["signature"] == signature, st["message"]
    assert result["status"] == "fail" and result["signature"] == signature, result["message"]
    return st


def assert_passes_checked(result: dict, stage: str, *checks: str) -> dict:
    """The cell passes, and ``stage`` passed the checks named (a numeric one among them)."""
    st = stages(result)[stage]
    assert st["status"] == "pass", st["message"]
    held = [c["what"] for c in st["checks"] if c["ok"]]
    for what in checks:
        assert any(h.startswith(what) for h in held), (what, held)
    assert any(c["numeric"] and c["ok"] for c in st["checks"])
    assert result["status"] == "pass", result["message"]
    return st


@pytest.mark.torch
@pytest.mark.slow
def test_onnx_rshift_fails_on_212_and_passes_on_214(t212, t214):
    """Legacy ONNX export of a signed ``>>``: off by one on negatives up to 2.13, exact from 2.14."""
    rid = "onnx_ts_rshift_signed"
    bad = assert_fails_with(t212[rid], "legacy_export", "legacy_rshift_rounds_toward_zero")
    assert "Div" in bad["evidence"]["onnx_ops"] and "Less" not in bad["evidence"]["onnx_ops"]
    for got, want in zip(bad["evidence"]["onnx"], bad["evidence"]["eager"], strict=True):
        diffs = [g - w for g, w in zip(got, want, strict=True)]
        assert set(diffs) == {0, 1}  # rounded toward zero: one too large, never too small
        assert all(w < 0 for w, d in zip(want, diffs, strict=True) if d)  # only where the result is negative
    good = assert_passes_checked(t214[rid], "legacy_export", "legacy ONNX vs eager, signed >>")
    assert {"Less", "Add", "Div", "Sub"} <= set(good["evidence"]["onnx_ops"])  # the sign fix-up
    for res in (t212["onnx_ts_rshift_signed"], t214["onnx_ts_rshift_signed"]):
        assert stages(res)["nonnegative_control"]["status"] == "pass"  # Div is right without negatives
        assert res["workaround"] == "pass"


@pytest.mark.torch
@pytest.mark.slow
def test_export_var_kwargs_fails_on_213_and_passes_on_214(t213, t214):
    """Both spec styles for a ``forward(**kwargs)`` model, one repro each: refused (call style)
    and asserting (nested) on 2.13, dynamic from 2.14."""
    for rid, stage, signature in (
            ("export_dynamic_shapes_var_kwargs", "export_call_style", "var_kwargs_top_level_keys"),
            ("export_dynamic_shapes_var_kwargs_nested", "export_nested_spec",
             "var_kwargs_tree_name_assertion")):
        bad, good = t213[rid], t214[rid]
        assert_fails_with(bad, stage, signature)
        assert_passes_checked(good, stage, "exported vs eager at batch 7 (example 4)")
        assert bad["workaround"] == "pass" and good["workaround"] == "pass"


@pytest.mark.torch
@pytest.mark.slow
def test_onnx_dynamic_axes_names_fail_on_29_and_pass_on_212(t29, t212):
    """dynamo ONNX export: the dynamic_axes name is torch's symbol on 2.9, the given one on 2.12."""
    bad = assert_fails_with(t29["onnx_dynamic_axes_names_dropped"], "dynamo_export", "dynamic_axes_name_lost")
    assert any(c["numeric"] and c["ok"] for c in bad["checks"])  # still dynamic: only the name is lost
    assert all(re.fullmatch(r"s\d+", dims[0]) for dims in bad["evidence"]["onnx_dims"].values())
    good = assert_passes_checked(t212["onnx_dynamic_axes_names_dropped"], "dynamo_export",
                                 "ONNX (onnx.reference) vs eager at batch 3",
                                 "dim 0 of every input and output is named as in dynamic_axes")
    assert {dims[0] for dims in good["evidence"]["onnx_dims"].values()} == {"b"}
    for res in (t29["onnx_dynamic_axes_names_dropped"], t212["onnx_dynamic_axes_names_dropped"]):
        assert res["workaround"] == "pass"  # the legacy exporter keeps the names


@pytest.mark.torch
@pytest.mark.slow
def test_onnx_export_fallback_passes_on_29_and_fails_on_212(t29, t212):
    """``fallback=True``: an exported, checked model on 2.9; refused by name from 2.11."""
    rid = "onnx_export_fallback_removed"
    assert_passes_checked(t29[rid], "export_with_fallback", "ONNX (dynamo=True, fallback=True) vs eager")
    bad = assert_fails_with(t212[rid], "export_with_fallback", "fallback_keyword_removed")
    assert "'fallback'" in bad["message"]
    assert t29[rid]["workaround"] == "pass" and t212[rid]["workaround"] == "pass"


@pytest.mark.torch
@pytest.mark.slow
def test_masks_to_boxes_fails_on_29_and_passes_on_212(t29, t212):
    """An all-zero mask: torch's min() refusal on torchvision 0.24.1, zeros on 0.27.1."""
    rid = "tv_masks_to_boxes_empty"
    bad = assert_fails_with(t29[rid], "masks_to_boxes", "empty_mask_min_without_dim")
    assert bad["evidence"]["torchvision"].startswith("0.24.") and "numel() == 0" in bad["message"]
    good = assert_passes_checked(t212[rid], "masks_to_boxes", "boxes of the written masks",
                                 "boxes of a random batch vs a loop over its non-empty masks")
    assert good["evidence"]["torchvision"].startswith("0.27.")
    assert good["evidence"]["boxes"][1] == [0.0, 0.0, 0.0, 0.0] and good["evidence"]["boxes"][0] != [0.0] * 4
    assert good["evidence"]["random_masks_empty"] == [1, 4]
    for res in (t29[rid], t212[rid]):
        assert res["workaround"] == "pass"  # the non-empty masks alone: every release


@pytest.mark.torch
@pytest.mark.slow
def test_pt2e_quant_passes_on_29_and_fails_on_212(t29, t212):
    """The PT2E flow: an int8 graph close to eager on 2.9, its module gone from 2.11."""
    rid = "pt2e_quant_removed"
    good = assert_passes_checked(t29[rid], "pt2e_quantize",
                                 "the converted graph quantizes", "int8 PT2E (XNNPACK quantizer) vs eager")
    assert good["evidence"]["quantize_dequantize_nodes"] >= 4
    assert any("will be removed in 2.10" in w for w in good["evidence"]["deprecations"])
    diff = next(c["max_abs_diff"] for c in good["checks"] if c["numeric"])
    assert 0 < diff < 0.03  # quantized: not eager's own numbers, within the quantization error
    bad = assert_fails_with(t212[rid], "pt2e_quantize", "quantize_pt2e_module_removed")
    assert "torch.ao.quantization.quantize_pt2e" in bad["message"]
    assert t29[rid]["workaround"] is None and t212[rid]["workaround"] is None  # no stage: torchao


@pytest.mark.torch
@pytest.mark.slow
def test_export_removals_fail_on_29_and_214(t29, t214):
    """capture_pre_autograd_graph (gone from 2.7) and calling an ExportedProgram (refused from
    2.3): the removal by name on 2.9.1 and 2.14.1, the replacement checked against eager."""
    for res in (t29, t214):
        rid = "export_capture_pre_autograd_graph_removed"
        bad = assert_fails_with(res[rid], "capture", "capture_pre_autograd_graph_removed")
        assert "torch._export" in bad["message"]
        assert stages(res[rid])["workaround_export_module"]["status"] == "pass"
        rid = "export_program_call_removed"
        bad = assert_fails_with(res[rid], "call_exported_program", "exported_program_not_callable")
        assert bad["evidence"]["call_defined_at"].startswith("torch/export/exported_program.py:")
        assert stages(res[rid])["workaround_module"]["status"] == "pass"
        assert res[rid]["workaround"] == "pass"


@pytest.mark.torch
@pytest.mark.slow
def test_changed_defaults_fail_on_29_and_214(t29, t214):
    """torch.onnx.export's dynamo default (True from 2.9), torch.export's strict default
    (False from 2.8) and torch.onnx.export's unknown keywords (refused from 2.7): the default
    call fails its check or raises; the old default passed explicitly, or the call without the
    stale keyword, is checked against eager."""
    for res in (t29, t214):
        rid = "onnx_export_dynamo_default"
        bad = assert_fails_with(res[rid], "default_export", "default_export_took_dynamo")
        assert bad["evidence"]["dynamo_default"] == "True"
        assert bad["evidence"]["files_written"] == ["model.onnx", "model.onnx.data"]
        assert bad["evidence"]["returned"] == "ONNXProgram"
        fix = stages(res[rid])["workaround_dynamo_false"]
        assert fix["status"] == "pass" and fix["evidence"]["files_written"] == ["model.onnx"]
        rid = "export_strict_default_changed"
        bad = assert_fails_with(res[rid], "default_export", "non_strict_default_numpy")
        assert bad["evidence"]["strict_default"] == "False"
        assert stages(res[rid])["workaround_strict_true"]["status"] == "pass"
        assert res[rid]["workaround"] == "pass"
        rid = "onnx_export_unknown_kwargs_refused"
        bad = assert_fails_with(res[rid], "export_stale_keyword", "stale_keyword_refused")
        assert bad["evidence"]["catch_all"] == []
        assert res[rid]["workaround"] == "pass"


@pytest.mark.torch
@pytest.mark.slow
def test_trt_save_workaround_passes_without_torch_tensorrt_on_29(t29):
    """No torch-tensorrt here: the stand-in and GPU stages skip with their reasons (never a
    verdict), and the workaround (torch.jit.save of the ScriptModule) is checked."""
    res = t29["trt_save_torchscript_refused"]
    st = stages(res)
    assert res["status"] == "skip" and st["save_torchscript_standin"]["status"] == "skip"
    assert st["workaround_jit_save"]["status"] == "pass" and res["workaround"] == "pass"
    assert t29["trt_import_root_logger"]["status"] == "skip"


# ------------------------------------- signatures against recorded dossier text

def signatures(repro_id: str) -> list[protocol.Signature]:
    return importlib.import_module(repro_id).SIGNATURES  # repros import torch lazily


def match(repro_id: str, types: list[str], text: str, stage: str | None, torch: str) -> str | None:
    for sig in signatures(repro_id):
        if sig.matches_text(types, text, stage, {"torch": torch}):
            return sig.id
    return None


@pytest.mark.torch
def test_gpu_id_signature_against_real_torch_text():
    """The AttributeError text as the real torch.device raises it."""
    py = os.environ.get("REPROMATRIX_TEST_PY_T214") or os.environ.get("REPROMATRIX_TEST_PY_T213")
    if not py or not Path(py).exists():
        pytest.skip("no torch interpreter")
    code = "import torch\ntry:\n torch.device('cuda:0').gpu_id\nexcept AttributeError as e:\n print(e)"
    text = subprocess.run([py, "-c", code], capture_output=True, text=True, timeout=300).stdout.strip()
    assert match("ts_device_gpu_id", ["AttributeError"], text, "ts_compile_torch_device", "2.14.1") \
        == "torch_device_gpu_id"


def test_meta_is_a_literal_with_the_catalog_keys():
    for rid in IDS:
        m = meta(rid)
        # a torch-tensorrt bug's release and NGC rules come from its commits (config.boundaries)
        derived = {"introduced_by", "fixed_by"} & set(m)
        assert m["id"] == rid and m["upstream"] and (m.get("expect") or derived) and m["requires"]
        for exp in m.get("expect", ()):
            for spec in exp["when"].values():
                protocol.version_matches("1.0", spec)  # parses


@pytest.mark.torch
@pytest.mark.slow
def test_onnxscript_bugs_pass_on_an_onnxscript_with_both_fixes(t29):
    """The test interpreter's onnxscript is newer than every fix (0.5.7, 0.7.1): the GRU node
    says ``linear_before_reset=1``, the fused Convs keep biases of their own and a size-1
    ``unbind`` exports. The bad
    releases are decided by the published records (results/published, onnxscript stacks)."""
    assert protocol.version_matches(t29["env"]["onnxscript"], ">=0.7.1")
    gru = assert_passes_checked(t29["onnx_gru_linear_before_reset"], "dynamo_export",
                                "ONNX GRU (dynamo=True) vs eager")
    assert gru["evidence"]["linear_before_reset"] == [1]
    bn = assert_passes_checked(t29["onnx_fuse_batchnorm_bias_collision"], "dynamo_export",
                               "ONNX Conv+BatchNorm (optimize=True) vs eager")
    assert "x_bias" not in bn["evidence"]["initializers"]
    unbind = assert_passes_checked(t29["onnx_unbind_size_one"], "dynamo_export",
                                   "ONNX unbind of size 1 (dynamo=True) vs eager")
    assert "Slice" in unbind["evidence"]["onnx_ops"]  # the fix's one Slice per element
    assert stages(t29["onnx_unbind_size_one"])["size_three"]["status"] == "pass"
    for rid in ("onnx_gru_linear_before_reset", "onnx_fuse_batchnorm_bias_collision",
                "onnx_unbind_size_one"):
        assert t29[rid]["workaround"] == "pass", rid
