"""The `local` backend: run the repro runner with an existing interpreter.

Run stage, no image: inside an NGC container, on a GPU box without docker, or
in CI, ``repromatrix run --backend local --python PATH`` starts
``repros/runner.py`` with that interpreter (``ctx.python``, else the stack's
``interpreter``) and emits one record per repro as soon as its result file
appears. A stack whose pins disagree with what the interpreter actually has
is recorded ``broken`` rather than mislabelled; an interpreter that is
missing fails the preflight (a usage error, before any work).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import IO, Any

from ..errors import HarnessError
from ..model import StackGroup, Status
from ..probe import env_probe, pin_mismatches, resolve_python
from ..records import broken_records, now_iso, records_from_outdir
from . import RunContext

POLL_S = 0.5
KILL_GRACE_S = 5.0
STACK_GRACE_S = 60.0


class LocalBackend:
    """Runs each stack group's repros through the runner with a local interpreter."""

    name = "local"

    def __init__(self) -> None:
        self._probes: dict[str, dict[str, Any]] = {}

    def interpreter(self, group: StackGroup, ctx: RunContext) -> str:
        return ctx.python or group.stack.interpreter or sys.executable

    def preflight(self, groups: Sequence[StackGroup], ctx: RunContext) -> None:
        for g in groups:
            resolve_python(self.interpreter(g, ctx))
        if not (ctx.repros_dir / "runner.py").is_file():
            raise HarnessError(f"{ctx.repros_dir}/runner.py is missing: is this a source checkout?")

    def fingerprint(self, stack: Any, ctx: RunContext) -> str:
        """The interpreter and the versions it reports: what a cached cell depends on."""
        exe = resolve_python(ctx.python or stack.interpreter or sys.executable)
        env = self._probe(exe, ctx)
        keys = ("python_executable", "python", "torch", "torch_git", "torchvision",
                "torch_tensorrt", "tensorrt", "onnx", "onnxscript", "torch_cuda", "cudnn",
                "gpu", "driver", "ngc", "error")
        return "local:" + ";".join(f"{k}={env.get(k)}" for k in keys)

    def _probe(self, exe: str, ctx: RunContext) -> dict[str, Any]:
        if exe not in self._probes:
            self._probes[exe] = env_probe(exe, ctx.repros_dir)
        return self._probes[exe]

    def run(self, groups: Sequence[StackGroup], ctx: RunContext) -> None:
        for group in groups:
            _GroupRun(group, ctx, resolve_python(self.interpreter(group, ctx)), self).run()


class _GroupRun:
    """One runner process for one stack group: start, watch, emit, clean up."""

    def __init__(self, group: StackGroup, ctx: RunContext, exe: str, backend: LocalBackend):
        self.group, self.ctx, self.exe, self.backend = group, ctx, exe, backend
        self.outdir = ctx.work_dir / "out" / ctx.run_id / group.stack.id
        self.emitted: set[str] = set()
        self.started_at = now_iso()

    def run(self) -> None:
        mismatch = pin_mismatches(self.group.stack.spec(), self.backend._probe(self.exe, self.ctx))
        if mismatch:
            self._broken("the interpreter does not match the stack: " + "; ".join(mismatch))
            return
        self.outdir.mkdir(parents=True, exist_ok=True)
        for old in self.outdir.glob("*.json"):
            old.unlink()
        self.ctx.log(f"[{self.group.stack.id}] running {len(self.group.repros)} repro(s) "
                     f"with {self.exe}")
        proc = subprocess.Popen(self._command(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        reader = threading.Thread(target=self._relay, args=(proc.stdout,), daemon=True)
        reader.start()
        try:
            timed_out = self._watch(proc)
        except BaseException:  # Ctrl-C / SIGTERM: the runner has its own session, stop it too
            _kill_group(proc)
            raise
        reader.join(timeout=5)
        self._emit_new()
        self._finish(proc.returncode, timed_out)

    def _command(self) -> list[str]:
        timeout = self.ctx.repro_timeout or self.ctx.settings.repro_timeout
        return [self.exe, str(self.ctx.repros_dir / "runner.py"), "--out", str(self.outdir),
                "--repros", ",".join(self.group.repros), "--timeout", f"{timeout:g}"]

    def _relay(self, stream: IO[bytes] | None) -> None:
        if stream is None:
            return
        with (self.outdir / "runner.log").open("wb") as log:
            for line in stream:
                log.write(line)
                log.flush()
                self.ctx.log(f"[{self.group.stack.id}] " + line.decode("utf-8", "replace").rstrip())

    def _stack_limit(self) -> float:
        """The stack's own time limit: explicit, else every repro's limit plus slack."""
        if self.ctx.stack_timeout:
            return self.ctx.stack_timeout
        per = self.ctx.repro_timeout or self.ctx.settings.repro_timeout
        return max(self.ctx.settings.stack_timeout, per * len(self.group.repros) + STACK_GRACE_S)

    def _watch(self, proc: subprocess.Popen[bytes]) -> bool:
        """Emit results while the runner works; True if it had to be killed."""
        deadline = time.monotonic() + self._stack_limit()
        while proc.poll() is None:
            self._emit_new()
            if time.monotonic() > deadline:
                self.ctx.log(f"[{self.group.stack.id}] stack timeout: killing the runner")
                _kill_group(proc)
                return True
            time.sleep(POLL_S)
        return False

    def _emit_new(self) -> None:
        done = [r for r in self.group.repros
                if r not in self.emitted and (self.outdir / f"{r}.json").is_file()]
        if done:
            self._emit(records_from_outdir(self.group, self.outdir, ctx=self.ctx, backend="local",
                                           image=None, started_at=self.started_at, only=done))

    def _emit(self, records: list[dict[str, Any]]) -> None:
        for rec in records:
            if rec["repro"] not in self.emitted:
                self.emitted.add(rec["repro"])
                self.ctx.emit(rec)

    def _finish(self, returncode: int | None, timed_out: bool) -> None:
        """Records for the repros the runner never reached (it died or overran)."""
        missing = [r for r in self.group.repros if r not in self.emitted]
        if not missing:
            return
        records = records_from_outdir(StackGroup(self.group.stack, tuple(missing)), self.outdir,
                                      ctx=self.ctx, backend="local", image=None,
                                      started_at=self.started_at)
        for rec in records:
            if timed_out:
                rec["status"] = Status.TIMEOUT.value
                rec["message"] = (f"stack timeout: the runner ran past {self._stack_limit():g}s "
                                  "and was killed before this repro finished")
            elif rec.get("exit_code") is None:
                rec["exit_code"] = returncode
        self._emit(records)

    def _broken(self, reason: str) -> None:
        self.ctx.log(f"[{self.group.stack.id}] broken: {reason}")
        self._emit(broken_records(self.group, ctx=self.ctx, backend="local", image=None,
                                  reason=reason, log_tail="", started_at=self.started_at))


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the runner's process group (it stops its repro), SIGKILL after a grace period."""
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    _signal_group(proc.pid, signal.SIGKILL)
    proc.wait()


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
