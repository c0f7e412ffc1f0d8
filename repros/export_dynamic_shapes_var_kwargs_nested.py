"""pytorch #150022: a ``dynamic_shapes`` spec nested under ``**kwargs`` asserts in ``torch.export`` (2.8).

A module whose ``forward`` takes ``**kwargs`` (Hugging Face models with
``TransformersKwargs``) is exported with its dynamic dimension given the signature's way,
nested under the variadic parameter's name: ``{"kwargs": {"x": {0: batch}, "y": None}}``.
The spec passes validation and, from torch 2.8, dies on an internal assertion while
flattening it for the range constraints ("Must provide a tree_name when there might be a
mismatch"): a regression (#150022: "This used to work two weeks ago", on a 2.8 nightly).
Fixed in torch 2.14.0 (PRs #185730, #185736, #186879: ``_normalize_dynamic_shapes`` maps
the spec onto the variadic parameter). The call-style spec (``{"x": ...}``) is refused on
every release before 2.14, an upstream limitation: ``export_dynamic_shapes_var_kwargs``.

Stages (CPU, torch only; non-strict export, the default since 2.7):
- export_nested_spec (main): the export with the nested spec, then the exported module run
  at a batch the example did not have (7 instead of 4) and compared with eager: a static
  dimension would refuse that input, so the check proves the dimension is dynamic.
- workaround_named_args (workaround): a wrapper with named parameters
  (``forward(self, x, y)`` calling the model with ``x=x, y=y``) exported with the same
  dimension and checked the same way.
"""

from __future__ import annotations

import protocol
from protocol import Signature

META = {
    "id": "export_dynamic_shapes_var_kwargs_nested",
    "kind": "bug",
    "title": "torch.export: a dynamic_shapes spec nested under **kwargs asserts 'Must provide a "
             "tree_name' (a 2.8 regression)",
    "upstream": [
        "https://github.com/pytorch/pytorch/issues/150022",
        "https://github.com/pytorch/pytorch/pull/185730",
        "https://github.com/pytorch/pytorch/pull/185736",
        "https://github.com/pytorch/pytorch/pull/186879",
    ],
    "description": (
        "torch.export.export(model, (), kwargs, dynamic_shapes={'kwargs': {'x': {0: batch}, "
        "'y': None}}) of a module whose forward takes **kwargs passes validation and hits "
        "AssertionError 'Must provide a tree_name when there might be a mismatch' while the "
        "spec is flattened (torch/export/dynamic_shapes.py:650 in the 2.13.0 and 2.12.1 wheels, "
        ":620 in 2.9.1). A regression of 2.8 (#150022, reported on a 2.8 nightly: 'This used to "
        "work two weeks ago'); fixed in torch 2.14.0 by PRs #185730, #185736 and #186879 "
        "(_normalize_dynamic_shapes, torch/export/dynamic_shapes.py:813 in the 2.14.1 wheel). "
        "The pytorch repository could not be fetched here, so the lines are read from the "
        "released wheels. Workaround: export a wrapper with named parameters, or upgrade to "
        "torch 2.14."
    ),
    "requires": ["torch"],
    "expect": [
        {"when": {"torch": ">=2.14"}, "status": "pass",
         "note": "_normalize_dynamic_shapes, torch/export/dynamic_shapes.py:813 in the 2.14.1 "
                 "wheel, absent from the 2.13.0 wheel (PRs #185730, #185736, #186879)"},
        {"when": {"torch": ">=2.8,<2.14"}, "status": "fail",
         "note": "the assertion while flattening the spec: torch/export/dynamic_shapes.py:650 in "
                 "the 2.13.0 and 2.12.1 wheels, :620 in 2.9.1; #150022 dates it to a 2.8 nightly"},
        {"when": {"torch": ">=2.3,<2.8"}, "status": "pass",
         "note": "#150022: 'This used to work two weeks ago' (the nested spec before the 2.8 "
                 "nightly that broke it)"},
    ],
}

_NESTED = "export_nested_spec"

SIGNATURES = [
    Signature(
        "var_kwargs_tree_name_assertion", exc="AssertionError", stage=_NESTED,
        when={"torch": "<2.14"},
        pattern=r"Must provide a tree_name when there might be a mismatch",
        note="the spec nested under 'kwargs' passes validation, then flattening it for range "
             "constraints asserts (#150022)"),
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
    spec = per_input if spec_style == "named" else {"kwargs": per_input}  # nested: signature style
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
    r.stage(_NESTED, stage_export, "nested", requires=["torch"])
    r.stage("workaround_named_args", stage_export, "named", role="workaround", requires=["torch"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
