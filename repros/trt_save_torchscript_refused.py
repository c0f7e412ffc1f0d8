"""pytorch/TensorRT #3775: ``torch_tensorrt.save`` refuses a ScriptModule in TorchScript format.

``torch_tensorrt.save(ts_module, path, output_format="torchscript")`` (the way to save what
``torch_tensorrt.compile(ir="ts")`` returns) raises ``ValueError: Provided model is a
torch.jit.ScriptModule but the output_format specified is not torchscript`` for every
``output_format``: PR #3567 (commit 70c8393431, "Saving modules using the AOTI format",
v2.8.0) wrote the check as ``if not all([output_format == f for f in ["exported_program",
"aot_inductor"]])``, true for any one string. The release/2.9 branch took the fix as commit
aa2f917a7e (``if output_format != "torchscript"``), main only with PR #3778 (commit
48a96a8e52), so v2.10.0 to v2.13.0 have the bug again; the 2.14.0 wheel has the fix.

Stages:
- save_torchscript_standin (main, CPU, TensorRT stood in): the real ``torch_tensorrt.save``
  of a scripted model with ``output_format="torchscript"``; its ``torch.jit.save`` call runs
  and is the tripwire (the file is loaded back and checked against the model). Either the
  ValueError is raised in ``save`` or the stage is a cleared ``skip``.
- trt_save_torchscript (main, GPU + TensorRT): ``compile(ir="ts")``, then ``save`` in
  TorchScript format, loaded back and checked against eager.
- workaround_jit_save (workaround, CPU): ``torch.jit.save`` of the ScriptModule, which is all
  that ``save`` does for one, loaded back and checked.
"""

from __future__ import annotations

import shutil
import tempfile

import protocol
from protocol import Signature

META = {
    "id": "trt_save_torchscript_refused",
    "title": "torch_tensorrt.save refuses a ScriptModule with output_format='torchscript' (2.8, 2.10-2.13)",
    "kind": "bug",
    "upstream": [
        "https://github.com/pytorch/TensorRT/issues/3775",
        "https://github.com/pytorch/TensorRT/pull/3567",
        "https://github.com/pytorch/TensorRT/pull/3778",
    ],
    "description": (
        "torch_tensorrt.save(module, path, output_format='torchscript') for a "
        "torch.jit.ScriptModule (what compile(ir='ts') returns) raises ValueError: Provided model "
        "is a torch.jit.ScriptModule but the output_format specified is not torchscript. PR #3567 "
        "(commit 70c83934319ac5c113c9a7c4f8fa4e9eaeb1ed95, in v2.8.0) made the check 'if not "
        "all([output_format == f for f in [\"exported_program\", \"aot_inductor\"]])' "
        "(v2.8.0:py/torch_tensorrt/_compile.py:642), true for every format; before it, v2.7.0 "
        "_compile.py:634-644 raised for 'exported_program' only and called torch.jit.save. "
        "Commit aa2f917a7e5a1478264a9af714d8254bcfd9f3bb ('fix: fix export in torchscript "
        "format.', release/2.9 only) wrote 'if output_format != \"torchscript\"' "
        "(v2.9.0 _compile.py:665); main kept the bug (v2.10.0 :664, v2.13.0 :917) until PR #3778 "
        "(commit 48a96a8e52da00ea6c637e739904ceaa0ed51961), which the 2.14.0 wheel has "
        "(_compile.py:1047). Workaround: torch.jit.save(module, path), which is all that save "
        "does for a ScriptModule."
    ),
    "requires": ["cuda", "torch_tensorrt"],
    "expect": [
        {"when": {"torch_tensorrt": ">=2.8,<2.9"}, "status": "fail",
         "note": "v2.8.0:py/torch_tensorrt/_compile.py:642 'if not all([output_format == f for f "
                 "in [\"exported_program\", \"aot_inductor\"]])', :643 raise ValueError (PR #3567, "
                 "commit 70c83934319ac5c113c9a7c4f8fa4e9eaeb1ed95)"},
        {"when": {"torch_tensorrt": ">=2.10,<2.14"}, "status": "fail",
         "note": "the same check without the list: v2.10.0 _compile.py:664, v2.11.0 :864, v2.12.0 "
                 "and v2.12.1 :892, v2.13.0 :917"},
        {"when": {"torch_tensorrt": ">=2.9,<2.10"}, "status": "pass",
         "note": "v2.9.0 _compile.py:665 'if output_format != \"torchscript\"' (commit aa2f917a7e, "
                 "on release/2.9 only), :674 torch.jit.save"},
        {"when": {"torch_tensorrt": ">=2.14"}, "status": "pass",
         "note": "the 2.14.0 wheel's torch_tensorrt/_compile.py:1047 'if output_format != "
                 "\"torchscript\"' (PR #3778, commit 48a96a8e52 on main; no v2.14.0 tag read)"},
        {"when": {"torch_tensorrt": ">=2.3,<2.8"}, "status": "pass",
         "note": "save appears in v2.3.0 (_compile.py:398); v2.3.0 :434-440 and v2.7.0 :634-644 "
                 "raise for output_format='exported_program' only, else torch.jit.save"},
    ],
}

_SAVE_FRAME = r"torch_tensorrt/_compile\.py:\d+ in save: "

SIGNATURES = [
    Signature(
        "scriptmodule_format_refused", exc="ValueError",
        stage=("save_torchscript_standin", "trt_save_torchscript"), frame=_SAVE_FRAME,
        pattern=r"Provided model is a torch\.jit\.ScriptModule but the output_format specified is "
                r"not torchscript",
        note="save's format check, true for every format (v2.8.0, v2.10.0 to v2.13.0)"),
]

SHAPE = (2, 3, 8, 8)


def build_model(device="cpu"):
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU()).eval().to(device)


def check_saved(s, path, reference, x, what):
    """The file at ``path`` loads with torch.jit.load and computes what ``reference`` does."""
    import torch

    loaded = torch.jit.load(path, map_location=x.device)
    with torch.no_grad():
        s.check_close(loaded(x), reference(x), what=what, rtol=1e-3, atol=1e-3)


def stage_save_standin(s, tmp):
    """The real torch_tensorrt.save of a ScriptModule, stopped after its torch.jit.save."""
    import os

    import torch

    import _standin

    trt = _standin.import_torch_tensorrt(s)
    if not hasattr(trt, "save"):
        s.skip("this torch_tensorrt has no torch_tensorrt.save (it appears in 2.3.0)")
    scripted = torch.jit.script(build_model())
    path = os.path.join(tmp, "standin.ts")
    with _standin.stop_at(torch.jit, "save", "save's torch.jit.save", run_first=True) as state:
        trt.save(scripted, path, output_format="torchscript")
    if "value" in state:
        check_saved(s, path, scripted, torch.randn(SHAPE), "the saved ScriptModule vs the scripted model")
    _standin.past(s, state, "save's output_format check for a ScriptModule")


def stage_trt_save(s, tmp):
    """compile(ir='ts') on a GPU, save in TorchScript format, load and compare with eager."""
    import os

    import torch
    import torch_tensorrt

    s.note("torch_tensorrt", torch_tensorrt.__version__)
    model = build_model("cuda")
    compiled = torch_tensorrt.compile(torch.jit.script(model), ir="ts",
                                      inputs=[torch_tensorrt.Input(SHAPE)])
    path = os.path.join(tmp, "trt.ts")
    torch_tensorrt.save(compiled, path, output_format="torchscript")
    check_saved(s, path, model, torch.randn(SHAPE, device="cuda"), "the saved TensorRT module vs eager")


def stage_workaround(s, tmp):
    """torch.jit.save of the ScriptModule, loaded back."""
    import os

    import torch

    scripted = torch.jit.script(build_model())
    path = os.path.join(tmp, "workaround.ts")
    torch.jit.save(scripted, path)
    check_saved(s, path, scripted, torch.randn(SHAPE), "torch.jit.save'd module vs the scripted model")


def main(r):
    tmp = tempfile.mkdtemp(prefix="trt-save-")  # the saved modules, removed when the run ends
    try:
        r.stage("save_torchscript_standin", stage_save_standin, tmp, standins=["tensorrt"])
        r.stage("trt_save_torchscript", stage_trt_save, tmp, requires=["cuda", "torch_tensorrt"],
                isolate=True)
        r.stage("workaround_jit_save", stage_workaround, tmp, role="workaround")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
