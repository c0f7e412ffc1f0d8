"""pytorch/TensorRT #3556: deform_conv2d fails to compile with "Unhandled FakeTensor Device Propagation".

The model is the reporter's SimpleDeformNet: an offset conv, then
``torchvision.ops.deform_conv2d`` with no mask, so torchvision builds the mask
with ``torch.zeros(..., device=input.device)``. TRT 2.4.0's own
``empty_strided`` decomposition drops that device, the mask lands on the CPU,
and the fake-tensor device check fires. TRT 2.5.0 (PR #2948) puts the mask on
TRT's *default* device (``to_torch_device(default_device())``, the current
CUDA device) and still drops the dtype: a model on ``cuda:1`` gets a mask on
``cuda:0`` (source: ``empty_strided_decomposition`` in
py/torch_tensorrt/dynamo/lowering/_decompositions.py).

Stages (the fake-CUDA ones run isolated: fake CUDA can abort a process):
- fake_export (info, CPU): fake CUDA model; torch.export, then run_decompositions
  with the zeros/full decompositions TRT enables. Checks that torchvision has a
  Meta kernel and that the mask stays on the input's device (the torch and
  torchvision side of the bug).
- emulated_trt240_decomposition (info, CPU): the same, but with a copy of TRT
  2.4.0's device-dropping empty_strided. Produces the signature text on any torch.
- emulated_trt250_decomposition_cuda1 (info, CPU): the model on fake cuda:1 with
  a copy of 2.5.0's default-device empty_strided: the cuda:1/cuda:0 mismatch.
- eager (main, GPU): runs the real model on CUDA, asserts every parameter is
  on CUDA, and keeps the reference output.
- trt_compile, trt_run (main, GPU + TRT): the reporter's torch_tensorrt.compile
  call; the output is checked against eager.
- trt_compile_cuda1 (info, 2 GPUs + TRT): the same model on cuda:1, compiled
  with ``device=cuda:1`` while the current device stays cuda:0. The device
  argument matters: torch-tensorrt builds its example inputs on
  ``kwargs.get("device", default_device())`` (``dynamo/_tracer.py`` line 59 at
  v2.3.0/v2.4.0, line 77 at v2.5.0), so without it the inputs land on cuda:0
  and export fails on "cuda:0, cuda:1" before the decomposition runs. With it,
  only the decomposition's default device (``default_device()`` =
  ``torch.cuda.current_device()``, ``dynamo/_defaults.py`` line 45 at v2.5.0)
  can put the mask on cuda:0. Expected to fail from 2.5.0 on (mask on the
  default device); passes only if TRT starts following the input's device.
- trt_dynamo_compile_standin (main, CPU, TensorRT stood in: ``_standin.py``): the
  fake-CUDA export handed to the real ``torch_tensorrt.dynamo.compile``; it must
  either raise this bug in ``run_decompositions`` (``dynamo/_compiler.py``) or get
  past it with the mask on cuda:0, and is ``skip`` (needs real TensorRT) after that.
  The input goes in as ``torch_tensorrt.Input.from_tensor(x)``, which is what
  ``prepare_inputs`` makes of a tensor: from 2.7.0 to 2.11.0 it first copies the
  tensor with ``torch.tensor`` outside fake mode (``dynamo/utils.py``), a real
  CUDA tensor that needs a GPU. The decompositions never see that copy.
- trt_table_without_empty_strided_standin (info, control): torch-tensorrt's own
  decomposition table minus ``aten.empty_strided``: passes on every release.
- trt_empty_strided_device_standin (info, control): torch-tensorrt's own
  ``empty_strided`` decomposition asked for cuda:0: the device it returns
  (2.4.0: cpu; 2.5.0: the current device, stood in as 0).
- workaround (GPU + TRT): the seed's torch.export(strict=False), then
  torch_tensorrt.dynamo.compile with min_block_size=1; checked against eager.
  It runs the same lowering, so on TRT 2.4.0 it is expected to fail too.
"""

from __future__ import annotations

import protocol
from protocol import Signature

META = {
    "id": "deform_conv2d_device",
    "kind": "bug",
    "title": "deform_conv2d: Unhandled FakeTensor Device Propagation in torch_tensorrt.compile",
    "upstream": [
        "https://github.com/pytorch/TensorRT/issues/3556",
        "https://github.com/pytorch/TensorRT/pull/2859",
        "https://github.com/pytorch/TensorRT/pull/2948",
    ],
    "description": (
        "torchvision.ops.deform_conv2d without a mask builds the mask on the input's device; "
        "Torch-TensorRT 2.4.0's empty_strided decomposition drops the device, so the mask lands "
        "on the CPU and the FakeTensor device check fails during compilation. Fixed in "
        "Torch-TensorRT 2.5.0 (PR #2948) for models on the default CUDA device only: the fix "
        "puts the mask on TRT's default device, so a model on cuda:1 still mismatches "
        "(stage trt_compile_cuda1). The seed's workaround (torch.export, then "
        "dynamo.compile) runs the same decomposition and does not help on 2.4.0."
    ),
    "requires": ["cuda", "torch_tensorrt", "torchvision>=0.17"],
    "introduced_by": {
        "commits": ["0c3801621dedab462a0163c9be0c1f09d7851678"],
        "note": "PR #2859: the empty_strided decomposition builds torch.empty(empty_size) with no "
                "device (v2.4.0 py/torch_tensorrt/dynamo/lowering/_decompositions.py; "
                "release/ngc/24.07 (8de3900e90) :231-236); the reporter's traceback matches "
                "torch 2.4.1. The workaround (export + dynamo.compile) goes through the same "
                "lowering: expected to fail too (inference from the code, unverified on a GPU)",
    },
    "fixed_by": {
        "commits": ["3323156af3eb35013024d72781a974b4fcb570c3"],
        "note": "PR #2948: _decompositions.py passes device=to_torch_device(default_device()) "
                "(release/ngc/24.08 (c71ce43f87) :236-240), for a model on the default CUDA "
                "device; the reporter confirmed on 2.7.0. Not for cuda:1: see trt_compile_cuda1",
    },
}

# The failing operator, as the FX interpreter names it ("While executing %deform_conv2d :
# ... call_function[target=torch.ops.torchvision.deform_conv2d.default]"): never a file
# name, since the repro's own file is called deform_conv2d_device.py.
_DEFORM_NODE = (r"While executing %\w+ : \[[^\]]*\] = "
                r"call_function\[target=torch\.ops\.torchvision\.deform_conv2d\.default\]")
_TRT_STAGES = ("trt_compile", "workaround", "emulated_trt240_decomposition")
_STANDIN_STAGES = ("trt_dynamo_compile_standin",)
# Where the bug is: torch-tensorrt's compile, in the run_decompositions call (2.4.0: line 185).
_DECOMPOSITION_FRAME = r"torch_tensorrt/dynamo/_compiler\.py:\d+ in compile: .*run_decompositions"
_CUDA1_STAGES = ("trt_compile_cuda1", "emulated_trt250_decomposition_cuda1")

SIGNATURES = [
    Signature(
        "standin_fake_device_propagation", exc="RuntimeError", when={"torch": "<2.13"},
        stage=_STANDIN_STAGES, frame=_DECOMPOSITION_FRAME,
        pattern=r"Unhandled FakeTensor Device Propagation for torchvision\.deform_conv2d\.default, "
                r"found two different devices cuda:\d+, cpu",
        note="raised in torch-tensorrt's run_decompositions, TensorRT stood in"),
    Signature(
        "standin_fake_device_mismatch", exc=("FakeTensorDeviceMismatchError", "RuntimeError"),
        when={"torch": ">=2.13"}, stage=_STANDIN_STAGES, frame=_DECOMPOSITION_FRAME,
        pattern=[r"Expected all tensors to be on the same device, but found at least two devices, "
                 r"cuda:\d+ and cpu!", _DEFORM_NODE],
        note="the same on torch >= 2.13, TensorRT stood in"),
    Signature(
        "fake_device_propagation", exc="RuntimeError", when={"torch": "<2.13"}, stage=_TRT_STAGES,
        pattern=r"Unhandled FakeTensor Device Propagation for torchvision\.deform_conv2d\.default, "
                r"found two different devices cuda:\d+, cpu",
        note="torch <= 2.12 fake-tensor text (the reporter's, torch 2.4.1); it names the operator"),
    Signature(
        "fake_device_mismatch", exc=("FakeTensorDeviceMismatchError", "RuntimeError"),
        when={"torch": ">=2.13"}, stage=_TRT_STAGES,
        pattern=[r"Expected all tensors to be on the same device, but found at least two devices, "
                 r"cuda:\d+ and cpu!", _DEFORM_NODE],
        note="torch >= 2.13 text (pytorch PR #185412) names no operator: the FX node that was "
             "executing must be deform_conv2d"),
    Signature(
        "mask_on_default_device", exc="RuntimeError", when={"torch": "<2.13"}, stage=_CUDA1_STAGES,
        pattern=r"Unhandled FakeTensor Device Propagation for torchvision\.deform_conv2d\.default, "
                r"found two different devices cuda:1, cuda:0",
        note="TRT >= 2.5 puts the mask on the default device (cuda:0) while the model is on cuda:1"),
    Signature(
        "mask_on_default_device_2_13", exc=("FakeTensorDeviceMismatchError", "RuntimeError"),
        when={"torch": ">=2.13"}, stage=_CUDA1_STAGES,
        pattern=[r"Expected all tensors to be on the same device, but found at least two devices, "
                 r"cuda:1 and cuda:0!", _DEFORM_NODE],
        note="the same on torch >= 2.13"),
]

SHAPE = [1, 3, 224, 224]


def build_model():
    """The reporter's SimpleDeformNet (on CPU)."""
    import torch
    from torchvision.ops import DeformConv2d, deform_conv2d

    class SimpleDeformNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.offset_conv = torch.nn.Conv2d(3, 18, kernel_size=3, padding=1)
            self.deform_conv = DeformConv2d(3, 16, kernel_size=3, padding=1)

        def forward(self, x):
            offset = self.offset_conv(x)
            return deform_conv2d(x, offset, self.deform_conv.weight, self.deform_conv.bias,
                                 stride=1, padding=1)

    torch.manual_seed(0)
    return SimpleDeformNet().eval()


def trt_enabled_decompositions():
    """The zeros/full decompositions TRT's table enables (they lower to empty_strided)."""
    import torch
    from torch._decomp import get_decompositions

    aten = torch.ops.aten
    return get_decompositions([aten.zeros.default, aten.full.default, aten.zeros_like.default,
                               aten.new_zeros.default])


def empty_strided_dropping_device(size, stride, *, dtype=None, layout=None, device=None,
                                  pin_memory=None):
    """What TRT v2.4.0 registered for aten.empty_strided: the device argument is lost."""
    import torch

    return torch.as_strided(torch.empty(size, dtype=dtype), size, stride)


def empty_strided_default_device(size, stride, *, dtype=None, layout=None, device=None,
                                 pin_memory=None):
    """What TRT v2.5.0 registers: TRT's default device (cuda:0 here), dtype dropped too."""
    import torch

    return torch.as_strided(torch.empty(size, device=torch.device("cuda:0")), size, stride)


def export_fake(s, empty_strided=None, device="cuda:0"):
    """torch.export + run_decompositions of the fake-CUDA model; returns the mask's device."""
    import torch
    import torchvision

    import _torchutil

    s.note("torchvision", torchvision.__version__)
    has_meta = torch._C._dispatch_has_kernel_for_dispatch_key("torchvision::deform_conv2d", "Meta")
    s.check(has_meta, "torchvision registers a Meta kernel for deform_conv2d (tv >= 0.17)")
    model = build_model()
    with _torchutil.fake_mode():
        _torchutil.fake_cuda_params(model, device=device)
        devices = set(_torchutil.tensor_devices(model).values())
        s.check(devices == {device}, "every parameter is on %s" % device, devices=sorted(devices))
        x = torch.empty(SHAPE, device=device)
        ep = torch.export.export(model, (x,), strict=False)
        s.note("exported_ops", _torchutil.graph_targets(ep.graph_module))
        table = trt_enabled_decompositions()
        if empty_strided is not None:
            table[torch.ops.aten.empty_strided.default] = empty_strided
        ep = ep.run_decompositions(table)
    return mask_device(s, ep)


def mask_device(s, ep):
    """Device of the mask argument (index 3) of the deform_conv2d node."""
    nodes = [n for n in ep.graph.nodes if n.op == "call_function" and "deform_conv2d" in str(n.target)]
    s.check(len(nodes) == 1, "one deform_conv2d node after decomposition", found=len(nodes))
    mask = nodes[0].args[3]
    dev = str(mask.meta["val"].device)
    s.note("mask_producer", str(mask.target))
    s.note("mask_device", dev)
    return dev


def stage_fake_export(s):
    dev = export_fake(s)
    s.check(dev == "cuda:0", "the mask stays on the input's device (cuda:0)", mask_device=dev)


def stage_emulated(s):
    s.note("emulates", "torch_tensorrt v2.4.0 lowering: aten.empty_strided without device")
    dev = export_fake(s, empty_strided_dropping_device)
    s.note("outcome", "no device error raised; mask on %s" % dev)


def stage_emulated_cuda1(s):
    s.note("emulates", "torch_tensorrt v2.5.0 lowering: aten.empty_strided on the default device, "
                       "model on cuda:1")
    dev = export_fake(s, empty_strided_default_device, device="cuda:1")
    s.note("outcome", "no device error raised; mask on %s" % dev)


def stage_eager(s, device="cuda"):
    import torch

    model = build_model().to(device)
    devices = set(str(p.device) for p in model.parameters())
    s.check(all(d.startswith("cuda") for d in devices), "every parameter is on CUDA",
            devices=sorted(devices))
    x = torch.randn(SHAPE, device=device)
    with torch.no_grad():
        ref = model(x)
    s.note("output_shape", list(ref.shape))
    return model, x, ref


def stage_trt_compile(s, model):
    import torch
    import torch_tensorrt

    devices = set(str(p.device) for p in model.parameters())
    s.check(all(d.startswith("cuda") for d in devices),
            "every parameter is on CUDA before blaming this bug", devices=sorted(devices))
    s.note("torch_tensorrt", torch_tensorrt.__version__)
    inp = torch_tensorrt.Input(min_shape=SHAPE, opt_shape=SHAPE, max_shape=SHAPE, dtype=torch.float32)
    return torch_tensorrt.compile(model, inputs=[inp])


def stage_trt_run(s, trt_model, x, ref):
    import torch

    import _torchutil

    with torch.no_grad():
        out = _torchutil.first_output(trt_model(x))
    s.check_close(out, ref, what="TensorRT vs eager", rtol=1e-2, atol=1e-2)


def stage_trt_cuda1(s):
    """The reporter's call with the model, the input and ``device=`` on cuda:1; the current
    device stays cuda:0, so only TRT's default device can put the mask there."""
    import torch
    import torch_tensorrt

    model, x, ref = stage_eager(s, device="cuda:1")
    current = torch.cuda.current_device()
    s.note("current_device", current)
    s.check(current == 0, "the current device is cuda:0 (TRT's default device)", current=current)
    s.note("torch_tensorrt", torch_tensorrt.__version__)
    inp = torch_tensorrt.Input(min_shape=SHAPE, opt_shape=SHAPE, max_shape=SHAPE, dtype=torch.float32)
    trt_model = torch_tensorrt.compile(model, inputs=[inp], device=torch_tensorrt.Device("cuda:1"))
    stage_trt_run(s, trt_model, x, ref)


def stage_workaround(s):
    """The seed's workaround: torch.export(strict=False), then dynamo.compile."""
    import torch
    import torch_tensorrt

    import _torchutil

    model, x, ref = stage_eager(s)
    ep = torch.export.export(model, (x,), strict=False)
    kwargs, dropped = _torchutil.supported_kwargs(torch_tensorrt.dynamo.compile, {
        "enabled_precisions": {torch.float32}, "disable_tf32": True, "min_block_size": 1})
    s.note("dropped_kwargs", dropped)
    trt_model = torch_tensorrt.dynamo.compile(ep, inputs=[x], **kwargs)
    with torch.no_grad():
        out = _torchutil.first_output(trt_model(x))
    s.check_close(out, ref, what="export + dynamo.compile vs eager", rtol=1e-2, atol=1e-2)


def fake_cuda_export(s):
    """The reporter's model and input on fake cuda:0, exported (call inside fake_mode())."""
    import torch

    import _torchutil

    model = build_model()
    _torchutil.fake_cuda_params(model, device="cuda:0")
    devices = set(_torchutil.tensor_devices(model).values())
    s.check(devices == {"cuda:0"}, "every parameter is on cuda:0 before blaming this bug",
            devices=sorted(devices))
    x = torch.empty(SHAPE, device="cuda:0")
    return torch.export.export(model, (x,), strict=False), x


def stage_trt_dynamo_compile_standin(s):
    """The real torch_tensorrt.dynamo.compile on the fake-CUDA export, up to lowering."""
    import torch

    import _standin
    import _torchutil

    trt = _standin.import_torch_tensorrt(s)
    with _torchutil.fake_mode():
        ep, x = fake_cuda_export(s)
        kwargs, dropped = _torchutil.supported_kwargs(trt.dynamo.compile, {"min_block_size": 1})
        s.note("dropped_kwargs", dropped)
        with _standin.stop_at(torch.export.ExportedProgram, "run_decompositions",
                              "the end of run_decompositions", run_first=True) as state:
            trt.dynamo.compile(ep, inputs=[trt.Input.from_tensor(x)], **kwargs)
    if "value" in state:
        dev = mask_device(s, state["value"])
        s.check(dev == "cuda:0", "the mask stays on the input's device (cuda:0)", mask_device=dev)
    _standin.past(s, state, "run_decompositions (torch-tensorrt's decomposition table)")


def trt_table(without=()):
    """torch-tensorrt's own decomposition table, less the ``aten`` overloads named."""
    import torch
    from torch_tensorrt.dynamo.lowering import get_decompositions

    table = dict(get_decompositions())
    for name in without:
        table.pop(getattr(torch.ops.aten, name).default, None)
    return table


def stage_trt_table_without_empty_strided(s):
    import _standin
    import _torchutil

    _standin.import_torch_tensorrt(s)
    with _torchutil.fake_mode():
        ep, _ = fake_cuda_export(s)
        ep = ep.run_decompositions(trt_table(without=("empty_strided",)))
    dev = mask_device(s, ep)
    s.check(dev == "cuda:0", "without torch-tensorrt's empty_strided the mask stays on cuda:0",
            mask_device=dev)


def stage_trt_empty_strided_device(s):
    import torch

    import _standin
    import _torchutil

    _standin.import_torch_tensorrt(s)
    decomposition = trt_table().get(torch.ops.aten.empty_strided.default)
    if decomposition is None:
        s.skip("this torch-tensorrt registers no empty_strided decomposition")
    with _torchutil.fake_mode():
        out = decomposition([1, 1], [1, 1], dtype=torch.float32, device=torch.device("cuda:0"))
    s.note("asked_for", "cuda:0")
    s.note("returned_device", str(out.device))


def main(r):
    fake = ["fake_cuda", "torchvision"]
    r.stage("fake_export", stage_fake_export, requires=fake, role="info", isolate=True)
    r.stage("emulated_trt240_decomposition", stage_emulated, requires=fake, role="info", isolate=True)
    r.stage("emulated_trt250_decomposition_cuda1", stage_emulated_cuda1, requires=fake, role="info",
            isolate=True)
    eager = r.stage("eager", stage_eager, requires=["cuda", "torchvision"])
    model, x, ref = eager if eager else (None, None, None)
    trt_model = r.stage("trt_compile", stage_trt_compile, model,
                        requires=["cuda", "torch_tensorrt"], after=["eager"])
    r.stage("trt_run", stage_trt_run, trt_model, x, ref, after=["trt_compile"])
    r.stage("trt_compile_cuda1", stage_trt_cuda1, role="info", isolate=True,
            requires=["gpus>=2", "torch_tensorrt", "torchvision"])
    # fake CUDA is probed without the stand-ins (torch <= 2.3 needs their lazy-init one): a
    # stand-in stage whose fake CUDA fails ends in an error, never a verdict
    trt = ["torchvision"]
    r.stage("trt_dynamo_compile_standin", stage_trt_dynamo_compile_standin, requires=trt,
            standins=["tensorrt"])
    r.stage("trt_table_without_empty_strided_standin", stage_trt_table_without_empty_strided,
            requires=trt, standins=["tensorrt"], role="info")
    r.stage("trt_empty_strided_device_standin", stage_trt_empty_strided_device, requires=trt,
            standins=["tensorrt"], role="info")
    r.stage("workaround", stage_workaround, role="workaround", isolate=True,
            requires=["cuda", "torch_tensorrt", "torchvision"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
