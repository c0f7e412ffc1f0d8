"""pytorch PR #159646: a plain ``torch.onnx.export(model, args, f)`` takes the dynamo path from 2.9.

Up to 2.8 ``torch.onnx.export``'s ``dynamo`` parameter defaulted to ``False``: a call that
names no exporter ran the TorchScript exporter, returned ``None`` and wrote one ``.onnx``
file. From 2.9 it defaults to ``True``: the same call goes through ``torch.export`` and
onnxscript (``No module named 'onnxscript'`` where that is not installed), returns an
``ONNXProgram``, and writes the weights beside the model as ``<f>.data`` (``external_data``
defaults to ``True``). A changed default, not a defect: deployment scripts that copy only the
``.onnx`` file, or read the legacy graph's node names, break on the upgrade.

Stages (CPU; onnx's reference evaluator runs the model):
- default_export (main): ``torch.onnx.export(model, (x,), path)`` with nothing else; the
  file is run against eager, then the call is checked to have used the TorchScript exporter
  (returned ``None``, wrote only ``path``).
- workaround_dynamo_false (workaround): the same call with ``dynamo=False``: the TorchScript
  exporter on every release, one file, checked against eager.
"""

from __future__ import annotations

import inspect
import os
import shutil
import tempfile
import warnings

import protocol
from protocol import Signature

META = {
    "id": "onnx_export_dynamo_default",
    "kind": "breaking-change",
    "title": "torch.onnx.export defaults to the dynamo exporter from torch 2.9 (dynamo=True)",
    "upstream": [
        "https://github.com/pytorch/pytorch/pull/159646",
        "https://github.com/open-edge-platform/anomalib/issues/3050",
        "https://github.com/unit8co/darts/pull/2930",
    ],
    "description": (
        "torch.onnx.export(model, args, f), with no dynamo= argument, runs the TorchScript "
        "exporter up to 2.8 and the torch.export-based exporter from 2.9: it then needs "
        "onnxscript (No module named 'onnxscript' without it), returns an ONNXProgram instead "
        "of None and writes the weights to a second file, f + '.data' (external_data=True). "
        "The 2.8.0 wheel (git a1cb3cc05d46d198467bebbb6e8fba50a325d4e7) declares 'dynamo: bool "
        "= False' (torch/onnx/__init__.py:133) and the 2.9.1 wheel (git "
        "5811a8d7da873dd699ff6687092c225caffcf1bb) 'dynamo: bool = True' "
        "(torch/onnx/__init__.py:72, with '.. versionchanged:: 2.9 *dynamo* is now True by "
        "default.' at :278-279; the branch at :281 takes the dynamo path); changed by PR "
        "#159646 ('[ONNX] Default to dynamo export'), whose merge commit is not cited: the "
        "pytorch repository could not be fetched here, so the lines are read from the released "
        "wheels. Workaround: pass dynamo=False to keep the TorchScript exporter and its single "
        "file, or keep the .data file beside the .onnx file."
    ),
    "requires": ["onnx", "onnxscript", "torch>=2.5"],
    "expect": [
        {"when": {"torch": ">=2.9"}, "status": "fail",
         "note": "torch/onnx/__init__.py:72 in the 2.9.1 wheel: 'dynamo: bool = True' "
                 "('.. versionchanged:: 2.9' at :278)"},
        {"when": {"torch": ">=2.5,<2.9"}, "status": "pass",
         "note": "the 2.8.0 wheel's torch/onnx/__init__.py:133 declares 'dynamo: bool = False': "
                 "a call without it runs the TorchScript exporter"},
    ],
}

SIGNATURES = [
    Signature(
        "default_export_took_dynamo", exc="CheckFailed", stage="default_export",
        when={"torch": ">=2.9"},
        pattern=r"torch\.onnx\.export\(model, args, f\) ran the TorchScript exporter .*"
                r"returned=ONNXProgram",
        note="PR #159646 turned dynamo's default to True (recorded on 2.9.1)"),
    Signature(
        "default_export_needs_onnxscript", exc="ModuleNotFoundError", stage="default_export",
        when={"torch": ">=2.9"},
        pattern=r"No module named 'onnxscript'",
        note="the dynamo path imports onnxscript (anomalib #3050; darts PR #2930: the .data file too)"),
]


def build_model():
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).eval()


def run_onnx(s, path, x, ref, what):
    import onnx
    import torch
    from onnx.reference import ReferenceEvaluator

    proto = onnx.load(path)
    s.note("opset", [o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")])
    s.note("checked_with", "onnx.reference (onnx %s)" % onnx.__version__)
    ev = ReferenceEvaluator(proto)
    out = ev.run(None, {ev.input_names[0]: x.numpy()})[0]
    s.check_close(torch.from_numpy(out), ref, what=what, rtol=1e-4, atol=1e-5)


def export_to_folder(s, **kwargs):
    """Export into a fresh folder; what the call returned and the files it wrote."""
    import torch

    model, x = build_model(), torch.randn(2, 3)
    with torch.no_grad():
        ref = model(x)
    folder = tempfile.mkdtemp(prefix="onnx-default-")
    try:
        path = os.path.join(folder, "model.onnx")
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            returned = torch.onnx.export(model, (x,), path, **kwargs)
        s.note("warnings", sorted({str(w.message).splitlines()[0][:160] for w in seen
                                   if "onnx" in str(w.message).lower()}))
        files = sorted(os.listdir(folder))
        s.note("returned", type(returned).__name__)
        s.note("files_written", files)
        run_onnx(s, path, x, ref, "ONNX (%s) vs eager" % (kwargs or "no exporter named"))
        return type(returned).__name__, files
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def stage_default(s):
    import torch

    param = inspect.signature(torch.onnx.export).parameters.get("dynamo")
    s.note("dynamo_default", "no dynamo parameter" if param is None else repr(param.default))
    returned, files = export_to_folder(s)
    s.check(returned == "NoneType" and files == ["model.onnx"],
            "a plain torch.onnx.export(model, args, f) ran the TorchScript exporter "
            "(returned None, wrote only f)", returned=returned, files=files)


def stage_dynamo_false(s):
    returned, files = export_to_folder(s, dynamo=False)
    s.check(files == ["model.onnx"], "dynamo=False wrote only f", files=files)


def main(r):
    r.stage("default_export", stage_default, requires=["torch>=2.5.0a0", "onnx"])
    r.stage("workaround_dynamo_false", stage_dynamo_false, role="workaround",
            requires=["torch>=2.5.0a0", "onnx"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
