"""ONNX export with the model on the GPU and the dummy input on the CPU.

The fifth write-up: ``torch.onnx.export`` fails with "Expected all tensors to
be on the same device" when the model was loaded onto CUDA and the dummy
input was built on the CPU. Not a bug to be fixed upstream: every version
refuses, with text that depends on the exporter and the torch version. The
fix is to put everything on one device.

Model: an image classifier (conv, pool, linear), input 1x3x224x224.

Stages:
- legacy_export (main, GPU): ``dynamo=False``, i.e. the TorchScript exporter,
  which runs the model eagerly and fails with the eager text.
- dynamo_export (main, GPU): ``dynamo=True`` (torch >= 2.5), which fails in
  step 1/3 (torch.export) with the fake-tensor text.
- fake_dynamo_export (info, CPU): the dynamo path with fake CUDA parameters
  and a fake CPU input; gives the same export-stage text without a GPU.
- fake_export_conv_mixed (info, CPU): a conv-only model, CPU input, fake CUDA
  weights, through ``torch.export``. Fake convolution checks devices only from
  torch 2.14, so this exports cleanly up to 2.13 and is refused on 2.14
  (signature ``fake_conv_device_checked``). It is a bisection landmark, not the
  bug.
- workaround_legacy, workaround_dynamo (GPU): the input is moved to the model's
  device, the model is exported, and the ONNX output is checked against eager
  with onnxruntime or ``onnx.reference``.
"""

from __future__ import annotations

import os
import tempfile

import protocol
from protocol import Signature

META = {
    "id": "onnx_export_device",
    "title": "ONNX export: model on CUDA, dummy input on CPU",
    "upstream": [
        "https://github.com/pytorch/pytorch/issues/159133",
        "https://github.com/pytorch/pytorch/pull/159646",
        "https://github.com/pytorch/pytorch/pull/185412",
    ],
    "description": (
        "torch.onnx.export of a CUDA model with a CPU dummy input. The legacy exporter fails "
        "with the eager device error. The dynamo exporter fails in torch.export (step 1/3) "
        "with the fake-tensor device error. Moving the input to the model's device fixes it."
    ),
    "requires": ["cuda", "onnx", "onnxscript"],
    "expect": [
        {"when": {"torch": ">=2.0"}, "status": "fail",
         "note": "a user error that every version refuses; the text varies with the exporter "
                 "and the torch version"},
    ],
}

_EAGER = (r"Input type \(torch\.FloatTensor\) and weight type \(torch\.cuda\.FloatTensor\) should be "
          r"the same|Expected all tensors to be on the same device.*(cuda:\d+ and cpu|cpu and cuda:\d+|"
          r"is on cpu, different from other tensors on cuda:\d+|"
          r"is on cuda:\d+, different from other tensors on cpu)")
_DYNAMO_STAGES = ("dynamo_export", "fake_dynamo_export")

SIGNATURES = [
    Signature(
        "fake_conv_device_checked", exc="RuntimeError", stage="fake_export_conv_mixed",
        when={"torch": ">=2.14"},
        pattern=r"Expected all tensors to be on the same device, but got weight is on cuda:\d+, "
                r"different from other tensors on cpu",
        note="fake convolution checks devices from torch 2.14 (<= 2.13 it silently exports)"),
    Signature(
        "legacy_eager_device_mismatch", exc="RuntimeError", stage="legacy_export", pattern=_EAGER,
        note="the legacy exporter runs the model eagerly: the eager text (conv or addmm form)"),
    Signature(
        "export_fake_propagation", exc="RuntimeError", stage=_DYNAMO_STAGES, when={"torch": "<2.13"},
        pattern=r"Unhandled FakeTensor Device Propagation for aten\.[\w.]+, found two different "
                r"devices (cpu, cuda:\d+|cuda:\d+, cpu)",
        note="torch <= 2.12: torch.export (step 1/3 of the dynamo exporter) refuses"),
    Signature(
        "export_fake_mismatch", exc="RuntimeError", stage=_DYNAMO_STAGES, when={"torch": ">=2.13"},
        pattern=r"Expected all tensors to be on the same device, but (found at least two devices, "
                r"(cpu and cuda:\d+|cuda:\d+ and cpu)!|got \w+ is on (cpu|cuda:\d+), different "
                r"from other tensors on (cuda:\d+|cpu))|Tensor device mismatch",
        note="torch >= 2.13: FakeTensorDeviceMismatchError (PR #185412), or the 2.14 conv text"),
]

SHAPE = (1, 3, 224, 224)


def build_model():
    import torch

    class Classifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, kernel_size=3, padding=1)
            self.pool = torch.nn.AdaptiveAvgPool2d(1)
            self.fc = torch.nn.Linear(8, 10)

        def forward(self, x):
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
    kwargs, _ = _torchutil.supported_kwargs(torch.onnx.export, {"dynamo": dynamo})
    s.note("exporter", "dynamo" if dynamo else "legacy (TorchScript)")
    s.note("devices", {"model": str(next(model.parameters()).device), "input": str(x.device)})
    torch.onnx.export(model, (x,), path, **kwargs)


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
    with _torchutil.fake_mode():
        _torchutil.fake_cuda_params(model)
        x = torch.empty(SHAPE)
        s.note("devices", {"model": "cuda:0 (fake)", "input": "cpu (fake)"})
        torch.onnx.export(model, (x,), os.path.join(tmp, "fake.onnx"), dynamo=True)
    s.note("outcome", "exported without a device error")


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
    r.stage("legacy_export", stage_export_mixed, tmp, False, requires=["cuda", "onnx"])
    r.stage("dynamo_export", stage_export_mixed, tmp, True, requires=["cuda", "onnx", "onnxscript"])
    r.stage("fake_dynamo_export", stage_fake_dynamo, tmp, role="info",
            requires=["cuda_build", "onnx", "onnxscript"])
    r.stage("fake_export_conv_mixed", stage_fake_conv_mixed, role="info", requires=["cuda_build"])
    r.stage("workaround_legacy", stage_workaround, tmp, False, role="workaround",
            requires=["cuda", "onnx"])
    r.stage("workaround_dynamo", stage_workaround, tmp, True, role="workaround",
            requires=["cuda", "onnx", "onnxscript"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
