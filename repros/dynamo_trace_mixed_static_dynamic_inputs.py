"""pytorch/TensorRT PR #2970: one static and one dynamic ``Input`` break ``dynamo.trace``.

``torch_tensorrt.dynamo.trace`` (and so ``torch_tensorrt.compile(ir="dynamo")``) builds
torch.export's ``dynamic_shapes`` from the ``Input``s. v2.3.0 and v2.4.0 append an entry
for dynamic inputs only (``py/torch_tensorrt/dynamo/_tracer.py`` lines 61-81), so a
static ``x`` and a dynamic ``y`` give a 1-tuple for a 2-argument ``forward``, which export
refuses. v2.2.0 builds a dict keyed by ``Input.name`` for the dynamic inputs only, and
asserts a name first (lines 61-85): the stages name their inputs (``x``, ``y``, as
``forward`` does), so that assertion, another problem (an unnamed dynamic ``Input``), never
decides; torch 2.2's export refuses the one-key dict for two arguments the same way
(``tree_zip``, ``torch/_export/__init__.py`` line 122 in 2.2.2: UserError "Expected
{'y': {...}} to have 2 items"). v2.5.0
(PR #2970, commit 3a0b244b6e, "Added kwarg support for dynamo.compile") builds a dict
over every ``forward`` parameter, ``{}`` for a static input (``get_dynamic_shapes_args``,
line 112). The error text is torch's and
differs by torch release (UserError on 2.2 and 2.3, ValueError on 2.4).

Stages:
- trace_mixed_standin (main, CPU, TensorRT stood in: ``_standin.py``): the real
  ``torch_tensorrt.dynamo.trace`` on the CPU (``device=cpu``, no fake CUDA), stopped right
  after its ``export`` call. It either raises this bug in ``trace`` or the exported program
  is checked (``x`` static ``(2, 3)``, ``y`` symbolic in dim 0); the ``dynamic_shapes``
  torch-tensorrt built are recorded. Then ``skip``: compiling needs real TensorRT.
- eager, trt_compile, trt_run (main, GPU + TensorRT): ``torch_tensorrt.compile`` with the
  two inputs, checked against eager at two batch sizes of ``y``.
- workaround (GPU + TensorRT): export with ``dynamic_shapes`` by hand, then
  ``torch_tensorrt.dynamo.compile`` on the ExportedProgram (no ``trace``).
"""

from __future__ import annotations

import protocol
from protocol import Signature

META = {
    "id": "dynamo_trace_mixed_static_dynamic_inputs",
    "kind": "bug",
    "title": "dynamo.trace / compile(ir='dynamo') refuse one static and one dynamic Input",
    "upstream": [
        "https://github.com/pytorch/TensorRT/pull/2970",
        "https://github.com/pytorch/TensorRT/commit/3a0b244b6e",
    ],
    "description": (
        "torch_tensorrt.compile(model, ir='dynamo', inputs=[Input((2, 3)), Input(min_shape=..., "
        "opt_shape=..., max_shape=...)]) for a forward(x, y) fails in dynamo.trace: "
        "torch-tensorrt 2.3.0/2.4.0 pass torch.export a dynamic_shapes tuple with an entry for "
        "the dynamic input only (2.2.0: a dict keyed by Input.name, dynamic inputs only), which "
        "export refuses (torch 2.2 and 2.3: UserError 'Expected ... to have 2 items'; torch 2.4: "
        "ValueError 'Node arity mismatch'). No upstream issue for this symptom; fixed in "
        "Torch-TensorRT 2.5.0 by PR #2970 (commit 3a0b244b6e), which gives every forward parameter an entry. "
        "Workaround: torch.export the model with dynamic_shapes yourself and pass the "
        "ExportedProgram to torch_tensorrt.dynamo.compile."
    ),
    "requires": ["cuda", "torch_tensorrt"],
    "introduced_by": {
        "commits": ["bc6e1faa846908e5c29cf0300a25f00eb56be4cf",
                    "12c71d6906eed76f50d7ffc075f5441293d27dbb"],
        "note": "trace gives torch.export dynamic_shapes for the dynamic inputs only: v2.2.0 "
                "py/torch_tensorrt/dynamo/_tracer.py:61 a dict keyed by Input.name (PR #2376; "
                "release/ngc/24.01 to 24.06 the same); v2.3.0/v2.4.0 :61 a list, :79 appends "
                "for a dynamic Input only, :81 export(..., dynamic_shapes=tuple(dynamic_shapes)) "
                "(PR #2775; release/ngc/24.07 and 24.08 :61). Measured with TensorRT stood in: "
                "2.2.0 (torch 2.2.2) UserError, raised at :85; 2.3.0 (torch 2.3.1) UserError, "
                "2.4.0 (torch 2.4.1) ValueError, raised at :81",
    },
    "fixed_by": {
        "commits": ["3a0b244b6e0a591d6dd7124cb16b9ec657518f85"],
        "note": "PR #2970: v2.5.0 py/torch_tensorrt/dynamo/_tracer.py:81 "
                "get_dynamic_shapes_args(mod, arg_inputs), :112 one entry per forward parameter, "
                ":125 {} for a static input (release/ngc/24.09 and 24.10 :81 the same); measured "
                "with TensorRT stood in: 2.5.0 exports x static and y dynamic",
    },
}

_STANDIN_STAGES = ("trace_mixed_standin",)
_TRACE_STAGES = _STANDIN_STAGES + ("trt_compile",)
# Where the bug is: torch-tensorrt's trace, at its export call.
_TRACE_FRAME = r"torch_tensorrt/dynamo/_tracer\.py:\d+ in trace: "

SIGNATURES = [
    Signature(
        "dynamic_shapes_too_few_items", exc="UserError", when={"torch": "<2.4"},
        stage=_TRACE_STAGES, frame=_TRACE_FRAME + r".*export\(",
        pattern=r"Expected (\(\{0: <class '[\w.]+'>\},\)|\{'y': \{0: <class '[\w.]+'>\}\}) "
                r"to have 2 items",
        note="torch 2.2's and 2.3's text: torch-tensorrt's dynamic_shapes for two inputs "
             "with one entry (2.2.0: a dict keyed by the dynamic input's name; 2.3.0: a 1-tuple)"),
    Signature(
        "dynamic_shapes_node_arity", exc="ValueError", when={"torch": ">=2.4,<2.5"},
        stage=_TRACE_STAGES, frame=_TRACE_FRAME + r".*export\(",
        pattern=r"Node arity mismatch; expected 2, but got 1\.",
        note="torch 2.4's text for the same 1-tuple"),
]

STATIC_X = (2, 3)
DYNAMIC_Y = {"min_shape": (1, 5), "opt_shape": (4, 5), "max_shape": (8, 5)}


def build_model():
    import torch

    class TwoInputs(torch.nn.Module):
        def forward(self, x, y):
            return (x * 2.0).sum() + (y + 1.0).sum()

    return TwoInputs().eval()


def mixed_inputs(trt):
    """A static ``x`` and a dynamic ``y`` (dim 0), named as ``forward``'s parameters (2.2.0
    asserts a name for a dynamic input before it builds ``dynamic_shapes``)."""
    return [trt.Input(STATIC_X, name="x"), trt.Input(name="y", **DYNAMIC_Y)]


def stage_trace_mixed_standin(s):
    """The real dynamo.trace on the CPU, stopped right after its export call."""
    import torch

    import _standin

    trt = _standin.import_torch_tensorrt(s)
    from torch_tensorrt.dynamo import _tracer

    built = {}
    export = _tracer.export

    def recording_export(*args, **kwargs):
        built["dynamic_shapes"] = repr(kwargs.get("dynamic_shapes"))
        return export(*args, **kwargs)

    _tracer.export = recording_export
    try:
        with _standin.stop_at(_tracer, "export", "the end of trace's torch.export",
                              run_first=True) as state:
            trt.dynamo.trace(build_model(), mixed_inputs(trt), device=torch.device("cpu"))
    finally:
        s.note("dynamic_shapes", built.get("dynamic_shapes"))
        _tracer.export = export
    if "value" in state:
        shapes = [n.meta["val"].shape for n in state["value"].graph.nodes if n.op == "placeholder"]
        s.note("placeholder_shapes", [str(tuple(sh)) for sh in shapes])
        s.check(len(shapes) == 2 and tuple(shapes[0]) == STATIC_X,
                "x is exported static", shapes=[str(tuple(sh)) for sh in shapes])
        s.check(not isinstance(shapes[1][0], int) and shapes[1][1] == 5,
                "y is exported with a symbolic dim 0", y=str(tuple(shapes[1])))
    _standin.past(s, state, "trace's torch.export with one static and one dynamic input")


def example_inputs(batch, device="cuda"):
    import torch

    return torch.randn(STATIC_X, device=device), torch.randn(batch, 5, device=device)


def stage_eager(s):
    return build_model().cuda()


def stage_trt_compile(s, model):
    import torch_tensorrt

    s.note("torch_tensorrt", torch_tensorrt.__version__)
    return torch_tensorrt.compile(model, ir="dynamo", inputs=mixed_inputs(torch_tensorrt),
                                  min_block_size=1)


def stage_trt_run(s, model, trt_model):
    import torch

    import _torchutil

    for batch in (1, 4, 8):
        x, y = example_inputs(batch)
        with torch.no_grad():
            out = _torchutil.first_output(trt_model(x, y))
            ref = model(x, y)
        s.check_close(out, ref, what="TensorRT vs eager, y batch %d" % batch, rtol=1e-2, atol=1e-2)


def stage_workaround(s):
    """torch.export with dynamic_shapes by hand, then dynamo.compile: trace is not used."""
    import torch
    import torch_tensorrt

    model = stage_eager(s)
    x, y = example_inputs(4)
    batch = torch.export.Dim("batch", min=1, max=8)
    ep = torch.export.export(model, (x, y), dynamic_shapes={"x": None, "y": {0: batch}})
    trt_model = torch_tensorrt.dynamo.compile(ep, inputs=mixed_inputs(torch_tensorrt),
                                              min_block_size=1)
    stage_trt_run(s, model, trt_model)


def main(r):
    r.stage("trace_mixed_standin", stage_trace_mixed_standin, standins=["tensorrt"])
    model = r.stage("eager", stage_eager, requires=["cuda"])
    trt_model = r.stage("trt_compile", stage_trt_compile, model,
                        requires=["cuda", "torch_tensorrt"], after=["eager"])
    r.stage("trt_run", stage_trt_run, model, trt_model, after=["trt_compile"])
    r.stage("workaround", stage_workaround, role="workaround", isolate=True,
            requires=["cuda", "torch_tensorrt"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
