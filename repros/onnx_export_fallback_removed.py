"""pytorch PR #173189: ``torch.onnx.export(..., fallback=True)`` is refused from torch 2.11.

Up to 2.10, ``torch.onnx.export(model, args, dynamo=True, fallback=True)`` was the
documented way to try the dynamo exporter and fall back to the TorchScript one when it
failed. PR #173189 ("[ONNX] Remove the fallback option") removed the parameter: export
scripts written for 2.6 to 2.10 stop with ``TypeError: export() got an unexpected keyword
argument 'fallback'`` before any export work. An API removal, not a defect: the cell says
whether a caller's ``fallback=`` still works on the stack.

Stages (CPU; onnx's reference evaluator runs the model):
- export_with_fallback (main): the call with ``dynamo=True, fallback=True``; the returned
  ``ONNXProgram``'s model run and compared with eager.
- workaround_legacy (workaround): the fallback written out, ``dynamo=False`` (the
  TorchScript exporter the option fell back to), checked the same way.
"""

from __future__ import annotations

import io

import protocol
from protocol import Signature

META = {
    "id": "onnx_export_fallback_removed",
    "kind": "breaking-change",
    "title": "torch.onnx.export(fallback=True) refused from torch 2.11",
    "upstream": [
        "https://github.com/pytorch/pytorch/pull/173189",
        "https://github.com/pytorch/pytorch/pull/162726",
    ],
    "description": (
        "torch.onnx.export(..., dynamo=True, fallback=True), the documented way to fall back "
        "to the TorchScript exporter up to 2.10, raises TypeError: export() got an unexpected "
        "keyword argument 'fallback' from 2.11. The parameter is in the 2.9.1 wheel (git "
        "5811a8d7da873dd699ff6687092c225caffcf1bb) at torch/onnx/__init__.py:84 ('fallback: "
        "bool = False', passed on at :317) and gone from the 2.12.1 wheel's signature (git "
        "7269437d655783a26cba32aa88195b741ff496aa), whose docstring says '.. versionchanged:: "
        "2.11 ``fallback`` option has been removed.' (torch/onnx/__init__.py:280-281); removed "
        "by PR #173189 (its default had turned False in 2.9, PR #162726). The merge commit is "
        "not cited: the pytorch repository could not be fetched here, so the lines are read "
        "from the released wheels. Workaround: drop fallback= and call the exporter again "
        "with dynamo=False where the dynamo export fails."
    ),
    "requires": ["onnx", "onnxscript", "torch>=2.5"],
    "expect": [
        {"when": {"torch": ">=2.11"}, "status": "fail",
         "note": "torch/onnx/__init__.py:280-281 in the 2.12.1 wheel: '.. versionchanged:: 2.11 "
                 "``fallback`` option has been removed'"},
        {"when": {"torch": ">=2.5,<2.11"}, "status": "pass",
         "note": "torch/onnx/__init__.py:84 in the 2.9.1 wheel: export(..., fallback: bool = False), "
                 "documented at :157"},
    ],
}

SIGNATURES = [
    Signature(
        "fallback_keyword_removed", exc="TypeError", stage="export_with_fallback", when={"torch": ">=2.11"},
        pattern=r"export\(\) got an unexpected keyword argument 'fallback'",
        note="PR #173189 removed the parameter (recorded on 2.12.1 and 2.14.1)"),
]


def build_model():
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).eval()


def run_onnx(s, proto, x, ref, what):
    import onnx
    import torch
    from onnx.reference import ReferenceEvaluator

    s.note("checked_with", "onnx.reference (onnx %s)" % onnx.__version__)
    ev = ReferenceEvaluator(proto)
    out = ev.run(None, {ev.input_names[0]: x.numpy()})[0]
    s.check_close(torch.from_numpy(out), ref, what=what, rtol=1e-4, atol=1e-5)


def stage_fallback(s):
    import torch

    model, x = build_model(), torch.randn(2, 3)
    with torch.no_grad():
        ref = model(x)
    program = torch.onnx.export(model, (x,), dynamo=True, fallback=True)
    s.note("returned", type(program).__name__)
    run_onnx(s, program.model_proto, x, ref, "ONNX (dynamo=True, fallback=True) vs eager")


def stage_legacy(s):
    import onnx
    import torch

    model, x = build_model(), torch.randn(2, 3)
    with torch.no_grad():
        ref = model(x)
    buf = io.BytesIO()
    torch.onnx.export(model, (x,), buf, dynamo=False)
    run_onnx(s, onnx.load_from_string(buf.getvalue()), x, ref, "ONNX (dynamo=False) vs eager")


def main(r):
    r.stage("export_with_fallback", stage_fallback, requires=["torch>=2.5.0a0", "onnx", "onnxscript"])
    r.stage("workaround_legacy", stage_legacy, role="workaround", requires=["torch>=2.5.0a0", "onnx"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
