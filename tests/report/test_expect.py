"""The expectation rules (repromatrix.report.expect) the page uses to flag contradictions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.sites import DEFORM
from support.sites import result as _result

from repromatrix.report.expect import evaluate
from repromatrix.store.record import Result

# ----------------------------------------------------------------- expectations


def _rec(status="fail", env=None, **stack):
    return _result(status=status, env=env or {}, stack={"id": "s", **stack})


def test_evaluate_uses_probe_then_spec_and_first_rule():
    ngc = _rec("fail", env={"torch": "2.4.0a0+07cecf4168", "torch_tensorrt": "2.4.0+cu124"}, ngc="24.05")
    exp = evaluate(DEFORM.expect, ngc)
    assert (exp.status, exp.note, exp.contradicted) == ("fail", "TRT #3556", False)
    dev0 = _rec("fail", env={"torch_tensorrt": "2.3.0"}, torch_tensorrt="2.4.0")
    assert evaluate(DEFORM.expect, dev0) is None   # the probe wins: 2.3.0 is under no rule
    assert evaluate(DEFORM.expect, _rec("fail", torch_tensorrt="2.5.0")).contradicted
    assert evaluate([{"when": {"ngc": ">=24.05"}, "status": "pass"}], ngc).status == "pass"
    nested = _rec("pass", env={"packages": {"torch_tensorrt": "2.5.0+cu124"}})
    assert evaluate(DEFORM.expect, nested).status == "pass"


def test_a_pre_release_meets_a_boundary_as_its_release():
    """rules.versions.boundary_version: NGC's 2.5.0a0 (built from the release branch) is
    torch-tensorrt 2.5 to a bug's boundary, and 2.4.0.dev0 is 2.4."""
    assert evaluate(DEFORM.expect, _rec("fail", torch_tensorrt="2.5.0a0")).status == "pass"
    assert evaluate(DEFORM.expect, _rec("fail", torch_tensorrt="2.4.0.dev0")).status == "fail"
    assert evaluate(DEFORM.expect, _rec("fail", torch_tensorrt="2.5.0")).status == "pass"
    post = [{"when": {"torch": ">2.4.1"}, "status": "pass"}]
    assert evaluate(post, _rec("pass", torch="2.4.1.post1")).status == "pass"


# What each release/ngc/* branch of pytorch/TensorRT holds (cited in the repros' META):
# deform_conv2d: no empty_strided decomposition up to 24.06, the device-dropping one
# (PR #2859 without #2948) on 24.07, the default-device one from 24.08.
# gpu_id: Device._from_torch_device up to 24.04, ts/_Device.py reading d.gpu_id from 24.05.
NGC_DEFORM_FAILS = {"24.07"}
NGC_GPU_ID_PASSES = {"23.12", "24.01", "24.02", "24.03", "24.04"}


def test_ngc_expectations_follow_the_branches():
    from repromatrix.config.catalog import load_catalog
    from repromatrix.config.compat import load_table

    catalog = load_catalog(Path(__file__).resolve().parents[2] / "repros")
    for tag, row in load_table().ngc.items():
        rec = _rec("skip", env={"torch": row.torch, "torch_tensorrt": row.torch_tensorrt,
                                "ngc": tag}, kind="ngc", ngc=tag)
        deform = evaluate(catalog["deform_conv2d_device"].expect, rec)
        gpu_id = evaluate(catalog["ts_device_gpu_id"].expect, rec)
        assert deform.status == ("fail" if tag in NGC_DEFORM_FAILS else "pass"), tag
        assert gpu_id.status == ("pass" if tag in NGC_GPU_ID_PASSES else "fail"), tag


def test_evaluate_no_rule_or_unknown_version():
    assert evaluate(DEFORM.expect, _rec("fail", torch_tensorrt="2.3.0")) is None
    assert evaluate(DEFORM.expect, _rec("fail")) is None   # version unknown: the rule cannot apply
    assert evaluate([{"when": {"torch": "not a spec"}, "status": "fail"}], _rec(torch="2.4")) is None
    assert evaluate([{"when": {}, "status": "fail"}], _rec("fail")).when_text == "always"


@pytest.mark.parametrize("status, contradicted", [
    ("pass", True), ("crash", False), ("fail", False),  # a crash is not the bug: cannot tell
    ("error", False), ("timeout", False), ("broken", False), ("skip", False),
])
def test_only_decisive_results_contradict(status, contradicted):
    assert evaluate(DEFORM.expect, _rec(status, torch_tensorrt="2.4.1")).contradicted is contradicted


def test_skipped_cell_with_stand_in_evidence_is_marked(tmp_path):
    """A cell skipped for want of a GPU whose CPU stand-in stages ran says so in the matrix."""
    from repromatrix.report.render import render_site
    from repromatrix.store.results import ResultStore

    store = ResultStore(tmp_path / "results")
    base = {"schema_version": 1, "run_id": "r1", "repro": "demo", "status": "skip", "signature": None,
            "workaround": None, "message": "eager: no CUDA device", "traceback": "", "duration_s": 1.0,
            "exit_code": 0, "signal": None, "env": {"torch": "2.14.1"}, "image": None,
            "backend": "local", "harness_version": "0", "host": "h", "repro_sha256": "", "cache_key": "k",
            "started_at": "2026-11-23T00:00:00+00:00", "finished_at": "2026-11-23T00:00:01+00:00"}
    stages = [{"name": "fake_export", "role": "info", "status": "fail", "duration_s": 0.1,
               "message": "", "evidence": {}},
              {"name": "eager", "role": "main", "status": "skip", "duration_s": 0.0,
               "message": "no CUDA device", "evidence": {}}]
    store.append(Result.from_dict(
        {**base, "cell": "a--demo", "stack": {"id": "a", "kind": "local"}, "stages": stages}))
    store.append(Result.from_dict(
        {**base, "cell": "b--demo", "stack": {"id": "b", "kind": "local"}, "stages": stages[1:]}))
    render_site([store.root], tmp_path / "site")
    html = (tmp_path / "site" / "index.html").read_text()
    cells = dict(re.findall(r'<td class="cell[^"]*" data-cell="([^"]+)"[^>]*>(.*?)</td>', html))
    assert "evidence: fake_export fail" in cells["a--demo"] and '"true">+<' in cells["a--demo"]
    assert "evidence" not in cells["b--demo"] and "+<" not in cells["b--demo"]


