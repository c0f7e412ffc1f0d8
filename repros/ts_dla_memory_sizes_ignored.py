"""pytorch/TensorRT #2731: the DLA memory sizes given to the TorchScript frontend are silently dropped.

``torch_tensorrt.compile(..., ir="torchscript", dla_sram_size=..., dla_local_dram_size=...,
dla_global_dram_size=...)`` (and ``torch_tensorrt.ts.compile``) take the three DLA memory
pool sizes as parameters, but up to 2.3.0 never put them into the compile spec it hands
to native code, so the engine is built with the defaults (1 MiB / 1 GiB / 512 MiB): on a
Jetson's DLA, too little local DRAM for large layers. No error is raised. Fixed in 2.4.0
(PR #2749, commit b76024d9a5). ``ts.convert_method_to_trt_engine`` has the same three
parameters and still drops them (v2.13.0 ``py/torch_tensorrt/ts/_compiler.py``: its
``compile_spec`` at 261-274 has no ``dla_*`` key).

The sizes are stored in the spec whatever the device, so no DLA is needed to see it: the
spec is read where torch-tensorrt hands it to native code (``_C.compile_graph``).

Stages:
- ts_compile_dla_sizes_standin (main, CPU, TensorRT stood in: ``_standin.py``): a
  CPU-scripted module compiled with three sizes other than the defaults; the tripwire on
  ``_C.compile_graph`` checks the ``CompileSpec`` it was given, inside that call, so a
  dropped size fails through ``ts/_compiler.py``'s call site; sizes that arrived end the
  stage ``skip`` (needs real TensorRT) with ``evidence.cleared``.
- convert_method_dla_sizes_standin (info, CPU, TensorRT stood in): the same through
  ``ts.convert_method_to_trt_engine`` and ``_C.convert_graph_to_trt_engine``: dropped on
  every release read (no fix yet).
- ts_compile_dla_sizes (main, GPU + TRT): the same compile for real, the spec checked on
  its way into ``_C.compile_graph``, then the module checked against eager.
- workaround: none in torch-tensorrt before 2.4.0 (the TorchScript frontend has no other way
  to pass them); upgrade.
"""

from __future__ import annotations

import protocol
from protocol import Signature

META = {
    "id": "ts_dla_memory_sizes_ignored",
    "kind": "bug",
    "title": "torch_tensorrt TorchScript compile: dla_sram_size / dla_local_dram_size / "
             "dla_global_dram_size silently dropped",
    "upstream": [
        "https://github.com/pytorch/TensorRT/issues/2731",
        "https://github.com/pytorch/TensorRT/pull/2749",
    ],
    "description": (
        "torch_tensorrt.compile(ir='torchscript') and torch_tensorrt.ts.compile accept "
        "dla_sram_size, dla_local_dram_size and dla_global_dram_size but Torch-TensorRT 2.2.0 and "
        "2.3.0 never put them into the compile spec: the engine is built with the defaults "
        "(1 MiB / 1 GiB / 512 MiB), without a warning. Fixed in 2.4.0 (PR #2749, commit "
        "b76024d9a5). torch_tensorrt.ts.convert_method_to_trt_engine still drops them (stage "
        "convert_method_dla_sizes_standin). Workaround: none in the TorchScript frontend before "
        "2.4.0; upgrade."
    ),
    "requires": ["cuda", "torch_tensorrt"],
    "introduced_by": {
        "commits": ["19fc7a761307efcaff44a8db7d4ab921978c1ca2"],
        "note": "the TorchScript compile takes the three sizes (19fc7a7613, 2022) and its spec "
                "never gets them: v2.3.0 and v2.2.0 py/torch_tensorrt/ts/_compiler.py parameters "
                "at 26-28, spec = {...} at 128-149 without them, _C.compile_graph at 151; "
                "release/ngc/24.02 (cbaa12ced3) and 24.04 (384a5bb4ce): no dla_* key",
    },
    "fixed_by": {
        "commits": ["b76024d9a5a7f286a99806bf29778a875c7a5407"],
        "note": "PR #2749: v2.4.0 ts/_compiler.py:142-144 put them into the spec, compile_graph at "
                "156; v2.5.0 140-142; release/ngc/24.05 (a2e005f507) :142-144. The pass needs a "
                "GPU (ts_compile_dla_sizes); on the stand-ins it is a cleared skip",
    },
}

_CHECK = r"check failed: the compile spec carries the DLA memory sizes passed"
_NATIVE_CALL = (r"torch_tensorrt/ts/_compiler\.py:\d+ in (compile|convert_method_to_trt_engine): "
                r".*_C\.(compile_graph|convert_graph_to_trt_engine)\(")

SIGNATURES = [
    Signature("dla_sizes_dropped", exc="CheckFailed", pattern=_CHECK,
              stage=("ts_compile_dla_sizes_standin", "convert_method_dla_sizes_standin",
                     "ts_compile_dla_sizes"),
              frame=_NATIVE_CALL,
              note="the CompileSpec handed to native code carries the defaults, not the sizes "
                   "passed: checked inside the native call, raised through ts/_compiler.py"),
]

SHAPE = (1, 3, 16, 16)
# three sizes other than the defaults (1 MiB / 1 GiB / 512 MiB, csrc/tensorrt_classes.h)
SIZES = {"dla_sram_size": 2 << 20, "dla_local_dram_size": 2 << 30, "dla_global_dram_size": 1 << 30}


def scripted_model(device="cpu"):
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU()).eval()
    return torch.jit.script(model.to(device))


def spec_carries_sizes(s, spec):
    """The sizes in the CompileSpec given to native code, checked against those passed."""
    found = {name: int(getattr(spec, name)) for name in SIZES}
    s.note("passed", SIZES)
    s.note("spec_carries", found)
    s.check(found == SIZES, "the compile spec carries the DLA memory sizes passed",
            passed=SIZES, spec=found)


def stage_standin(s, entry):
    """A TorchScript entry point on the stand-ins, stopped at its native call, which checks
    the spec it was given."""
    import _standin

    trt = _standin.import_torch_tensorrt(s)
    if not hasattr(trt, "ts"):
        s.skip("this torch_tensorrt build has no torch_tensorrt.ts")
    native = {"compile": "compile_graph", "convert_method": "convert_graph_to_trt_engine"}[entry]
    kwargs = dict(SIZES, inputs=[trt.Input(SHAPE)], device=trt.Device("cuda:0"))
    with _standin.stop_at(trt.ts._compiler._C, native, "_C." + native,
                          decide=lambda state: spec_carries_sizes(s, state["args"][-1])) as state:
        if entry == "compile":
            trt.compile(scripted_model(), ir="torchscript", **kwargs)
        else:
            trt.ts.convert_method_to_trt_engine(scripted_model(), "forward", **kwargs)
    _standin.past(s, state, "the compile spec (ts/_compiler.py): the DLA sizes arrived")


def stage_ts_compile(s):
    """The compile on a GPU: the spec checked on its way into _C.compile_graph, then the
    module against eager."""
    import torch
    import torch_tensorrt as trt

    import _torchutil

    s.note("torch_tensorrt", trt.__version__)
    native = trt.ts._compiler._C
    real = native.compile_graph

    def checked(module, spec):
        spec_carries_sizes(s, spec)
        return real(module, spec)

    native.compile_graph = checked
    try:
        scripted = scripted_model("cuda")
        module = trt.compile(scripted, ir="torchscript", inputs=[trt.Input(SHAPE)],
                             device=trt.Device("cuda:0"), **SIZES)
    finally:
        native.compile_graph = real
    x = torch.randn(SHAPE, device="cuda")
    with torch.no_grad():
        s.check_close(_torchutil.first_output(module(x)), scripted(x), what="TensorRT vs eager",
                      rtol=1e-2, atol=1e-2)


def main(r):
    trt = ["tensorrt"]
    r.stage("ts_compile_dla_sizes_standin", stage_standin, "compile", standins=trt)
    r.stage("convert_method_dla_sizes_standin", stage_standin, "convert_method", standins=trt,
            role="info")
    r.stage("ts_compile_dla_sizes", stage_ts_compile, requires=["cuda", "torch_tensorrt"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
