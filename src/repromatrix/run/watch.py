"""The one watcher: turn a running runner's files into Results, the same for every engine.

Run stage. While the runner works, every ``<repro>.json`` it finishes (written
atomically) becomes a Result at once, so an interrupted run loses at most the
cells in flight. When the runner ends, or overruns the stack's time limit and
is stopped, the repros it never finished get Results from the engine's facts
(timeout, out of memory, died, never started).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from repromatrix.engines import RunnerProcess
from repromatrix.model import Note, Say
from repromatrix.store.record import CellRun, EngineFacts, Result, make_result

POLL_S = 0.25


class Interrupted(Exception):
    """The run is stopping (Ctrl-C, SIGTERM, an internal error): cells in flight are dropped."""


def watch(proc: RunnerProcess, outdir: Path, cells: Mapping[str, CellRun],
          emit: Callable[[Result], None], *, limit_s: float, stop: threading.Event,
          log: Say = print, stack: str = "") -> None:
    """Emit one Result per cell of ``cells`` (keyed by repro id); raise Interrupted on ``stop``."""
    deadline = time.monotonic() + limit_s
    done: set[str] = set()
    timed_out = False

    def emit_finished() -> None:
        for repro, cell in cells.items():
            path = outdir / f"{repro}.json"
            if repro not in done and path.is_file():
                done.add(repro)
                runner = read_json(path)
                facts = EngineFacts(oom_killed=True) if _killed(runner) and proc.memory_killed() \
                    else None
                emit(make_result(cell, runner, read_json(outdir / "env.json"), facts))

    while not proc.poll():
        emit_finished()
        if stop.is_set():
            raise Interrupted
        if time.monotonic() > deadline:
            log(Note(stack, f"stack timeout ({limit_s:g}s): stopping the runner"))
            proc.stop()
            timed_out = True
            break
        proc.wait(POLL_S)  # a local runner's end ends the wait at once
    emit_finished()
    missing = [r for r in cells if r not in done]
    if missing:
        facts = proc.facts(timed_out, limit_s)
        env = read_json(outdir / "env.json")
        for repro in missing:
            emit(make_result(cells[repro], None, env if isinstance(env, dict) else None, facts))


def _killed(runner: Any) -> bool:
    return isinstance(runner, dict) and runner.get("status") == "crash" \
        and runner.get("signal") == "SIGKILL"


def read_json(path: Path) -> Any:
    """The file's JSON, or None when absent or unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
