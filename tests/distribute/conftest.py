"""Fixtures of the many-machine tests: a real one-node Slurm cluster."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.slurm import (
    DAEMONS,
    munge_works,
    ok,
    slurm_env,
    spawn,
    stop,
    unavailable,
    wait,
    which,
    write_conf,
)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The environment (``SLURM_CONF``) of a running one-node cluster."""
    existing = os.environ.get("SLURM_CONF")
    if existing and ok(["scontrol", "ping"]):
        yield dict(os.environ)
        return
    missing = [d for d in DAEMONS if not which(d)]
    if missing:
        unavailable(f"Slurm is not installed (missing {', '.join(missing)}; "
                     "apt-get install slurmctld slurmd munge slurm-client)")
    if os.geteuid() != 0:
        unavailable("starting a Slurm cluster needs root (SlurmUser=root)")
    folder = tmp_path_factory.mktemp("slurm")
    conf = write_conf(folder)
    env = slurm_env(conf)
    started: list[subprocess.Popen[bytes]] = []
    try:
        if not munge_works():
            if not Path("/etc/munge/munge.key").exists():
                unavailable("munged has no key (/etc/munge/munge.key; Debian's munge package makes it)")
            Path("/run/munge").mkdir(parents=True, exist_ok=True)
            shutil.chown("/run/munge", "munge", "munge")
            started.append(spawn(["runuser", "-u", "munge", "--", which("munged") or "munged", "-F"],
                                  folder / "munged.out", env))
            wait(munge_works, "munged did not answer", folder)
        for daemon in ("slurmctld", "slurmd"):
            started.append(spawn([which(daemon) or daemon, "-D", "-f", str(conf)],
                                  folder / f"{daemon}.out", env))
        wait(lambda: ok(["scontrol", "ping"], env)
              and b"idle" in subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True,
                                             env=env).stdout, "the node did not become idle", folder)
        yield env
    finally:
        for proc in reversed(started):
            stop(proc)
