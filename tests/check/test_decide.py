"""check.decide on the published records (results/published, through the shipped snapshot):
each bug's verdict and how close its evidence is, and the smallest upgrade."""

from __future__ import annotations

import pytest
from packaging.version import Version

from repromatrix.check.candidates import candidates
from repromatrix.check.command import check_answer
from repromatrix.check.decide import AFFECTED, CANNOT_TELL, NOT_AFFECTED, answer, workaround
from repromatrix.check.environment import from_ngc, from_pins
from repromatrix.check.records import snapshot_rows
from repromatrix.cli.check import catalog
from repromatrix.config.compat import load_table


def check(*pins: str, ignore: tuple[str, ...] = ()) -> dict:
    env = from_pins(pins)
    rows, _ = snapshot_rows()
    return check_answer(catalog(), rows, {}, env, load_table(), ignore)


def by_id(result: dict) -> dict[str, dict]:
    return {b["id"]: b for b in result["bugs"]}


def test_the_reported_stack_has_the_deform_bug_on_its_own_record_and_an_upgrade_fixes_it():
    # the torchvision bug, fixed only with torch 2.11, is left out here (the test below)
    result = check("torch==2.4.1", "torch-tensorrt==2.4.0", "torchvision==0.19.1",
                   ignore=("tv_masks_to_boxes_empty",))
    bugs = by_id(result)
    deform = bugs["deform_conv2d_device"]
    assert deform["verdict"] == AFFECTED and deform["basis"] == "same versions"
    assert deform["record"]["stack"] == "pip-torch2.4.1-trt2.4.0-pypi-py3.11"
    assert deform["record"]["level"] == "TensorRT stood in" and not deform["inference"]
    assert deform["fixed_in"] == "torch-tensorrt 2.5.0"
    assert bugs["ts_device_gpu_id"]["verdict"] == AFFECTED and bugs["ts_device_gpu_id"]["fixed_in"] is None
    # pins are partial: onnx not given may be installed (a complete freeze says it is not)
    assert bugs["onnx_export_device"]["verdict"] == CANNOT_TELL
    assert bugs["onnx_export_device"]["basis"] == "requirements"
    assert bugs["dynamic_unet_shapes"]["inference"] and bugs["dynamic_unet_shapes"]["basis"] == "expect rules"
    up = result["upgrade"]
    # torch-tensorrt 2.5.0 fixed the deform bug, the three dynamo bugs of 2.4.0 and the root
    # logger set at import, but brings the convert-method inputs bug of that release alone;
    # 2.6.0 to 2.13.0 may bring the var-kwargs export limitation (cannot tell on torch 2.4.1):
    # 2.6.0 and 2.7.0 bring the full_like decomposition bug: 2.14.0 brings no defect, and meets
    # two removals and save's retrace default (told, not ranked on)
    assert up["found"] and up["avoids"] == ["deform_conv2d_device",
                                            "dynamo_global_partitioner_module_children",
                                            "dynamo_require_full_compilation_ignored",
                                            "dynamo_trace_mixed_static_dynamic_inputs",
                                            "trt_import_root_logger"]
    assert up["versions"]["torch_tensorrt"] == "2.14.0"
    assert up["brings"] == [] and up["may_bring"] == []
    assert up["meets"] == ["export_capture_pre_autograd_graph_removed", "pt2e_quant_removed",
                           "trt_save_retrace_needs_inputs"]
    assert up["changes"] == ["torch", "torchvision", "torch_tensorrt"]
    assert up["install"] == "pip install torch==2.14.0 torchvision==0.29.0 torch-tensorrt==2.14.0"
    assert set(up["still_affected"]) == {"ts_device_gpu_id", "dynamic_unet_shapes", "torchscript_device_mix"}
    # torch 2.3 removed calling an ExportedProgram: told, neither failed on nor steered around
    assert result["notices"] == ["export_program_call_removed"]
    assert "export_program_call_removed" not in result["affected"]
    assert result["exit"] == 1


def test_a_torchvision_bug_is_judged_by_the_torchvision_release_and_moves_the_upgrade():
    """masks_to_boxes is bad before torchvision 0.26 (torch 2.11), which fixes it: the
    published record of these very versions says so; the upgrade that avoids it with the others goes to
    torch-tensorrt 2.14.0 (2.11 to 2.13 bring the var-kwargs export bug) and may bring the PT2E
    removal (cannot tell on torch 2.4.1: not said to be "not affected now")."""
    result = check("torch==2.4.1", "torch-tensorrt==2.4.0", "torchvision==0.19.1")
    masks = by_id(result)["tv_masks_to_boxes_empty"]
    assert masks["verdict"] == AFFECTED and masks["basis"] == "same versions" and not masks["inference"]
    assert masks["record"]["versions"]["torchvision"] == "0.19.1"
    assert masks["fixed_in"] == "torchvision 0.26.0"
    up = result["upgrade"]
    assert up["versions"] == {"torch": "2.14.0", "torchvision": "0.29.0", "torch_tensorrt": "2.14.0"}
    # torch 2.7 removed capture_pre_autograd_graph: a breaking change the upgrade meets (told,
    # not a bug it brings), and one that cannot tell now is not ranked on either
    assert "tv_masks_to_boxes_empty" in up["avoids"]
    assert up["brings"] == [] and up["may_bring"] == []
    assert up["meets"] == ["export_capture_pre_autograd_graph_removed", "pt2e_quant_removed",
                           "trt_save_retrace_needs_inputs"]


def test_a_release_without_a_record_of_its_own_is_judged_by_its_torch_tensorrt_release():
    """torch 2.4.0 was not recorded with torch-tensorrt 2.4.0; torch 2.4.1 was."""
    result = check("torch==2.4.0", "torch-tensorrt==2.4.0", "torchvision==0.19.0")
    deform = by_id(result)["deform_conv2d_device"]
    assert deform["verdict"] == AFFECTED and deform["basis"] == "same torch-tensorrt release"
    assert deform["record"]["versions"]["torch"] == "2.4.1"


def test_the_last_release_before_the_regression_is_not_affected_by_its_record():
    ts = by_id(check("torch==2.2.2", "torch-tensorrt==2.2.0", "torchvision==0.17.2"))["ts_device_gpu_id"]
    assert ts["verdict"] == NOT_AFFECTED and ts["record"]["status"] == "skip"
    assert ts["record"]["evidence"] == "standin"


def test_ignored_bugs_are_answered_but_do_not_count():
    result = check("torch==2.4.1", ignore=("torchscript_device_mix", "tv_masks_to_boxes_empty"))
    assert result["affected"] == [] and result["exit"] == 0 and result["upgrade"] is None
    assert by_id(result)["torchscript_device_mix"]["ignored"]
    # the breaking change that applies is still told; ignoring it takes it out of the notices
    assert result["notices"] == ["export_program_call_removed"]
    quiet = check("torch==2.4.1", ignore=("torchscript_device_mix", "tv_masks_to_boxes_empty",
                                          "export_program_call_removed"))
    assert quiet["notices"] == [] and quiet["exit"] == 0


def test_a_breaking_change_informs_but_never_fails_or_steers_the_upgrade():
    """Every removal and changed default of the catalog that applies on torch 2.14.1 is told in
    ``notices``, none in ``affected``; the defects alone decide the exit code and the upgrade."""
    result = check("torch==2.14.1", "torchvision==0.29.1")
    kinds = {b["id"]: b["kind"] for b in result["bugs"]}
    applies = [b["id"] for b in result["bugs"] if b["verdict"] == AFFECTED and not b["ignored"]]
    assert result["notices"] and set(result["notices"]) <= set(applies)
    assert {kinds[b] for b in result["notices"]} <= {"breaking-change", "user-error"}
    assert {kinds[b] for b in result["affected"]} <= {"bug", "silent-wrong-output"}
    assert sorted(result["affected"] + result["notices"]) == sorted(applies)
    assert result["exit"] == (1 if result["affected"] else 0)
    for b in by_id(result).values():
        if b["id"] in result["notices"]:
            assert b["fixed_in"] is None


def test_an_ngc_release_is_judged_by_the_rules_its_branch_was_read_for():
    env = from_ngc("24.07")
    rows, _ = snapshot_rows()
    result = check_answer(catalog(), rows, {}, env, load_table())
    deform = by_id(result)["deform_conv2d_device"]
    # the NGC rules are derived from the branches (data/boundaries.json): 24.07's lacks the fix
    assert deform["verdict"] == AFFECTED and deform["rule"]["when"] == "ngc ==24.07"
    # 24.08 fixes the deform bug; 25.01 also require_full_compilation (ngc >=24.04,<25.01);
    # 26.08's torch 2.14.0a0 counts as 2.14 (rules.versions.boundary_version): onnx_ts_rshift too
    assert result["upgrade"]["versions"]["ngc"] == "26.08"
    assert "deform_conv2d_device" in result["upgrade"]["avoids"]
    assert "dynamo_require_full_compilation_ignored" in result["upgrade"]["avoids"]
    assert "onnx_ts_rshift_signed" in result["upgrade"]["avoids"]
    assert result["upgrade"]["install"] == "docker pull nvcr.io/nvidia/pytorch:26.08-py3"


def test_an_ngc_pre_release_is_its_release_for_verdict_fix_and_upgrade():
    """NGC 26.09 ships torch 2.14.0a0: a bug fixed in torch 2.14 is not affected there, and
    no answer tells it to upgrade to torch 2.14."""
    rows, _ = snapshot_rows()
    result = check_answer(catalog(), rows, {}, from_ngc("26.09"), load_table())
    for bug in ("export_dynamic_shapes_var_kwargs", "onnx_ts_rshift_signed"):
        assert by_id(result)[bug]["verdict"] == NOT_AFFECTED, bug
    assert all("2.14" not in (b["fixed_in"] or "") for b in result["bugs"])


def test_no_record_and_no_rule_cannot_tell():
    env = from_pins(["torch==2.4.1", "torch-tensorrt==2.4.0"])
    bugs = {"b": {"title": "t", "requires": [], "expect": [{"when": {"torch": "<2"}, "status": "fail"}]}}
    result = answer(bugs, [], env, [], {})
    assert result["bugs"][0]["verdict"] == CANNOT_TELL and result["exit"] == 0


@pytest.mark.parametrize("bug, words", [("ts_device_gpu_id", "torch_tensorrt.Device"),
                                        ("onnx_export_device", "is the fix"),
                                        ("dynamic_unet_shapes", "Workaround:")])
def test_the_workaround_is_the_description_s_own_sentence(bug, words):
    assert words in workaround(catalog()[bug])


def test_upgrades_never_go_back_and_follow_the_table():
    env = from_pins(["torch==2.5.1", "torch-tensorrt==2.5.0", "torchvision==0.20.1"])
    found = candidates(load_table(), env)
    assert found and all(Version(c["versions"]["torch_tensorrt"]) >= Version("2.5.0") for c in found)
    assert not any(c["versions"]["torch_tensorrt"] == "2.3.0" for c in found)
    for c in found:  # every candidate installs together, as the table says
        row = load_table().torch_tensorrt[c["versions"]["torch_tensorrt"]]
        assert row.torch.contains(c["versions"]["torch"]), c
