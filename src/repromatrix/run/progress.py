"""Progress of `repromatrix run` / `matrix` in the terminal, and the closing summary table.

Run stage -> **progress** -> the terminal. Fed by the run's ``log`` callback, which
carries plain lines and typed stack events (``model.Preparing``, ``Running``,
``Output``, ``Broken``, ``Done``, ``Note``: a stack's state comes from the event's
type, never from its wording), and by every Result ``run.cells.run_plan`` emits. On a TTY
a live table (rich) shows each stack as waiting, preparing, running or done, the
cells per status, elapsed and estimated time; elsewhere (CI logs) each line is
printed plainly with a ``[done/total]`` counter. Either way a summary table closes the
run. What the CI service is told besides (GitHub Actions: each stack's lines folded into
a group, an annotation per broken stack, the summary in the job's step summary) is
written by ``run.ci``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rich import box
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from repromatrix.model import (
    Broken,
    Done,
    Output,
    Preparing,
    Running,
    StackEvent,
    Status,
)
from repromatrix.store.record import Result, shorten
from repromatrix.textsafe import printable

from . import ci

STATUS_STYLE = {"pass": "green", "fail": "red", "error": "dark_orange", "crash": "magenta",
                "timeout": "yellow", "skip": "bright_black", "broken": "bold"}
STATUSES = tuple(s.value for s in Status)
LIVE_ROWS = 12  # stacks shown in the live table; the rest are counted


@dataclass
class StackProgress:
    """One stack's state while the run goes on."""

    id: str
    cells: int
    state: str = "waiting"
    done: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    now: str = ""
    started: float | None = None
    seconds: float = 0.0
    reason: str = ""  # why it is broken: its Broken event's, else its first broken cell's


def fmt_seconds(seconds: float) -> str:
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def counts_text(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts.get(s)) or "none yet"


class RunProgress:
    """The run's terminal view; use as a context manager around ``run_plan``."""

    def __init__(self, console: Console | None = None, *, live: bool | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 github: bool | None = None) -> None:
        self.console = console or Console(highlight=False)
        self.live_mode = self.console.is_terminal if live is None else live
        self.clock = clock
        self.t0 = clock()
        self.stacks: dict[str, StackProgress] = {}
        self.reused = 0
        self.stood_in: list[tuple[str, str]] = []  # (cell, evidence level) decided on stand-ins
        self._lock = threading.Lock()
        self._live: Live | None = None
        # GitHub Actions (detected unless told): workflow commands for its log and job page
        self.github = ci.on_github_actions() if github is None else github
        # each stack's lines fold into one group (plain mode only)
        self.groups = self.github and not self.live_mode
        self._grouped: dict[str, list[str]] = {}

    # -- context -------------------------------------------------------------------------
    def __enter__(self) -> RunProgress:
        if self.live_mode:
            self._live = Live(console=self.console, get_renderable=self.render,
                              refresh_per_second=4, transient=True)
            self._live.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        for sid in list(self._grouped):  # stacks the run left unfinished (interrupted)
            self._flush_group(sid, self.stacks[sid].state)
        if self._live is not None:
            self._live.stop()
            self._live = None

    # -- what the run feeds in -----------------------------------------------------------
    def start(self, cells_by_stack: Mapping[str, int], reused: int = 0) -> None:
        """The cells about to run, per stack (after reuse), and how many were reused."""
        with self._lock:
            self.t0 = self.clock()
            self.reused = reused
            self.stacks = {sid: StackProgress(sid, n) for sid, n in cells_by_stack.items()}

    def log(self, item: str | StackEvent) -> None:
        """The run's log callback: a stack event updates that stack's state (by its type,
        never by its wording); what the live table does not show is printed."""
        with self._lock:
            stack = self.stacks.get(item.stack) if isinstance(item, StackEvent) else None
            if stack is not None and self._update(stack, item) and self._live is not None:
                return
            if stack is not None and self.groups:
                self._grouped.setdefault(stack.id, []).append(str(item))
                if isinstance(item, (Done, Broken)):
                    self._flush_group(stack.id, stack.state)
                return
        self._print(str(item))

    def _update(self, stack: StackProgress, event: StackEvent) -> bool:
        """Apply one event to ``stack``; True when the live table shows it in place of a line."""
        if isinstance(event, Output):  # the runner's own progress lines go in the table;
            if not event.text.startswith("[runner]"):  # anything else (a traceback) is printed
                return False
            stack.now = shorten(printable(event.text.removeprefix("[runner]").strip()), 80)
            return True
        if isinstance(event, Running):
            stack.state, stack.started = "running", self.clock()
        elif isinstance(event, Preparing) and stack.state == "waiting":
            stack.state = "preparing"
        elif isinstance(event, Broken):
            stack.state, stack.reason = "broken", event.text
        elif isinstance(event, Done) and stack.state != "broken":
            # one runner ended; with --repeat another attempt may follow
            stack.state = "done" if stack.done >= stack.cells else "waiting"
            stack.now = ""
        return False

    def _flush_group(self, sid: str, state: str) -> None:
        """GitHub Actions: one stack's lines as one folded group, printed when it ends
        (stacks running at once never interleave inside a group)."""
        lines = self._grouped.pop(sid, [])
        self._print(ci.group_start(f"{sid} ({state})"))
        for line in lines:
            self._print(line)
        self._print(ci.GROUP_END)

    def result(self, result: Result) -> None:
        """One finished cell (called by run_plan's emit)."""
        with self._lock:
            stack = self.stacks.setdefault(result.stack_id, StackProgress(result.stack_id, 0))
            stack.done += 1
            stack.statuses[result.status] = stack.statuses.get(result.status, 0) + 1
            if result.status == "broken" and not stack.reason:
                stack.reason = result.message
            if stack.done >= stack.cells:
                stack.state = "broken" if stack.state == "broken" else "done"
                stack.now = ""
                stack.seconds = self.clock() - (stack.started or self.t0)
            done, total = self.done_total()
            if result.standin_note:
                self.stood_in.append((result.cell, result.standin_note))
            line = (f"[{done}/{total}] {result.cell}: {result.status}"
                    + (f" [{result.standin_note}]" if result.standin_note else "")
                    + (f"  ({shorten(result.message, 120)})"
                       if result.message and result.status != "pass" else "")
                    + f"  [{self.timing()}]")
        if self._live is None:
            self._print(line)

    # -- derived -------------------------------------------------------------------------
    def done_total(self) -> tuple[int, int]:
        return (sum(s.done for s in self.stacks.values()),
                sum(max(s.cells, s.done) for s in self.stacks.values()))

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in self.stacks.values():
            for k, v in s.statuses.items():
                out[k] = out.get(k, 0) + v
        return out

    def timing(self) -> str:
        """``elapsed 1:02, ~3:10 left`` (the estimate from the cells done so far)."""
        elapsed = self.clock() - self.t0
        done, total = self.done_total()
        text = f"elapsed {fmt_seconds(elapsed)}"
        if 0 < done < total:
            text += f", ~{fmt_seconds(elapsed / done * (total - done))} left"
        return text

    def render(self) -> Group:
        """The live view: one headline and a table of the stacks that matter now."""
        with self._lock:
            done, total = self.done_total()
            head = Text(f"{done}/{total} cells · {counts_text(self.counts())} · {self.timing()}"
                        + (f" · {self.reused} reused" if self.reused else ""))
            table = Table(box=box.SIMPLE, show_edge=False, pad_edge=False)
            for col in ("stack", "state", "cells", "statuses"):
                table.add_column(col, no_wrap=True)
            table.add_column("now", no_wrap=True, overflow="ellipsis", ratio=1)
            order = {"running": 0, "preparing": 1, "broken": 2, "done": 3, "waiting": 4}
            stacks = sorted(self.stacks.values(), key=lambda s: order.get(s.state, 5))
            for s in stacks[:LIVE_ROWS]:
                table.add_row(s.id, s.state, f"{s.done}/{s.cells}", _styled(s.statuses), s.now)
            rest = stacks[LIVE_ROWS:]
            if rest:
                states = {st: sum(1 for s in rest if s.state == st) for st in order}
                table.add_row(f"+{len(rest)} more", ", ".join(f"{n} {k}" for k, n in states.items() if n),
                              "", "", "")
        return Group(head, table)

    def summary_rows(self) -> tuple[list[str], list[list[str]]]:
        """The closing table's status columns and rows: every stack, its cells per status and
        time, then the total (for the terminal and the CI's step summary alike)."""
        totals = self.counts()
        shown = [s for s in STATUSES if totals.get(s)] or list(STATUSES)
        rows = [[s.id, s.state, *[str(s.statuses.get(k, "")) for k in shown],
                 fmt_seconds(s.seconds) if s.done else ""] for s in self.stacks.values()]
        rows.append(["total", f"{self.reused} reused" if self.reused else "",
                     *[str(totals.get(k, "")) for k in shown], fmt_seconds(self.clock() - self.t0)])
        return shown, rows

    def summary_table(self, run_id: str = "") -> Table:
        """The closing table: every stack, its cells per status and time."""
        return _summary_table(run_id, *self.summary_rows())

    def broken_stacks(self) -> dict[str, str]:
        """Each stack nothing ran on, and why: those a Broken event broke, and those whose
        every cell was recorded `broken`."""
        return {s.id: s.reason for s in self.stacks.values()
                if s.state == "broken" or (s.statuses and set(s.statuses) == {"broken"})}

    def print_summary(self, run_id: str = "") -> None:
        shown, rows = self.summary_rows()
        self.console.print(_summary_table(run_id, shown, rows))
        if self.stood_in:
            self._print(f"{len(self.stood_in)} cell(s) decided with TensorRT stood in (torch-tensorrt's "
                        f"own code, no GPU; a record from real TensorRT outranks these):")
            for cell, note in self.stood_in:
                self._print(f"  {cell}: {note}")
        self._tell_ci(run_id, shown, rows)

    def _tell_ci(self, run_id: str, shown: list[str], rows: list[list[str]]) -> None:
        """GitHub Actions: an annotation per broken stack; the summary in the step summary."""
        if self.github:
            for sid, reason in self.broken_stacks().items():
                self._print(ci.broken_stack(sid, reason))
        header = ["stack", "state", *shown, "time"]
        title = f"repromatrix run {run_id}".rstrip()
        markdown = f"\n### {title}\n\n" + ci.markdown_table(header, rows, right=range(2, len(header)))
        try:
            ci.append_step_summary(markdown)
        except OSError as exc:  # the run is recorded: a summary it cannot write is only said
            self._print(f"note: the step summary could not be written: {exc}")

    def _print(self, text: str) -> None:
        target = self._live.console if self._live is not None else self.console
        target.print(Text(printable(text)), soft_wrap=True)


def _summary_table(run_id: str, shown: list[str], rows: list[list[str]]) -> Table:
    """``summary_rows`` as the terminal's table (the total row bold)."""
    table = Table(title=f"run {run_id}" if run_id else None, box=box.SIMPLE_HEAD)
    table.add_column("stack", no_wrap=True)
    table.add_column("state", no_wrap=True)
    for status in shown:
        table.add_column(status, justify="right", style=STATUS_STYLE[status])
    table.add_column("time", justify="right", no_wrap=True)
    for row in rows[:-1]:
        table.add_row(*row)
    table.add_row(*rows[-1], style="bold")
    return table


def _styled(statuses: Mapping[str, int]) -> Text:
    text = Text()
    for status in STATUSES:
        if statuses.get(status):
            if text:
                text.append(" ")
            text.append(f"{statuses[status]} {status}", style=STATUS_STYLE[status])
    return text
