"""pytorch #150022 / #164313: ``torch.export`` with ``dynamic_shapes`` refuses a ``forward(**kwargs)``.

A module whose ``forward`` takes ``**kwargs`` (Hugging Face models with
``TransformersKwargs``) cannot be exported with a dynamic dimension, whichever way the
spec is written: the call-style spec ``{"x": {0: batch}, "y": None}`` is refused by
validation ("its top-level keys must be the arg names ['kwargs'] of `inputs`"), and the
signature-style spec ``{"kwargs": {"x": {0: batch}, "y": None}}`` passes validation and
dies on an internal assertion while flattening the spec ("Must provide a tree_name when
there might be a mismatch"). A regression of 2.8 (#150022: "This used to work two weeks
ago"), fixed in torch 2.14.0 (PRs #185730, #185736, #186879: ``_normalize_dynamic_shapes``
maps both forms onto the variadic parameter).

Stages (CPU, torch only; non-strict export, the default since 2.7):
- export_call_style, export_signature_style (main): the export with each spec, then the
  exported module run at a batch the example did not have (7 instead of 4) and compared
  with eager: a static dimension would refuse that input, so the check proves the
  dimension is dynamic.
- workaround_named_args (workaround): a wrapper with named parameters
  (``forward(self, x, y)`` calling the model with ``x=x, y=y``) exported with the same
  dimension and checked the same way.
"""

from __future__ import annotations

import protocol
from protocol import Signature

META = {
    "id": "export_dynamic_shapes_var_kwargs",
    "title": "torch.export: dynamic_shapes for a forward(**kwargs) model is refused",
    "upstream": [
        "https://github.com/pytorch/pytorch/issues/150022",
        "https://github.com/pytorch/pytorch/issues/164313",
        "https://github.com/pytorch/pytorch/issues/150371",
        "https://github.com/pytorch/pytorch/pull/185730",
        "https://github.com/pytorch/pytorch/pull/185736",
        "https://github.com/pytorch/pytorch/pull/186879",
    ],
    "description": (
        "torch.export.export(model, (), kwargs, dynamic_shapes=...) of a module whose forward "
        "takes **kwargs: the call-style spec {'x': {0: batch}} is refused ('its top-level keys "
        "must be the arg names ['kwargs'] of `inputs`', torch/export/dynamic_shapes.py:1032 in "
        "the 2.13.0 wheel, git cf30153c4c131c8164ee7798e5022d810682e2cb; :989 in 2.9.1, git "
        "5811a8d7da873dd699ff6687092c225caffcf1bb) and the signature-style spec {'kwargs': "
        "{'x': {0: batch}}} hits 'Must provide a tree_name when there might be a mismatch' "
        "(dynamic_shapes.py:650 in 2.13.0 and 2.12.1, :620 in 2.9.1). A regression in 2.8 "
        "(#150022); fixed in torch 2.14.0 by PRs #185730, #185736 and #186879 "
        "(_normalize_dynamic_shapes, torch/export/dynamic_shapes.py:813, called from "
        "torch/export/_trace.py:1009 and :1626 in the 2.14.1 wheel, git "
        "5c4886908584029761b579af026dcfb627c84070). Which PR carries which line is read from "
        "the PR texts; merge commits are not cited: the pytorch repository could not be fetched "
        "here, so the lines are read from the released wheels. Workaround: export a wrapper "
        "with named parameters, or upgrade to torch 2.14."
    ),
    "requires": ["torch"],
    "expect": [
        {"when": {"torch": ">=2.14"}, "status": "pass",
         "note": "_normalize_dynamic_shapes (PRs #185730, #185736, #186879) first ships in 2.14.0; "
                 "run on 2.14.1"},
        {"when": {"torch": ">=2.5,<2.14"}, "status": "fail",
         "note": "run on 2.9.1, 2.12.1 and 2.13.0, and on 2.5.1 (results/published: the call style "
                 "refused with the same text); 2.10-2.11 inferred from the same code (#150022 dates "
                 "the signature style's assertion to a 2.8 nightly); before 2.5 the refusal is worded "
                 "otherwise (an error here, cannot tell)"},
    ],
}

_CALL_STYLE = "export_call_style"
_SIGNATURE_STYLE = "export_signature_style"

SIGNATURES = [
    Signature(
        "var_kwargs_top_level_keys", exc="UserError", stage=_CALL_STYLE, when={"torch": "<2.14"},
        pattern=r"When `dynamic_shapes` is specified as a dict, its top-level keys must be the arg "
                r"names \['kwargs'\] of `inputs`, but here they are \['x', 'y'\]",
        note="validation binds the spec to the signature's parameter names, and **kwargs is one "
             "parameter (recorded on 2.9.1, 2.12.1 and 2.13.0)"),
    Signature(
        "var_kwargs_tree_name_assertion", exc="AssertionError", stage=_SIGNATURE_STYLE,
        when={"torch": "<2.14"},
        pattern=r"Must provide a tree_name when there might be a mismatch",
        note="the spec nested under 'kwargs' passes validation, then flattening it for range "
             "constraints asserts (#150022; recorded on 2.9.1, 2.12.1 and 2.13.0)"),
]

EXAMPLE_BATCH, OTHER_BATCH = 4, 7


def build_model():
    import torch

    class KwargsModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(3, 3)

        def forward(self, **kwargs):
            return self.proj(kwargs["x"]) * 2 + kwargs["y"].sum()

    torch.manual_seed(0)
    return KwargsModel().eval()


def build_wrapper(model):
    import torch

    class NamedArgs(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x, y):
            return self.inner(x=x, y=y)

    return NamedArgs(model).eval()


def stage_export(s, spec_style):
    """Export with a dynamic batch in the given spec style; run it at another batch."""
    import torch

    import _torchutil

    model = build_model()
    if spec_style == "named":
        model = build_wrapper(model)
    batch = torch.export.Dim("batch", min=2, max=64)
    per_input = {"x": {0: batch}, "y": None}
    spec = {"kwargs": per_input} if spec_style == "signature" else per_input
    s.note("dynamic_shapes", {k: str(v) for k, v in spec.items()})
    example = {"x": torch.randn(EXAMPLE_BATCH, 3), "y": torch.randn(2)}
    extra, dropped = _torchutil.supported_kwargs(torch.export.export, {"strict": False})
    s.note("dropped_kwargs", dropped)
    ep = torch.export.export(model, (), example, dynamic_shapes=spec, **extra)
    x, y = torch.randn(OTHER_BATCH, 3), torch.randn(2)
    with torch.no_grad():
        ref = model(x=x, y=y)
        out = ep.module()(x=x, y=y)
    s.check_close(out, ref, what="exported vs eager at batch %d (example %d)" % (OTHER_BATCH, EXAMPLE_BATCH),
                  rtol=1e-5, atol=1e-6)


def main(r):
    r.stage(_CALL_STYLE, stage_export, "call", requires=["torch"])
    r.stage(_SIGNATURE_STYLE, stage_export, "signature", requires=["torch"])
    r.stage("workaround_named_args", stage_export, "named", role="workaround", requires=["torch"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
