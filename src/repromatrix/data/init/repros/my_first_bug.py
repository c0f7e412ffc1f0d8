"""An example repro (written by `repromatrix init`): copy it for each bug you track.

The bug: ``torch.jit.script`` refuses ``F.interpolate(x, scale_factor=2)`` with an int
scale factor ("Expected a value of type 'Optional[List[float]]' for argument
'scale_factor' but instead found type 'int'"), although eager mode and tracing accept
it. Workaround: ``scale_factor=2.0``.

A repro needs only the standard library, the stack under test and ``protocol`` (the
harness puts it on the path). The host reads META and SIGNATURES without importing
this file, so both are literals; torch is imported inside the stage functions.
"""

from __future__ import annotations

import protocol
from protocol import Signature

META = {
    "id": "my_first_bug",
    "title": "torch.jit.script rejects an int scale_factor in F.interpolate",
    "upstream": [],
    "description": "torch.jit.script of F.interpolate(x, scale_factor=2) fails on the int; "
                   "scale_factor=2.0 works.",
    "requires": ["torch"],
    "expect": [],
}

SIGNATURES = [
    Signature("int_scale_factor", exc="RuntimeError",
              pattern=r"Expected a value of type 'Optional\[List\[float\]\]' for argument "
                      r"'scale_factor' but instead found type 'int'",
              stage="script"),
]


def make_model(float_scale):
    import torch
    import torch.nn.functional as F

    class UpInt(torch.nn.Module):
        def forward(self, x):
            return F.interpolate(x, scale_factor=2, mode="nearest")

    class UpFloat(torch.nn.Module):
        def forward(self, x):
            return F.interpolate(x, scale_factor=2.0, mode="nearest")

    return (UpFloat() if float_scale else UpInt()).eval()


def stage_script(s, float_scale):
    """The user's workflow: script the model and compare it with eager."""
    import torch

    model = make_model(float_scale)
    x = torch.arange(16.0).reshape(1, 1, 4, 4)
    s.note("scale_factor", "2.0" if float_scale else "2")
    scripted = torch.jit.script(model)
    s.check_close(scripted(x), model(x), what="scripted vs eager")


def main(r):
    r.stage("script", stage_script, False)
    r.stage("workaround", stage_script, True, role="workaround")


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
