"""pytorch/TensorRT #3171 / #3177 / #3246: ``require_full_compilation=True`` never reaches the partitioner.

``torch_tensorrt.dynamo.compile(..., require_full_compilation=True)`` (and
``torch_tensorrt.compile(ir="dynamo", ...)``) is documented to refuse a model that cannot
run entirely in TensorRT. Up to 2.4.0, ``compile_module`` calls
``partitioning.fast_partition`` / ``global_partition`` without the flag, so the
partitioners' own check ("require_full_compilation=True was specified, but model is not
fully supported") never fires: an unsupported operator silently runs in PyTorch, in a
``_run_on_gpu_N`` segment of a hybrid graph. 2.5.0 passes the flag (PR #3193, cherry-picked
as PR #3213, commit 348d21af6f) and the partitioner raises, as designed.

The unsupported operator is the repro's own: ``repromatrix::plus_one``, a
``torch.library`` operator with CPU, CUDA and Meta kernels and no TensorRT converter in any
release (version-independent). ``min_block_size=1``: ``compile_module`` returns the graph
untouched, flag or not, when it has fewer supported operators than that (a TODO in its
code on every release).

Stages:
- full_compilation_standin (main, CPU, TensorRT stood in: ``_standin.py``): the model on
  fake cuda:0, exported, handed to the real ``torch_tensorrt.dynamo.compile`` with the flag;
  a tripwire after ``partitioning.fast_partition`` reads the partition it returned (and the
  arguments ``compile_module`` passed it). A PyTorch-run segment fails the check *inside*
  that call, so the failure is raised through ``compile_module``'s call site (the bug's
  line); the partitioner's own refusal is the flag honoured (checked to come from the
  partitioner, with its text), and the stage ends ``skip`` with ``evidence.cleared``.
- supported_model_standin (info, control): the model without the custom operator, flag on:
  one TensorRT segment on every release, then the stop (needs real TensorRT).
- flag_off_standin (info, control): the flag off: the custom operator really has no
  converter (a PyTorch-run segment) on every release.
- trt_compile_full (main, GPU + TRT): the flag on the model with the
  custom operator must end in the partitioner's refusal, never in a hybrid module;
  trt_compile_full_supported (main, GPU + TRT): the model without it, flag on, one TensorRT
  segment, checked against eager.
- workaround (GPU + TRT): before 2.5.0, check the compiled module yourself: refuse any child
  that is not a ``_run_on_acc`` segment.
"""

from __future__ import annotations

import protocol
from protocol import Signature

META = {
    "id": "dynamo_require_full_compilation_ignored",
    "kind": "bug",
    "title": "dynamo compile: require_full_compilation=True is ignored, a hybrid graph comes back",
    "upstream": [
        "https://github.com/pytorch/TensorRT/issues/3171",
        "https://github.com/pytorch/TensorRT/issues/3177",
        "https://github.com/pytorch/TensorRT/issues/3246",
        "https://github.com/pytorch/TensorRT/pull/3193",
        "https://github.com/pytorch/TensorRT/pull/3213",
    ],
    "description": (
        "torch_tensorrt.dynamo.compile / torch_tensorrt.compile(ir='dynamo') with "
        "require_full_compilation=True silently return a hybrid graph (the unsupported operators "
        "run in PyTorch, _run_on_gpu_N segments) in Torch-TensorRT 2.2.0 to 2.4.0: compile_module "
        "never passes the flag to the partitioner. Fixed in 2.5.0 (PR #3193 via #3213, commit "
        "348d21af6f): the partitioner raises AssertionError 'require_full_compilation=True was "
        "specified, but model is not fully supported'. Workaround before 2.5.0: check the "
        "compiled module yourself and refuse any child that is not a _run_on_acc segment."
    ),
    "requires": ["cuda", "torch_tensorrt"],
    "introduced_by": {
        "commits": ["0eae97fbc276789b537a706e1867827fd0275606"],
        "note": "compile_module calls the partitioners without the flag: v2.4.0 "
                "py/torch_tensorrt/dynamo/_compiler.py:317-322 (fast_partition) and 335-340 "
                "(global_partition); v2.3.0 313-318 / 330-335; v2.2.0 285-290 / 302-307; "
                "release/ngc/24.01 266 / 283; 24.12 (1016dcc3a0) 373 / 391. The check it skips: "
                "partitioning/_adjacency_partitioner.py:206 (v2.2.0: 204), "
                "_global_partitioner.py:68. The oldest commit read: the Dynamo refactor (#2104)",
    },
    "fixed_by": {
        "commits": ["b99d080a8a19a88c6c62a7fd34d2a76387c1350f",
                    "348d21af6fa88220d19df8a5ec6688ffaa7c4d07"],
        "note": "PR #3193 (on release/2.5 as #3213): v2.5.0 dynamo/_compiler.py:378 "
                "(fast_partition) and :397 (global_partition) pass "
                "require_full_compilation=settings.require_full_compilation; release/ngc/25.01 "
                "(02648555c1) :698 and :717; the partitioner raises at "
                "_adjacency_partitioner.py:207. The pass needs a GPU (trt_compile_full_supported); "
                "on the stand-ins the refusal is a cleared skip",
    },
}

_CHECK = r"check failed: require_full_compilation=True leaves no PyTorch-run segment"
_STANDIN_STAGES = ("full_compilation_standin",)
# Where the bug is: compile_module's call of the partitioner, the call that drops the flag.
_PARTITION_CALL = (r"torch_tensorrt/dynamo/_compiler\.py:\d+ in compile_module: "
                   r".*partitioning\.(fast|global)_partition\(")
# Where the flag is honoured: the partitioners' own check (2.5.0: _adjacency_partitioner.py:207).
_REFUSAL_FRAME = (r"torch_tensorrt/dynamo/partitioning/_(adjacency|global)_partitioner\.py:\d+ "
                  r"in (partition_graph|propose_partitions)")
_REFUSAL_TEXT = "require_full_compilation=True was specified, but model is not fully supported"

SIGNATURES = [
    Signature("standin_hybrid_despite_full_compilation", exc="CheckFailed", pattern=_CHECK,
              stage=_STANDIN_STAGES, frame=_PARTITION_CALL,
              note="the partition fast_partition returned has a PyTorch-run segment although the "
                   "flag was set: decided inside that call, raised through compile_module's call "
                   "site; TensorRT stood in"),
    Signature("hybrid_despite_full_compilation", exc="CheckFailed", pattern=_CHECK,
              stage=("trt_compile_full",),
              note="the module torch_tensorrt.compile returned has a PyTorch-run segment"),
]

SHAPE = (1, 3, 8, 8)
OP = "plus_one"
_LIBRARY = []  # the torch.library.Library of the custom operator, made once per process


def custom_op():
    """``torch.ops.repromatrix.plus_one``: CPU, CUDA and Meta kernels, no TensorRT converter."""
    import torch

    if not _LIBRARY:
        lib = torch.library.Library("repromatrix", "DEF")
        lib.define("%s(Tensor x) -> Tensor" % OP)
        for key in ("CPU", "CUDA"):
            lib.impl(OP, _plus_one, key)
        lib.impl(OP, _plus_one_meta, "Meta")
        _LIBRARY.append(lib)
    return getattr(torch.ops.repromatrix, OP)


def _plus_one(x):
    return x + 1


def _plus_one_meta(x):
    import torch

    return torch.empty_like(x)


def build_model(unsupported=True):
    """conv, relu, mul, add, the custom operator (or an add), sub, relu, mul (on CPU)."""
    import torch

    op = custom_op() if unsupported else _plus_one

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)

        def forward(self, x):
            y = torch.relu(self.conv(x)) * 2.0 + 1.0
            return torch.relu(op(y) - 3.0) * 0.5

    torch.manual_seed(0)
    return Model().eval()


def torch_segments(module):
    """The children of a partitioned module that are not TensorRT (``_run_on_acc``) segments."""
    return [n for n, _ in module.named_children() if "_run_on_acc" not in n]


def refused_as_designed(s, e):
    """Whether ``e`` is the partitioners' own refusal of require_full_compilation=True."""
    import re

    where = protocol.raised_in(e) or ""
    s.note("refused", str(e).splitlines()[0][:200] if str(e) else type(e).__name__)
    s.note("refused_in", where)
    return _REFUSAL_TEXT in str(e) and bool(re.search(_REFUSAL_FRAME, where))


def read_partition(s, state):
    """Check the partition ``fast_partition`` returned (inside that call: a failure goes up
    through compile_module's call site)."""
    value = state["value"]
    module = value[0] if isinstance(value, tuple) else value
    s.note("partition", [n for n, _ in module.named_children()])
    s.note("partition_kwargs", sorted(state["kwargs"]))
    return torch_segments(module)


def compile_on_standins(s, unsupported, full, decide):
    """The real torch_tensorrt.dynamo.compile on the fake-CUDA export, stopped after
    ``fast_partition`` (``decide`` reads the partition there); the stop state, or the
    exception that ended the compile."""
    import torch

    import _standin
    import _torchutil

    trt = _standin.import_torch_tensorrt(s)
    with _torchutil.fake_mode():
        model = build_model(unsupported)
        _torchutil.fake_cuda_params(model, device="cuda:0")
        x = torch.empty(SHAPE, device="cuda:0")
        ep = torch.export.export(model, (x,))
        s.note("exported_ops", _torchutil.graph_targets(ep.graph_module))
        try:
            with _standin.stop_at(trt.dynamo.partitioning, "fast_partition",
                                  "the end of fast_partition", run_first=True,
                                  decide=lambda state: decide(s, state)) as state:
                trt.dynamo.compile(ep, inputs=[trt.Input.from_tensor(x)], min_block_size=1,
                                   require_full_compilation=full)
        except AssertionError as e:
            if isinstance(e, protocol.CheckFailed):
                raise
            return state, e
    return state, None


def no_torch_segment(s, state):
    segments = read_partition(s, state)
    s.check(not segments, "require_full_compilation=True leaves no PyTorch-run segment",
            pytorch_segments=segments)


def has_torch_segment(s, state):
    segments = read_partition(s, state)
    s.check(segments, "the custom operator has no converter: it runs in PyTorch", segments=segments)


def stage_full_compilation_standin(s):
    import _standin

    state, refusal = compile_on_standins(s, True, True, no_torch_segment)
    if refusal is None:
        _standin.past(s, state, "the partition (fast_partition): no PyTorch-run segment")
        return
    s.check(refused_as_designed(s, refusal),
            "the partitioner itself refuses the model (require_full_compilation honoured)",
            refused_in=protocol.raised_in(refusal))
    s.note("cleared", "the partition (fast_partition): require_full_compilation honoured")
    s.note("stopped_at", protocol.raised_in(refusal))
    s.skip("the flag is honoured: torch-tensorrt's partitioner refused the unsupported operator "
           "(%s); a compile that succeeds needs real TensorRT" % _REFUSAL_TEXT)


def stage_control_standin(s, unsupported, full, decide, cleared):
    import _standin

    state, refusal = compile_on_standins(s, unsupported, full, decide)
    if refusal is not None:
        raise refusal
    _standin.past(s, state, cleared)


def eager_model(unsupported):
    import torch

    model = build_model(unsupported).cuda()
    x = torch.randn(SHAPE, device="cuda")
    with torch.no_grad():
        ref = model(x)
    return model, x, ref


def compile_full(s, unsupported):
    """torch_tensorrt.compile(ir="dynamo", require_full_compilation=True): (module, eager
    model, input, reference), or the partitioner's refusal in place of the module."""
    import torch_tensorrt

    s.note("torch_tensorrt", torch_tensorrt.__version__)
    model, x, ref = eager_model(unsupported)
    try:
        trt_gm = torch_tensorrt.compile(model, ir="dynamo", inputs=[x], min_block_size=1,
                                        require_full_compilation=True)
    except AssertionError as e:
        return e, x, ref
    s.note("partition", [n for n, _ in trt_gm.named_children()])
    return trt_gm, x, ref


def stage_trt_compile_full(s):
    out, _, _ = compile_full(s, True)
    if isinstance(out, BaseException):
        s.check(refused_as_designed(s, out), "the partitioner itself refuses the model "
                "(require_full_compilation honoured)", refused_in=protocol.raised_in(out))
        return
    s.check(not torch_segments(out), "require_full_compilation=True leaves no PyTorch-run segment",
            pytorch_segments=torch_segments(out))


def stage_trt_compile_full_supported(s):
    import torch

    import _torchutil

    out, x, ref = compile_full(s, False)
    if isinstance(out, BaseException):
        raise out
    s.check(not torch_segments(out), "a supported model compiles to TensorRT segments only",
            pytorch_segments=torch_segments(out))
    with torch.no_grad():
        s.check_close(_torchutil.first_output(out(x)), ref, what="TensorRT vs eager",
                      rtol=1e-2, atol=1e-2)


def stage_workaround(s):
    """Check the compiled module yourself (any release): a PyTorch-run segment is refused."""
    out, _, _ = compile_full(s, True)
    found = [] if isinstance(out, BaseException) else torch_segments(out)
    s.note("segments_refused_by_user_check", found)
    s.check(isinstance(out, BaseException) or found,
            "the model with the custom operator is refused (by torch-tensorrt or by the check)")
    stage_trt_compile_full_supported(s)


def main(r):
    trt = ["tensorrt"]
    r.stage("full_compilation_standin", stage_full_compilation_standin, standins=trt)
    r.stage("supported_model_standin", stage_control_standin, False, True, no_torch_segment,
            "the partition of a fully supported model (fast_partition)", standins=trt, role="info")
    r.stage("flag_off_standin", stage_control_standin, True, False, has_torch_segment,
            "the partition with the flag off (fast_partition)", standins=trt, role="info")
    req = ["cuda", "torch_tensorrt"]
    r.stage("trt_compile_full", stage_trt_compile_full, requires=req)
    r.stage("trt_compile_full_supported", stage_trt_compile_full_supported, requires=req)
    r.stage("workaround", stage_workaround, role="workaround", isolate=True, requires=req)


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
