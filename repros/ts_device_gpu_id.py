"""MONAI #8017 / #8050: "'torch.device' object has no attribute 'gpu_id'" in Torch-TensorRT's TorchScript API.

MONAI's ``convert_to_trt`` called ``torch_tensorrt.compile(..., ir="torchscript",
device=torch.device(...))``, and its bundle ``trt_export`` called
``torch_tensorrt.ts.embed_engine_in_new_module(..., device=torch.device(...))``.
From Torch-TensorRT 2.3.0 (PR #2693) the TorchScript frontend's
``_parse_device`` sends a ``torch.device`` straight to
``TorchScriptDevice._from``, which reads ``.gpu_id``. The error is raised in
Python before the engine bytes are even looked at. MONAI 1.4.0 passes
``torch_tensorrt.Device("cuda:N")`` instead (PRs #8019, #8051); Torch-TensorRT
itself never changed.

Stages (every one needs a GPU and torch_tensorrt with the TorchScript frontend;
importing that frontend queries the current CUDA device):
- set_device_api (info): whether ``torch_tensorrt.set_device`` still exists
  (TRT #3084: MONAI <= 1.3.2 hits that AttributeError first on TRT >= 2.3).
- embed_engine_torch_device (main): build an engine with
  ``ts.convert_method_to_trt_engine``, then embed it with
  ``device=torch.device("cuda:0")``; the output is checked against eager.
- embed_junk_torch_device (info): the dossier's minimal probe, junk bytes
  with a ``torch.device``.
- ts_compile_torch_device (main): ``torch_tensorrt.compile(scripted,
  ir="torchscript", device=torch.device("cuda:0"))``; checked against eager.
- workaround (GPU + TRT): both calls with ``torch_tensorrt.Device("cuda:0")``.
- ts_compile_torch_device_standin, convert_method_torch_device_standin (main, CPU,
  TensorRT stood in: ``_standin.py``): the same two entry points on a CPU-scripted
  module; each must raise this bug in ``ts/_Device.py`` ``_from`` or get past the
  device parse to the native call (``_C.compile_graph`` /
  ``_C.convert_graph_to_trt_engine``), where it stops: ``skip``, needs real TensorRT.
- ts_compile_trt_device_standin (info, control): ``torch_tensorrt.Device("cuda:0")``
  gets past the parse on every release.
"""

from __future__ import annotations

import protocol
from protocol import Signature

META = {
    "id": "ts_device_gpu_id",
    "kind": "bug",
    "title": "torch_tensorrt TorchScript API: 'torch.device' object has no attribute 'gpu_id'",
    "upstream": [
        "https://github.com/Project-MONAI/MONAI/issues/8017",
        "https://github.com/Project-MONAI/MONAI/issues/8050",
        "https://github.com/Project-MONAI/MONAI/pull/8019",
        "https://github.com/Project-MONAI/MONAI/pull/8051",
        "https://github.com/pytorch/TensorRT/pull/2693",
        "https://github.com/pytorch/TensorRT/issues/3084",
    ],
    "description": (
        "Passing a torch.device to torch_tensorrt.ts.embed_engine_in_new_module or to "
        "torch_tensorrt.compile(ir='torchscript') raises AttributeError: 'torch.device' object "
        "has no attribute 'gpu_id' from Torch-TensorRT 2.3.0 on. Workaround (MONAI 1.4.0): pass "
        "torch_tensorrt.Device('cuda:N')."
    ),
    "requires": ["cuda", "torch_tensorrt"],
    "introduced_by": {
        "commits": ["9cf335604c3c4cd0600a24179f32a9e56f15826f",
                    "d859859dae75f02b7c919f37397aa477536808be"],
        "note": "PR #2693 (on release/2.3 as #2761): py/torch_tensorrt/ts/_Device.py:64-66, "
                "TorchScriptDevice._from reads d.gpu_id, unchanged up to v2.13.0 and HEAD; before "
                "it a torch.device went through Device._from_torch_device (release/ngc/24.04: "
                "ts/_compile_spec.py:133 in _parse_device)",
    },
}

_STANDIN_STAGES = ("ts_compile_torch_device_standin", "convert_method_torch_device_standin",
                   "ts_compile_trt_device_standin")

SIGNATURES = [
    Signature("standin_torch_device_gpu_id", exc="AttributeError", stage=_STANDIN_STAGES,
              pattern=r"'torch\.device' object has no attribute 'gpu_id'",
              frame=r"torch_tensorrt/ts/_Device\.py:\d+ in _from: .*\bd\.gpu_id",
              note="raised in TorchScriptDevice._from (ts/_Device.py), TensorRT stood in"),
    Signature("torch_device_gpu_id", exc="AttributeError",
              pattern=r"'torch\.device' object has no attribute 'gpu_id'",
              note="TorchScriptDevice._from(d) reads d.gpu_id (ts/_Device.py)"),
]

SHAPE = (1, 3, 32, 32)


def build_model():
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                               torch.nn.Conv2d(8, 4, 3, padding=1)).eval().cuda()


def ts_frontend(s):
    """torch_tensorrt with its TorchScript frontend, else skip."""
    import torch_tensorrt

    s.note("torch_tensorrt", torch_tensorrt.__version__)
    features = getattr(getattr(torch_tensorrt, "_features", None), "ENABLED_FEATURES", None)
    if features is not None and not getattr(features, "torchscript_frontend", True):
        s.skip("this torch_tensorrt build has no TorchScript frontend")
    if not hasattr(torch_tensorrt, "ts"):
        s.skip("this torch_tensorrt build has no torch_tensorrt.ts")
    return torch_tensorrt


def scripted_and_reference():
    import torch

    model = build_model()
    x = torch.randn(SHAPE, device="cuda")
    with torch.no_grad():
        ref = model(x)
    return torch.jit.script(model), x, ref


def run_checked(s, module, x, ref, what):
    import torch

    import _torchutil

    with torch.no_grad():
        out = _torchutil.first_output(module(x))
    s.check_close(out, ref, what=what, rtol=1e-2, atol=1e-2)


def build_engine(trt, scripted):
    return trt.ts.convert_method_to_trt_engine(scripted, "forward", inputs=[trt.Input(SHAPE)],
                                               device=trt.Device("cuda:0"))


def stage_set_device(s):
    trt = ts_frontend(s)
    s.note("torch_tensorrt.set_device", hasattr(trt, "set_device"))


def stage_embed(s, device_kind):
    import torch

    trt = ts_frontend(s)
    scripted, x, ref = scripted_and_reference()
    engine = build_engine(trt, scripted)
    s.note("engine_bytes", len(engine))
    device = torch.device("cuda:0") if device_kind == "torch" else trt.Device("cuda:0")
    s.note("device_argument", repr(device))
    module = trt.ts.embed_engine_in_new_module(engine, device=device)
    run_checked(s, module, x, ref, "embedded engine vs eager")


def stage_embed_junk(s):
    import torch

    trt = ts_frontend(s)
    try:
        trt.ts.embed_engine_in_new_module(b"not an engine", device=torch.device("cuda:0"))
    except AttributeError:
        raise
    except Exception as e:  # the device was accepted; the bytes were rejected, as they should be
        s.note("outcome", "device accepted, junk engine rejected: %s" % str(e).splitlines()[0][:200])
        return
    s.check(False, "junk engine bytes were rejected")


def stage_compile(s, device_kind):
    import torch

    trt = ts_frontend(s)
    scripted, x, ref = scripted_and_reference()
    device = torch.device("cuda:0") if device_kind == "torch" else trt.Device("cuda:0")
    s.note("device_argument", repr(device))
    module = trt.compile(scripted, ir="torchscript", inputs=[trt.Input(SHAPE)], device=device)
    run_checked(s, module, x, ref, "TorchScript TensorRT module vs eager")


def stage_workaround(s):
    stage_embed(s, "trt")
    stage_compile(s, "trt")


def scripted_on_cpu():
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(8, 4, 3, padding=1)).eval()
    return torch.jit.script(model)


def stage_standin(s, entry, device_kind):
    """A TorchScript entry point on the stand-ins, stopped at its native TensorRT call."""
    import torch

    import _standin

    trt = _standin.import_torch_tensorrt(s)
    if not hasattr(trt, "ts"):
        s.skip("this torch_tensorrt build has no torch_tensorrt.ts")
    device = torch.device("cuda:0") if device_kind == "torch" else trt.Device("cuda:0")
    s.note("device_argument", repr(device))
    scripted, inputs = scripted_on_cpu(), [trt.Input(SHAPE)]
    native = {"compile": "compile_graph", "convert_method": "convert_graph_to_trt_engine"}[entry]
    with _standin.stop_at(trt.ts._compiler._C, native, "_C." + native) as state:
        if entry == "compile":
            trt.compile(scripted, ir="torchscript", inputs=inputs, device=device)
        else:
            trt.ts.convert_method_to_trt_engine(scripted, "forward", inputs=inputs, device=device)
    _standin.past(s, state, "the device parse (ts/_compile_spec.py _parse_device)")


def main(r):
    req = ["cuda", "torch_tensorrt"]
    r.stage("set_device_api", stage_set_device, role="info", requires=req)
    r.stage("embed_engine_torch_device", stage_embed, "torch", requires=req)
    r.stage("embed_junk_torch_device", stage_embed_junk, role="info", requires=req)
    r.stage("ts_compile_torch_device", stage_compile, "torch", requires=req)
    r.stage("workaround", stage_workaround, role="workaround", requires=req)
    trt = ["tensorrt"]
    r.stage("ts_compile_torch_device_standin", stage_standin, "compile", "torch", standins=trt)
    r.stage("convert_method_torch_device_standin", stage_standin, "convert_method", "torch",
            standins=trt)
    r.stage("ts_compile_trt_device_standin", stage_standin, "compile", "trt", standins=trt,
            role="info")


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
