"""pytorch #166797: two bias-free Conv+BatchNorm branches on one input export with one bias.

``torch.onnx.export(..., dynamo=True)`` optimizes the model with onnxscript's default rewrite
rules. Their BatchNorm fusion (a default rule since onnxscript 0.5.0, PR #2553) names the
fused bias of a Conv without a bias after the Conv's *input* (``x.name + "_bias"``): two
such Convs reading the same tensor (a ResNet block and its downsample branch, both after
the max-pool) get initializers of the same name, and one branch ends with the other's
bias. Nothing is raised; ResNet-18 classifies at chance (pytorch #166797, #169178). Fixed
in onnxscript 0.5.7 (PR #2680): the bias is named after the Conv's weight.

On a torch export the fusion fires only from onnxscript 0.5.5 (first on PyPI as 0.5.6):
torchlib gives a bias-free Conv a zero bias computed in the graph; before PR #2650 constant
folding turned it into a ``Constant`` node, not an initializer, and the fusion's check
refuses a Conv whose inputs are not initializers, so 0.5.0 to 0.5.4 leave the BatchNorms
unfused (measured on torch 2.9.1). From 0.5.5 the folded bias is an initializer,
``remove_optional_bias`` (PR #2635) drops it as all zeros, and the fusion names the new
bias after the input.

Stages (CPU; onnx's reference evaluator runs the model, so onnxruntime is not needed):
- dynamo_export (main): ``bn_a(conv_a(x)) + bn_b(conv_b(x))`` (both Convs without bias,
  running statistics and affine parameters made non-trivial), exported with
  ``dynamo=True, optimize=True``, run and compared with eager; the initializers' names
  are kept as evidence (one ``x_bias`` when bad).
- workaround_no_optimize (workaround): the same export with ``optimize=False``: no
  fusion, so nothing collides.
"""

from __future__ import annotations

import protocol
from protocol import Signature

META = {
    "id": "onnx_fuse_batchnorm_bias_collision",
    "kind": "silent-wrong-output",
    "title": "ONNX dynamo export: BatchNorm fusion gives two bias-free Convs one bias (onnxscript 0.5.6)",
    "upstream": [
        "https://github.com/pytorch/pytorch/issues/166797",
        "https://github.com/microsoft/onnxscript/pull/2680",
        "https://github.com/microsoft/onnxscript/pull/2553",
        "https://github.com/microsoft/onnxscript/pull/2650",
        "https://github.com/pytorch/pytorch/issues/169178",
    ],
    "description": (
        "torch.onnx.export(..., dynamo=True) optimizes the model with onnxscript's default "
        "rewrite rules; its BatchNorm fusion names the fused bias of a bias-free Conv after "
        "the Conv's input, so two bias-free Conv+BatchNorm branches on the same tensor (a "
        "ResNet block and its downsample) share one initializer name and one branch gets the "
        "other's bias: wrong outputs, no error (ResNet-18 at chance accuracy). The naming is "
        "'bias_name = x.name + \"_bias\"' at "
        "onnxscript/rewriter/rules/common/_fuse_batchnorm.py:71 from v0.5.0 (PR #2553, commit "
        "0e79b62b0ba1c91b8c3ea53b348d17e1da6cf58a, made the fusion a default rule, "
        "rewriter/__init__.py:57) to v0.5.6. On a torch export it bites from v0.5.5 (no PyPI "
        "release; 0.5.6 on PyPI): torchlib gives a bias-free Conv a computed zero bias, which "
        "constant folding made a Constant node up to v0.5.4 (_constant_folding.py:1042 "
        "new_constant) and an initializer from v0.5.5 (new_initializer, PR #2650, commit "
        "9e0366cc6410776a5e2dfae6b92b0c864e2a4127); the fusion refuses inputs that are not "
        "initializers (_fuse_batchnorm.py:97-99 in v0.5.4, 'is not a constant initializer'), "
        "and from v0.5.5 remove_optional_bias (PR #2635, commit "
        "8a94ad646440f462dd9ae1de6b303fe5f7b7f564, rewriter/__init__.py:59 in v0.5.6) drops "
        "the zero bias first. Fixed by PR #2680 (commit "
        "8845fb22911efda49aa22770ddafbfce48d38821, first in v0.5.7): the name is taken from "
        "the Conv's weight, _fuse_batchnorm.py:74 in v0.5.7. Workaround: export with "
        "optimize=False (no fusion), or install onnxscript 0.5.7 or later."
    ),
    "requires": ["onnx", "onnxscript", "torch>=2.9"],
    "expect": [
        {"when": {"onnxscript": ">=0.5.7"}, "status": "pass",
         "note": "PR #2680: bias_name = inbound_node.inputs[1].name + \"_bias\", "
                 "onnxscript/rewriter/rules/common/_fuse_batchnorm.py:74 in v0.5.7"},
        {"when": {"onnxscript": ">=0.5.5,<0.5.7"}, "status": "fail",
         "note": "bias_name = x.name + \"_bias\" (_fuse_batchnorm.py:71 in v0.5.6), reached on a "
                 "torch export once constant folding makes initializers (PR #2650, v0.5.5)"},
        {"when": {"onnxscript": "<0.5.5"}, "status": "pass",
         "note": "no fusion on a torch export: the Conv's folded zero bias is a Constant node "
                 "(_constant_folding.py:1042 new_constant in v0.5.4), which the fusion's check "
                 "refuses (_fuse_batchnorm.py:97-99 in v0.5.4); before v0.5.0 it is no default rule"},
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
