"""pytorch/tutorials #2805: calling an ``ExportedProgram`` raises from torch 2.3.

In torch 2.1 and 2.2 ``torch.export.export(model, args)`` returned an ``ExportedProgram`` that
could be called like the model (``ep(x)``), as the 2.1 tutorials did. From 2.3
``ExportedProgram.__call__`` raises ``RuntimeError: Unable to call ExportedProgram directly.
You should use `exported_program.module()` instead.``: the program is data, its callable
form is ``ep.module()``. An API change, not a defect: code written against 2.1/2.2 (and
tutorials of that time) stops there.

Stages (CPU):
- call_exported_program (main): ``ep(x)`` of a small model's ExportedProgram, checked against
  eager.
- workaround_module (workaround): ``ep.module()(x)``, checked against eager.
"""

from __future__ import annotations

import protocol
from protocol import Signature

META = {
    "id": "export_program_call_removed",
    "title": "ExportedProgram can no longer be called directly (torch 2.3): use ep.module()",
    "kind": "breaking-change",
    "upstream": [
        "https://github.com/pytorch/tutorials/issues/2805",
    ],
    "description": (
        "ep = torch.export.export(model, args); ep(x) raises RuntimeError: Unable to call "
        "ExportedProgram directly. You should use `exported_program.module()` instead. from "
        "torch 2.3: torch/export/exported_program.py's ExportedProgram.__call__ raises it (the "
        "2.9.1 wheel :1367-1369, 2.12.1 :1413-1415, 2.14.1 :1458-1460), where 2.2 ran the "
        "program. The pytorch commit that made the change is not read here (the repository "
        "could not be fetched): the boundary is read from the released wheels, whose git hashes "
        "the records carry. Workaround: call ep.module()(x), the callable form of the program, "
        "which 2.2 has too."
    ),
    "requires": ["torch>=2.2"],
    "expect": [
        {"when": {"torch": ">=2.3"}, "status": "fail",
         "note": "ExportedProgram.__call__ raises in torch/export/exported_program.py (the 2.9.1 "
                 "wheel :1367, 2.12.1 :1413, 2.14.1 :1458)"},
        {"when": {"torch": ">=2.2,<2.3"}, "status": "pass",
         "note": "torch 2.2's ExportedProgram.__call__ runs the program"},
    ],
}

SIGNATURES = [
    Signature(
        "exported_program_not_callable", exc="RuntimeError", stage="call_exported_program",
        when={"torch": ">=2.3"},
        pattern=r"Unable to call ExportedProgram directly\. You should use "
                r"`exported_program\.module\(\)` instead",
        note="ExportedProgram.__call__ raises from torch 2.3 (recorded on 2.9.1)"),
]

SHAPE = (2, 3, 8, 8)


def build_model():
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(8 * 6 * 6, 4)).eval()


def exported():
    import torch

    model, x = build_model(), torch.randn(SHAPE)
    return model, x, torch.export.export(model, (x,))


def stage_call(s):
    import inspect

    import torch

    model, x, ep = exported()
    call = type(ep).__call__
    s.note("call_defined_at", "%s:%d" % (inspect.getsourcefile(call).split("site-packages/")[-1],
                                         inspect.getsourcelines(call)[1]))
    with torch.no_grad():
        s.check_close(ep(x), model(x), what="ExportedProgram called directly vs eager")


def stage_workaround(s):
    import torch

    model, x, ep = exported()
    with torch.no_grad():
        s.check_close(ep.module()(x), model(x), what="ep.module() vs eager")


def main(r):
    r.stage("call_exported_program", stage_call, requires=["torch>=2.2"])
    r.stage("workaround_module", stage_workaround, role="workaround", requires=["torch>=2.2"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
