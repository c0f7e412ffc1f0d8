"""ONNX export with the model on the GPU and the dummy input on the CPU.

The fifth write-up (a blog post; no upstream bug): ``torch.onnx.export`` fails
with "Expected all tensors to be on the same device, but found at least two
devices, cpu and cuda:0!" when the model was loaded onto CUDA and the dummy
input was built on the CPU. The seed's export helper uses opset 13,
``dynamic_axes`` on the batch dimension and ``do_constant_folding=True``;
these stages pass the same settings. Not a bug to be fixed upstream: the ONNX
maintainers call mixed devices invalid input (pytorch #84123), so every version
refuses, with text that depends on the exporter and the torch version. The fix
is to put everything on one device.

Model: an image classifier whose first op reorders the input's channels
(BGR to RGB, ``x.index_select(1, self.rgb)`` with a CUDA index buffer), then
normalizes (``(x - mean) / std``), conv, pool, linear; input 1x3x224x224.
The first op gives the seed's text. Which op refuses decides the order of the
devices in the text:

- a per-argument device check (``index_select``, ``addmm``, ...) keeps the
  first tensor argument's device and names it first, then the mismatching
  argument: "Expected all tensors to be on the same device, but found at least
  two devices, cpu and cuda:0! (when checking argument for argument index in
  method wrapper_CUDA__index_select)" (printed in pytorch #102947, legacy
  exporter, torch 2.0.0; the other order, "cuda:1 and cpu! (when checking
  argument for argument index in method wrapper_CUDA__index_select)", in
  pytorch #154093 with a CUDA self and a CPU index). With ``self`` the CPU
  input, this is the seed's "cpu and cuda:0!".
- a TensorIterator op (``x - mean``) names the first non-CPU device first
  (``aten/src/ATen/TensorIterator.cpp``, ``compute_types``): "cuda:0 and cpu!"
  whatever the operand order, so it cannot give the seed's text.

Stages (fake-CUDA ones run isolated):
- legacy_export (main, GPU): ``dynamo=False``, i.e. the TorchScript exporter,
  which runs the model eagerly and fails with the eager text.
- dynamo_export (main, GPU): ``dynamo=True`` (torch >= 2.5; the default from
  2.9), which fails in step 1/3 (torch.export). ``torch.onnx.export`` has no
  ``dynamo=`` argument before torch 2.5 (its signature on torch 2.2.2 ends at
  ``autograd_inlining``), so there the stage is skipped (the
  requirement ``torch>=2.5.0a0``, pre-releases of 2.5 included), never an error.
- fake_first_op (info, CPU): the model's forward with fake CUDA parameters and
  buffers and a CPU input: which op refuses and with what text.
- fake_dynamo_export (info, CPU): the dynamo path with the seed's settings and
  fakes; gives the export-stage text without a GPU.
- fake_export_conv_mixed (info, CPU): a conv-only model, CPU input, fake CUDA
  weights, through ``torch.export``. Fake convolution checks devices only from
  torch 2.14, so this exports cleanly up to 2.13 and is refused on 2.14
  (signature ``fake_conv_device_checked``). A bisection landmark, not the bug.
- workaround_legacy, workaround_dynamo (GPU): the input is moved to the model's
  device, the model is exported, and the ONNX output is checked against eager
  with onnxruntime or ``onnx.reference``.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import protocol
from protocol import Signature

META = {
    "id": "onnx_export_device",
    "kind": "user-error",
    "title": "ONNX export: model on CUDA, dummy input on CPU",
    "upstream": [
        "https://github.com/pytorch/pytorch/issues/84123",
    ],
    "description": (
        "torch.onnx.export of a CUDA model with a CPU dummy input (the seed's opset 13, "
        "dynamic_axes and do_constant_folding). The legacy exporter runs the model eagerly and "
        "fails at its first op (index_select with a CUDA index) with 'Expected all tensors to be "
        "on the same device, but found at least two devices, cpu and cuda:0!'. The dynamo exporter "
        "(the default from torch 2.9, pytorch PR #159646) fails in torch.export (step 1/3) "
        "with a fake-tensor device error. The ONNX maintainers treat mixed devices as invalid "
        "input (pytorch #84123): moving the input to the model's device is the fix."
    ),
    "requires": ["cuda", "onnx", "onnxscript"],
    "expect": [
        {"when": {"torch": ">=2.0"}, "status": "fail",
         "note": "invalid input that every version refuses (pytorch #84123: 'PyTorch run would "
                 "also complain if they are not on the same device'); the text varies with the "
                 "exporter and the torch version (fake-tensor wording: pytorch PR #185412, 2.13)"},
    ],
}

# The refusing op is the channel reorder: index_select's per-argument check keeps self's
# device (the CPU input) and names the CUDA index second.
_SEED_TEXT = (r"Expected all tensors to be on the same device, "
              r"but found at least two devices, cpu and cuda:\d+!")
_INDEX_SELECT = (r" \(when checking argument for argument index in method "
                 r"wrapper_(?:CUDA_)?_index_select\)")
_DYNAMO_STAGES = ("dynamo_export", "fake_dynamo_export")

SIGNATURES = [
    Signature(
        "fake_conv_device_checked", exc="RuntimeError", stage="fake_export_conv_mixed",
        when={"torch": ">=2.14"},
        pattern=r"Expected all tensors to be on the same device, but got weight is on cuda:\d+, "
                r"different from other tensors on cpu",
        note="fake convolution checks devices from torch 2.14 (<= 2.13 it silently exports)"),
    Signature(
        "legacy_eager_device_mismatch", exc="RuntimeError", stage="legacy_export", when={"torch": "<2.8"},
        pattern=_SEED_TEXT + _INDEX_SELECT,
        note="the seed's text: the legacy exporter runs the model eagerly and the first op, "
             "index_select, checks self (the CPU input) before index (CUDA); pytorch #102947"),
    Signature(
        "legacy_eager_index_on_other_device", exc="RuntimeError", stage="legacy_export",
        when={"torch": ">=2.8"},
        pattern=r"Expected all tensors to be on the same device, but got index is on cuda:\d+, different "
                r"from other tensors on cpu \(when checking argument in method "
                r"wrapper_(?:CUDA_)?_index_select\)",
        note="the same refusal as the seed's, in the per-argument wording torch uses from 2.8.0: "
             "libtorch_cpu.so of 2.7.1 (git e2d141db) has only 'when checking argument for "
             "argument', 2.8.0 (a1cb3cc0), 2.9.1, 2.12.1, 2.13.0 and 2.14.1 only 'but got ... is on "
             "..., different from other tensors on ... (when checking argument in method'"),
    Signature(
        "first_op_fake_mismatch", exc="RuntimeError", stage="fake_first_op", when={"torch": ">=2.13"},
        pattern=_SEED_TEXT,
        note="torch >= 2.13: fake tensors raise the eager wording without the op suffix (pytorch "
             "PR #185412; recorded on 2.13.0 and 2.14.1)"),
    Signature(
        "first_op_fake_propagation", exc="RuntimeError", stage=("fake_first_op",) + _DYNAMO_STAGES,
        when={"torch": "<2.13"},
        pattern=r"Unhandled FakeTensor Device Propagation for aten\.index_select\.default, found two "
                r"different devices cpu, cuda:\d+",
        note="torch <= 2.12: the fake-tensor text names the first op, aten.index_select (recorded "
             "on torch 2.9.1 and 2.12.1, also wrapped by the dynamo exporter's step 1/3)"),
    Signature(
        "export_fake_mismatch", exc="RuntimeError", stage=_DYNAMO_STAGES,
        pattern=[r"This is step 1/3 of exporting the model to ONNX",
                 r"(?:%s|Tensor on device cuda:\d+ is not on the expected device cpu!)" % _SEED_TEXT],
        note="the dynamo exporter's torch.export step: with dynamic_axes the elementwise "
             "reference's device check ('Tensor on device cuda:0 is not on the expected device "
             "cpu!', recorded on torch 2.9.1-2.14.1), else the fake-tensor text"),
]

SHAPE = (1, 3, 224, 224)
DYNAMO_TORCH = "torch>=2.5.0a0"  # torch.onnx.export(dynamo=...) first ships in torch 2.5
# the seed's export settings (its export_to_onnx helper)
SEED_KWARGS = {"input_names": ["input"], "output_names": ["output"],
               "dynamic_axes": {"input": {0: "batch_size"}, "output": {0: "batch_size"}},
               "opset_version": 13, "do_constant_folding": True, "export_params": True}


def build_model():
    """An image classifier that reorders and normalizes its input first, as deployed
    classifiers fed by OpenCV do.

    Its first op, ``x.index_select(1, rgb)`` with ``x`` on the CPU and ``rgb`` on CUDA, is
    the one that refuses, naming self's device (cpu) first: the seed's "cpu and cuda:0!".
    """
    import torch

    class Classifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("rgb", torch.tensor([2, 1, 0]))  # BGR -> RGB
            self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
            self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))
            self.conv = torch.nn.Conv2d(3, 8, kernel_size=3, padding=1)
            self.pool = torch.nn.AdaptiveAvgPool2d(1)
            self.fc = torch.nn.Linear(8, 10)

        def forward(self, x):
            x = (x.index_select(1, self.rgb) - self.mean) / self.std
            return self.fc(torch.flatten(self.pool(torch.relu(self.conv(x))), 1))

    torch.manual_seed(0)
    return Classifier().eval()


def _dynamo_kwarg(s):
    import torch

    import _torchutil

    kept, _ = _torchutil.supported_kwargs(torch.onnx.export, {"dynamo": True})
    if not kept:
        s.skip("torch.onnx.export has no dynamo= argument in torch %s" % torch.__version__)


def export(s, model, x, dynamo, path):
    """torch.onnx.export with the chosen exporter (before torch 2.5 only the legacy one)."""
    import torch

    import _torchutil

    if dynamo:
        _dynamo_kwarg(s)
    kwargs, dropped = _torchutil.supported_kwargs(torch.onnx.export, dict(SEED_KWARGS, dynamo=dynamo))
    s.note("exporter", "dynamo" if dynamo else "legacy (TorchScript)")
    s.note("default_exporter", default_exporter())
    s.note("dropped_kwargs", dropped)
    s.note("devices", {"model": str(next(model.parameters()).device), "input": str(x.device)})
    torch.onnx.export(model, (x,), path, **kwargs)


def default_exporter():
    """Which exporter the seed's call (no dynamo= argument) gets on this torch."""
    import inspect

    import torch

    try:
        param = inspect.signature(torch.onnx.export).parameters.get("dynamo")
    except (TypeError, ValueError):
        return "unknown"
    if param is None:
        return "legacy (no dynamo= argument)"
    return "dynamo" if param.default is True else "legacy"


def check_onnx(s, path, x, ref):
    """Run the exported file on CPU and compare with the eager output."""
    import numpy as np
    import torch

    feed = x.detach().cpu().numpy()
    try:
        import onnxruntime

        sess = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        out = sess.run(None, {sess.get_inputs()[0].name: feed})[0]
        s.note("checked_with", "onnxruntime %s" % onnxruntime.__version__)
    except ImportError:
        import onnx
        from onnx.reference import ReferenceEvaluator

        ev = ReferenceEvaluator(onnx.load(path))
        out = ev.run(None, {ev.input_names[0]: feed})[0]
        s.note("checked_with", "onnx.reference (onnx %s)" % onnx.__version__)
    s.check_close(torch.from_numpy(np.asarray(out)), ref, what="ONNX vs eager", rtol=1e-3, atol=1e-4)


def stage_export_mixed(s, tmp, dynamo):
    import torch

    model = build_model().cuda()
    x = torch.randn(SHAPE)  # the bug: the dummy input stays on the CPU
    path = os.path.join(tmp, "mixed_%s.onnx" % ("dynamo" if dynamo else "legacy"))
    export(s, model, x, dynamo, path)
    with torch.no_grad():
        ref = model(x.cuda())
    check_onnx(s, path, x, ref)


def stage_fake_dynamo(s, tmp):
    import torch

    import _torchutil

    _dynamo_kwarg(s)
    model = build_model()
    kwargs, dropped = _torchutil.supported_kwargs(torch.onnx.export, dict(SEED_KWARGS, dynamo=True))
    s.note("dropped_kwargs", dropped)
    with _torchutil.fake_mode():
        _torchutil.fake_cuda_params(model)
        x = torch.empty(SHAPE)
        s.note("devices", {"model": "cuda:0 (fake)", "input": "cpu (fake)"})
        torch.onnx.export(model, (x,), os.path.join(tmp, "fake.onnx"), **kwargs)
    s.note("outcome", "exported without a device error")


def stage_fake_first_op(s):
    """The model's forward with fake CUDA weights and a CPU input: the first op refuses."""
    import torch

    import _torchutil

    model = build_model()
    with _torchutil.fake_mode():
        _torchutil.fake_cuda_params(model)
        s.note("devices", {"model": "cuda:0 (fake)", "input": "cpu (fake)"})
        with torch.no_grad():
            model(torch.empty(SHAPE))
    s.note("outcome", "the forward ran without a device error")


def stage_fake_conv_mixed(s):
    import torch

    import _torchutil

    conv = torch.nn.Sequential(torch.nn.Conv2d(3, 8, kernel_size=3, padding=1)).eval()
    with _torchutil.fake_mode():
        _torchutil.fake_cuda_params(conv)
        x = torch.empty(SHAPE)
        ep = torch.export.export(conv, (x,), strict=False)
    convs = [n for n in ep.graph.nodes if n.op == "call_function" and "conv" in str(n.target)]
    s.check(convs, "the exported graph holds the convolution")
    s.note("conv_output_device", str(convs[0].meta["val"].device))
    s.note("outcome", "exported although weights are on cuda:0 and the input on cpu")


def stage_workaround(s, tmp, dynamo):
    import torch

    model = build_model().cuda()
    device = next(model.parameters()).device
    x = torch.randn(SHAPE).to(device)  # the fix: one device for everything
    path = os.path.join(tmp, "fixed_%s.onnx" % ("dynamo" if dynamo else "legacy"))
    export(s, model, x, dynamo, path)
    with torch.no_grad():
        ref = model(x)
    check_onnx(s, path, x, ref)


def main(r):
    tmp = tempfile.mkdtemp(prefix="onnx_export_device-")
    try:
        r.stage("legacy_export", stage_export_mixed, tmp, False, requires=["cuda", "onnx"])
        r.stage("dynamo_export", stage_export_mixed, tmp, True,
                requires=[DYNAMO_TORCH, "cuda", "onnx", "onnxscript"])
        r.stage("fake_first_op", stage_fake_first_op, role="info", isolate=True,
                requires=["fake_cuda"])
        r.stage("fake_dynamo_export", stage_fake_dynamo, tmp, role="info", isolate=True,
                requires=[DYNAMO_TORCH, "fake_cuda", "onnx", "onnxscript"])
        r.stage("fake_export_conv_mixed", stage_fake_conv_mixed, role="info", isolate=True,
                requires=["fake_cuda"])
        r.stage("workaround_legacy", stage_workaround, tmp, False, role="workaround",
                requires=["cuda", "onnx"])
        r.stage("workaround_dynamo", stage_workaround, tmp, True, role="workaround",
                requires=[DYNAMO_TORCH, "cuda", "onnx", "onnxscript"])
    finally:  # its exported models: never left behind in the machine's /tmp
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
