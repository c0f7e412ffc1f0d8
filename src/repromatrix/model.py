"""The data every stage passes along: stacks, repros, cells, plans, statuses.

Flow: config -> plan -> images -> run -> results -> report. Everything here is
frozen once parsed; mutable state lives inside the runner and the engines.

The record of a cell run is ``store.record.Result`` (its schema, versions and the
one constructor live there).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

TRACEBACK_LIMIT = 4000
CELL_SEPARATOR = "--"
SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


class Status(str, enum.Enum):
    """How a cell (or one of its stages) ended. See ARCHITECTURE.md, outcomes."""

    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    CRASH = "crash"
    TIMEOUT = "timeout"
    SKIP = "skip"
    BROKEN = "broken"

    def __str__(self) -> str:
        return self.value


STACK_KINDS = ("pip", "ngc", "local")
# The ONNX path's packages a pip stack may pin, whose releases a bug can be about (each a
# stack field, a record version, a bisect axis; the compatibility table's `onnx` section)
ONNX_PACKAGES = ("onnxscript", "onnxruntime")


@dataclass(frozen=True)
class Stack:
    """One software environment: one image (or one local interpreter)."""

    id: str
    kind: str
    python: str | None = None
    torch: str | None = None
    torchvision: str | None = None
    torch_tensorrt: str | None = None
    tensorrt: str | None = None
    onnxscript: str | None = None  # pip: a pinned onnxscript release (None: defaults.packages)
    onnxruntime: str | None = None  # pip: a pinned onnxruntime release
    cuda: str | None = None
    index: str | None = None
    ngc: str | None = None
    interpreter: str | None = None
    packages: tuple[str, ...] = ()
    repros: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    repro_packages: tuple[str, ...] = ()  # pip: what its repros' META `requires` names (not in id)

    def spec(self) -> dict[str, Any]:
        """The stack as recorded in results and image labels (no repro list)."""
        keys = ("id", "kind", "python", "torch", "torchvision", "torch_tensorrt",
                "tensorrt", "cuda", "index", "ngc", "interpreter")
        out: dict[str, Any] = {k: getattr(self, k) for k in keys}
        for key in ONNX_PACKAGES:  # only when pinned: older specs stay the same
            if getattr(self, key):
                out[key] = getattr(self, key)
        out["packages"] = list(self.packages)
        return out


@dataclass(frozen=True)
class Repro:
    """A known bug's repro script, described by its META literal (never imported)."""

    id: str
    path: str
    title: str
    upstream: tuple[str, ...] = ()
    expect: tuple[dict[str, Any], ...] = ()
    requires: tuple[str, ...] = ()
    description: str = ""
    kind: str = "bug"  # one of KINDS: what the entry is to a user


# What a catalog entry is (META "kind"): a defect, a defect that gives wrong numbers without an
# error, a removal or changed default (worth knowing before an upgrade, not a defect), or a
# mistake in the user's own code that a release happens to reject or accept.
KINDS = {
    "bug": "bug",
    "silent-wrong-output": "silent wrong output",
    "breaking-change": "breaking change",
    "user-error": "user error",
}
# The kinds that are defects of a release: `check` fails on them and its upgrade avoids them.
# The others inform (a removal an upgrade brings, a mistake a release rejects or accepts):
# they never change the exit code or steer the upgrade.
DEFECTS = ("bug", "silent-wrong-output")


@dataclass(frozen=True)
class Cell:
    """(stack, repro): the unit of caching, scheduling and reporting."""

    stack: Stack
    repro: str

    @property
    def id(self) -> str:
        return cell_id(self.stack.id, self.repro)


def cell_id(stack_id: str, repro_id: str) -> str:
    return f"{stack_id}{CELL_SEPARATOR}{repro_id}"


@dataclass(frozen=True)
class StackGroup:
    """The cells that share one image, so one build and one container serve them."""

    stack: Stack
    repros: tuple[str, ...]

    @property
    def cells(self) -> tuple[Cell, ...]:
        return tuple(Cell(self.stack, r) for r in self.repros)


@dataclass(frozen=True)
class Plan:
    """Selected cells grouped by stack, in matrix order."""

    groups: tuple[StackGroup, ...]

    @property
    def cells(self) -> tuple[Cell, ...]:
        return tuple(c for g in self.groups for c in g.cells)


@dataclass(frozen=True)
class Settings:
    """matrix.yaml `defaults`: how images are built and cells are run."""

    python: str = "3.11"
    backend: str | None = None  # an engine or a fallback chain (docker|venv); None: docker
    base_images: dict[str, str] = field(default_factory=dict)
    ca_bundle: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    shm_size: str = "8g"
    memory: str = "32g"  # memory limit of a stack's runner container (swap included)
    pids: int = 8192  # process/thread limit of a stack's runner container
    repro_timeout: float = 600.0
    stack_timeout: float = 3600.0
    build_timeout: float = 3600.0
    standins: tuple[str, ...] = ()  # stand-ins for what is absent (`tensorrt`): see options.py


# -- progress: what the terminal learns about a stack, as typed events (run/progress.py) --
@dataclass(frozen=True)
class StackEvent:
    """Something that happened to one stack; printed as ``[stack] text``."""

    stack: str
    text: str

    def __str__(self) -> str:
        return f"[{self.stack}] {self.text}"


class Preparing(StackEvent):
    """Its environment is being made, pulled or found ready."""


class Running(StackEvent):
    """Its runner has started."""


class Output(StackEvent):
    """A line its runner printed."""


class Broken(StackEvent):
    """Nothing runs on it; ``text`` is the reason (printed as ``[stack] broken: reason``)."""

    def __str__(self) -> str:
        return f"[{self.stack}] broken: {self.text}"


class Done(StackEvent):
    """Its runner has ended and its cells are recorded."""


class Note(StackEvent):
    """Anything else about it worth a line (a kept container, a stand-in lane, a timeout)."""


Say = Callable[["str | StackEvent"], None]  # the run's log: plain lines and stack events
