"""pytorch/TensorRT #2617: dynamic H/W in a UNet with pixel_shuffle and interpolate.

The reporter compiled an image-cleaning UNet (mmagic RealBasicVSR) with
``min=[21,3,200,200], opt=[21,3,300,300], max=[21,3,400,400]`` and saw two
failures:

- dynamo: "The size of tensor a (2*((s1//8))) must match the size of tensor b
  ((s1//4))". The skip connection adds ``up2x(h//8)`` to ``h//4``, and the two
  are equal only when ``h//4`` is even. At opt=300 the sizes are 74 and 75, so
  eager fails too: this is a shape-range problem of the model, on every
  version. A range of multiples of 8 (``8*Dim``) works.
- TorchScript: "reshape dimension with more than one -1 wildcard. Reshaping
  [21,3,(# 2 (SHAPE input_0)),(# 3 (SHAPE input_0))] to [1,21,3,-1,-1]", then a
  segfault in the converter. That reshape is RealBasicVSR's first layer: the
  [21,3,H,W] frames viewed as a [1,21,3,H,W] clip (aten::size is not supported
  under dynamic shapes, #1568), so the model here starts with that view. Never
  fixed in the TorchScript frontend; TensorRT may only log the error (log
  signature) before the crash (signal signature).

The verdict comes from the torch-tensorrt paths (the reporter's calls, with
``allow_shape_tensors=True, truncate_long_and_double=True``); the CPU stages are
evidence. They run isolated: a TensorRT crash is recorded on its stage.

Stages:
- eager_opt_shape (info, CPU): the model at 300x300 in eager mode.
- symbolic_export (info, CPU): torch.export with ``Dim(200..400)`` at 300.
- symbolic_export_valid_range (info, CPU): ``8*Dim(25..50)`` at 304; the
  exported program is checked against eager at 200, 304 and 400.
- trt_dynamo_compile (main, GPU + TRT): the reporter's call, ir="dynamo".
- workaround (GPU + TRT): export with ``8*Dim``, then dynamo.compile with
  min/opt/max 200/304/400; engines are counted and the output checked against eager.
- ts_dynamic_compile (main, GPU + TRT TorchScript frontend): ir="ts" with the
  same dynamic range. Its segfault is a declared signature.
"""

from __future__ import annotations

import protocol
from protocol import Signature

META = {
    "id": "dynamic_unet_shapes",
    "title": "UNet with pixel_shuffle + interpolate: dynamic H/W fails (dynamo) or segfaults (TorchScript)",
    "upstream": [
        "https://github.com/pytorch/TensorRT/issues/2617",
        "https://github.com/pytorch/TensorRT/issues/1568",
        "https://github.com/pytorch/TensorRT/issues/2332",
        "https://github.com/pytorch/TensorRT/pull/3044",
        "https://github.com/pytorch/TensorRT/pull/2790",
    ],
    "description": (
        "Dynamic height/width from 200 to 400 with opt 300. dynamo: the skip connection needs "
        "h//4 to be even, so torch.export refuses the range (at 300, eager fails too). "
        "TorchScript: pixel_shuffle reshape with two -1 wildcards, then a segfault. Workaround: "
        "a range of multiples of 8 (8*Dim) through torch.export and dynamo.compile; dynamic "
        "pixel_shuffle and upsample converters exist from Torch-TensorRT 2.5.0."
    ),
    "requires": ["cuda", "torch_tensorrt"],
    "expect": [
        {"when": {"torch_tensorrt": ">=1.0"}, "status": "fail",
         "note": "dynamo: the model's shape constraint, refused by torch.export on every version "
                 "(symbolic_export, verified on torch 2.9.1-2.14.1); TorchScript: the wildcard "
                 "reshape, never fixed (#1568 closed without a fix)"},
    ],
}

_STAGES = ("symbolic_export", "trt_dynamo_compile")
_A8, _B4 = r"2\*\(\(\w+//8\)\)", r"\(\w+//4\)"
_WILDCARD = r"reshape dimension with more than one -1 wildcard"

SIGNATURES = [
    Signature(
        "eager_skip_size_mismatch", exc="RuntimeError", stage="eager_opt_shape",
        pattern=r"The size of tensor a \(74\) must match the size of tensor b \(75\) at "
                r"non-singleton dimension [23]",
        note="at 300x300 the upsampled h//8 branch (74) meets the h//4 skip (75)"),
    Signature(
        "symbolic_size_mismatch", exc="RuntimeError", stage=_STAGES,
        pattern=r"The size of tensor a \((?:%s\) must match the size of tensor b \(%s|%s\) must match "
                r"the size of tensor b \(%s)\)" % (_A8, _B4, _B4, _A8),
        note="the issue's dynamo text, either operand order (a skip + up model gives a "
             "((s0//4)) and b (2*((s0//8)))); verified with torch 2.9.1 to 2.14.1"),
    Signature(
        "symbolic_inconsistent", exc=("ValueError", "RuntimeError"), stage=_STAGES,
        pattern=r"Eq\((?:%s, %s|%s, %s)\) is inconsistent" % (_A8, _B4, _B4, _A8),
        note="the same refusal as worded by torch 2.6 (DOSSIER section 3)"),
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
VALID_OPT = 304
REPORTER_KWARGS = {"allow_shape_tensors": True, "truncate_long_and_double": True}


def build_model():
    """RealBasicVSR's clip view, then a small UNet (three poolings, pixel_shuffle and
    interpolate upsampling, skips)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class TinyUNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc1 = nn.Conv2d(3, 8, 3, padding=1)
            self.enc2 = nn.Conv2d(8, 16, 3, padding=1)
            self.enc3 = nn.Conv2d(16, 16, 3, padding=1)
            self.enc4 = nn.Conv2d(16, 16, 3, padding=1)
            self.up4 = nn.Conv2d(16, 16 * 4, 1)
            self.dec3 = nn.Conv2d(16, 16, 3, padding=1)
            self.dec2 = nn.Conv2d(16, 8, 3, padding=1)
            self.out = nn.Conv2d(8, 3, 1)

        def forward(self, x):
            t, c, h, w = x.size()
            lqs = x.view(1, t, c, h, w)  # RealBasicVSR: [21,3,H,W] frames -> a [1,21,3,H,W] clip
            x = lqs.view(-1, c, h, w)
            e1 = F.relu(self.enc1(x))
            e2 = F.relu(self.enc2(F.avg_pool2d(e1, 2)))
            e3 = F.relu(self.enc3(F.avg_pool2d(e2, 2)))
            e4 = F.relu(self.enc4(F.avg_pool2d(e3, 2)))
            d3 = F.pixel_shuffle(self.up4(e4), 2) + e3
            d2 = F.interpolate(F.relu(self.dec3(d3)), scale_factor=2, mode="nearest") + e2
            d1 = F.interpolate(F.relu(self.dec2(d2)), scale_factor=2, mode="bilinear",
                               align_corners=False)
            return self.out(d1) + x

    torch.manual_seed(0)
    return TinyUNet().eval()


def stage_eager_opt(s):
    import torch

    with torch.no_grad():
        build_model()(torch.randn(1, 3, OPT, OPT))
    s.note("outcome", "eager accepted %dx%d" % (OPT, OPT))


def stage_symbolic(s):
    import torch
    from torch.export import Dim

    h, w = Dim("h", min=MIN, max=MAX), Dim("w", min=MIN, max=MAX)
    s.note("dynamic_shapes", "H, W in Dim(%d..%d), example %d" % (MIN, MAX, OPT))
    torch.export.export(build_model(), (torch.randn(1, 3, OPT, OPT),),
                        dynamic_shapes={"x": {2: h, 3: w}})
    s.note("outcome", "exported")


def valid_dims():
    from torch.export import Dim

    return {"x": {2: 8 * Dim("h8", min=MIN // 8, max=MAX // 8),
                  3: 8 * Dim("w8", min=MIN // 8, max=MAX // 8)}}


def stage_symbolic_valid(s):
    import torch

    model = build_model()
    s.note("dynamic_shapes", "H, W in 8*Dim(%d..%d), example %d" % (MIN // 8, MAX // 8, VALID_OPT))
    ep = torch.export.export(model, (torch.randn(1, 3, VALID_OPT, VALID_OPT),),
                             dynamic_shapes=valid_dims())
    mod = ep.module()
    with torch.no_grad():
        for size in (MIN, VALID_OPT, MAX):
            x = torch.randn(1, 3, size, size)
            s.check_close(mod(x), model(x), what="exported vs eager at %d" % size, rtol=1e-4, atol=1e-5)


def trt_input(opt):
    import torch
    import torch_tensorrt

    return torch_tensorrt.Input(min_shape=[BATCH, 3, MIN, MIN], opt_shape=[BATCH, 3, opt, opt],
                                max_shape=[BATCH, 3, MAX, MAX], dtype=torch.float32)


def count_engines(s, gm):
    names = [n for n, _ in gm.named_children()]
    s.note("trt_engines", len([n for n in names if "run_on_acc" in n]))
    s.note("torch_partitions", len([n for n in names if "run_on_gpu" in n]))


def check_sizes(s, trt_model, model):
    import torch

    import _torchutil

    with torch.no_grad():
        for size in (MIN, VALID_OPT, MAX):
            x = torch.randn(BATCH, 3, size, size, device="cuda")
            s.check_close(_torchutil.first_output(trt_model(x)), model(x),
                          what="TensorRT vs eager at %d" % size, rtol=1e-2, atol=1e-2)


def stage_trt_dynamo(s):
    import torch_tensorrt

    s.note("torch_tensorrt", torch_tensorrt.__version__)
    model = build_model().cuda()
    trt_model = torch_tensorrt.compile(model, ir="dynamo", inputs=[trt_input(OPT)],
                                       **REPORTER_KWARGS)
    count_engines(s, trt_model)
    check_sizes(s, trt_model, model)


def stage_workaround(s):
    import torch
    import torch_tensorrt

    import _torchutil

    model = build_model().cuda()
    x = torch.randn(BATCH, 3, VALID_OPT, VALID_OPT, device="cuda")
    ep = torch.export.export(model, (x,), dynamic_shapes=valid_dims())
    kwargs, dropped = _torchutil.supported_kwargs(torch_tensorrt.dynamo.compile, {"min_block_size": 1})
    s.note("dropped_kwargs", dropped)
    trt_model = torch_tensorrt.dynamo.compile(ep, inputs=[trt_input(VALID_OPT)], **kwargs)
    count_engines(s, trt_model)
    check_sizes(s, trt_model, model)


def stage_ts(s):
    import torch
    import torch_tensorrt

    if not hasattr(torch_tensorrt, "ts"):
        s.skip("this torch_tensorrt build has no TorchScript frontend")
    model = build_model().cuda()
    scripted = torch.jit.script(model)
    trt_model = torch_tensorrt.compile(scripted, ir="ts", inputs=[trt_input(OPT)], **REPORTER_KWARGS)
    check_sizes(s, trt_model, model)


def main(r):
    trt = ["cuda", "torch_tensorrt"]
    r.stage("eager_opt_shape", stage_eager_opt, role="info")
    r.stage("symbolic_export", stage_symbolic, role="info")
    r.stage("symbolic_export_valid_range", stage_symbolic_valid, role="info")
    r.stage("trt_dynamo_compile", stage_trt_dynamo, requires=trt, isolate=True)
    r.stage("workaround", stage_workaround, role="workaround", requires=trt, isolate=True)
    r.stage("ts_dynamic_compile", stage_ts, requires=trt, isolate=True)


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
