"""pytorch/TensorRT #3259: ``convert_method_to_trt_engine(..., inputs=...)`` drops the inputs (2.5.0).

``torch_tensorrt.convert_method_to_trt_engine(module, "forward", inputs=[Input(...)],
ir="ts")`` builds a serialized TensorRT engine from a TorchScript method (MONAI's
``convert_to_trt`` calls it so, pytorch #138674). PR #2970 (commit 3a0b244b6e, "Added kwarg
support for dynamo.compile", v2.5.0) gave it ``arg_inputs`` and passed ``inputs=arg_inputs``
to the TorchScript backend, while ``arg_inputs = arg_inputs or inputs`` ran only on the dynamo
branch: a call with ``inputs=`` hands the backend ``None``, its compile spec has no inputs, and
the conversion fails in native code. PR #3260 (commit 28405317d6, v2.6.0) moved that line
before the branches.

Stages:
- convert_method_inputs_standin (main, CPU, TensorRT stood in): the real
  ``convert_method_to_trt_engine`` with ``inputs=[Input(...)]``, stopped in its call of
  ``_parse_compile_spec``, which checks that the compile spec torch-tensorrt built carries the
  input; a cleared ``skip`` where it does (native code builds the engine).
- trt_convert_method (main, GPU + TensorRT): the same check on the spec on its way in, then
  the engine built, embedded in a module (``ts.embed_engine_in_new_module``) and checked
  against eager.
- workaround_arg_inputs_standin (workaround, TensorRT stood in): the same call with
  ``arg_inputs=`` instead, which 2.5.0 passes on.
"""

from __future__ import annotations

import protocol
from protocol import Signature

META = {
    "id": "trt_convert_method_inputs_dropped",
    "title": "convert_method_to_trt_engine(ir='ts', inputs=...) hands the TorchScript backend no inputs "
             "(2.5.0)",
    "kind": "bug",
    "upstream": [
        "https://github.com/pytorch/TensorRT/issues/3259",
        "https://github.com/pytorch/pytorch/issues/138674",
        "https://github.com/pytorch/TensorRT/pull/3260",
    ],
    "description": (
        "torch_tensorrt.convert_method_to_trt_engine(ts_module, 'forward', inputs=[...], ir='ts') "
        "passes inputs=None to the TorchScript backend in torch-tensorrt 2.5.0: "
        "v2.5.0:py/torch_tensorrt/_compile.py:357 'inputs=arg_inputs' while ':376 arg_inputs = "
        "arg_inputs or inputs' runs on the dynamo branch only (PR #2970, commit "
        "3a0b244b6e0a591d6dd7124cb16b9ec657518f85); ts/_compiler.py:243 makes the None an empty "
        "input list and :270 converts with no inputs. v2.4.0 _compile.py:333 passed 'inputs=inputs'. "
        "Fixed by PR #3260 (commit 28405317d6f5920dd418a65c8c469953ea39ae9c, 'fix issue 3259'), "
        "first in v2.6.0: _compile.py:472 'arg_inputs = arg_inputs or inputs' before the branches, "
        ":485 'inputs=arg_inputs'. Workaround: pass the inputs as arg_inputs=[...] (2.5.0), or call "
        "torch_tensorrt.ts.convert_method_to_trt_engine directly."
    ),
    "requires": ["cuda", "torch_tensorrt"],
    "introduced_by": {
        "commits": ["3a0b244b6e0a591d6dd7124cb16b9ec657518f85"],
        "note": "PR #2970: v2.5.0 _compile.py:357 inputs=arg_inputs, :376 arg_inputs = "
                "arg_inputs or inputs inside the dynamo branch; before it v2.4.0 and v2.3.0 "
                "_compile.py:333 inputs=inputs, v2.2.0 :312",
    },
    "fixed_by": {
        "commits": ["28405317d6f5920dd418a65c8c469953ea39ae9c"],
        "note": "PR #3260: v2.6.0 _compile.py:472 arg_inputs = arg_inputs or inputs before the "
                "branches, :485 inputs=arg_inputs; v2.13.0 :528-530 the same call",
    },
}

_CHECK = r"check failed: the compile spec carries the inputs passed"
_SPEC_CALL = (r"torch_tensorrt/ts/_compiler\.py:\d+ in convert_method_to_trt_engine: "
              r".*_parse_compile_spec\(compile_spec\)")

SIGNATURES = [
    Signature("ts_inputs_dropped", exc="CheckFailed", pattern=_CHECK,
              stage=("convert_method_inputs_standin", "trt_convert_method"), frame=_SPEC_CALL,
              note="the compile spec the TorchScript backend builds has no inputs: checked inside "
                   "its _parse_compile_spec call, raised through ts/_compiler.py"),
]

SHAPE = (1, 3, 8, 8)


def scripted_model(device="cpu"):
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU()).eval()
    return torch.jit.script(model.to(device))


def spec_carries_inputs(s, spec):
    """The compile spec (a dict) the TorchScript backend built: one input, as passed."""
    found = [repr(i) for i in spec.get("inputs", [])]
    s.note("spec_inputs", found)
    s.check(len(found) == 1, "the compile spec carries the inputs passed", passed=1, spec=found)


def stage_standin(s, keyword):
    """convert_method_to_trt_engine on the stand-ins, stopped at the compile spec's parse."""
    import _standin

    trt = _standin.import_torch_tensorrt(s)
    if not hasattr(trt, "ts"):
        s.skip("this torch_tensorrt build has no torch_tensorrt.ts")
    if keyword == "arg_inputs" and "arg_inputs" not in _parameters(trt.convert_method_to_trt_engine):
        s.skip("this torch_tensorrt's convert_method_to_trt_engine has no arg_inputs (from 2.5.0)")
    kwargs = {keyword: [trt.Input(SHAPE)]}
    with _standin.stop_at(trt.ts._compiler, "_parse_compile_spec", "ts._compiler._parse_compile_spec",
                          decide=lambda state: spec_carries_inputs(s, state["args"][0])) as state:
        trt.convert_method_to_trt_engine(scripted_model(), "forward", ir="ts",
                                         device=trt.Device("cuda:0"), **kwargs)
    _standin.past(s, state, "the compile spec of convert_method_to_trt_engine: the input arrived")


def _parameters(fn):
    import inspect

    return inspect.signature(fn).parameters


def stage_convert(s):
    """The engine on a GPU, embedded in a module, against eager."""
    import torch
    import torch_tensorrt as trt

    import _torchutil

    s.note("torch_tensorrt", trt.__version__)
    backend = trt.ts._compiler
    real = backend._parse_compile_spec

    def checked(spec):
        spec_carries_inputs(s, spec)
        return real(spec)

    backend._parse_compile_spec = checked
    try:
        scripted = scripted_model("cuda")
        engine = trt.convert_method_to_trt_engine(scripted, "forward", inputs=[trt.Input(SHAPE)], ir="ts")
    finally:
        backend._parse_compile_spec = real
    module = trt.ts.embed_engine_in_new_module(engine, device=trt.Device("cuda:0"))
    x = torch.randn(SHAPE, device="cuda")
    with torch.no_grad():
        s.check_close(_torchutil.first_output(module(x)), scripted(x), what="TensorRT engine vs eager",
                      rtol=1e-2, atol=1e-2)


def main(r):
    trt = ["tensorrt"]
    r.stage("convert_method_inputs_standin", stage_standin, "inputs", standins=trt)
    r.stage("trt_convert_method", stage_convert, requires=["cuda", "torch_tensorrt"], isolate=True)
    r.stage("workaround_arg_inputs_standin", stage_standin, "arg_inputs", standins=trt, role="workaround")


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
