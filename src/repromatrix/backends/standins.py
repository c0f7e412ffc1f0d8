"""The stand-in lane, host side: which stacks get TensorRT stood in, and how it is made.

With ``--standin tensorrt`` (or ``defaults.standins: [tensorrt]``) a pip stack that
pins torch-tensorrt is installed without TensorRT: torch and torchvision as usual
(triton left out: nothing on this lane compiles kernels), torch-tensorrt's own wheel
``--no-deps``, then its other requirements as its metadata lists them, and finally
``repros/_standin.py make`` compiles the native stand-ins with the environment's
C compiler (``cc``). The runner finds them through ``REPROMATRIX_STANDINS``; only
stages that opt in (``r.stage(..., standins=["tensorrt"])``) use them. Where a real
TensorRT imports, ``_standin.py`` makes nothing and says so in its manifest.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from repromatrix.model import Note, Stack

ENV = "REPROMATRIX_STANDINS"  # read by repros/_standin.py
FOLDER = "repromatrix-standins"  # inside the environment
SOURCE = "_standin.py"
EXCLUDED = ("triton",)  # torch's GPU kernel compiler: never used on this lane


def applies(stack: Stack, standins: tuple[str, ...]) -> bool:
    """Whether this stack is built with TensorRT stood in."""
    return "tensorrt" in standins and stack.kind == "pip" and bool(stack.torch_tensorrt)


def source_sha256(harness_dir: Path) -> str:
    """The stand-in sources (part of the environment's fingerprint)."""
    return hashlib.sha256((harness_dir / SOURCE).read_bytes()).hexdigest()


def spec(stack: Stack, requirements: list[str], harness_dir: Path) -> dict[str, Any]:
    """What the lane adds to an install spec; ``requirements`` loses torch-tensorrt."""
    wheel = next(r for r in requirements if _project(r) == "torch-tensorrt")
    requirements.remove(wheel)
    return {"tensorrt": stack.tensorrt or "", "torch_tensorrt": wheel, "excluded": list(EXCLUDED),
            "sources_sha256": source_sha256(harness_dir)}


def install_options(lane: dict[str, Any], target: Path) -> list[str]:
    """uv options for every install into a lane environment: what it leaves out."""
    excluded = target.parent / f"{target.name}.excluded.txt"
    excluded.write_text("".join(f"{name}\n" for name in lane["excluded"]))
    return ["--excludes", str(excluded)]


def venv_steps(lane: dict[str, Any], install: list[str], python: str, target: Path,
               harness_dir: Path) -> list[list[str]]:
    """After the stack's own install: torch-tensorrt without TensorRT, its other
    requirements (as its metadata lists them), then the stand-ins."""
    source, deps = str(harness_dir / SOURCE), str(target / "torch-tensorrt-deps.txt")
    return [[*install, "--no-deps", lane["torch_tensorrt"]],
            [python, source, "deps", deps],
            [*install, "-r", deps],
            [python, source, "make", str(target / FOLDER)]]


def label(stack: Stack) -> Note:
    """How the run output names a stand-in stack."""
    return Note(stack.id, f"TensorRT stood in: torch-tensorrt {stack.torch_tensorrt}'s own code "
            f"with stand-ins for TensorRT {stack.tensorrt or '?'} (repros/_standin.py)")


def _project(req: str) -> str:
    name = req
    for sep in "<>=!~;[ ":
        name = name.split(sep, 1)[0]
    return name.strip().lower().replace("_", "-")
