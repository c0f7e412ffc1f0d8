"""pytorch #150371 / #164313: torch.export refuses a call-style ``dynamic_shapes`` for ``**kwargs``.

A module whose ``forward`` takes ``**kwargs`` (Hugging Face models with
``TransformersKwargs``) cannot be exported with a dynamic dimension given the way the
call passes the inputs, ``{"x": {0: batch}, "y": None}``: validation binds the spec's
top-level keys to the signature's parameter names, and ``**kwargs`` is one parameter
("its top-level keys must be the arg names ['kwargs'] of `inputs`"). An upstream
limitation, not a regression: the spec has to be nested under the parameter's name
(``{"kwargs": {...}}``), which upstream treated as a design question (#150371) until torch
2.14.0 (PRs #185730, #185736, #186879: ``_normalize_dynamic_shapes`` maps both forms onto
the variadic parameter). The nested form has its own bug, a regression of 2.8:
``export_dynamic_shapes_var_kwargs_nested``.

Stages (CPU, torch only; non-strict export, the default since 2.7):
- export_call_style (main): the export with the call-style spec, then the exported module
  run at a batch the example did not have (7 instead of 4) and compared with eager: a
  static dimension would refuse that input, so the check proves the dimension is dynamic.
- workaround_named_args (workaround): a wrapper with named parameters
  (``forward(self, x, y)`` calling the model with ``x=x, y=y``) exported with the same
  dimension and checked the same way.
"""

from __future__ import annotations

import protocol
from protocol import Signature

META = {
    "id": "export_dynamic_shapes_var_kwargs",
    "kind": "bug",
    "title": "torch.export: a call-style dynamic_shapes spec for a forward(**kwargs) model is "
             "not supported before 2.14 (an upstream limitation)",
    "upstream": [
        "https://github.com/pytorch/pytorch/issues/150371",
        "https://github.com/pytorch/pytorch/issues/164313",
        "https://github.com/pytorch/pytorch/pull/185730",
        "https://github.com/pytorch/pytorch/pull/185736",
        "https://github.com/pytorch/pytorch/pull/186879",
    ],
    "description": (
        "torch.export.export(model, (), kwargs, dynamic_shapes={'x': {0: batch}, 'y': None}) of "
        "a module whose forward takes **kwargs is refused: 'its top-level keys must be the arg "
        "names ['kwargs'] of `inputs`' (torch/export/dynamic_shapes.py:1032 in the 2.13.0 wheel, "
        "git cf30153c4c131c8164ee7798e5022d810682e2cb; :989 in 2.9.1, git "
        "5811a8d7da873dd699ff6687092c225caffcf1bb; before 2.5 torch words the refusal "
        "otherwise). A limitation of torch.export, not a regression: the spec must be nested "
        "under the parameter's name, and upstream treated the call style as a design question "
        "(#150371) until torch 2.14.0, whose _normalize_dynamic_shapes (PRs #185730, #185736, "
        "#186879; torch/export/dynamic_shapes.py:813, called from torch/export/_trace.py:1009 "
        "and :1626 in the 2.14.1 wheel, git 5c4886908584029761b579af026dcfb627c84070) maps the "
        "call style onto the variadic parameter. Which PR carries which line is read from the "
        "PR texts; the pytorch repository could not be fetched here, so the lines are read from "
        "the released wheels. Workaround: export a wrapper with named parameters; the nested "
        "spec {'kwargs': {...}} works before 2.8 only (export_dynamic_shapes_var_kwargs_nested); "
        "or upgrade to torch 2.14."
    ),
    "requires": ["torch"],
    "expect": [
        {"when": {"torch": ">=2.14"}, "status": "pass",
         "note": "_normalize_dynamic_shapes, torch/export/dynamic_shapes.py:813 in the 2.14.1 "
                 "wheel, absent from the 2.13.0 wheel (PRs #185730, #185736, #186879)"},
        {"when": {"torch": ">=2.5,<2.14"}, "status": "fail",
         "note": "the top-level keys checked against the parameter names: "
                 "torch/export/dynamic_shapes.py:1032 in the 2.13.0 wheel, :989 in 2.9.1"},
    ],
}

_CALL_STYLE = "export_call_style"

SIGNATURES = [
    Signature(
        "var_kwargs_top_level_keys", exc="UserError", stage=_CALL_STYLE, when={"torch": "<2.14"},
        pattern=r"When `dynamic_shapes` is specified as a dict, its top-level keys must be the arg "
                r"names \['kwargs'\] of `inputs`, but here they are \['x', 'y'\]",
        note="validation binds the spec to the signature's parameter names, and **kwargs is one "
             "parameter"),
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
    spec = {"x": {0: batch}, "y": None}  # as the call passes the inputs
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
    r.stage("workaround_named_args", stage_export, "named", role="workaround", requires=["torch"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
