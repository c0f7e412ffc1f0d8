"""pytorch #191014: the TorchScript ONNX exporter gets ``>>`` wrong on negative signed ints.

``torch.onnx.export(..., dynamo=False)`` lowers ``x >> n`` on a signed integer tensor
to ``Div(x, 2**n)``. ONNX integer ``Div`` truncates toward zero; PyTorch's ``>>`` is an
arithmetic shift (rounds toward minus infinity), so every negative value that shifts out
a set bit comes back one too large (``-5 >> 1``: torch -3, ONNX -2). Nothing is raised:
the deployed model silently gives other numbers (quantization, bit packing, hashing).
Only ``uint8`` took ONNX ``BitShift``. Fixed in torch 2.14.0 (PR #191226): signed
int8/16/32/64 compute ``(x + m) / 2**n - m`` with ``m`` = 1 for negative elements.

Stages (CPU; onnx's reference evaluator runs the model, so onnxruntime is not needed):
- legacy_export (main): the legacy exporter at opset 17 on an int32 ``>> 1`` and an
  int64 ``>> 3``; the ONNX outputs are compared exactly with eager. Bad releases fail
  that check by exactly 1 (signature ``legacy_rshift_rounds_toward_zero``); the op list
  the exporter wrote is kept as evidence (``Div`` alone when bad; ``Less``/``Add``/
  ``Div``/``Sub`` when fixed).
- nonnegative_control (info): the same export on non-negative inputs, which ``Div``
  gets right on every release: the difference is the sign, not the export.
- workaround_floor_divide (workaround): the shift written as
  ``torch.div(x, 2**n, rounding_mode="floor")``, which the legacy exporter lowers with a
  floor fix-up on every release, compared exactly with eager. The dynamo exporter
  (``dynamo=True``, torchlib's ``BitShift`` with a sign fix-up) is right too (measured on
  2.12.1 and 2.14.1) but costs a dynamo export (7-10 s here), so it is not a stage.
"""

from __future__ import annotations

import io

import protocol
from protocol import Signature

META = {
    "id": "onnx_ts_rshift_signed",
    "kind": "silent-wrong-output",
    "title": "Legacy ONNX export: x >> n on negative signed ints rounds toward zero",
    "upstream": [
        "https://github.com/pytorch/pytorch/issues/191014",
        "https://github.com/pytorch/pytorch/pull/191226",
        "https://github.com/pytorch/pytorch/issues/139455",
    ],
    "description": (
        "torch.onnx.export(dynamo=False) lowers a signed integer right shift to ONNX Div by "
        "2**n, which truncates toward zero: negative values come back one too large "
        "(-5 >> 1 gives -2, torch gives -3). Silent wrong results; only uint8 used BitShift. "
        "Bad through torch 2.13.0 (torch/onnx/_internal/torchscript_exporter/symbolic_opset9.py "
        "__rshift_, 'rshift = g.op(\"Div\", self, two_pow)': line 2164 in the 2.9.1 wheel, "
        "git 5811a8d7da873dd699ff6687092c225caffcf1bb; line 2182 in 2.12.1, git "
        "7269437d655783a26cba32aa88195b741ff496aa; and 2.13.0, git "
        "cf30153c4c131c8164ee7798e5022d810682e2cb; symbolic_opset11.py takes BitShift for "
        "UINT8 only, then the same Div). Fixed in 2.14.0 by PR #191226 (fixes #191014): "
        "_arithmetic_rshift, Sub(Div(Add(x, m), 2**n), m), symbolic_opset9.py:2157 in the "
        "2.14.1 wheel, git 5c4886908584029761b579af026dcfb627c84070, and symbolic_opset11.py:998 "
        "now defers to it. The merge commit is not cited: the pytorch repository could not be "
        "fetched here, so the lines are read from the released wheels. Workarounds: write the "
        "shift as torch.div(x, 2**n, rounding_mode='floor'), use the dynamo exporter "
        "(dynamo=True, torch >= 2.5), or upgrade to torch 2.14."
    ),
    "requires": ["onnx"],
    "expect": [
        {"when": {"torch": ">=2.14"}, "status": "pass",
         "note": "PR #191226 (fixes #191014): _arithmetic_rshift, "
                 "torch/onnx/_internal/torchscript_exporter/symbolic_opset9.py:2157 and :2209 in "
                 "the 2.14.1 wheel, absent from the 2.13.0 wheel"},
        {"when": {"torch": ">=2.0,<2.14"}, "status": "fail",
         "note": "__rshift_ lowers a signed shift to 'rshift = g.op(\"Div\", self, two_pow)' "
                 "(symbolic_opset9.py:2182 in the 2.13.0 wheel); the lowering dates from PR "
                 "#28210 (2019) and #139455 reports it on 2.1.0"},
    ],
}

SIGNATURES = [
    Signature(
        "legacy_rshift_rounds_toward_zero", exc="CheckFailed", stage="legacy_export",
        pattern=r"check_close\(legacy ONNX vs eager, signed >>\): values differ beyond tolerance "
                r"\(max abs diff 1,",
        note="ONNX Div truncates toward zero: negative values off by exactly one (pytorch #191014)"),
]

OPSET = 17
SIGNED = [-9, -7, -5, -3, -2, -1, 0, 1, 3, 5, 7]
NONNEGATIVE = [0, 1, 2, 3, 5, 7, 8, 9]


def build_model(floor=False):
    """``a >> 1, b >> 3``; with ``floor``, the same as floor divisions (the workaround)."""
    import torch

    class Shifts(torch.nn.Module):
        def forward(self, a, b):
            return a >> 1, b >> 3

    class FloorDivides(torch.nn.Module):
        def forward(self, a, b):
            return torch.div(a, 2, rounding_mode="floor"), torch.div(b, 8, rounding_mode="floor")

    return (FloorDivides() if floor else Shifts()).eval()


def inputs(values):
    """``a``: int32 ``values``; ``b``: int64 ``8 * v + 1`` (shifted by 3)."""
    import torch

    return (torch.tensor(values, dtype=torch.int32),
            torch.tensor([v * 8 + 1 for v in values], dtype=torch.int64))


def export_and_run(s, model, args):
    """The model through ``torch.onnx.export`` and onnx's reference evaluator: its outputs."""
    import onnx
    import torch
    from onnx.reference import ReferenceEvaluator

    import _torchutil

    kwargs, dropped = _torchutil.supported_kwargs(
        torch.onnx.export, {"dynamo": False, "opset_version": OPSET, "input_names": ["a", "b"]})
    s.note("dropped_kwargs", dropped)  # before 2.5 the legacy exporter is the only one
    buf = io.BytesIO()
    torch.onnx.export(model, args, buf, **kwargs)
    proto = onnx.load_from_string(buf.getvalue())
    s.note("onnx_ops", [n.op_type for n in proto.graph.node])
    outs = ReferenceEvaluator(proto).run(None, {"a": args[0].numpy(), "b": args[1].numpy()})
    s.note("checked_with", "onnx.reference (onnx %s)" % onnx.__version__)
    return tuple(torch.from_numpy(o) for o in outs)


def stage_export(s, values, what, floor=False):
    import torch

    model = build_model(floor)
    args = inputs(values)
    with torch.no_grad():
        ref = model(*args)
    out = export_and_run(s, model, args)
    s.note("eager", [t.tolist() for t in ref])
    s.note("onnx", [t.tolist() for t in out])
    s.check([t.dtype for t in out] == [t.dtype for t in ref], "ONNX outputs keep the input dtypes",
            dtypes=[str(t.dtype) for t in out])
    s.check_close(out, ref, what=what, rtol=0.0, atol=0.0)  # integers: exact


def main(r):
    r.stage("legacy_export", stage_export, SIGNED, "legacy ONNX vs eager, signed >>", requires=["onnx"])
    r.stage("nonnegative_control", stage_export, NONNEGATIVE, "legacy ONNX vs eager, non-negative >>",
            role="info", requires=["onnx"])
    r.stage("workaround_floor_divide", stage_export, SIGNED, "legacy ONNX vs eager, floor division",
            floor=True, role="workaround", requires=["onnx"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
