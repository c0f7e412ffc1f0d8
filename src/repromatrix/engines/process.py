"""A runner started as a local process (the `local` and `venv` engines).

The runner gets its own process group, so stopping it takes its repro down
too; its output is copied to ``<outdir>/runner.log`` and to the log callback.
Leaving the context always ends the group (SIGTERM, then SIGKILL), and the
runner gets SIGTERM if the harness itself dies (kill -9 included).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from repromatrix.model import Output, Running, Say
from repromatrix.store.record import EngineFacts
from repromatrix.textsafe import file_tail, printable, signal_name

from . import EngineContext, Prepared, RunnerJob

KILL_GRACE_S = 5.0
PR_SET_PDEATHSIG = 1
LOG_TAIL = 4000


class LocalProcess:
    """RunnerProcess over ``subprocess.Popen``."""

    def __init__(self, proc: subprocess.Popen[bytes], log_path: Path) -> None:
        self.proc, self.log_path = proc, log_path

    def poll(self) -> bool:
        return self.proc.poll() is not None

    def wait(self, seconds: float) -> None:
        """Return when the runner has ended, or after ``seconds`` (the watcher's poll interval)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=seconds)

    def stop(self) -> None:
        kill_group(self.proc)

    def memory_killed(self) -> bool:
        return False  # no memory limit is set on local processes (see ARCHITECTURE.md)

    def facts(self, timed_out: bool, limit_s: float) -> EngineFacts:
        rc = self.proc.returncode
        return EngineFacts(exit_code=rc if rc is not None and rc >= 0 else None, signal=signal_name(rc),
                           timed_out=timed_out, limit_s=limit_s, log_tail=file_tail(self.log_path, LOG_TAIL))


@contextlib.contextmanager
def local_process(ctx: EngineContext, prepared: Prepared, job: RunnerJob) -> Iterator[LocalProcess]:
    """Start the runner with the prepared interpreter; always end its process group on exit."""
    sid, log = prepared.stack.id, ctx.log
    log(Running(sid, f"running {len(job.repros)} repro(s) with {prepared.handle}"))
    job.outdir.mkdir(parents=True, exist_ok=True)
    log_path = job.outdir / "runner.log"
    cmd = [prepared.handle, *job.runner_args(str(ctx.harness_dir / "runner.py"), str(job.outdir),
                                             str(ctx.repros_dir))]
    env = {**os.environ, **job.env}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True, env=env,
                            preexec_fn=die_with_parent)
    relay = threading.Thread(target=_relay, args=(proc.stdout, log_path, log, sid), daemon=True)
    relay.start()
    try:
        yield LocalProcess(proc, log_path)
    finally:
        if proc.poll() is None:
            kill_group(proc)
        relay.join(timeout=5)


def _relay(stream: IO[bytes] | None, log_path: Path, log: Say, sid: str) -> None:
    if stream is None:
        return
    with log_path.open("wb") as fh:
        for line in stream:
            fh.write(line)
            fh.flush()
            log(Output(sid, printable(line.decode("utf-8", "replace").rstrip())))


def die_with_parent() -> None:
    """In the child before exec: get SIGTERM when the harness dies, even by SIGKILL (Linux's
    parent-death signal); the runner then stops its repro and exits. Elsewhere: nothing."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the harness died before prctl took effect
        os._exit(1)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group (the runner stops its repro), SIGKILL after a grace period."""
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    _signal_group(proc.pid, signal.SIGKILL)
    proc.wait()


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


