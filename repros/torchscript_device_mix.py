"""open-mmlab/mmsegmentation #3805: a TorchScript export that mixes cuda:0 and cpu when run on CUDA.

The seed: a model exported with mmseg's ``pytorch2libtorch`` fails when the
TorchScript module runs on CUDA (from C++) with "Expected all tensors to be on
the same device, but found at least two devices, cuda:0 and cpu!". Its causes
(the seed's analysis): constant tensors fixed on the CPU that did not follow
the model to the GPU, and tensors made during forward on the CPU. Its fix is
two changes to the export: the example input moved to the model's device
(``example_inputs=model_input['imgs'].to(device)``, also its solution 2) and
``torch.jit.freeze`` + ``torch.jit.run_frozen_optimizations`` after the trace.

So the failing export traced on the CPU, as the stock tool does
(``tools/deployment/pytorch2torchscript.py``: ``torch.FloatTensor`` demo input,
checkpoint loaded with ``map_location='cpu'``, no device argument).
``torch.jit.trace`` bakes devices: ``arange(..., device=y.device)``,
``.to(y.device)`` and ``zeros(..., device=x.device)`` become device literals of
the trace device, and tensors built from Python data become constants on it.
Traced on CPU, those stay CPU when the loaded module is moved to CUDA, and the
first op that meets one with a CUDA activation refuses (TensorIterator names
the CUDA device first: "cuda:0 and cpu!"). Freezing alone cannot help
(constants never move: stage trace_cpu_freeze_run_cuda); traced on the target
device the literals are that device's, and freezing folds the constant
subgraphs.

Model: a segmentation head (conv, a buffer, positions from
``torch.arange(y.shape[-1], device=y.device)``, class weights from
``torch.tensor([...]).to(y.device)``).

Stages (DOSSIER section 4, cases A to E):
- trace_cpu_inspect, freeze_cpu_inspect, frozen_dtype_standin (info, CPU): the
  device literals in ``traced.code``; what freezing folds and what it keeps; a
  dtype stand-in for "``.to()`` never moves frozen constants".
- export_run_cuda (main, GPU), case A, the reporter's failing path: the stock
  tool's export (model and demo input on the CPU, trace with verify, save to a
  file), then the deployment side: load, ``.to("cuda")``, a CUDA input; checked
  against eager. Expected to fail on every version.
- workaround (GPU), the seed's fix: model and example input on cuda:0, trace
  with verify, freeze + run_frozen_optimizations, save, load, run on CUDA;
  checked against eager.
- trace_cuda_run_cuda (info, GPU), case B: the cuda:0 trace without freezing,
  to show which half of the fix this model needs.
- trace_cpu_freeze_run_cuda (info, GPU), case C: A plus freezing on CPU.
  Expected to fail too: freezing cannot move a baked CPU literal.
- frozen_to_other_gpu (info, 2 GPUs), case D: ``.to("cuda:1")`` after freezing.
- script_freeze_cpu_to_cuda (info, GPU), case E (pytorch #57569): script,
  freeze on CPU, ``.to("cuda")``.

Without a GPU the main stage is skipped: the cell is "cannot tell", never pass.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import tempfile
import warnings

import protocol
from protocol import Signature

META = {
    "id": "torchscript_device_mix",
    "kind": "bug",
    "title": "TorchScript trace run on CUDA mixes cuda:0 and cpu (trace bakes devices)",
    "upstream": [
        "https://github.com/open-mmlab/mmsegmentation/issues/3805",
        "https://github.com/pytorch/pytorch/issues/57569",
        "https://github.com/pytorch/pytorch/issues/46580",
    ],
    "description": (
        "A traced module carries the trace device as literals (arange, .to, zeros) and "
        "constants. The stock mmseg export traces on the CPU; loaded and moved to CUDA, it "
        "fails with 'Expected all tensors to be on the same device, but found at least two "
        "devices, cuda:0 and cpu!'. The seed's fix traces with the example input on the "
        "model's device and adds torch.jit.freeze + run_frozen_optimizations."
    ),
    "requires": ["cuda"],
    "expect": [
        {"when": {"torch": ">=1.8"}, "status": "fail",
         "note": "a CPU trace bakes device=cpu literals and CPU constants (stage "
                 "trace_cpu_inspect) that .to('cuda') never moves; the failing op's text on CUDA "
                 "is TensorIterator's wording, unverified on a GPU"},
    ],
}

_DEVICE_TEXT = (r"cuda:\d+ and cpu!|cpu and cuda:\d+!|is on cpu, different from other tensors on "
                r"cuda:\d+|is on cuda:\d+, different from other tensors on cpu")
_GPU_STAGES = ("export_run_cuda", "trace_cuda_run_cuda", "trace_cpu_freeze_run_cuda",
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


SHAPE = (1, 3, 64, 64)


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


def demo_inputs(input_shape, device="cpu"):
    """mmseg's _demo_mm_inputs, images only: a torch.FloatTensor (CPU) unless moved."""
    import torch

    torch.manual_seed(1)
    return torch.rand(*input_shape).to(device)


def pytorch2libtorch(model, input_shape, output_file, verify=True, device=None, fix=False):
    """The mmseg tool's export: trace with verify, save. ``device=None`` is the stock tool
    (model and demo input on the CPU); ``fix=True`` adds the seed's freeze step."""
    import torch

    if device is not None:
        model = model.to(device)
    imgs = demo_inputs(input_shape, device or "cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(model.eval(), example_inputs=imgs, check_trace=verify)
    if fix:
        traced = torch.jit.freeze(traced)
        torch.jit.run_frozen_optimizations(traced)
    traced.save(output_file)
    return traced


def device_literals(module):
    return sorted(set(re.findall(r'torch\.device\("([^"]+)"\)', module.code)))


def deploy_run(s, path, what):
    """The deployment side: load the file, move the module to CUDA, run a CUDA input."""
    import torch

    loaded = torch.jit.load(path).to("cuda")  # libtorch: torch::jit::load, then module.to(kCUDA)
    s.note("parameter_devices", sorted(set(str(p.device) for p in loaded.parameters())))
    run_checked(s, loaded, build_model().cuda(), example("cuda"), what)


def stage_export_run_cuda(s, tmp):
    path = os.path.join(tmp, "stock.pt")
    s.note("device_literals", device_literals(pytorch2libtorch(build_model(), SHAPE, path)))
    deploy_run(s, path, "stock export (CPU trace), run on CUDA vs eager")


def stage_trace_cuda_run_cuda(s, tmp):
    path = os.path.join(tmp, "cuda_trace.pt")
    traced = pytorch2libtorch(build_model(), SHAPE, path, device="cuda:0")
    s.note("device_literals", device_literals(traced))
    deploy_run(s, path, "trace on cuda:0 without freezing, run on CUDA vs eager")


def stage_trace_cpu_freeze_run_cuda(s):
    model = build_model()
    loaded = save_load(freeze(trace(model, example())), map_location="cuda")
    run_checked(s, loaded, model.cuda(), example("cuda"), "frozen CPU trace on CUDA vs eager")


def stage_workaround(s, tmp):
    """The seed's fix: model and example input on the device, trace, freeze, optimize, save."""
    path = os.path.join(tmp, "fixed.pt")
    frozen = pytorch2libtorch(build_model(), SHAPE, path, device="cuda:0", fix=True)
    s.note("cpu_device_literals", len(DEVICE_LITERAL.findall(frozen.code)))
    deploy_run(s, path, "trace on cuda:0 + freeze, run on CUDA vs eager")


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
    try:
        r.stage("trace_cpu_inspect", stage_trace_inspect, role="info")
        r.stage("freeze_cpu_inspect", stage_freeze_inspect, role="info")
        r.stage("frozen_dtype_standin", stage_dtype_standin, role="info")
        r.stage("export_run_cuda", stage_export_run_cuda, tmp, requires=["cuda"])
        r.stage("workaround", stage_workaround, tmp, role="workaround", requires=["cuda"])
        r.stage("trace_cuda_run_cuda", stage_trace_cuda_run_cuda, tmp, role="info",
                requires=["cuda"])
        r.stage("trace_cpu_freeze_run_cuda", stage_trace_cpu_freeze_run_cuda, role="info",
                requires=["cuda"])
        r.stage("frozen_to_other_gpu", stage_frozen_to_other_gpu, role="info",
                requires=["gpus>=2"])
        r.stage("script_freeze_cpu_to_cuda", stage_script_freeze_to_cuda, role="info",
                requires=["cuda"])
    finally:  # its exported models: never left behind in the machine's /tmp
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
