"""open-mmlab/mmsegmentation #3805: a TorchScript export that mixes cuda:0 and cpu when run on CUDA.

The reporter ran a modified mmseg ``pytorch2libtorch(model, input_shape, device,
save_inputs=True, show=True, output_file=..., verify=True)``: the model from
``init_model(cfg, ckpt, 'cuda:0')``, traced on cuda:0, saved, run from C++ on
CUDA, and it failed with "Expected all tensors to be on the same device, but
found at least two devices, cuda:0 and cpu!". Adding ``torch.jit.freeze`` +
``torch.jit.run_frozen_optimizations`` after the trace fixed it. The stock
mmseg tool (``tools/deployment/pytorch2torchscript.py``) has no device
argument and traces on the CPU (``torch.FloatTensor`` demo input,
``map_location='cpu'``).

``torch.jit.trace`` bakes devices: ``arange(..., device=y.device)``,
``.to(y.device)`` and ``zeros(..., device=x.device)`` become device literals
of the trace device, and tensors built from Python data become constants on
it. Traced on CPU, those stay CPU when the module is moved to CUDA: that case
fails whatever is done afterwards, freezing included (constants never move).
Traced on cuda:0, they are cuda:0 literals: this model then runs on cuda:0.
Which component of the reporter's model left a CPU tensor in a cuda:0 trace
(one that freezing folds away) is not confirmed: the thread's failing frame
is not retrievable (DOSSIER section 4).

Model: a segmentation head (conv, a buffer, positions from
``torch.arange(y.shape[-1], device=y.device)``, class weights from
``torch.tensor([...]).to(y.device)``).

Stages (DOSSIER section 4, cases A to E):
- trace_cpu_inspect, freeze_cpu_inspect, frozen_dtype_standin (info, CPU): the
  device literals in ``traced.code``; what freezing folds and what it keeps; a
  dtype stand-in for "``.to()`` never moves frozen constants".
- reporter_trace_cuda (main, GPU), the reporter's path: ``pytorch2libtorch``
  with a device (trace on cuda:0 with verify), save to a file, load it, move it
  to CUDA, run a CUDA input; checked against eager.
- trace_cpu_run_cuda (info, GPU), case A, the stock tool's path: trace on CPU,
  save, load with map_location="cuda", run a CUDA input. Expected to fail on
  every version (baked cpu literals).
- trace_cpu_freeze_run_cuda (info, GPU), case C: A plus freezing on CPU. Expected
  to fail too: freezing cannot move a baked CPU literal.
- workaround (GPU), case D: the reporter's fix, trace on cuda:0 then freeze +
  run_frozen_optimizations, save/load, run on cuda:0; checked against eager.
- frozen_to_other_gpu (info, 2 GPUs), case D continued: ``.to("cuda:1")`` after freezing.
- script_freeze_cpu_to_cuda (info, GPU), case E (pytorch #57569): script,
  freeze on CPU, ``.to("cuda")``.
"""

from __future__ import annotations

import io
import os
import re
import tempfile
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
        "A traced module carries the trace device as literals (arange, .to, zeros) and "
        "constants. The reporter traced on cuda:0 with a device-aware pytorch2libtorch and "
        "still saw 'Expected all tensors to be on the same device ... cuda:0 and cpu' on CUDA; "
        "torch.jit.freeze + run_frozen_optimizations fixed it. The stock tool traces on the "
        "CPU, which bakes cpu literals that no later step (freezing included) can move."
    ),
    "requires": ["cuda"],
    "expect": [
        {"when": {"torch": ">=1.8"}, "status": "pass",
         "note": "this model traced on cuda:0 bakes cuda:0 literals only, so the reporter's path "
                 "passes here (inference from trace_cpu_inspect's literals; unverified on a GPU). "
                 "The CPU-baked tensor in the reporter's own model is unconfirmed; the stock "
                 "tool's CPU trace (stage trace_cpu_run_cuda) fails on every version"},
    ],
}

_DEVICE_TEXT = (r"cuda:\d+ and cpu!|cpu and cuda:\d+!|is on cpu, different from other tensors on "
                r"cuda:\d+|is on cuda:\d+, different from other tensors on cpu")
_GPU_STAGES = ("reporter_trace_cuda", "trace_cpu_run_cuda", "trace_cpu_freeze_run_cuda",
               "workaround", "script_freeze_cpu_to_cuda")

SIGNATURES = [
    Signature(
        "frozen_constants_do_not_move", exc="RuntimeError", stage="frozen_dtype_standin",
        pattern=r"expected scalar type Double but found Float|Input type \(double\) and "
                r"(bias|weight) type \(float\) should be the same",
        note="CPU stand-in: frozen constants keep their dtype/device through .double()/.to()"),
    Signature(
        "torchscript_device_mismatch", exc=("RuntimeError", "torch.jit.Error"), stage=_GPU_STAGES,
        when={"torch": ">=1.8"},
        pattern=[r"The following operation failed in the TorchScript interpreter",
                 r"Expected all tensors to be on the same device", _DEVICE_TEXT],
        note="the mmseg #3805 text, raised by the TorchScript interpreter: a CUDA device and the "
             "CPU, never two CUDA devices (that is frozen_other_gpu_mismatch)"),
    Signature(
        "torchscript_conv_device_mismatch", exc=("RuntimeError", "torch.jit.Error"), stage=_GPU_STAGES,
        when={"torch": ">=1.8"},
        pattern=[r"The following operation failed in the TorchScript interpreter",
                 r"Input type \(torch\.(cuda\.)?FloatTensor\) and weight type "
                 r"\(torch\.(cuda\.)?FloatTensor\) should be the same"],
        note="the same mix when a convolution meets it first: CUDA input, CPU weight (or the "
             "reverse) in the conv wording"),
    Signature(
        "frozen_other_gpu_mismatch", exc=("RuntimeError", "torch.jit.Error"), stage="frozen_to_other_gpu",
        when={"torch": ">=1.8"},
        pattern=[r"Expected all tensors to be on the same device", r"cuda:1 and cuda:0|cuda:0 and cuda:1"],
        note="pytorch #46580: constants frozen on cuda:0 stay there after .to('cuda:1')"),
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


def demo_inputs(input_shape, device):
    """mmseg's _demo_mm_inputs, images only, on ``device`` (the reporter's change)."""
    import torch

    torch.manual_seed(1)
    return torch.rand(*input_shape).to(device)


def pytorch2libtorch(model, input_shape, device, output_file, verify=True):
    """The mmseg tool's export with the reporter's device argument: trace on ``device``, save."""
    import torch

    model = model.to(device).eval()
    imgs = demo_inputs(input_shape, device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(model, example_inputs=imgs, check_trace=verify)
    traced.save(output_file)
    return traced


def stage_reporter_trace_cuda(s, tmp):
    import torch

    path = os.path.join(tmp, "reporter.pt")
    traced = pytorch2libtorch(build_model(), (1, 3, 64, 64), "cuda:0", path, verify=True)
    s.note("device_literals", sorted(set(re.findall(r'torch\.device\("([^"]+)"\)', traced.code))))
    loaded = torch.jit.load(path).to("cuda")  # what the C++ side does: load, then module.to(kCUDA)
    model = build_model().cuda()
    run_checked(s, loaded, model, example("cuda"), "trace on cuda:0 (reporter's path), run on CUDA vs eager")


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
    tmp = tempfile.mkdtemp(prefix="torchscript_device_mix-")
    r.stage("trace_cpu_inspect", stage_trace_inspect, role="info")
    r.stage("freeze_cpu_inspect", stage_freeze_inspect, role="info")
    r.stage("frozen_dtype_standin", stage_dtype_standin, role="info")
    r.stage("reporter_trace_cuda", stage_reporter_trace_cuda, tmp, requires=["cuda"])
    r.stage("trace_cpu_run_cuda", stage_trace_cpu_run_cuda, role="info", requires=["cuda"])
    r.stage("trace_cpu_freeze_run_cuda", stage_trace_cpu_freeze_run_cuda, role="info",
            requires=["cuda"])
    r.stage("workaround", stage_workaround, role="workaround", requires=["cuda"])
    r.stage("frozen_to_other_gpu", stage_frozen_to_other_gpu, role="info", requires=["gpus>=2"])
    r.stage("script_freeze_cpu_to_cuda", stage_script_freeze_to_cuda, role="info",
            requires=["cuda"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
