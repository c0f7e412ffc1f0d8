"""A clock, a console and records to feed the run's progress view by hand."""

from __future__ import annotations

import io

from rich.console import Console

from repromatrix.store.record import SCHEMA_VERSION, Result


class Clock:
    """Seconds that advance only when told (the estimate is then exact)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def result(stack: str, repro: str, status: str, message: str = "") -> Result:
    """A record of one cell with ``status``."""
    return Result.from_dict({"schema_version": SCHEMA_VERSION, "run_id": "r", "cell": f"{stack}--{repro}",
                             "stack": {"id": stack}, "repro": repro, "status": status, "message": message})


def console(tty: bool) -> tuple[Console, io.StringIO]:
    """A console writing into a string, as a TTY or not."""
    out = io.StringIO()
    return Console(file=out, force_terminal=tty, width=120, highlight=False), out
