"""pytorch PR #169151: the PT2E quantization flow is deleted from torch (2.11).

``prepare_pt2e`` / ``convert_pt2e`` (``torch.ao.quantization.quantize_pt2e``) with a
quantizer from ``torch.ao.quantization.quantizer`` was torch's path from an exported
model to an int8 graph (ExecuTorch, TensorRT, OpenVINO and X86 inductor lowerings start
from it). Deprecated in 2.9 for torchao ("will be removed in 2.10"), it was deleted by PR
#169151; a script written for 2.5 to 2.10 stops at its import with
``ModuleNotFoundError: No module named 'torch.ao.quantization.quantize_pt2e'``. An API
removal, not a defect: the cell says whether the flow still runs on the stack.

Stages (CPU):
- pt2e_quantize (main): the whole flow as the 2.9 docs give it: ``torch.export.export``,
  ``prepare_pt2e`` with the XNNPACK quantizer (symmetric int8) from where torch ships it,
  calibration, ``convert_pt2e``; the converted graph must hold quantize and dequantize
  nodes, and its output must be close to eager within the quantization's error.

No workaround stage: the replacement, ``torchao.quantization.pt2e`` with the XNNPACK
quantizer from ExecuTorch, is no part of the stack the catalog installs.
"""

from __future__ import annotations

import warnings

import protocol
from protocol import Signature

META = {
    "id": "pt2e_quant_removed",
    "kind": "breaking-change",
    "title": "torch.ao.quantization.quantize_pt2e (prepare_pt2e, convert_pt2e) removed from torch 2.11",
    "upstream": [
        "https://github.com/pytorch/pytorch/pull/169151",
        "https://github.com/pytorch/pytorch/issues/157591",
    ],
    "description": (
        "from torch.ao.quantization.quantize_pt2e import prepare_pt2e, convert_pt2e raises "
        "ModuleNotFoundError: No module named 'torch.ao.quantization.quantize_pt2e' from torch "
        "2.11: the PT2E flow moved to torchao (tracker #157591) and was deleted by PR #169151 "
        "('Delete pt2e flow from pytorch/pytorch since it's migrated to torchao'; commit "
        "0e38e0291ccb84d0ff0314846014f65c7080e1de as cited by pytorch/ao PR #3542, not read "
        "here). The 2.9.1 wheel (git 5811a8d7da873dd699ff6687092c225caffcf1bb) has "
        "torch/ao/quantization/quantize_pt2e.py (:35 'def prepare_pt2e(', :212 'def "
        "convert_pt2e(', both deprecated with torch/ao/quantization/utils.py:820-821 'torch.ao."
        "quantization is deprecated and will be removed in 2.10') and "
        "torch/ao/quantization/quantizer/xnnpack_quantizer.py:245 'class XNNPACKQuantizer'; the "
        "2.10.0 wheel (git 449b1768410104d3ed79d3bcfe4ba1d65c7f22c0) still has both files "
        "(quantize_pt2e.py:35 and :212); the 2.11.0 wheel (git "
        "70d99e998b4955e0049d13a98d77ae1b14db1f45) and the 2.12.1 wheel (git "
        "7269437d655783a26cba32aa88195b741ff496aa) have neither, nor torch/ao/quantization/pt2e/. "
        "The pytorch repository could not be fetched here. Workaround: the same flow from torchao "
        "(torchao.quantization.pt2e.quantize_pt2e) with the XNNPACK quantizer from ExecuTorch "
        "(executorch.backends.xnnpack.quantizer), or stay below torch 2.11."
    ),
    "requires": ["torch>=2.5"],
    "expect": [
        {"when": {"torch": ">=2.11"}, "status": "fail",
         "note": "torch/ao/quantization/quantize_pt2e.py is absent from the 2.11.0 wheel (and "
                 "from 2.12.1, 2.13.0 and 2.14.1)"},
        {"when": {"torch": ">=2.5,<2.11"}, "status": "pass",
         "note": "torch/ao/quantization/quantize_pt2e.py:35 prepare_pt2e in the 2.9.1 wheel; the "
                 "2.10.0 wheel still ships the module"},
    ],
}

SIGNATURES = [
    Signature(
        "quantize_pt2e_module_removed", exc="ModuleNotFoundError", stage="pt2e_quantize",
        when={"torch": ">=2.11"},
        pattern=r"No module named 'torch\.ao\.quantization\.quantize_pt2e'",
        note="PR #169151 deleted the module (recorded on 2.12.1, 2.13.0 and 2.14.1)"),
]

Q_OPS = ("quantize_per_tensor", "dequantize_per_tensor")


def build_model():
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(8 * 6 * 6, 4)).eval()


def stage_pt2e(s):
    import torch
    from torch.ao.quantization.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torch.ao.quantization.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )

    model, x = build_model(), torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        ref = model(x)
    gen = torch.Generator().manual_seed(1)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", DeprecationWarning)
        quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config())
        prepared = prepare_pt2e(torch.export.export(model, (x,)).module(), quantizer)
        for _ in range(8):  # calibration
            prepared(torch.randn(2, 3, 8, 8, generator=gen))
        prepared(x)
        converted = convert_pt2e(prepared)
        with torch.no_grad():
            out = converted(x)
    s.note("deprecations", sorted({str(w.message).splitlines()[0] for w in seen
                                   if issubclass(w.category, DeprecationWarning)}))
    q_nodes = [str(n.target) for n in converted.graph.nodes
               if n.op == "call_function" and any(op in str(n.target) for op in Q_OPS)]
    s.note("quantize_dequantize_nodes", len(q_nodes))
    s.check(len(q_nodes) >= 4, "the converted graph quantizes (quantize and dequantize nodes)",
            found=sorted(set(q_nodes)))
    # int8 per-tensor: a few quantization steps of this model's outputs (measured max 0.0046)
    s.check_close(out, ref, what="int8 PT2E (XNNPACK quantizer) vs eager", rtol=0.05, atol=0.03)


def main(r):
    r.stage("pt2e_quantize", stage_pt2e, requires=["torch>=2.5.0a0"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
