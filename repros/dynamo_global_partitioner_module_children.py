"""pytorch/TensorRT #3157: ``use_fast_partitioner=False``: "'Module' object has no attribute 'graph'".

With the global partitioner, torch-tensorrt's ``compile_module`` walks every child of
the partitioned module and reads ``submodule.graph``. From torch 2.3 on,
``ExportedProgram.module()`` keeps a model's parameter containers (here ``conv``) as plain
``nn.Module`` children, so any model with parameters fails before an engine is built
(v2.4.0 ``py/torch_tensorrt/dynamo/_compiler.py`` line 364, v2.3.0 line 359). The fast
partitioner (the default) skips children not named ``_run_on_acc*`` and never gets
there. v2.5.0 (PR #3195, cherry-picked as #3209, commit 2468a42f64) skips every child
that is not a ``GraphModule`` (line 413) and names the global partitioner's fused
modules ``_run_on_acc_*`` (``partitioning/_global_partitioner.py``).

Stages:
- global_partitioner_standin (main, CPU, TensorRT stood in: ``_standin.py``): the model
  on fake cuda:0, exported and lowered with torch-tensorrt's decomposition table, handed
  to the real ``compile_module`` (where the bug is) with ``use_fast_partitioner=False``,
  up to ``convert_module`` (the first TensorRT step). ``compile_module`` rather than
  ``dynamo.compile``: from 2.8.0 compile asks the GPU for its free memory first
  (``torch.cuda.mem_get_info()``, v2.8.0 ``_compiler.py:717``). It either raises this bug
  in ``compile_module`` or gets past the loop, with the partitioned module's children
  recorded and checked: the model's ``conv``, by name, a plain child beside fused
  ``GraphModule`` partitions (any other plain child, such as 2.14.0's ``_guards_fn``, is
  not the bug's input); then ``skip``: the engine build needs real TensorRT.
- eager, trt_compile, trt_run (main, GPU + TensorRT): the same call on a GPU, the
  output checked against eager.
- workaround (GPU + TensorRT): the default fast partitioner.
"""

from __future__ import annotations

import protocol
from protocol import Signature

META = {
    "id": "dynamo_global_partitioner_module_children",
    "kind": "bug",
    "title": "use_fast_partitioner=False: 'Module' object has no attribute 'graph' in compile_module",
    "upstream": [
        "https://github.com/pytorch/TensorRT/issues/3157",
        "https://github.com/pytorch/TensorRT/pull/3195",
        "https://github.com/pytorch/TensorRT/pull/3209",
    ],
    "description": (
        "torch_tensorrt.compile(..., ir='dynamo', use_fast_partitioner=False) on any model with "
        "parameters fails in compile_module with AttributeError: 'Module' object has no "
        "attribute 'graph': the loop over the partitioned module's children reads .graph of "
        "the plain nn.Module children that torch >= 2.3's ExportedProgram.module() keeps. "
        "Fixed in Torch-TensorRT 2.5.0 (PR #3195 via #3209, commit 2468a42f64), which skips "
        "children that are not GraphModules. Workaround: keep the default fast partitioner."
    ),
    "requires": ["cuda", "torch_tensorrt"],
    "introduced_by": {
        "commits": ["08a2ee4a49f621e10b92f527d958d45dc6ef51df"],
        "note": "compile_module loops over partitioned_module.named_children(), skips a child "
                "only for the fast partitioner and reads submodule.graph: v2.4.0 "
                "py/torch_tensorrt/dynamo/_compiler.py:352/:355/:364 (v2.3.0 :347/:350/:359; "
                "release/ngc/24.04 :356/:359/:368; 24.10 :428). Measured with TensorRT stood in: "
                "2.3.0 (torch 2.3.1) and 2.4.0 (torch 2.4.1) raise there on the child 'conv'",
    },
    "fixed_by": {
        "commits": ["ce38387b6c49d127bddfff9b6c335b261f461bdd",
                    "2468a42f643da346721874eee8f7acf7b7ca27d8"],
        "note": "PR #3195 (on release/2.5 as #3209): v2.5.0 py/torch_tensorrt/dynamo/_compiler.py:413 "
                "skips a child that is not a torch.fx.GraphModule (release/ngc/24.11 the same); "
                "measured with TensorRT stood in: 2.5.0 gets past the loop to convert_module",
    },
    "expect": [
        {"when": {"torch": "<2.3"}, "status": "pass",
         "note": "the loop is there, but torch 2.2's ExportedProgram.module() keeps no plain child "
                 "module: measured on the stand-ins at 2.2.0 (torch 2.2.2), the partitioned "
                 "module's only child is fused_0, no conv; a pass on a GPU is an inference"},
    ],
}

_STANDIN_STAGES = ("global_partitioner_standin",)
# Where the bug is: compile_module's loop over the children (v2.3.0 :359, v2.4.0 :364).
_CHILDREN_FRAME = r"torch_tensorrt/dynamo/_compiler\.py:\d+ in compile_module: .*submodule\.graph"

SIGNATURES = [
    Signature(
        "module_child_has_no_graph", exc="AttributeError",
        stage=_STANDIN_STAGES + ("trt_compile",), frame=_CHILDREN_FRAME,
        pattern=r"'Module' object has no attribute 'graph'",
        note="compile_module reads .graph of a plain nn.Module child (the model's conv)"),
]

SHAPE = [1, 3, 8, 8]


def build_model():
    """A conv with elementwise ops around it: its parameters make ``ep.module()`` keep a
    plain ``conv`` child (torch >= 2.3)."""
    import torch

    class ConvNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, kernel_size=3)

        def forward(self, x):
            return torch.relu(self.conv(x)) * 2.0 + 1.0

    torch.manual_seed(0)
    return ConvNet().eval()


def record_children(partitioning, seen):
    """Wrap ``partitioning.global_partition`` so the partitioned module's children land in
    ``seen`` as (name, "GraphModule" or the plain class name); returns the original."""
    import torch

    original = partitioning.global_partition

    def call(*args, **kwargs):
        out = original(*args, **kwargs)
        module = out[0] if isinstance(out, tuple) else out
        seen["children"] = [(n, "GraphModule" if isinstance(c, torch.fx.GraphModule)
                             else type(c).__name__) for n, c in module.named_children()]
        return out

    partitioning.global_partition = call
    return original


def export_fake_mode(ep):
    """The FakeTensorMode the exported program's placeholders belong to."""
    vals = [n.meta["val"] for n in ep.graph.nodes if n.op == "placeholder"]
    return vals[0].fake_mode


def stage_global_partitioner_standin(s):
    """torch-tensorrt's compile_module on its lowered fake-CUDA export, stopped at
    convert_module."""
    import torch

    import _standin
    import _torchutil

    trt = _standin.import_torch_tensorrt(s)
    from torch_tensorrt.dynamo import _compiler, partitioning
    from torch_tensorrt.dynamo._settings import CompilationSettings
    from torch_tensorrt.dynamo.lowering import get_decompositions

    with _torchutil.fake_mode():
        model = build_model()
        _torchutil.fake_cuda_params(model, device="cuda:0")
        ep = torch.export.export(model, (torch.empty(SHAPE, device="cuda:0"),))
    seen = {}
    original = record_children(partitioning, seen)
    try:
        # in the export's own fake mode: torch >= 2.14 exports in a fresh one
        with export_fake_mode(ep):
            gm = ep.run_decompositions(get_decompositions()).module()
            s.note("module_children", [n for n, _ in gm.named_children()])
            x = torch.empty(SHAPE, device="cuda:0")
            settings = CompilationSettings(min_block_size=1, use_fast_partitioner=False)
            with _standin.stop_at(_compiler, "convert_module") as state:
                _compiler.compile_module(gm, [trt.Input.from_tensor(x)], settings=settings)
    finally:
        partitioning.global_partition = original
        s.note("partitioned_children", seen.get("children"))
    children = seen.get("children")
    s.check(children is not None, "compile_module ran the global partitioner")
    kinds = dict(children)
    s.check(kinds.get("conv") not in (None, "GraphModule") and "GraphModule" in kinds.values(),
            "the partitioned module has fused GraphModule partitions and the model's conv as a "
            "plain child: the loop had the bug's input", children=children)
    _standin.past(s, state, "compile_module's loop over the global partitioner's children")


def stage_eager(s):
    import torch

    model = build_model().cuda()
    x = torch.randn(SHAPE, device="cuda")
    with torch.no_grad():
        ref = model(x)
    return model, x, ref


def compile_real(s, model, x, fast):
    import torch_tensorrt

    s.note("torch_tensorrt", torch_tensorrt.__version__)
    return torch_tensorrt.compile(model, ir="dynamo", inputs=[x], min_block_size=1,
                                  use_fast_partitioner=fast)


def stage_trt_compile(s, model, x):
    return compile_real(s, model, x, fast=False)


def stage_trt_run(s, trt_model, x, ref):
    import torch

    import _torchutil

    with torch.no_grad():
        out = _torchutil.first_output(trt_model(x))
    s.check_close(out, ref, what="TensorRT vs eager", rtol=1e-2, atol=1e-2)


def stage_workaround(s):
    model, x, ref = stage_eager(s)
    stage_trt_run(s, compile_real(s, model, x, fast=True), x, ref)


def main(r):
    r.stage("global_partitioner_standin", stage_global_partitioner_standin, standins=["tensorrt"])
    eager = r.stage("eager", stage_eager, requires=["cuda"])
    model, x, ref = eager if eager else (None, None, None)
    trt_model = r.stage("trt_compile", stage_trt_compile, model, x,
                        requires=["cuda", "torch_tensorrt"], after=["eager"])
    r.stage("trt_run", stage_trt_run, trt_model, x, ref, after=["trt_compile"])
    r.stage("workaround", stage_workaround, role="workaround", isolate=True,
            requires=["cuda", "torch_tensorrt"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
