"""pytorch #166797: two bias-free Conv+BatchNorm branches on one input export with one bias.

onnxscript 0.5.0 made its BatchNorm fusion a default rewrite rule (PR #2553), and
``torch.onnx.export(..., dynamo=True)`` runs onnxscript's default rules when it optimizes
the model. Fusing a ``Conv`` without a bias names the new bias after the Conv's *input*
(``x.name + "_bias"``). Two such Convs reading the same tensor (a ResNet block and its
downsample branch, both after the max-pool) get initializers of the same name: one
branch ends with the other's bias. Nothing is raised; ResNet-18 classifies at chance
(pytorch #166797, #169178). Fixed in onnxscript 0.5.7 (PR #2680): the bias is named
after the Conv's weight.

Stages (CPU; onnx's reference evaluator runs the model, so onnxruntime is not needed):
- dynamo_export (main): ``bn_a(conv_a(x)) + bn_b(conv_b(x))`` (both Convs without bias,
  running statistics and affine parameters made non-trivial), exported with
  ``dynamo=True, optimize=True``, run and compared with eager; the initializers' names
  are kept as evidence.
- workaround_no_optimize (workaround): the same export with ``optimize=False``: no
  fusion, so nothing collides.
"""

from __future__ import annotations

import protocol
from protocol import Signature

META = {
    "id": "onnx_fuse_batchnorm_bias_collision",
    "kind": "silent-wrong-output",
    "title": "ONNX dynamo export: BatchNorm fusion gives two bias-free Convs one bias (onnxscript 0.5.0 to 0.5.6)",
    "upstream": [
        "https://github.com/pytorch/pytorch/issues/166797",
        "https://github.com/microsoft/onnxscript/pull/2680",
        "https://github.com/microsoft/onnxscript/pull/2553",
        "https://github.com/pytorch/pytorch/issues/169178",
    ],
    "description": (
        "torch.onnx.export(..., dynamo=True) optimizes the model with onnxscript's default "
        "rewrite rules; its BatchNorm fusion names the fused bias of a bias-free Conv after "
        "the Conv's input, so two bias-free Conv+BatchNorm branches on the same tensor (a "
        "ResNet block and its downsample) share one initializer name and one branch gets the "
        "other's bias: wrong outputs, no error (ResNet-18 at chance accuracy). Brought by "
        "onnxscript PR #2553 (commit 0e79b62b0ba1c91b8c3ea53b348d17e1da6cf58a, first in "
        "v0.5.0), which added the fusion to the default rules "
        "(onnxscript/rewriter/__init__.py:38 and :57 in v0.5.0), whose "
        "onnxscript/rewriter/rules/common/_fuse_batchnorm.py:71 reads 'bias_name = x.name + "
        "\"_bias\"' in v0.5.0 to v0.5.6. Fixed by PR #2680 (commit "
        "8845fb22911efda49aa22770ddafbfce48d38821, first in v0.5.7): the name is taken from "
        "the Conv's weight, _fuse_batchnorm.py:74 in v0.5.7. Workaround: export with "
        "optimize=False (no fusion), or install onnxscript 0.5.7 or later."
    ),
    "requires": ["onnx", "onnxscript", "torch>=2.9"],
    "expect": [
        {"when": {"onnxscript": ">=0.5.7"}, "status": "pass",
         "note": "PR #2680: bias_name = inbound_node.inputs[1].name + \"_bias\", "
                 "onnxscript/rewriter/rules/common/_fuse_batchnorm.py:74 in v0.5.7"},
        {"when": {"onnxscript": ">=0.5.0,<0.5.7"}, "status": "fail",
         "note": "PR #2553 made the fusion a default rule (rewriter/__init__.py:57 in v0.5.0); "
                 "bias_name = x.name + \"_bias\", _fuse_batchnorm.py:71 in v0.5.0 to v0.5.6"},
        {"when": {"onnxscript": "<0.5.0"}, "status": "pass",
         "note": "the fusion is not among the default rules before v0.5.0"},
    ],
}

SIGNATURES = [
    Signature(
        "fused_bias_name_collision", exc="CheckFailed", stage="dynamo_export",
        pattern=r"check_close\(ONNX Conv\+BatchNorm \(optimize=True\) vs eager\): values differ "
                r"beyond tolerance",
        note="the fused biases of two bias-free Convs on one input share a name (pytorch #166797)"),
]


def build():
    import torch

    class TwoBranches(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv_a = torch.nn.Conv2d(3, 4, 3, padding=1, bias=False)
            self.bn_a = torch.nn.BatchNorm2d(4)
            self.conv_b = torch.nn.Conv2d(3, 4, 1, bias=False)
            self.bn_b = torch.nn.BatchNorm2d(4)

        def forward(self, x):
            return self.bn_a(self.conv_a(x)) + self.bn_b(self.conv_b(x))

    torch.manual_seed(0)
    model = TwoBranches().eval()
    with torch.no_grad():
        for bn in (model.bn_a, model.bn_b):
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
            bn.weight.uniform_(0.5, 2)
            bn.bias.uniform_(-1, 1)
    x = torch.randn(1, 3, 6, 6)
    with torch.no_grad():
        ref = model(x)
    return model, x, ref


def stage_export(s, optimize, what):
    import onnx
    import torch
    from onnx.reference import ReferenceEvaluator

    model, x, ref = build()
    program = torch.onnx.export(model, (x,), dynamo=True, optimize=optimize, verbose=False)
    proto = program.model_proto
    s.note("onnx_ops", sorted({n.op_type for n in proto.graph.node}))
    s.note("initializers", sorted(i.name for i in proto.graph.initializer))
    s.note("checked_with", "onnx.reference (onnx %s)" % onnx.__version__)
    ev = ReferenceEvaluator(proto)
    out = ev.run(None, {ev.input_names[0]: x.numpy()})[0]
    s.check_close(torch.from_numpy(out), ref, what=what, rtol=1e-4, atol=1e-5)


def main(r):
    r.stage("dynamo_export", stage_export, True, "ONNX Conv+BatchNorm (optimize=True) vs eager",
            requires=["torch>=2.9.0a0", "onnx", "onnxscript"])
    r.stage("workaround_no_optimize", stage_export, False,
            "ONNX Conv+BatchNorm (optimize=False) vs eager", role="workaround",
            requires=["torch>=2.9.0a0", "onnx", "onnxscript"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
