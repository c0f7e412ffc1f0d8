"""pytorch #165748: the dynamo ONNX exporter drops the axis names given in ``dynamic_axes``.

``torch.onnx.export(..., dynamo=True)`` (opt-in from 2.5, the default from 2.9) with the
legacy-style ``dynamic_axes={"x": {0: "b"}, ...}`` writes torch.export's symbols (``s0``,
``s31``) as the ONNX ``dim_param`` instead of ``b``, from 2.5 on; 2.9 made it every
default export's problem. Torch 2.9's conversion from ``dynamic_axes`` to
``dynamic_shapes`` turned every named axis into ``Dim.DYNAMIC``, so no name was left for
the rename pass after the export. The model is still dynamic, but its interface changed:
whatever addresses dims by name (onnxruntime's free-dimension overrides, serving configs,
checks that input and output share ``b``) breaks, for export scripts that worked with the
TorchScript exporter. Fixed by PR #165769 (merged before the 2.10 branch).

Stages (CPU; onnx's reference evaluator runs the model):
- dynamo_export (main): the export with ``input_names``, ``output_names`` and named
  ``dynamic_axes``; the model run at another batch (3; example 2) and compared with
  eager, then the check that every input's and output's dim 0 is named ``b``. Bad
  releases fail that check with torch's symbol there (signature ``dynamic_axes_name_lost``).
- workaround_legacy (workaround): ``dynamo=False``, the TorchScript exporter, which
  writes the names on every release; checked the same way. (``dynamic_shapes`` with string
  names, ``{"x": {0: "b"}}``, also keeps them but costs a second dynamo export.)
"""

from __future__ import annotations

import os
import tempfile

import protocol
from protocol import Signature

META = {
    "id": "onnx_dynamic_axes_names_dropped",
    "kind": "bug",
    "title": "Dynamo ONNX export: dynamic_axes names replaced by torch.export symbols (s31)",
    "upstream": [
        "https://github.com/pytorch/pytorch/issues/165748",
        "https://github.com/pytorch/pytorch/pull/165769",
    ],
    "description": (
        "torch.onnx.export(dynamo=True) with dynamic_axes={'x': {0: 'b'}} names the axis 's31' "
        "(torch.export's symbol), not 'b', from torch 2.5 (where dynamo=True is opt-in; 2.5 to "
        "2.8 write 's0') to 2.9, whose exporter is the default. In the 2.9.1 wheel (git "
        "5811a8d7da873dd699ff6687092c225caffcf1bb) "
        "torch/onnx/_internal/exporter/_dynamic_shapes.py:65-66 maps every named axis to "
        "torch.export.Dim.DYNAMIC, so _compat.py:204-205 never calls _rename_dynamic_axes. "
        "Fixed by PR #165769 ('Support renaming in dynamic axes to shapes conversion', fixes "
        "#165748): in the 2.12.1 wheel (git 7269437d655783a26cba32aa88195b741ff496aa) "
        "_dynamic_shapes.py:74-75 keeps the names ('str will be converted to Dim.DYNAMIC in "
        "convert_str_to_export_dim') and the rename runs (_compat.py:179-180); same in 2.14.1. "
        "The merge commit is not cited: the pytorch repository could not be fetched here, so "
        "the lines are read from the released wheels. Workarounds: dynamic_shapes with string "
        "names, dynamo=False, or torch >= 2.10."
    ),
    "requires": ["onnx", "onnxscript", "torch>=2.5"],
    "expect": [
        {"when": {"torch": ">=2.10"}, "status": "pass",
         "note": "PR #165769 (merged 2025-10-17, before the 2.10 branch): "
                 "torch/onnx/_internal/exporter/_dynamic_shapes.py:74-75 keeps the names and "
                 "_compat.py:179-180 renames the axes in the 2.12.1 wheel; the same in 2.14.1"},
        {"when": {"torch": ">=2.5,<2.10"}, "status": "fail",
         "note": "2.9.1 wheel: _dynamic_shapes.py:65-66 maps every named axis to Dim.DYNAMIC, so "
                 "_compat.py:204-205 never renames (2.9.0 in #165748). Before 2.9 the dynamo "
                 "exporter is opt-in (dynamo=True) and writes torch.export's symbols (s0) for "
                 "the named axes too; where it loses them there is not read"},
    ],
}

SIGNATURES = [
    Signature(
        "dynamic_axes_name_lost", exc="CheckFailed", stage="dynamo_export",
        pattern=r"check failed: dim 0 of every input and output is named as in dynamic_axes "
                r"found=\{[^}]*'s\d+'",
        note="the dim_param is torch.export's symbol, not the given name (pytorch #165748)"),
]

NAME = "b"
EXAMPLE_BATCH, OTHER_BATCH = 2, 3
EXPORT_KWARGS = {"input_names": ["x", "mask"], "output_names": ["y"],
                 "dynamic_axes": {"x": {0: NAME}, "mask": {0: NAME}, "y": {0: NAME}}}


def build_model():
    import torch

    class Masked(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(4, 2)

        def forward(self, x, mask):
            return self.proj(x) * mask

    torch.manual_seed(0)
    return Masked().eval()


def dims(values):
    """name -> [dim_param or dim_value, ...] of ONNX graph inputs or outputs."""
    return {v.name: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim] for v in values}


def stage_export(s, dynamo):
    import onnx
    import torch
    from onnx.reference import ReferenceEvaluator

    import _torchutil

    model = build_model()
    example = (torch.randn(EXAMPLE_BATCH, 4), torch.ones(EXAMPLE_BATCH, 2))
    kwargs, dropped = _torchutil.supported_kwargs(torch.onnx.export, dict(EXPORT_KWARGS, dynamo=dynamo))
    s.note("dropped_kwargs", dropped)
    with tempfile.TemporaryDirectory(prefix="onnx_dynamic_axes-") as tmp:  # 2.5-2.8's dynamo
        path = os.path.join(tmp, "model.onnx")  # export takes a path, not a buffer
        torch.onnx.export(model, example, path, **kwargs)
        proto = onnx.load(path)
    found = dims(list(proto.graph.input) + list(proto.graph.output))
    s.note("onnx_dims", found)
    x, mask = torch.randn(OTHER_BATCH, 4), torch.ones(OTHER_BATCH, 2)
    out = ReferenceEvaluator(proto).run(None, {"x": x.numpy(), "mask": mask.numpy()})[0]
    with torch.no_grad():
        ref = model(x, mask)
    s.check_close(torch.from_numpy(out), ref, what="ONNX (onnx.reference) vs eager at batch %d (example %d)"
                  % (OTHER_BATCH, EXAMPLE_BATCH), rtol=1e-4, atol=1e-5)
    s.check(all(v and v[0] == NAME for v in found.values()) and set(found) == {"x", "mask", "y"},
            "dim 0 of every input and output is named as in dynamic_axes", found=found)


def main(r):
    r.stage("dynamo_export", stage_export, True, requires=["torch>=2.5.0a0", "onnx", "onnxscript"])
    r.stage("workaround_legacy", stage_export, False, role="workaround", requires=["onnx"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
