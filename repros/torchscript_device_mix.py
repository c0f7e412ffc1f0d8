"""open-mmlab/mmsegmentation #3805: a TorchScript export that mixes cuda:0 and cpu when run on CUDA.

mmsegmentation's ``pytorch2torchscript`` traces the model (the stock tool uses
a CPU example input) and saves it. The module then fails on CUDA with "Expected
all tensors to be on the same device, but found at least two devices, cuda:0
and cpu!". ``torch.jit.trace`` bakes devices: ``arange(..., device=y.device)``,
``.to(y.device)`` and ``zeros(..., device=x.device)`` become
``torch.device("cpu")`` literals. Loading with ``map_location="cuda"`` moves the
parameters but not those literals. The write-up's fix is to trace on the
target device, then ``torch.jit.freeze`` + ``run_frozen_optimizations``.

Model: a segmentation head (conv, a buffer, positions from
``torch.arange(y.shape[-1], device=y.device)``, class weights from
``torch.tensor([...]).to(y.device)``).

Stages (DOSSIER section 4, cases A to E):
- trace_cpu_inspect, freeze_cpu_inspect, frozen_dtype_standin (info, CPU): the
  device literals in ``traced.code``; what freezing folds and what it keeps; a
  dtype stand-in for "``.to()`` never moves frozen constants".
- trace_cpu_run_cuda (main, GPU), case A: trace on CPU, save, load with
  map_location="cuda", run a CUDA input.
- trace_cuda_run_cuda (info, GPU), case B: the control, traced on CUDA.
- trace_cpu_freeze_run_cuda (info, GPU), case C: A plus freezing on CPU (still fails).
- workaround (GPU), case D: trace on CUDA, freeze + run_frozen_optimizations,
  save/load, run on cuda:0, checked against eager.
- frozen_to_other_gpu (info, 2 GPUs), case D continued: ``.to("cuda:1")`` after freezing.
- script_freeze_cpu_to_cuda (info, GPU), case E (pytorch #57569): script,
  freeze on CPU, ``.to("cuda")``.
"""

from __future__ import annotations

import io
import re
import warnings

import protocol
from protocol import Signature

META = {
    "id": "torchscript_device_mix",
    "title": "TorchScript trace run on CUDA mixes cuda:0 and cpu (trace bakes devices)",
    "upstream": [
        "https://github.com/open-mmlab/mmsegmentation/issues/3805",
        "https://github.com/pytorch/pytorch/issues/57569",
        "https://github.com/pytorch/pytorch/issues/46580",
    ],
    "description": (
        "A module traced on the CPU carries device=cpu literals (arange, .to, zeros). Loaded "
        "onto CUDA, its parameters move but those literals do not, so it fails with 'Expected "
        "all tensors to be on the same device ... cuda:0 and cpu'. Workaround: trace on the "
        "target device, then torch.jit.freeze + run_frozen_optimizations."
    ),
    "requires": ["cuda"],
    "expect": [
        {"when": {"torch": ">=1.8"}, "status": "fail",
         "note": "tracing bakes device literals on every TorchScript version"},
    ],
}

_DEVICE_TEXT = (r"cuda:\d+ and cpu|cpu and cuda:\d+|cuda:\d+ and cuda:\d+|is on cpu, different from other tensors on "
                r"cuda:\d+|is on cuda:\d+, different from other tensors on cpu")

SIGNATURES = [
    Signature(
        "frozen_constants_do_not_move", exc="RuntimeError", stage="frozen_dtype_standin",
        pattern=r"expected scalar type Double but found Float|Input type \(double\) and "
                r"(bias|weight) type \(float\) should be the same",
        note="CPU stand-in: frozen constants keep their dtype/device through .double()/.to()"),
    Signature(
        "torchscript_device_mismatch", exc=("RuntimeError", "torch.jit.Error"),
        pattern=[r"Expected all tensors to be on the same device", _DEVICE_TEXT],
        note="the mmseg #3805 text; inside the TorchScript interpreter it is prefixed by "
             "'The following operation failed in the TorchScript interpreter'"),
]

DEVICE_LITERAL = re.compile(r'device=torch\.device\("cpu"\)|torch\.device\("cpu"\)')


def build_model():
    import torch

    class SegHead(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
            self.register_buffer("scale", torch.full((1, 4, 1, 1), 0.5))

        def forward(self, x):
            y = self.conv(x) * self.scale
            pos = torch.arange(y.shape[-1], device=y.device, dtype=y.dtype)
            w = torch.tensor([0.25, 0.5, 1.0, 2.0]).to(y.device).view(1, 4, 1, 1)
            return y * w + pos

    torch.manual_seed(0)
    return SegHead().eval()


def example(device="cpu"):
    import torch

    torch.manual_seed(1)
    return torch.randn(1, 3, 64, 64).to(device)


def trace(model, x):
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.jit.trace(model, x, check_trace=True)


def freeze(module):
    import torch

    frozen = torch.jit.freeze(module.eval())
    torch.jit.run_frozen_optimizations(frozen)
    return frozen


def save_load(module, map_location):
    import torch

    buf = io.BytesIO()
    torch.jit.save(module, buf)
    buf.seek(0)
    return torch.jit.load(buf, map_location=map_location)


def run_checked(s, module, model, x, what):
    import torch

    with torch.no_grad():
        s.check_close(module(x), model(x), what=what, rtol=1e-4, atol=1e-5)


def stage_trace_inspect(s):
    traced = trace(build_model(), example())
    literals = DEVICE_LITERAL.findall(traced.code)
    s.note("code", traced.code)
    s.note("cpu_device_literals", len(literals))
    s.note("constants", traced.code.count("CONSTANTS."))
    s.check(literals, "the CPU trace baked device=cpu literals into the code")


def stage_freeze_inspect(s):
    import torch

    frozen = freeze(trace(build_model(), example()))
    s.note("code", frozen.code)
    s.note("parameters_after_freeze", len(list(frozen.parameters())))
    s.note("buffers_after_freeze", len(list(frozen.buffers())))
    s.note("cpu_device_literals_after_freeze", len(DEVICE_LITERAL.findall(frozen.code)))
    s.check(not list(frozen.parameters()), "freezing turned the parameters into constants")
    run_checked(s, frozen, build_model(), example(), "frozen vs eager on CPU")
    s.note("torch", torch.__version__)


def stage_dtype_standin(s):
    frozen = freeze(trace(build_model(), example()))
    traced = trace(build_model(), example())
    x = example().double()
    traced.double()(x)
    s.note("control", "traced.double() runs: parameters follow .double()")
    frozen.double()(x)
    s.note("outcome", "frozen.double() ran: constants followed .double()")


def stage_trace_cpu_run_cuda(s):
    model = build_model()
    loaded = save_load(trace(model, example()), map_location="cuda")
    s.note("parameter_devices", sorted(set(str(p.device) for p in loaded.parameters())))
    run_checked(s, loaded, model.cuda(), example("cuda"), "trace on CPU, run on CUDA vs eager")


def stage_trace_cuda_run_cuda(s):
    model = build_model().cuda()
    loaded = save_load(trace(model, example("cuda")), map_location="cuda")
    run_checked(s, loaded, model, example("cuda"), "trace on CUDA, run on CUDA vs eager")


def stage_trace_cpu_freeze_run_cuda(s):
    model = build_model()
    loaded = save_load(freeze(trace(model, example())), map_location="cuda")
    run_checked(s, loaded, model.cuda(), example("cuda"), "frozen CPU trace on CUDA vs eager")


def stage_workaround(s):
    model = build_model().cuda()
    frozen = freeze(trace(model, example("cuda")))
    s.note("cpu_device_literals", len(DEVICE_LITERAL.findall(frozen.code)))
    loaded = save_load(frozen, map_location="cuda:0")
    run_checked(s, loaded, model, example("cuda"), "trace + freeze on CUDA, run on cuda:0 vs eager")


def stage_frozen_to_other_gpu(s):
    model = build_model().cuda()
    frozen = freeze(trace(model, example("cuda:0"))).to("cuda:1")
    run_checked(s, frozen, build_model().to("cuda:1"), example("cuda:1"), "frozen on cuda:0, run on cuda:1")


def stage_script_freeze_to_cuda(s):
    import torch

    frozen = torch.jit.freeze(torch.jit.script(build_model())).to("cuda")
    run_checked(s, frozen, build_model().cuda(), example("cuda"), "scripted, frozen on CPU, .to(cuda)")


def main(r):
    r.stage("trace_cpu_inspect", stage_trace_inspect, role="info")
    r.stage("freeze_cpu_inspect", stage_freeze_inspect, role="info")
    r.stage("frozen_dtype_standin", stage_dtype_standin, role="info")
    r.stage("trace_cpu_run_cuda", stage_trace_cpu_run_cuda, requires=["cuda"])
    r.stage("trace_cuda_run_cuda", stage_trace_cuda_run_cuda, role="info", requires=["cuda"])
    r.stage("trace_cpu_freeze_run_cuda", stage_trace_cpu_freeze_run_cuda, role="info",
            requires=["cuda"])
    r.stage("workaround", stage_workaround, role="workaround", requires=["cuda"])
    r.stage("frozen_to_other_gpu", stage_frozen_to_other_gpu, role="info", requires=["gpus>=2"])
    r.stage("script_freeze_cpu_to_cuda", stage_script_freeze_to_cuda, role="info",
            requires=["cuda"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
