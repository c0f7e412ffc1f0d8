"""pytorch #168969: the ONNX dynamo export of ``unbind`` over a dimension of size 1 fails.

``torch.onnx.export(..., dynamo=True)`` translates ``aten::unbind.int`` with onnxscript's
torchlib. From onnxscript 0.5.4 (PR #2597) a static dimension is split with
``op.Split(self, axis=dim, num_outputs=n)`` and the outputs are iterated; with ``n == 1``
the traced ``Split`` returns one ``SymbolicTensor``, not a sequence, so the export stops at
``TypeError: 'SymbolicTensor' object is not iterable``. ``nn.LSTM`` and ``nn.GRU`` unbind
such a dimension when they are decomposed (one layer, or a batch of one), which is how
users meet it. Fixed in onnxscript 0.5.7 (PR #2684 makes the outputs a list; PR #2719 then
slices each element).

Stages (CPU; onnx's reference evaluator runs the model, so onnxruntime is not needed):
- dynamo_export (main): ``x.unbind(1)`` on a ``(2, 1, 3)`` input, the parts mapped and
  stacked again, exported with ``dynamo=True``, run and compared with eager.
- size_three (info): the same on a ``(2, 3, 3)`` input: ``n == 3`` gives a sequence, so
  this passes wherever the main stage fails for the size-1 split alone.
- workaround_legacy (workaround): the size-1 model exported with ``dynamo=False`` (the
  TorchScript exporter does not use torchlib).
"""

from __future__ import annotations

import io

import protocol
from protocol import Signature

META = {
    "id": "onnx_unbind_size_one",
    "kind": "bug",
    "title": "ONNX dynamo export: unbind over a dimension of size 1 fails, 'SymbolicTensor' "
             "object is not iterable (onnxscript 0.5.4 to 0.5.6)",
    "upstream": [
        "https://github.com/pytorch/pytorch/issues/168969",
        "https://github.com/microsoft/onnxscript/pull/2684",
        "https://github.com/microsoft/onnxscript/pull/2719",
        "https://github.com/microsoft/onnxscript/pull/2597",
    ],
    "description": (
        "torch.onnx.export(..., dynamo=True) of a model that unbinds a dimension of size 1 "
        "(an LSTM or GRU with one layer or a batch of one, x.unbind(dim)) fails with "
        "TypeError: 'SymbolicTensor' object is not iterable. onnxscript's aten_unbind splits "
        "a static dimension with op.Split(self, axis=dim, num_outputs=self.shape[dim]) and "
        "iterates the result (onnxscript/function_libs/torch_lib/ops/core.py:8565-8569 in "
        "v0.5.6, on torch 2.7 and later); with one output the traced Split is one tensor, not "
        "a sequence. Brought by PR #2597 (commit 075fc4d1401e4fb0f9f24c157c0df7c747491bcf, "
        "first in v0.5.4; v0.5.3 returns op.SplitToSequence, core.py:8767). Fixed by PR #2684 "
        "(commit 478acf741471a4764d507d52a4ca6b544a63fc86, the outputs made a list) and PR "
        "#2719 (commit 597d5f7273b5f6a1a758dcc4d2b1cdf0c1c84d75, one Slice per element, "
        "core.py:9278-9292 in v0.5.7), both first in v0.5.7. Workaround: export with "
        "dynamo=False (the TorchScript exporter), or install onnxscript 0.5.7 or later."
    ),
    "requires": ["onnx", "onnxscript", "torch>=2.9"],
    "expect": [
        {"when": {"onnxscript": ">=0.5.7"}, "status": "pass",
         "note": "PR #2684 and PR #2719: one Slice and Squeeze per element, "
                 "onnxscript/function_libs/torch_lib/ops/core.py:9278-9292 in v0.5.7"},
        {"when": {"onnxscript": ">=0.5.4,<0.5.7"}, "status": "fail",
         "note": "PR #2597: outputs = op.Split(..., num_outputs=self.shape[dim]) iterated, "
                 "core.py:8565-8569 in v0.5.6"},
        {"when": {"onnxscript": "<0.5.4"}, "status": "pass",
         "note": "op.SplitToSequence(self, axis=dim, keepdims=False), core.py:8767 in v0.5.3"},
    ],
}

SIGNATURES = [
    Signature(
        "unbind_split_not_iterable", exc="TypeError", stage="dynamo_export",
        pattern=r"'SymbolicTensor' object is not iterable",
        note="onnxscript's aten_unbind iterates a one-output Split (pytorch #168969)"),
]


def build(size):
    import torch

    class Unbind(torch.nn.Module):
        def forward(self, x):
            return torch.stack([part * 2.0 + 1.0 for part in x.unbind(1)], dim=1)

    torch.manual_seed(0)
    x = torch.randn(2, size, 3)
    model = Unbind().eval()
    with torch.no_grad():
        ref = model(x)
    return model, x, ref


def run_onnx(s, proto, x, ref, what):
    import onnx
    import torch
    from onnx.reference import ReferenceEvaluator

    s.note("onnx_ops", sorted({n.op_type for n in proto.graph.node}))
    s.note("checked_with", "onnx.reference (onnx %s)" % onnx.__version__)
    ev = ReferenceEvaluator(proto)
    out = ev.run(None, {ev.input_names[0]: x.numpy()})[0]
    s.check_close(torch.from_numpy(out), ref, what=what, rtol=1e-5, atol=1e-6)


def dynamo(size):
    def stage(s):
        import torch

        model, x, ref = build(size)
        program = torch.onnx.export(model, (x,), dynamo=True, verbose=False)
        run_onnx(s, program.model_proto, x, ref, "ONNX unbind of size %d (dynamo=True) vs eager" % size)
    return stage


def stage_legacy(s):
    import onnx
    import torch

    model, x, ref = build(1)
    buf = io.BytesIO()
    torch.onnx.export(model, (x,), buf, dynamo=False)
    run_onnx(s, onnx.load_from_string(buf.getvalue()), x, ref,
             "ONNX unbind of size 1 (dynamo=False) vs eager")


def main(r):
    r.stage("dynamo_export", dynamo(1), requires=["torch>=2.9.0a0", "onnx", "onnxscript"])
    r.stage("size_three", dynamo(3), role="info", requires=["torch>=2.9.0a0", "onnx", "onnxscript"])
    r.stage("workaround_legacy", stage_legacy, role="workaround", requires=["torch>=2.9.0a0", "onnx"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
