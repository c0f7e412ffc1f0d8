"""The stand-in lane, host side: which stacks get TensorRT stood in, and how it is made.

With ``--standin tensorrt`` (or ``defaults.standins: [tensorrt]``) a pip stack that
pins torch-tensorrt is installed without TensorRT, by the venv engine (``venv_steps``)
or the docker engine (``docker_vars``: the same steps in images/pip.Dockerfile.j2):
torch and torchvision as usual (the venv engine leaves triton out: nothing on this lane
compiles kernels; pip in an image cannot), torch-tensorrt's own wheel
``--no-deps``, then its other requirements as its metadata lists them, and finally
``repros/harness/_standin.py make`` compiles the native stand-ins with the environment's
C compiler (``cc``). The runner finds them through ``REPROMATRIX_STANDINS``; only
stages that opt in (``r.stage(..., standins=["tensorrt"])``) use them. Where a real
TensorRT imports, ``_standin.py`` makes nothing and says so in its manifest.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from repromatrix.model import Note, Stack

ENV = "REPROMATRIX_STANDINS"  # read by repros/harness/_standin.py
FOLDER = "repromatrix-standins"  # inside the environment
SOURCE = "_standin.py"
SOURCES = "standin_sources"  # beside it: the tensorrt module and the C sources it makes them from
EXCLUDED = ("triton",)  # torch's GPU kernel compiler: never used on this lane


def lane_here(standins: tuple[str, ...], from_matrix: bool, gpu_here: bool,
              log: Callable[[str], None], engine: str) -> tuple[str, ...]:
    """The stand-ins an engine builds with: ``--standin`` always; the matrix's wish
    (``defaults.standins``) only where no NVIDIA GPU is here, since a GPU machine can have
    real TensorRT, and a stand-in must never take its place. Said when the wish is dropped."""
    if standins and from_matrix and gpu_here:
        log(f"the {engine} engine has an NVIDIA GPU here: it builds real TensorRT, not the "
            f"matrix's stand-in lane (--standin tensorrt insists on the lane)")
        return ()
    return standins


def gpu_on_host() -> bool:
    """Whether this machine has an NVIDIA GPU (its driver's control device)."""
    return os.path.exists("/dev/nvidiactl")


def applies(stack: Stack, standins: tuple[str, ...]) -> bool:
    """Whether this stack is built with TensorRT stood in."""
    return "tensorrt" in standins and stack.kind == "pip" and bool(stack.torch_tensorrt)


def source_sha256(harness_dir: Path) -> str:
    """The stand-in sources, ``_standin.py`` and ``standin_sources/`` (part of the
    environment's fingerprint; the same sum as ``_standin.sources_sha256`` there)."""
    h = hashlib.sha256()
    files = [harness_dir / SOURCE, *sorted(p for p in (harness_dir / SOURCES).iterdir() if p.is_file())]
    for path in files:
        h.update(path.relative_to(harness_dir).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


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


def docker_vars(lane: dict[str, Any]) -> dict[str, Any]:
    """The same steps as ``venv_steps`` for the docker engine's pip template
    (images/pip.Dockerfile.j2): the wheel, the stand-in sources and where they are made."""
    return {"wheel": lane["torch_tensorrt"], "source": SOURCE, "sources": SOURCES,
            "folder": f"/opt/repromatrix/{FOLDER}", "deps": "/tmp/torch-tensorrt-deps.txt",
            "env": ENV}


def label(stack: Stack) -> Note:
    """How the run output names a stand-in stack."""
    return Note(stack.id, f"TensorRT stood in: torch-tensorrt {stack.torch_tensorrt}'s own code "
            f"with stand-ins for TensorRT {stack.tensorrt or '?'} (repros/harness/_standin.py)")


def _project(req: str) -> str:
    name = req
    for sep in "<>=!~;[ ":
        name = name.split(sep, 1)[0]
    return name.strip().lower().replace("_", "-")
