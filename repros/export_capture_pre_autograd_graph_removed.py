"""pytorch PR #143426: ``torch._export.capture_pre_autograd_graph`` is deleted (torch 2.7).

``capture_pre_autograd_graph(model, args)`` was the first step of the PT2E quantization flow
in torch 2.1 to 2.4 (its tutorials, ExecuTorch, XNNPACK and the X86 inductor quantizer): it
traced a module into a pre-autograd ATen GraphModule. Deprecated from 2.5 in favour of
``torch.export.export_for_training`` (later ``torch.export.export``), it was deleted by PR
#143426 ("[reland] Kill capture_pre_autograd_graph API"); a script written for 2.1 to 2.6
stops at its import with ``ImportError: cannot import name 'capture_pre_autograd_graph' from
'torch._export'``. An API removal, not a defect.

Stages (CPU):
- capture (main): ``capture_pre_autograd_graph`` of a small conv model, the GraphModule run
  and checked against eager.
- workaround_export_module (workaround): ``torch.export.export(model, args).module()``, the
  replacement the deprecation names, checked against eager.
"""

from __future__ import annotations

import warnings

import protocol
from protocol import Signature

META = {
    "id": "export_capture_pre_autograd_graph_removed",
    "title": "torch._export.capture_pre_autograd_graph removed from torch 2.7",
    "kind": "breaking-change",
    "upstream": [
        "https://github.com/pytorch/pytorch/pull/143426",
        "https://github.com/pytorch/pytorch/issues/139505",
    ],
    "description": (
        "from torch._export import capture_pre_autograd_graph raises ImportError: cannot import "
        "name 'capture_pre_autograd_graph' from 'torch._export' from torch 2.7: the API, "
        "deprecated since 2.5 (PR #125602 warns on it), was deleted by PR #143426 ('[reland] Kill "
        "capture_pre_autograd_graph API', with capture_pre_autograd_graph_using_training_ir and "
        "gm_using_training_ir); its merge commit is not read here (the pytorch repository could "
        "not be fetched): the boundary is read from the released wheels, whose git hashes the "
        "records carry. Workaround: torch.export.export(model, args).module() (2.5 and 2.6: "
        "torch.export.export_for_training), which the deprecation message names."
    ),
    "requires": ["torch>=2.2"],
    "expect": [
        {"when": {"torch": ">=2.7"}, "status": "fail",
         "note": "torch/_export/__init__.py defines no capture_pre_autograd_graph from the 2.7.0 "
                 "wheel on (PR #143426)"},
        {"when": {"torch": ">=2.2,<2.7"}, "status": "pass",
         "note": "torch/_export/__init__.py defines capture_pre_autograd_graph in the 2.2 to 2.6 "
                 "wheels (deprecated from 2.5)"},
    ],
}

SIGNATURES = [
    Signature(
        "capture_pre_autograd_graph_removed", exc="ImportError", stage="capture",
        when={"torch": ">=2.7"},
        pattern=r"cannot import name 'capture_pre_autograd_graph' from 'torch\._export'",
        note="PR #143426 deleted the function from torch/_export/__init__.py"),
]

SHAPE = (2, 3, 8, 8)


def build_model():
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(8 * 6 * 6, 4)).eval()


def where_defined(s, fn):
    import inspect

    try:
        s.note("defined_at", "%s:%d" % (inspect.getsourcefile(fn).split("site-packages/")[-1],
                                        inspect.getsourcelines(fn)[1]))
    except (OSError, TypeError):
        pass


def stage_capture(s):
    import torch
    from torch._export import capture_pre_autograd_graph

    where_defined(s, capture_pre_autograd_graph)
    model, x = build_model(), torch.randn(SHAPE)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        captured = capture_pre_autograd_graph(model, (x,))
    s.note("warnings", sorted({str(w.message).splitlines()[0][:200] for w in seen}))
    with torch.no_grad():
        s.check_close(captured(x), model(x), what="capture_pre_autograd_graph's module vs eager")


def stage_workaround(s):
    import torch

    model, x = build_model(), torch.randn(SHAPE)
    module = torch.export.export(model, (x,)).module()
    with torch.no_grad():
        s.check_close(module(x), model(x), what="torch.export.export(...).module() vs eager")


def main(r):
    r.stage("capture", stage_capture, requires=["torch>=2.2"])
    r.stage("workaround_export_module", stage_workaround, role="workaround", requires=["torch>=2.2"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
