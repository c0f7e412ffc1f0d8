"""pytorch/TensorRT #2340: ``import torch_tensorrt`` sets the root logger to INFO.

``torch_tensorrt/fx/__init__.py`` ended with ``logging.basicConfig(level=logging.INFO)``, and
``import torch_tensorrt`` imports ``torch_tensorrt.fx`` (v2.2.0 through ``_compile.py``'s
``from torch_tensorrt.fx import ...``; v2.3.0 and v2.4.0 in ``__init__.py`` when the FX
frontend is enabled). An application that had not configured logging yet gets a stream
handler on the root logger at level INFO: every library's INFO records are printed from then
on. PR #3147 (commit 97d4f2b538, "fix: remove global logging setup", v2.5.0) deleted the line.

Stages:
- import_root_logger_standin (main, CPU, TensorRT stood in): ``import torch_tensorrt`` with
  ``logging.basicConfig`` wrapped so that a change of the root logger's level fails a check
  inside the call, raised through the torch-tensorrt line that made it; then a
  TorchScript ``compile`` stopped at ``_C.compile_graph`` (real TensorRT from there), the root
  logger's level checked again. A cleared ``skip`` where the level is untouched.
- import_root_logger (main, GPU + TensorRT): the same import and compile on real TensorRT,
  the module checked against eager.

No workaround stage: the workaround (configure logging before the import, which makes
torch-tensorrt's ``basicConfig`` a no-op) is the standard library's rule, not the stack's.
"""

from __future__ import annotations

import protocol
from protocol import Signature

META = {
    "id": "trt_import_root_logger",
    "title": "import torch_tensorrt sets the root logger to INFO (1.2 to 2.4)",
    "kind": "bug",
    "upstream": [
        "https://github.com/pytorch/TensorRT/issues/2340",
        "https://github.com/pytorch/TensorRT/issues/3145",
        "https://github.com/pytorch/TensorRT/pull/3147",
    ],
    "description": (
        "import torch_tensorrt adds a stream handler to the root logger and sets it to INFO: "
        "v2.4.0:py/torch_tensorrt/fx/__init__.py:16 'logging.basicConfig(level=logging.INFO)', "
        "run by v2.4.0 __init__.py:130 'from torch_tensorrt import fx' (the same lines at v2.3.0 "
        "fx/__init__.py:16 and __init__.py:123; v2.2.0 fx/__init__.py:16, imported by "
        "_compile.py:13). The line came with commit b6b690ca0d8d3a4c8c34a27eebf96ef0677e16ec "
        "(#1288, 2022). Fixed by PR #3147 (commit 97d4f2b5383c2871229d1159b730a0fa22f9d190, "
        "'fix: remove global logging setup'), first in v2.5.0, whose fx/__init__.py has no "
        "basicConfig. Workaround: configure logging (logging.basicConfig with your own level) "
        "before importing torch_tensorrt, or reset the root logger's level after the import."
    ),
    "requires": ["cuda", "torch_tensorrt"],
    "introduced_by": {
        "commits": ["b6b690ca0d8d3a4c8c34a27eebf96ef0677e16ec"],
        "note": "PR #1288: py/torch_tensorrt/fx/__init__.py:16 logging.basicConfig(level=logging.INFO), "
                "first in v1.2.0, whose _compile.py:9 imports torch_tensorrt.fx; the same line at "
                "v2.2.0 (imported by _compile.py:13), v2.3.0 (__init__.py:123) and v2.4.0 "
                "(__init__.py:130)",
    },
    "fixed_by": {
        "commits": ["97d4f2b5383c2871229d1159b730a0fa22f9d190"],
        "note": "PR #3147 'fix: remove global logging setup': v2.5.0 fx/__init__.py has no "
                "basicConfig. The pass needs a GPU (import_root_logger); on the stand-ins it is a "
                "cleared skip",
    },
}

_CHECK = r"check failed: the root logger keeps the application's level .*'level': 'INFO'"

SIGNATURES = [
    Signature(
        "root_logger_configured", exc="CheckFailed", pattern=_CHECK,
        stage=("import_root_logger_standin", "import_root_logger"),
        frame=r"torch_tensorrt/.*\.py:\d+ in <module>: .*logging\.basicConfig\(",
        note="torch-tensorrt's import called logging.basicConfig and the root logger changed: "
             "checked inside the call, raised through the torch-tensorrt line that made it"),
]

SHAPE = (1, 3, 8, 8)


def root_state():
    import logging

    root = logging.getLogger()
    return {"level": logging.getLevelName(root.level),
            "handlers": [type(h).__name__ for h in root.handlers]}


def watch_root_logger(s):
    """Wrap logging.basicConfig: after each call the root logger's level must be the one the
    application had (a handler alone is not this bug: any root-level ``logging.warning`` adds
    one to a root logger without handlers)."""
    import logging

    before = root_state()
    s.note("root_logger_before_import", before)
    real = logging.basicConfig

    def watched(*args, **kwargs):
        real(*args, **kwargs)
        s.note("basicConfig_called_with", {k: repr(v) for k, v in kwargs.items()})
        check_level(s, before, "the root logger keeps the application's level")

    logging.basicConfig = watched
    return before


def check_level(s, before, what):
    after = root_state()
    s.check(after["level"] == before["level"], what, before=before, after=after)


def scripted_model(device="cpu"):
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU()).eval()
    return torch.jit.script(model.to(device))


def stage_import_standin(s):
    """import torch_tensorrt watched, then a TorchScript compile up to its native call."""
    import _standin

    before = watch_root_logger(s)
    trt = _standin.import_torch_tensorrt(s)
    check_level(s, before, "the root logger's level is unchanged after import torch_tensorrt")
    with _standin.stop_at(trt.ts._compiler._C, "compile_graph", "_C.compile_graph") as state:
        trt.compile(scripted_model(), ir="torchscript", inputs=[trt.Input(SHAPE)],
                    device=trt.Device("cuda:0"))
    s.note("root_logger_after_compile", root_state())
    check_level(s, before, "the root logger's level is unchanged after a compile")
    _standin.past(s, state, "import torch_tensorrt and a TorchScript compile, the root logger's "
                  "level untouched")


def stage_import(s):
    """The same on real TensorRT: import watched, compile, compare with eager."""
    import torch

    import _torchutil

    before = watch_root_logger(s)
    import torch_tensorrt as trt

    s.note("torch_tensorrt", trt.__version__)
    scripted = scripted_model("cuda")
    module = trt.compile(scripted, ir="torchscript", inputs=[trt.Input(SHAPE)])
    check_level(s, before, "the root logger's level is unchanged after a compile")
    x = torch.randn(SHAPE, device="cuda")
    with torch.no_grad():
        s.check_close(_torchutil.first_output(module(x)), scripted(x), what="TensorRT vs eager",
                      rtol=1e-2, atol=1e-2)


def main(r):
    r.stage("import_root_logger_standin", stage_import_standin, standins=["tensorrt"])
    r.stage("import_root_logger", stage_import, requires=["cuda", "torch_tensorrt"], isolate=True)


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
