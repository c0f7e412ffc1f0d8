"""The narrow seam between the run stage and the engines that execute cells.

A backend takes the stale stack groups of a plan and, for every cell in them,
hands exactly one record to ``ctx.emit`` (as soon as that cell is finished, so
an interrupted run loses at most the cells in flight). A stack whose image
cannot be built or started yields ``broken`` records for all its cells; only a
missing engine or base image raises (``InfraError``), and before any work.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..model import Settings, StackGroup


@dataclass
class RunContext:
    """What every backend needs besides the groups themselves."""

    run_id: str
    settings: Settings
    repros_dir: Path
    repro_hashes: dict[str, str]
    emit: Callable[[dict[str, Any]], None]
    work_dir: Path
    repro_timeout: float | None = None
    stack_timeout: float | None = None
    jobs: int = 1
    gpus: tuple[str, ...] = ()
    keep: bool = False
    python: str | None = None
    log: Callable[[str], None] = field(default=print)


class Backend(Protocol):
    name: str

    def preflight(self, groups: Sequence[StackGroup], ctx: RunContext) -> None:
        """Raise InfraError (exit 3) if the engine or a base image is unavailable."""

    def run(self, groups: Sequence[StackGroup], ctx: RunContext) -> None:
        """Run every cell of every group, emitting one record per cell."""
