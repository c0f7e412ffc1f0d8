"""pytorch PR #146923: ``torch.onnx.export`` refuses keyword arguments it does not know, from 2.7.

torch 2.5 and 2.6 declared ``torch.onnx.export(..., **_)`` ("ignored options"): a keyword the
function does not know, such as ``example_outputs=`` (an option of torch 1.x that old export
scripts still pass) or a misspelt one, was dropped without a word. PR #146923 (the reland of
#146425 and #146639, the deprecation of ``dynamo_export``) removed the catch-all, so from 2.7
the same call stops with ``TypeError: export() got an unexpected keyword argument
'example_outputs'`` before any export work. A breaking change, not a defect (2.4's
``torch.onnx.export`` refused such keywords too): the cell says whether a script that passes
a stale keyword still exports on the stack.

Stages (CPU; onnx's reference evaluator runs the model):
- export_stale_keyword (main): ``torch.onnx.export(model, (x,), buf, dynamo=False,
  example_outputs=model(x))``; the written model run against eager.
- workaround_without_keyword (workaround): the same call without the stale keyword, checked
  the same way.
"""

from __future__ import annotations

import io

import protocol
from protocol import Signature

META = {
    "id": "onnx_export_unknown_kwargs_refused",
    "kind": "breaking-change",
    "title": "torch.onnx.export refuses unknown keyword arguments from torch 2.7 (2.5 and 2.6 dropped them)",
    "upstream": [
        "https://github.com/pytorch/pytorch/pull/146923",
        "https://github.com/pytorch/pytorch/pull/146003",
        "https://github.com/pytorch/pytorch/issues/146469",
    ],
    "description": (
        "torch.onnx.export(model, args, f, example_outputs=...) (or any keyword export does not "
        "declare) exports on torch 2.5 and 2.6, which drop such keywords, and raises TypeError: "
        "export() got an unexpected keyword argument 'example_outputs' from 2.7. The 2.5.1 wheel "
        "(git a8d6afb511a69687bbb2b7e88a3cf67917e1697e) declares '**_: Any,  # ignored options' "
        "at torch/onnx/__init__.py:172, the 2.6.0 wheel (git 2236df1770800ffea5697b11b0bb0d910b2e59e1) "
        "at :167; the 2.7.1 wheel (git "
        "e2d141dbde55c2a4370fac5165b0561b6af4798b) has no catch-all (export at :131, its "
        "parameters end at :169). Removed by PR #146923 ('[ONNX][reland2] Create deprecation "
        "warning on dynamo_export', relanding #146425 and #146639; the first of them, #146003, "
        "says it 'removed the **_ kwarg on onnx.export such that users get an error when they "
        "supply an unexpected argument'); its review shows the line's removal at "
        "torch/onnx/__init__.py:172. The merge commit is not cited: the pytorch repository could "
        "not be fetched here, so the lines are read from the released wheels. Before 2.5, "
        "torch.onnx.utils.export declared no catch-all either (the 2.4.1 wheel). Workaround: "
        "drop the keyword (example_outputs has done nothing since torch 1.11)."
    ),
    "requires": ["onnx", "torch>=2.5"],
    "expect": [
        {"when": {"torch": ">=2.7"}, "status": "fail",
         "note": "the 2.7.1 wheel's torch/onnx/__init__.py:131-169 declares no **kwargs (PR #146923)"},
        {"when": {"torch": ">=2.5,<2.7"}, "status": "pass",
         "note": "torch/onnx/__init__.py: '**_: Any,  # ignored options' in the 2.5.1 wheel (:172) "
                 "and the 2.6.0 wheel (:167)"},
    ],
}

SIGNATURES = [
    Signature(
        "stale_keyword_refused", exc="TypeError", stage="export_stale_keyword",
        when={"torch": ">=2.7"},
        pattern=r"export\(\) got an unexpected keyword argument 'example_outputs'",
        note="PR #146923 removed export's **_ (recorded on 2.9.1)"),
]


def build_model():
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).eval()


def export_and_run(s, what, **kwargs):
    import inspect

    import onnx
    import torch
    from onnx.reference import ReferenceEvaluator

    params = inspect.signature(torch.onnx.export).parameters.values()
    s.note("catch_all", [p.name for p in params if p.kind is inspect.Parameter.VAR_KEYWORD])
    model, x = build_model(), torch.randn(2, 3)
    with torch.no_grad():
        ref = model(x)
    buf = io.BytesIO()
    torch.onnx.export(model, (x,), buf, dynamo=False, **kwargs)
    ev = ReferenceEvaluator(onnx.load_from_string(buf.getvalue()))
    out = ev.run(None, {ev.input_names[0]: x.numpy()})[0]
    s.note("checked_with", "onnx.reference (onnx %s)" % onnx.__version__)
    s.check_close(torch.from_numpy(out), ref, what=what, rtol=1e-4, atol=1e-5)


def stage_stale(s):
    import torch

    with torch.no_grad():
        outputs = build_model()(torch.randn(2, 3))
    export_and_run(s, "ONNX (example_outputs= passed) vs eager", example_outputs=outputs)


def stage_without(s):
    export_and_run(s, "ONNX (no stale keyword) vs eager")


def main(r):
    r.stage("export_stale_keyword", stage_stale, requires=["torch>=2.5.0a0", "onnx"])
    r.stage("workaround_without_keyword", stage_without, role="workaround",
            requires=["torch>=2.5.0a0", "onnx"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
