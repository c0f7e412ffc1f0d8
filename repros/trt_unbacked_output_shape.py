"""pytorch/TensorRT #3269: "Cannot convert symbols to int" for a graph output of data-dependent size (2.5.0).

``torch_tensorrt.dynamo.compile`` of a model whose output has a data-dependent size (here
``torch.nonzero``: its row count is an unbacked symbol ``u0`` with a range and no value)
fails in 2.5.0 with ``TypeError: Cannot convert symbols to int``: ``compile_module``'s
``parse_graph_io(gm, ...)`` reads the shape of every graph output through
``unwrap_tensor_shape`` and ``extract_var_range_info``, which takes ``int()`` of the symbol's
value (v2.5.0 ``py/torch_tensorrt/dynamo/utils.py:327``); an unbacked symbol has none. PR
#3002 (commit fa812a999c, v2.5.0) brought ``parse_graph_io`` and ``extract_var_range_info``
(v2.4.0 ran the graph on sample tensors instead); PR #3279 (commit aa36e9a6d0, v2.6.0)
keeps ``opt`` only where the value is an integer (v2.6.0 ``utils.py:357``, ``:363``).

Stages:
- unbacked_output_standin (main, CPU, TensorRT stood in: an inert ``tensorrt`` module,
  ``libnvinfer`` stubs, current CUDA device 0): the real ``dynamo.compile`` of the model's
  CPU export with ``dryrun=True`` (torch-tensorrt's own option: every step but the
  conversion to TensorRT, so nothing of TensorRT is called) and the export's range check on
  ``u0`` (``aten.sym_size.int``) left to PyTorch (``torch_executed_ops``): torch-tensorrt's
  lowering, partitioning and ``parse_graph_io`` of the subgraph and of the whole graph run
  for real. Stopped at ``dryrun_stats_display`` (the dry run's report, called after
  ``parse_graph_io`` of the whole graph), which checks that the graph's output shape was
  recorded with a range for its data-dependent size; then ``skip``. From 2.8.0 with
  ``offload_module_to_cpu=True``, compile's other branch asks the GPU for its free memory
  (v2.8.0 ``_compiler.py:717``). The range check is kept out of TensorRT because as a
  TensorRT block's input ``u0`` still fails on 2.6.0 (``Input`` made with ``opt_shape``
  ``None``): another limit, not this bug.
- trt_compile (main, GPU + TensorRT): the same model compiled for real, its output checked
  against eager.
"""

from __future__ import annotations

import protocol
from protocol import Signature

META = {
    "id": "trt_unbacked_output_shape",
    "title": "dynamo.compile: 'Cannot convert symbols to int' for an output of data-dependent size "
             "(2.5.0)",
    "kind": "bug",
    "upstream": [
        "https://github.com/pytorch/TensorRT/issues/3269",
        "https://github.com/pytorch/TensorRT/pull/3002",
        "https://github.com/pytorch/TensorRT/pull/3279",
    ],
    "description": (
        "torch_tensorrt.dynamo.compile of a model whose output has a data-dependent size "
        "(torch.nonzero, a boolean mask) raises TypeError: Cannot convert symbols to int in "
        "torch-tensorrt 2.5.0: compile_module's parse_graph_io(gm, dryrun_tracker) "
        "(v2.5.0:py/torch_tensorrt/dynamo/_compiler.py:475) reads each output's shape through "
        "unwrap_tensor_shape (utils.py:352) and extract_var_range_info, whose line utils.py:327 "
        "takes int() of the symbol's value, and an unbacked symbol has none. PR #3002 (commit "
        "fa812a999c844c0288f88005cdc319b0db2f6692, first in v2.5.0) brought parse_graph_io and "
        "extract_var_range_info; v2.4.0 ran the graph on sample tensors to read its output "
        "shapes. Fixed by PR #3279 (commit aa36e9a6d0bc065b82441dc8351a532f3d17bb1e, 'fix "
        "issue#3269: unwrap tensor shape without opt val'), first in v2.6.0: utils.py:357 takes "
        "int() of the range only and :363 sets 'opt' only for an integer value. Workaround: "
        "upgrade to 2.6.0, or keep the data-dependent op out of the compiled graph."
    ),
    "requires": ["cuda", "torch_tensorrt"],
    "introduced_by": {
        "commits": ["fa812a999c844c0288f88005cdc319b0db2f6692"],
        "note": "PR #3002: v2.5.0 py/torch_tensorrt/dynamo/_compiler.py:458 parse_graph_io(submodule) "
                "and :475 parse_graph_io(gm); utils.py:311 extract_var_range_info, :327 int(var_val); "
                "v2.4.0 _compiler.py ran gm on sample tensors (get_torch_inputs) for the output shapes",
    },
    "fixed_by": {
        "commits": ["aa36e9a6d0bc065b82441dc8351a532f3d17bb1e"],
        "note": "PR #3279: v2.6.0 py/torch_tensorrt/dynamo/utils.py:357 min_val, max_val = "
                "int(var_range.lower), int(var_range.upper); :363 opt only for a sympy Integer; "
                "unwrap_tensor_shape :386 reads min and max; _compiler.py:896 parse_graph_io(gm)",
    },
}

_FRAME = r"torch_tensorrt/dynamo/utils\.py:\d+ in extract_var_range_info: "

SIGNATURES = [
    Signature(
        "unbacked_symbol_to_int", exc="TypeError", pattern=r"Cannot convert symbols to int",
        stage=("unbacked_output_standin", "trt_compile"), frame=_FRAME,
        note="extract_var_range_info takes int() of an unbacked symbol's value (v2.5.0 utils.py:327)"),
]

SHAPE = (4, 5)


def build_model():
    """relu and a scale (a TensorRT block), then nonzero: its row count is data-dependent."""
    import torch

    class NonzeroNet(torch.nn.Module):
        def forward(self, x):
            return torch.nonzero(torch.relu(x) * 2.0)

    return NonzeroNet().eval()


def output_shape_recorded(s, tracker):
    """The dry run's record of the graph's output: (4, 5) has 20 entries, so the nonzero
    output is ((min, max), 2) with a range up to 20 for its data-dependent row count."""
    shapes = [tuple(x) if isinstance(x, (list, tuple)) else x for x in tracker.output_shapes]
    s.note("output_shapes", repr(shapes))
    s.check(len(shapes) == 1 and len(shapes[0]) == 2 and isinstance(shapes[0][0], tuple)
            and shapes[0][1] == 2, "the graph's output shape is recorded with a range for its "
            "data-dependent size", output_shapes=repr(shapes))


def stage_standin(s):
    """dynamo.compile(dryrun=True) of the CPU export, stopped at the dry run's report."""
    import torch

    import _standin
    import _torchutil

    trt = _standin.import_torch_tensorrt(s)
    from torch_tensorrt.dynamo import _compiler

    torch.manual_seed(0)
    x = torch.randn(SHAPE)
    ep = torch.export.export(build_model(), (x,))
    out_node = [n for n in ep.graph.nodes if n.op == "output"][0]
    s.note("export_output_size", [str(getattr(a.meta.get("val"), "shape", None))
                                  for a in out_node.all_input_nodes])
    kwargs, dropped = _torchutil.supported_kwargs(trt.dynamo.compile, {"offload_module_to_cpu": True})
    s.note("compile_kwargs", sorted(kwargs))
    with _standin.stop_at(_compiler, "dryrun_stats_display", "the dry run's report (dryrun_stats_display)",
                          decide=lambda state: output_shape_recorded(s, state["args"][0])) as state:
        trt.dynamo.compile(ep, inputs=[trt.Input.from_tensor(x)], min_block_size=1, dryrun=True,
                           torch_executed_ops={torch.ops.aten.sym_size.int}, **kwargs)
    _standin.past(s, state, "parse_graph_io of the whole graph (an output of data-dependent size)")


def stage_trt_compile(s):
    """The model compiled on a GPU, its output against eager."""
    import torch
    import torch_tensorrt

    s.note("torch_tensorrt", torch_tensorrt.__version__)
    torch.manual_seed(0)
    model = build_model().cuda()
    x = torch.randn(SHAPE, device="cuda")
    ep = torch.export.export(model, (x,))
    compiled = torch_tensorrt.dynamo.compile(ep, inputs=[x], min_block_size=1)
    with torch.no_grad():
        out = compiled(x)
        ref = model(x)
    s.check(tuple(out.shape) == tuple(ref.shape), "the compiled output has eager's shape",
            compiled=list(out.shape), eager=list(ref.shape))
    s.check_close(out.float(), ref.float(), what="TensorRT vs eager", rtol=0, atol=0)


def main(r):
    r.stage("unbacked_output_standin", stage_standin, standins=["tensorrt"])
    r.stage("trt_compile", stage_trt_compile, requires=["cuda", "torch_tensorrt"], isolate=True)


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
