"""Helpers for a real one-node Slurm cluster: munged, slurmctld, slurmd (Debian packages).

The ``slurm_cluster`` fixture (tests/distribute/conftest.py) uses a cluster that already
answers (``$SLURM_CONF``, ``scontrol ping``); otherwise it writes a minimal slurm.conf in a
temporary folder (this host as the only node, ``CPUs=$(nproc)``, free ports), starts
``munged`` as the ``munge`` user unless a munge daemon already answers, then ``slurmctld``
and ``slurmd`` in the foreground as children, waits for the node to be idle, and at the end
stops exactly what it started. Missing packages skip the test (a failure in CI:
REPROMATRIX_REQUIRE_SLURM=1).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "squeue")
SBIN = ("/usr/sbin", "/usr/bin", "/sbin")
START_TIMEOUT_S = 60

def which(name: str) -> str | None:
    return shutil.which(name) or next((f"{d}/{name}" for d in SBIN if Path(f"{d}/{name}").exists()), None)


def ok(cmd: list[str], env: dict[str, str] | None = None, stdin: bytes | None = None) -> bool:
    try:
        return subprocess.run(cmd, input=stdin, capture_output=True, env=env, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def munge_works() -> bool:
    munge, unmunge = which("munge"), which("unmunge")
    if not munge or not unmunge:
        return False
    try:
        cred = subprocess.run([munge, "-n"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return cred.returncode == 0 and ok([unmunge], stdin=cred.stdout)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_conf(folder: Path) -> Path:
    """A minimal one-node slurm.conf under ``folder`` (state, spool, logs there too)."""
    host = socket.gethostname().split(".")[0]
    for d in ("state", "spool"):
        (folder / d).mkdir(parents=True, exist_ok=True)
    conf = folder / "slurm.conf"
    conf.write_text("\n".join([
        "ClusterName=repromatrix-test", f"SlurmctldHost={host}", "SlurmUser=root", "SlurmdUser=root",
        "AuthType=auth/munge", f"SlurmctldPort={_free_port()}", f"SlurmdPort={_free_port()}",
        f"StateSaveLocation={folder / 'state'}", f"SlurmdSpoolDir={folder / 'spool'}",
        f"SlurmctldPidFile={folder / 'slurmctld.pid'}", f"SlurmdPidFile={folder / 'slurmd.pid'}",
        f"SlurmctldLogFile={folder / 'slurmctld.log'}", f"SlurmdLogFile={folder / 'slurmd.log'}",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SelectType=select/cons_tres",
        "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
        "MpiDefault=none", "ReturnToService=2", "SchedulerParameters=sched_interval=2",
        f"NodeName={host} CPUs={os.cpu_count() or 1} State=UNKNOWN",
        "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP", ""]))
    return conf


def unavailable(reason: str) -> None:
    if os.environ.get("REPROMATRIX_REQUIRE_SLURM") == "1":
        pytest.fail(f"REPROMATRIX_REQUIRE_SLURM=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def slurm_env(conf: Path | str) -> dict[str, str]:
    return {**os.environ, "SLURM_CONF": str(conf)}


def job_state(env: dict[str, str], job: str) -> list[str]:
    """The state of each job (or array task) of ``job``, as ``scontrol`` reports it."""
    out = subprocess.run(["scontrol", "-o", "show", "job", job], capture_output=True, text=True,
                         env=env, timeout=30).stdout
    return [w.split("=", 1)[1] for line in out.splitlines() for w in line.split()
            if w.startswith("JobState=")]


def spawn(cmd: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with open(log, "wb") as fh:
        return subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def wait(ready, what: str, folder: Path) -> None:  # noqa: ANN001
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.5)
    logs = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-1500:]}"
                     for p in sorted(folder.glob("*.out")) + sorted(folder.glob("*.log")))
    pytest.fail(f"{what} within {START_TIMEOUT_S}s:\n{logs}", pytrace=False)
