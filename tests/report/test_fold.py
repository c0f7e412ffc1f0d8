"""report.fold: a grid column or row whose every cell cannot tell (rules.verdict) folds into
one line saying what machine would decide it."""

from __future__ import annotations

from repromatrix.config.catalog import load_catalog
from repromatrix.model import Repro
from repromatrix.paths import repros_dir
from repromatrix.report.fold import column_fold, machine, row_fold
from repromatrix.rules.verdict import said


def cell(status: str, repro: str = "bug", evidence: str = "") -> dict[str, str]:
    return {"status": status, "repro": repro, "verdict": said(status, evidence)}


def repro(requires: tuple[str, ...], rid: str = "bug") -> Repro:
    return Repro(id=rid, path=f"repros/{rid}.py", title=rid, requires=requires)


def test_the_machine_is_what_meta_requires_asks_for():
    assert machine(["cuda", "torch_tensorrt"]) == "a CUDA GPU with TensorRT"
    assert machine(["cuda", "torch_tensorrt", "torchvision>=0.17"]) == "a CUDA GPU with TensorRT"
    assert machine(["cuda", "onnx"]) == "a CUDA GPU"
    assert machine(["torch-tensorrt>=2.4"]) == "TensorRT"
    assert machine(["onnx", "torch>=2.5"]) == ""
    # every shipped repro that needs a GPU says so
    for found in load_catalog(repros_dir()).values():
        assert machine(found.requires).startswith("a CUDA GPU") == ("cuda" in found.requires)


def test_a_column_folds_only_when_no_cell_says_yes_or_no():
    needs_gpu = repro(("cuda", "torch_tensorrt"))
    folded = column_fold([cell("skip"), cell("skip"), cell("error")], needs_gpu)
    assert folded == {"cells": 3, "ended": "2 skip, 1 error", "needs": "needs a CUDA GPU with TensorRT"}
    assert column_fold([cell("skip"), cell("fail")], needs_gpu) is None
    assert column_fold([cell("skip"), cell("pass")], needs_gpu) is None
    # a skip whose stand-in stages cleared the bug's point is good (rules.verdict): no fold
    assert column_fold([cell("skip", evidence="standin")], needs_gpu) is None
    assert column_fold([], needs_gpu) is None
    assert column_fold([cell("crash")], repro(("onnx",)))["needs"] == \
        "no machine that ran it could decide it"


def test_a_row_folds_with_the_machine_its_repros_agree_on():
    repros = {"a": repro(("cuda",), "a"), "b": repro(("cuda", "onnx"), "b"),
              "c": repro(("onnx",), "c")}
    both = row_fold([cell("skip", "a"), None, cell("skip", "b")], repros)
    assert both == {"cells": 2, "ended": "2 skip", "needs": "needs a CUDA GPU"}
    assert row_fold([cell("skip", "a"), cell("skip", "c")], repros)["needs"] == \
        "the machines that ran this stack could not decide"
    assert row_fold([cell("broken", "a"), cell("broken", "c")], repros)["needs"] == \
        "needs a machine that can build its environment"
    assert row_fold([cell("skip", "a"), cell("fail", "b")], repros) is None
    assert row_fold([None, None], repros) is None
