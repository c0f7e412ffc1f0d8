"""onnxscript #2852: a GRU exported with ``dynamo=True`` computes another GRU.

onnxscript 0.5.7 brought a torchlib translation of ``aten::gru`` (PR #2674): from then on
``torch.onnx.export(..., dynamo=True)`` writes one ONNX ``GRU`` node per layer instead of
the decomposed matrix products it wrote before. The node leaves ``linear_before_reset`` at
ONNX's default 0, which applies the reset gate before the hidden-state linear map;
PyTorch's ``nn.GRU`` applies it after (ONNX's ``linear_before_reset=1``). Nothing is
raised: the model's outputs differ from eager by about 0.1 (pytorch #189225). Fixed in
onnxscript 0.7.1 (PR #2853). The bug is onnxscript's, not torch's: the same torch release
exports right or wrong by the onnxscript release installed beside it.

Stages (CPU; onnx's reference evaluator runs the model, which honours
``linear_before_reset``, so onnxruntime is not needed):
- dynamo_export (main): a one-layer GRU exported with ``dynamo=True``, run and compared
  with eager; the ``GRU`` node's ``linear_before_reset`` (or the ops written instead of
  one) is kept as evidence.
- workaround_legacy (workaround): the same model through the TorchScript exporter
  (``dynamo=False``), which has always written ``linear_before_reset=1``.
"""

from __future__ import annotations

import io

import protocol
from protocol import Signature

META = {
    "id": "onnx_gru_linear_before_reset",
    "kind": "silent-wrong-output",
    "title": "ONNX dynamo export: GRU written with linear_before_reset=0 (onnxscript 0.5.7 to 0.7.0)",
    "upstream": [
        "https://github.com/microsoft/onnxscript/issues/2852",
        "https://github.com/microsoft/onnxscript/pull/2853",
        "https://github.com/microsoft/onnxscript/pull/2674",
        "https://github.com/pytorch/pytorch/issues/189225",
    ],
    "description": (
        "torch.onnx.export(gru, ..., dynamo=True) writes an ONNX GRU node without "
        "linear_before_reset=1, so the exported model computes ONNX's other GRU equation "
        "(reset gate before the hidden linear map): outputs off by about 0.1, no error. "
        "Brought by onnxscript PR #2674 (commit 1a27df145b7ec03da7d316a38c2cb005cf0a45b7, "
        "first in v0.5.7): aten_gru at onnxscript/function_libs/torch_lib/ops/core.py:3881 "
        "in v0.5.7, its op.GRU calls at :4007 and :4017 without the attribute (v0.5.6 has no "
        "aten_gru: the GRU is decomposed, which v0.4.0 exports right and v0.5.x before v0.5.7 "
        "fails to export at all, 'SymbolicTensor' object is not iterable in aten_unbind, "
        "pytorch #168969, another bug); still so in v0.7.0 (core.py:4352, :4362). Fixed by PR #2853 (commit "
        "33d144535078fc06121d3cb17d32cb41f851afb0, first in v0.7.1): "
        "linear_before_reset=1 on both calls, core.py:4365 and :4375 in v0.7.1. Workaround: "
        "export with dynamo=False (the TorchScript exporter writes linear_before_reset=1), "
        "or install onnxscript 0.7.1 or later."
    ),
    "requires": ["onnx", "onnxscript", "torch>=2.9"],
    "expect": [
        {"when": {"onnxscript": ">=0.7.1"}, "status": "pass",
         "note": "PR #2853: op.GRU(..., linear_before_reset=1), "
                 "onnxscript/function_libs/torch_lib/ops/core.py:4365 and :4375 in v0.7.1"},
        {"when": {"onnxscript": ">=0.5.7,<0.7.1"}, "status": "fail",
         "note": "PR #2674's aten_gru: op.GRU without linear_before_reset, core.py:4007/:4017 "
                 "in v0.5.7, :4352/:4362 in v0.7.0"},
    ],
}

SIGNATURES = [
    Signature(
        "gru_linear_before_reset_0", exc="CheckFailed", stage="dynamo_export",
        pattern=r"check_close\(ONNX GRU \(dynamo=True\) vs eager\): values differ beyond tolerance",
        note="onnxscript's aten_gru leaves linear_before_reset at 0 (onnxscript #2852)"),
]


def build():
    import torch

    torch.manual_seed(0)
    model = torch.nn.GRU(3, 8, batch_first=True).eval()
    x = torch.randn(1, 5, 3)
    with torch.no_grad():
        ref = model(x)[0]
    return model, x, ref


def run_onnx(s, proto, x, ref, what):
    import onnx
    import torch
    from onnx.reference import ReferenceEvaluator

    grus = [n for n in proto.graph.node if n.op_type == "GRU"]
    s.note("onnx_ops", sorted({n.op_type for n in proto.graph.node}))
    s.note("linear_before_reset", [next((a.i for a in n.attribute if a.name == "linear_before_reset"), 0)
                                   for n in grus])
    s.note("checked_with", "onnx.reference (onnx %s)" % onnx.__version__)
    ev = ReferenceEvaluator(proto)
    out = ev.run(None, {ev.input_names[0]: x.numpy()})[0]
    s.check_close(torch.from_numpy(out), ref, what=what, rtol=1e-4, atol=1e-5)


def stage_dynamo(s):
    import torch

    model, x, ref = build()
    program = torch.onnx.export(model, (x,), dynamo=True, verbose=False)
    run_onnx(s, program.model_proto, x, ref, "ONNX GRU (dynamo=True) vs eager")


def stage_legacy(s):
    import onnx
    import torch

    model, x, ref = build()
    buf = io.BytesIO()
    torch.onnx.export(model, (x,), buf, dynamo=False)
    run_onnx(s, onnx.load_from_string(buf.getvalue()), x, ref, "ONNX GRU (dynamo=False) vs eager")


def main(r):
    r.stage("dynamo_export", stage_dynamo, requires=["torch>=2.9.0a0", "onnx", "onnxscript"])
    r.stage("workaround_legacy", stage_legacy, role="workaround", requires=["torch>=2.9.0a0", "onnx"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
