"""pytorch/TensorRT #2617: dynamic H/W in a UNet with pixel_shuffle and interpolate.

The reporter (NGC 23.12: torch 2.2.0a0, torch-tensorrt 2.2.0.dev0) compiled an
image-cleaning UNet (mmagic RealBasicVSR) with ``min=[21,3,200,200],
opt=[21,3,300,300], max=[21,3,400,400]`` and
``allow_shape_tensors=True, truncate_long_and_double=True``, and saw:

- TorchScript: "reshape dimension with more than one -1 wildcard. Reshaping
  [21,3,(# 2 (SHAPE input_0)),(# 3 (SHAPE input_0))] to [1,21,3,-1,-1]", then
  a segfault in the converter. That reshape is RealBasicVSR's first layer (the
  [21,3,H,W] frames viewed as a [1,21,3,H,W] clip): aten::size is not
  supported under dynamic shapes (#1568, closed without a fix; #2332 open for
  ``interpolate(size=...)``), so the model here starts with that view. TensorRT
  may only log the error (log signature) before the crash (signal signature).
- dynamo: "The size of tensor a (2*((s1//8))) must match the size of tensor b
  ((s1//4))". That is the reporter's model, not torch-tensorrt: a skip
  connection adding ``up2x(h//8)`` to ``h//4`` needs ``h//4`` even, and at 300
  eager fails too (74 vs 75). Stage ``reporter_skip_arithmetic`` shows it on
  the CPU with a two-branch stand-in; on torch 2.2.2 it records the issue's
  text word for word ("TorchRuntimeError: Failed running call_function
  <built-in function add>(*(FakeTensor(..., size=(1, 3, 2*((s0//8)),
  2*((s1//8)))), FakeTensor(..., size=(1, 3, (s0//4), (s1//4)))), **{}): The
  size of tensor a (2*((s1//8))) must match the size of tensor b ((s1//4)) at
  non-singleton dimension 3)").

The model here is valid at every size of the range: its decoder upsamples each
level to the size of its skip (``interpolate(size=skip.shape[-2:])``, the #2332
form) and its output is RealBasicVSR's upsampler (``pixel_shuffle`` x2 plus a
bilinear ``interpolate(scale_factor=2.0)`` base), so eager, ``torch.jit.script``,
``torch.jit.trace`` and ``torch.export`` with ``Dim(200..400)`` all accept it
(recorded on CPU torch 2.2.2, 2.9.1, 2.12.1, 2.13.0 and 2.14.1; torch-tensorrt
2.2.0's dynamo tracer makes the same export call, one ``Dim`` per dynamic
dimension of the named input), and the torch-tensorrt stages reach its
dynamic-shape paths. Version notes from the source:

- a dynamic ``torch_tensorrt.Input`` needs ``name`` (the forward argument, "x")
  on torch-tensorrt 2.2.0: ``dynamo/_tracer.py`` at v2.2.0 line 66, "Expected a
  name for a dynamic input"; later releases name it from the signature.
- ``allow_shape_tensors`` exists only in the TorchScript compile spec
  (``py/torch_tensorrt/csrc/tensorrt_classes.cpp``); dynamo has no such
  setting, so the dynamo stage passes ``truncate_long_and_double`` only.
- plain ``Dim`` ranges, no ``8 * Dim`` (derived dims need torch >= 2.3; NGC 23.12
  has torch 2.2.0a0).
- dynamic pixel_shuffle (PR #3044) and upsample (PR #2790) converters first
  ship in v2.5.0; before that those ops run in PyTorch (counted, not judged).

Stages:
- eager_shapes (info, CPU): the model at 200, 300 and 400 (batch 21).
- script_and_trace (info, CPU): torch.jit.script and torch.jit.trace, each
  checked against eager at the three sizes.
- symbolic_export (info, CPU): torch.export with ``Dim(200..400)`` at 300; the
  exported program is checked against eager at the three sizes.
- reporter_skip_arithmetic (info, CPU): the reporter's dynamo text from a
  ``up2x(h//8) + h//4`` stand-in, checked to be refused as in the issue.
- trt_dynamo_compile (main, GPU + TRT): the reporter's call, ir="dynamo".
- workaround (GPU + TRT): the seed's torch.export with explicit Dims, then
  dynamo.compile; engines counted and the output checked against eager.
- ts_dynamic_compile (main, GPU + TRT TorchScript frontend): the scripted
  model, ir="ts", the reporter's settings. Its segfault is a declared signature.
"""

from __future__ import annotations

import protocol
from protocol import Signature

META = {
    "id": "dynamic_unet_shapes",
    "kind": "bug",
    "title": "UNet with pixel_shuffle + interpolate, dynamic H/W: TorchScript frontend wildcard reshape",
    "upstream": [
        "https://github.com/pytorch/TensorRT/issues/2617",
        "https://github.com/pytorch/TensorRT/issues/1568",
        "https://github.com/pytorch/TensorRT/issues/2332",
        "https://github.com/pytorch/TensorRT/pull/3044",
        "https://github.com/pytorch/TensorRT/pull/2790",
    ],
    "description": (
        "Dynamic height/width from 200 to 400 (opt 300, batch 21) in a UNet with pixel_shuffle "
        "and interpolate. TorchScript frontend: the clip view's dynamic sizes become two -1 "
        "wildcards in a TensorRT reshape, then a segfault (#1568, never fixed). The reporter's "
        "dynamo error came from their model's skip arithmetic (h//4 must be even), not from "
        "torch-tensorrt: this model is valid at every size, and the dynamo stage checks "
        "torch-tensorrt's dynamic-shape path (dynamic pixel_shuffle/upsample converters from "
        "2.5.0). Workaround: torch.export with explicit Dims, then dynamo.compile."
    ),
    "requires": ["cuda", "torch_tensorrt"],
    "expect": [
        {"when": {"torch_tensorrt": ">=1.0"}, "status": "fail",
         "note": "ts_dynamic_compile: the TorchScript frontend turns aten::size of a dynamic input "
                 "into -1 wildcards (#1568 closed without a fix, #2332 open); inference from the "
                 "issue's log and those threads, unverified on a GPU. The dynamo stage is expected "
                 "to pass with engines for pixel_shuffle/upsample from 2.5.0 (PRs #3044, #2790) "
                 "and with those ops in PyTorch before (inference from the converters' flags)"},
    ],
}

_WILDCARD = r"reshape dimension with more than one -1 wildcard"
# The reporter's dynamo text, checked by reporter_skip_arithmetic (not a signature: the
# stand-in is expected to be refused, and this repro's own model never is).
_A8, _B4 = r"2\*\(\(\w+//8\)\)", r"\(\w+//4\)"
SKIP_REFUSALS = (
    r"The size of tensor a \((?:%s\) must match the size of tensor b \(%s|%s\) must match "
    r"the size of tensor b \(%s)\)" % (_A8, _B4, _B4, _A8),
    r"Eq\((?:%s, %s|%s, %s)\) is inconsistent" % (_A8, _B4, _B4, _A8),
)

SIGNATURES = [
    Signature(
        "ts_reshape_wildcard", stage="ts_dynamic_compile", pattern=_WILDCARD,
        note="TorchScript frontend: the TensorRT shape error raised for the 5-D view"),
    Signature(
        "ts_reshape_wildcard_logged", stage="ts_dynamic_compile", log=_WILDCARD,
        note="the same error when TensorRT only logs it and the compile fails otherwise"),
    Signature(
        "ts_wildcard_segfault", signal="SIGSEGV", stage="ts_dynamic_compile", pattern=_WILDCARD,
        note="the converter then segfaults (the issue's 'Caught signal 11'); the wildcard "
             "error must be in the output: '[Shuffle]: output shape can not be computed' alone "
             "is any TensorRT shuffle failure"),
]

BATCH = 21
MIN, OPT, MAX = 200, 300, 400
SIZES = (MIN, OPT, MAX)
REPORTER_KWARGS = {"allow_shape_tensors": True, "truncate_long_and_double": True}
DYNAMO_KWARGS = {"truncate_long_and_double": True}  # allow_shape_tensors: TorchScript only


def build_model():
    """RealBasicVSR's clip view, a small UNet whose decoder upsamples each level to its
    skip's size (valid for any H, W), and RealBasicVSR's x2 upsampler (pixel_shuffle plus
    a bilinear base).

    It downsamples with stride-2 convolutions (as NAFNet does): torch.export on torch
    2.9.1 and 2.12.1 guards ``avg_pool2d(x, 2)`` / ``max_pool2d(x, 2)`` with
    ``((-2) + h) % 2 == 0`` (recorded: "Constraints violated (h, w)! ... satisfy the
    generated guard (((-2) + L['x'].size()[2]) % 2) == 0"), which refuses Dim(200..400);
    torch 2.13.0 and 2.14.1 do not."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class TinyUNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc1 = nn.Conv2d(3, 8, 3, padding=1)
            self.enc2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)  # strided convs, not pooling:
            self.enc3 = nn.Conv2d(16, 16, 3, stride=2, padding=1)  # see the docstring
            self.dec2 = nn.Conv2d(16, 16, 3, padding=1)
            self.dec1 = nn.Conv2d(16, 8, 3, padding=1)
            self.up = nn.Conv2d(8, 3 * 4, 3, padding=1)

        def forward(self, x):
            t, c, h, w = x.size()
            lqs = x.view(1, t, c, h, w)  # RealBasicVSR: [21,3,H,W] frames -> a [1,21,3,H,W] clip
            x = lqs.view(-1, c, h, w)
            e1 = F.relu(self.enc1(x))
            e2 = F.relu(self.enc2(e1))
            e3 = F.relu(self.enc3(e2))
            d2 = F.relu(self.dec2(F.interpolate(e3, size=e2.shape[-2:], mode="nearest") + e2))
            d1 = F.relu(self.dec1(F.interpolate(d2, size=e1.shape[-2:], mode="nearest"))) + e1
            base = F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)
            return F.pixel_shuffle(self.up(d1), 2) + base

    torch.manual_seed(0)
    return TinyUNet().eval()


def example(size, batch=BATCH, device="cpu"):
    import torch

    torch.manual_seed(size)
    return torch.randn(batch, 3, size, size, device=device)


def stage_eager(s):
    import torch

    model = build_model()
    with torch.no_grad():
        for size in SIZES:
            out = model(example(size))
            s.check(list(out.shape) == [BATCH, 3, 2 * size, 2 * size],
                    "eager output at %d is [%d, 3, %d, %d]" % (size, BATCH, 2 * size, 2 * size),
                    shape=list(out.shape))
    s.note("outcome", "eager accepted %s (batch %d)" % (list(SIZES), BATCH))


def stage_script_trace(s):
    import warnings

    import torch

    model = build_model()
    scripted = torch.jit.script(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TracerWarning: sizes become constants or size ops
        traced = torch.jit.trace(model, example(OPT, batch=2))
    with torch.no_grad():
        for size in SIZES:
            x = example(size, batch=2)
            ref = model(x)
            s.check_close(scripted(x), ref, what="scripted vs eager at %d" % size, rtol=1e-4, atol=1e-5)
            s.check_close(traced(x), ref, what="traced vs eager at %d" % size, rtol=1e-4, atol=1e-5)


def export_dims():
    from torch.export import Dim

    return {"x": {2: Dim("h", min=MIN, max=MAX), 3: Dim("w", min=MIN, max=MAX)}}


def stage_symbolic(s):
    import torch

    model = build_model()
    s.note("dynamic_shapes", "H, W in Dim(%d..%d), example %d, batch %d" % (MIN, MAX, OPT, BATCH))
    ep = torch.export.export(model, (example(OPT),), dynamic_shapes=export_dims())
    mod = ep.module()
    with torch.no_grad():
        for size in SIZES:
            x = example(size)
            s.check_close(mod(x), model(x), what="exported vs eager at %d" % size, rtol=1e-4, atol=1e-5)


def stage_skip_arithmetic(s):
    """The reporter's dynamo text: ``up2x(h//8) + h//4`` refused for Dim(200..400) at 300."""
    import re

    import torch
    import torch.nn.functional as F

    class SkipAdd(torch.nn.Module):
        def forward(self, x):
            return F.interpolate(F.avg_pool2d(x, 8), scale_factor=2.0) + F.avg_pool2d(x, 4)

    try:
        torch.export.export(SkipAdd(), (torch.randn(1, 3, OPT, OPT),), dynamic_shapes=export_dims())
    except Exception as exc:  # the refusal is the evidence
        text = "%s: %s" % (type(exc).__name__, exc)
        s.note("refusal", text[:2000])
        s.check(any(re.search(p, text) for p in SKIP_REFUSALS),
                "refused with the issue's shape-arithmetic text (either operand order)")
        return
    s.check(False, "torch.export refused up2x(h//8) + h//4 for H, W in 200..400")


def trt_input(name="x"):
    import torch
    import torch_tensorrt

    return torch_tensorrt.Input(min_shape=[BATCH, 3, MIN, MIN], opt_shape=[BATCH, 3, OPT, OPT],
                                max_shape=[BATCH, 3, MAX, MAX], dtype=torch.float32, name=name)


def count_engines(s, gm):
    names = [n for n, _ in gm.named_children()]
    s.note("trt_engines", len([n for n in names if "run_on_acc" in n]))
    s.note("torch_partitions", len([n for n in names if "run_on_gpu" in n]))


def check_sizes(s, trt_model, model):
    import torch

    import _torchutil

    with torch.no_grad():
        for size in SIZES:
            x = example(size, device="cuda")
            s.check_close(_torchutil.first_output(trt_model(x)), model(x),
                          what="TensorRT vs eager at %d" % size, rtol=1e-2, atol=1e-2)


def stage_trt_dynamo(s):
    import torch_tensorrt

    s.note("torch_tensorrt", torch_tensorrt.__version__)
    s.note("kwargs", sorted(DYNAMO_KWARGS))
    model = build_model().cuda()
    trt_model = torch_tensorrt.compile(model, ir="dynamo", inputs=[trt_input()], **DYNAMO_KWARGS)
    count_engines(s, trt_model)
    check_sizes(s, trt_model, model)


def stage_workaround(s):
    import torch
    import torch_tensorrt

    import _torchutil

    model = build_model().cuda()
    ep = torch.export.export(model, (example(OPT, device="cuda"),), dynamic_shapes=export_dims())
    kwargs, dropped = _torchutil.supported_kwargs(torch_tensorrt.dynamo.compile, {"min_block_size": 1})
    s.note("dropped_kwargs", dropped)
    trt_model = torch_tensorrt.dynamo.compile(ep, inputs=[trt_input()], **kwargs)
    count_engines(s, trt_model)
    check_sizes(s, trt_model, model)


def stage_ts(s):
    import torch
    import torch_tensorrt

    if not hasattr(torch_tensorrt, "ts"):
        s.skip("this torch_tensorrt build has no TorchScript frontend")
    model = build_model().cuda()
    scripted = torch.jit.script(model)
    trt_model = torch_tensorrt.compile(scripted, ir="ts", inputs=[trt_input()], **REPORTER_KWARGS)
    check_sizes(s, trt_model, model)


def main(r):
    trt = ["cuda", "torch_tensorrt"]
    r.stage("eager_shapes", stage_eager, role="info")
    r.stage("script_and_trace", stage_script_trace, role="info")
    r.stage("symbolic_export", stage_symbolic, role="info")
    r.stage("reporter_skip_arithmetic", stage_skip_arithmetic, role="info")
    r.stage("trt_dynamo_compile", stage_trt_dynamo, requires=trt, isolate=True)
    r.stage("workaround", stage_workaround, role="workaround", requires=trt, isolate=True)
    r.stage("ts_dynamic_compile", stage_ts, requires=trt, isolate=True)


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
