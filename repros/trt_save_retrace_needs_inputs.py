"""pytorch/TensorRT PR #3875: ``torch_tensorrt.save(trt_gm, path)`` needs inputs from 2.10.0.

``torch_tensorrt.save(module, path)`` of a ``torch.fx.GraphModule`` (what
``torch_tensorrt.dynamo.compile`` returns) in the default ``exported_program`` format: up to
2.9.0 ``retrace`` defaulted to ``False`` and the graph was serialized as it was
(``torch_tensorrt.dynamo._exporter.export``); PR #3875 (commit c2590bf8e1, "Change default
export behavior to re-export", v2.10.0) made ``retrace=True`` the default, which re-exports
with ``torch.export.export`` and so needs example inputs: a call without ``inputs`` /
``arg_inputs`` raises ``ValueError: ... retrace is True, however the inputs or arg_inputs
are empty`` (v2.10.0 ``py/torch_tensorrt/_compile.py:609``, ``:735-737``; from 2.11.0 "...
without existing shape metadata and retrace is True, however no inputs specs were
provided"). A changed default, so a breaking change, not a fix to wait for. Before 2.6.0
``save`` asked for inputs for any ``GraphModule`` (v2.5.0 ``_compile.py:514-517``, "... however
the inputs are empty"), whatever ``retrace``; PR #3212 (commit bfa4c9a22a, v2.6.0) dropped that
for ``retrace=False``: 2.6.0 to 2.9.0 save without inputs. A record at 2.5.0 or before meets
that older check, another message: it cannot tell about this change.

Stages:
- save_no_inputs_standin (main, CPU, TensorRT stood in: an inert ``tensorrt`` module,
  ``libnvinfer`` stubs, current CUDA device 0): the real ``torch_tensorrt.save`` of a
  ``GraphModule`` (``torch.export.export(model).module()`` on the CPU, from torch 2.9 with
  ``check_guards=False``: torch-tensorrt's own exporter refuses the ``_guards_fn`` call torch
  2.9 adds; ``save``'s choice of path reads the module's type and the arguments only, not
  whether it holds engines) with no inputs. Either ``save`` raises the ValueError, or its
  ``torch.export.save`` call runs and is the tripwire (the file is loaded back and checked
  against the model); then ``skip``.
- trt_save (main, GPU + TensorRT): ``dynamo.compile`` then ``save`` without inputs, loaded back
  and checked against eager.
- workaround_inputs_standin (workaround, TensorRT stood in): the same call with
  ``arg_inputs=[x]`` (or ``retrace=False``), which every release takes.
"""

from __future__ import annotations

import protocol
from protocol import Signature

META = {
    "id": "trt_save_retrace_needs_inputs",
    "title": "torch_tensorrt.save(trt_gm, path) without inputs raises: retrace=True is the default "
             "from 2.10",
    "kind": "breaking-change",
    "upstream": [
        "https://github.com/pytorch/TensorRT/pull/3875",
    ],
    "description": (
        "torch_tensorrt.save(trt_gm, path) of a torch.fx.GraphModule (what dynamo.compile "
        "returns) without inputs raises ValueError: Provided model is a torch.fx.GraphModule and "
        "retrace is True, however the inputs or arg_inputs are empty from torch-tensorrt 2.10.0: "
        "PR #3875 (commit c2590bf8e1b100d72f4b0c8432a2d756512d3030, 'Change default export "
        "behavior to re-export') changed save's default to retrace=True "
        "(v2.10.0:py/torch_tensorrt/_compile.py:609), and the retrace path needs example inputs "
        "(:735-737). v2.9.0 _compile.py:610 retrace: bool = False, :709-716 serialized the graph "
        "as it was with torch_tensorrt.dynamo._exporter.export. From v2.11.0 the message reads "
        "'...without existing shape metadata and retrace is True, however no inputs specs were "
        "provided' (v2.13.0 :1083; the 2.14.0 wheel's save still defaults to retrace=True, "
        "_compile.py:699); a static-shape module still needs inputs. Before v2.6.0 save asked for "
        "inputs for every GraphModule whatever retrace (v2.5.0 _compile.py:514-517); PR #3212 "
        "(commit bfa4c9a22aad25db475225ccdd25f3af7bc49f47, v2.6.0) dropped that for "
        "retrace=False, so 2.6.0 to 2.9.0 save without inputs. Workaround: pass "
        "arg_inputs=[...] (or inputs=[...]) to save, or retrace=False for the former behaviour."
    ),
    "requires": ["cuda", "torch_tensorrt"],
    "introduced_by": {
        "commits": ["c2590bf8e1b100d72f4b0c8432a2d756512d3030"],
        "note": "PR #3875: v2.10.0 py/torch_tensorrt/_compile.py:609 retrace: bool = True, "
                ":735-737 raise ValueError when arg_inputs is None; v2.9.0 :610 retrace: bool = "
                "False; v2.11.0 :1014, v2.13.0 :1083 raise for a module without symbolic shapes",
    },
}

_SAVE_FRAME = r"torch_tensorrt/_compile\.py:\d+ in save: "

SIGNATURES = [
    Signature(
        "save_retrace_needs_inputs", exc="ValueError",
        stage=("save_no_inputs_standin", "trt_save"), frame=_SAVE_FRAME,
        pattern=r"Provided model is a torch\.fx\.GraphModule (and|without existing shape metadata "
                r"and) retrace is True, however (the inputs or arg_inputs are empty|no inputs "
                r"specs were provided)",
        note="save's retrace default (True from 2.10.0) needs example inputs"),
]

SHAPE = (2, 3, 8, 8)


def build_model(device="cpu"):
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU()).eval().to(device)


def check_saved(s, path, reference, x, what):
    """The file at ``path`` loads with torch.export.load and computes what ``reference`` does."""
    import torch

    loaded = torch.export.load(path).module()
    with torch.no_grad():
        s.check_close(loaded(x), reference(x), what=what, rtol=1e-3, atol=1e-3)


def stage_save_standin(s, keyword):
    """The real torch_tensorrt.save of a GraphModule, stopped after its torch.export.save."""
    import os
    import tempfile

    import torch

    import _standin
    import _torchutil

    trt = _standin.import_torch_tensorrt(s)
    if not hasattr(trt, "save"):
        s.skip("this torch_tensorrt has no torch_tensorrt.save (it appears in 2.3.0)")
    model = build_model()
    x = torch.randn(SHAPE)
    for p in model.parameters():
        p.requires_grad_(False)
    ep = torch.export.export(model, (x,))
    # torch >= 2.9 puts a _guards_fn call in ep.module(), which torch-tensorrt's own exporter
    # (retrace=False) refuses (SpecViolationError): not what save's default is about
    gm = ep.module(**_torchutil.supported_kwargs(ep.module, {"check_guards": False})[0])
    s.note("module_type", type(gm).__name__)
    kwargs = {"arg_inputs": [x]} if keyword == "arg_inputs" else {}
    path = os.path.join(tempfile.mkdtemp(prefix="trt-save-"), "model.ep")
    with _standin.stop_at(torch.export, "save", "save's torch.export.save", run_first=True) as state:
        trt.save(gm, path, **kwargs)
    if "value" in state:
        check_saved(s, path, model, x, "the saved program vs the model")
    _standin.past(s, state, "save's choice of retrace for a GraphModule")


def stage_trt_save(s):
    """dynamo.compile on a GPU, save without inputs, load and compare with eager."""
    import os
    import tempfile

    import torch
    import torch_tensorrt

    s.note("torch_tensorrt", torch_tensorrt.__version__)
    model = build_model("cuda")
    x = torch.randn(SHAPE, device="cuda")
    trt_gm = torch_tensorrt.dynamo.compile(torch.export.export(model, (x,)), inputs=[x], min_block_size=1)
    path = os.path.join(tempfile.mkdtemp(prefix="trt-save-"), "model.ep")
    torch_tensorrt.save(trt_gm, path)
    check_saved(s, path, model, x, "the saved TensorRT program vs eager")


def main(r):
    trt = ["tensorrt"]
    r.stage("save_no_inputs_standin", stage_save_standin, "", standins=trt)
    r.stage("trt_save", stage_trt_save, requires=["cuda", "torch_tensorrt"], isolate=True)
    r.stage("workaround_inputs_standin", stage_save_standin, "arg_inputs", standins=trt, role="workaround")


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
