"""pytorch/TensorRT #3535/#3538: the ``full_like`` decomposition drops ``dtype`` and ``device`` (2.6-2.7).

torch-tensorrt registers its own decomposition of ``aten.full_like`` (PR #3289, commit
a47e590a64, v2.6.0): ``kwargs["dtype"] = input.dtype`` and ``kwargs["device"] =
to_torch_device(default_device())`` (v2.6.0 ``py/torch_tensorrt/dynamo/lowering/
_decompositions.py:433-434``), so ``torch.full_like(x, v, dtype=torch.int64)`` becomes a
``full`` of ``x``'s dtype on the current CUDA device, whatever was asked. PR #3535 (commit
ee32da0fc5) keeps a given dtype and PR #3538 (commit 74df7126d6) a given device, else the
input's (v2.8.0 ``_decompositions.py:430-431``).

Stages:
- full_like_standin (main, CPU, TensorRT stood in: an inert ``tensorrt`` module,
  ``libnvinfer`` stubs, current CUDA device 0): the real ``dynamo.compile`` of a CPU export
  with ``full_like(x, 2, dtype=torch.int64)``; torch-tensorrt's ``run_decompositions`` with
  its own table runs for real, and its result is checked where compile hands it to
  ``post_lowering`` (stopped there): the ``full`` node that replaced ``full_like`` must have
  ``int64`` and the input's device (cpu). The dtype does not depend on the stand-ins; the
  device the buggy code picks is the current CUDA device, stood in as 0. Then ``skip``.
- trt_compile (main, GPU + TensorRT): the model compiled for real, its output's dtype and
  values checked against eager.
"""

from __future__ import annotations

import protocol
from protocol import Signature

META = {
    "id": "trt_full_like_decomposition",
    "title": "torch-tensorrt's full_like decomposition ignores dtype= and device= (2.6, 2.7)",
    "kind": "bug",
    "upstream": [
        "https://github.com/pytorch/TensorRT/pull/3535",
        "https://github.com/pytorch/TensorRT/pull/3538",
        "https://github.com/pytorch/TensorRT/pull/3289",
    ],
    "description": (
        "torch_tensorrt.dynamo.compile lowers torch.full_like(x, v, dtype=..., device=...) with "
        "torch-tensorrt's own decomposition, which drops both: "
        "v2.6.0:py/torch_tensorrt/dynamo/lowering/_decompositions.py:433 kwargs['dtype'] = "
        "input.dtype and :434 kwargs['device'] = to_torch_device(default_device()) (the current "
        "CUDA device), brought by PR #3289 (commit a47e590a649ab59f7f46ba8be138044eaeffd1a0, "
        "first in v2.6.0; v2.7.0 :433-434 the same). The result takes x's dtype (an int64 fill "
        "becomes float32) and lands on cuda:<current> even for a CPU input. Fixed by PR #3535 "
        "(commit ee32da0fc5a2f04cadceae1dbca2c82ad9acb523, the dtype) and PR #3538 (commit "
        "74df7126d61509076586f2a6252508fba7a08565, the device), both first in v2.8.0: "
        "_decompositions.py:430 kwargs.get('dtype', None) or input.dtype, :431 "
        "kwargs.get('device', None) or input.device. Workaround: torch.full(x.shape, v, "
        "dtype=..., device=x.device) in the model instead of full_like."
    ),
    "requires": ["cuda", "torch_tensorrt"],
    "introduced_by": {
        "commits": ["a47e590a649ab59f7f46ba8be138044eaeffd1a0"],
        "note": "PR #3289: v2.6.0 py/torch_tensorrt/dynamo/lowering/_decompositions.py:426-435 "
                "full_like_decomposition, :433 dtype = input.dtype, :434 device = "
                "to_torch_device(default_device()); v2.5.0 registers no full_like decomposition",
    },
    "fixed_by": {
        "commits": ["ee32da0fc5a2f04cadceae1dbca2c82ad9acb523",
                    "74df7126d61509076586f2a6252508fba7a08565"],
        "note": "PR #3535 (dtype) and PR #3538 (device), both on every tag and release/ngc branch "
                "from v2.8.0 / 25.08: v2.8.0 _decompositions.py:430 kwargs.get('dtype', None) or "
                "input.dtype, :431 kwargs.get('device', None) or input.device",
    },
}

_FRAME = r"torch_tensorrt/dynamo/_compiler\.py:\d+ in compile: .*post_lowering\("

SIGNATURES = [
    Signature(
        "full_like_dtype_dropped", exc="CheckFailed",
        pattern=r"check failed: the decomposed full_like keeps the dtype (and device )?it was given",
        stage=("full_like_standin",), frame=_FRAME,
        note="the graph torch-tensorrt's decompositions made, checked where compile hands it to "
             "post_lowering: the full node has the input's dtype or the current CUDA device"),
    Signature(
        "full_like_output_dtype", exc="CheckFailed",
        pattern=r"check failed: the compiled full_like output has the dtype it was given",
        stage=("trt_compile",),
        note="on a GPU: the compiled model's full_like output is float32, not int64"),
]

SHAPE = (2, 3)


def build_model():
    """x * 2 and a full_like of x with another dtype (int64)."""
    import torch

    class FullLikeNet(torch.nn.Module):
        def forward(self, x):
            return x * 2.0, torch.full_like(x, 2, dtype=torch.int64)

    return FullLikeNet().eval()


def full_nodes(gm):
    """(target, dtype, device) of each node that replaced or is full_like."""
    out = []
    for n in gm.graph.nodes:
        if n.op == "call_function" and "full" in str(n.target):
            val = n.meta.get("val")
            out.append((str(n.target), str(getattr(val, "dtype", None)), str(getattr(val, "device", None))))
    return out


def decomposed_full_like(s, gm):
    """Inside compile's call of post_lowering: the lowered graph's full node."""
    found = full_nodes(gm)
    s.note("full_nodes", found)
    s.check(len(found) == 1, "the lowered graph has one full node for the full_like", full_nodes=found)
    _, dtype, device = found[0]
    s.check(dtype == "torch.int64", "the decomposed full_like keeps the dtype it was given",
            given="torch.int64", found=dtype)
    s.check(device == "cpu", "the decomposed full_like keeps the dtype and device it was given",
            given="cpu (the input's)", found=device)


def stage_standin(s):
    """dynamo.compile of the CPU export, stopped at post_lowering with the lowered graph checked."""
    import torch

    import _standin
    import _torchutil

    trt = _standin.import_torch_tensorrt(s)
    from torch_tensorrt.dynamo import _compiler

    x = torch.randn(SHAPE)
    ep = torch.export.export(build_model(), (x,))
    s.note("exported_full", full_nodes(ep.graph_module))
    kwargs, _ = _torchutil.supported_kwargs(trt.dynamo.compile, {"offload_module_to_cpu": True})
    with _standin.stop_at(_compiler, "post_lowering", "compile's post_lowering",
                          decide=lambda state: decomposed_full_like(s, state["args"][0])) as state:
        trt.dynamo.compile(ep, inputs=[trt.Input.from_tensor(x)], min_block_size=1, **kwargs)
    _standin.past(s, state, "run_decompositions with torch-tensorrt's full_like decomposition")


def stage_trt_compile(s):
    """Compiled on a GPU: the full_like output's dtype and values against eager."""
    import torch
    import torch_tensorrt

    s.note("torch_tensorrt", torch_tensorrt.__version__)
    model = build_model().cuda()
    x = torch.randn(SHAPE, device="cuda")
    compiled = torch_tensorrt.dynamo.compile(torch.export.export(model, (x,)), inputs=[x], min_block_size=1)
    with torch.no_grad():
        out = compiled(x)[1]
        ref = model(x)[1]
    s.check(out.dtype == ref.dtype, "the compiled full_like output has the dtype it was given",
            given=str(ref.dtype), found=str(out.dtype))
    s.check_close(out.double(), ref.double(), what="TensorRT vs eager", rtol=0, atol=0)


def main(r):
    r.stage("full_like_standin", stage_standin, standins=["tensorrt"])
    r.stage("trt_compile", stage_trt_compile, requires=["cuda", "torch_tensorrt"], isolate=True)


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
