"""pytorch PRs #148790, #150941: ``torch.export.export`` defaults to ``strict=False`` from 2.8.

Up to 2.7 ``torch.export.export(model, args)`` traced with TorchDynamo (``strict=True``): it
reads the forward's Python bytecode, so NumPy calls on tensors are traced into ATen operators.
From 2.8 the default is ``strict=False``: the forward runs as Python on fake tensors, and the
same call stops at ``tensor.numpy()`` with ``RuntimeError: .numpy() is not supported for tensor
subclasses.``, among other differences (the PT2E quantization flow of pytorch/ao broke,
ao #2430). A changed default, not a defect: ``strict=True`` restores the old behaviour.

Stages (CPU):
- default_export (main): ``torch.export.export(model, (x,))`` with the default ``strict``, of
  a model whose forward uses NumPy on its input; the exported module is run at another input
  against eager.
- workaround_strict_true (workaround): the same with ``strict=True``, checked against eager.
"""

from __future__ import annotations

import inspect

import protocol
from protocol import Signature

META = {
    "id": "export_strict_default_changed",
    "kind": "breaking-change",
    "title": "torch.export.export defaults to strict=False from torch 2.8 (non-strict tracing)",
    "upstream": [
        "https://github.com/pytorch/pytorch/pull/148790",
        "https://github.com/pytorch/pytorch/pull/150941",
        "https://github.com/pytorch/ao/pull/2430",
    ],
    "description": (
        "torch.export.export(model, args) without strict= traces with TorchDynamo up to 2.7 "
        "and runs the forward on fake tensors (non-strict) from 2.8: PR #148790 ('Set "
        "non-strict export as default mode') flipped export's default and PR #150941 "
        "export_for_training's, as torch 2.8's release notes say under backwards-incompatible "
        "changes ('Switched default to strict=False in torch.export.export and "
        "export_for_training'). torch/export/__init__.py declares export's 'strict: bool = True' "
        "in the 2.7.1 wheel (git e2d141dbde55c2a4370fac5165b0561b6af4798b, :176) and 'strict: "
        "bool = False' in the 2.8.0 wheel (git a1cb3cc05d46d198467bebbb6e8fba50a325d4e7, :181) "
        "and the 2.9.1 wheel (:171). Where the two tracers differ, a script "
        "that exported on 2.7 fails on 2.8: a forward calling NumPy on a tensor (traced into "
        "ATen by Dynamo) stops at RuntimeError: .numpy() is not supported for tensor "
        "subclasses. The merge commits are not cited: the pytorch repository could not be "
        "fetched here, so the lines are read from the released wheels. Workaround: pass "
        "strict=True explicitly (what pytorch/ao #2430 did for the PT2E quantization flow)."
    ),
    "requires": ["numpy", "torch>=2.3"],
    "expect": [
        {"when": {"torch": ">=2.8"}, "status": "fail",
         "note": "torch/export/__init__.py:181 in the 2.8.0 wheel (:171 in 2.9.1): 'strict: bool = "
                 "False' (torch 2.8 release notes, backwards-incompatible changes)"},
        {"when": {"torch": ">=2.3,<2.8"}, "status": "pass",
         "note": "torch/export/__init__.py declares 'strict: bool = True' in the 2.7.1 wheel (:176) "
                 "and the 2.5.1 wheel (:170) "
                 "(2.2 is not claimed: its NumPy bridge cannot use the NumPy 2.x it gets)"},
    ],
}

SIGNATURES = [
    Signature(
        "non_strict_default_numpy", exc="RuntimeError", stage="default_export",
        when={"torch": ">=2.8"},
        pattern=r"\.numpy\(\) is not supported for tensor subclasses",
        note="the non-strict tracer runs the forward on FakeTensors (recorded on 2.9.1)"),
]


def build_model():
    import numpy as np
    import torch

    class NumpyForward(torch.nn.Module):
        """A forward that calls NumPy on its input, as pre- and post-processing often does."""

        def forward(self, x):
            return torch.from_numpy(np.tanh(x.numpy())) * 2.0

    return NumpyForward().eval()


def where_defined(s):
    import torch

    fn = torch.export.export
    s.note("strict_default", repr(inspect.signature(fn).parameters["strict"].default))
    try:
        s.note("defined_at", "%s:%d" % (inspect.getsourcefile(fn).split("site-packages/")[-1],
                                        inspect.getsourcelines(fn)[1]))
    except (OSError, TypeError):
        pass


def export_and_check(s, what, **kwargs):
    import torch

    model = build_model()
    torch.manual_seed(0)
    ep = torch.export.export(model, (torch.randn(2, 3),), **kwargs)
    ops = sorted({str(n.target) for n in ep.graph.nodes if n.op == "call_function"})
    s.note("graph_ops", ops)
    x = torch.randn(2, 3)
    with torch.no_grad():
        s.check_close(ep.module()(x), model(x), what=what)


def stage_default(s):
    where_defined(s)
    export_and_check(s, "torch.export.export (default strict) vs eager")


def stage_strict(s):
    export_and_check(s, "torch.export.export(strict=True) vs eager", strict=True)


def main(r):
    r.stage("default_export", stage_default, requires=["torch>=2.3", "numpy"])
    r.stage("workaround_strict_true", stage_strict, role="workaround", requires=["torch>=2.3", "numpy"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
