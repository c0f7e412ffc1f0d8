"""The docker daemon: connect, look images up, check base images, remove containers.

Used by the docker engine (``engines.docker.engine``) and the image builder
(``engines.docker.build``). Engine failures become ``DockerUnavailable`` /
``BaseImageMissing`` (exit 3) before any work: never a raw SDK traceback.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
from collections.abc import Iterable
from typing import Any

import docker
import docker.errors
import requests.exceptions

from repromatrix import textsafe
from repromatrix.engines.images import ImageSpec
from repromatrix.errors import BaseImageMissing, DockerUnavailable

LABEL_MANAGED = "repromatrix.managed"
LABEL_RUN = "repromatrix.run"
LABEL_STACK = "repromatrix.stack_id"
LABEL_OWNER = "repromatrix.owner"  # host:pid:start time of the `repromatrix` process
ENGINE_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException, OSError)


def connect(timeout: float = 120.0) -> docker.DockerClient:
    """A client for the daemon from the environment, pinged; else DockerUnavailable (exit 3)."""
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        client = docker.from_env(timeout=int(timeout))
        client.ping()
        return client
    except ENGINE_ERRORS as exc:
        raise DockerUnavailable(
            f"cannot reach the docker daemon at {where}: {first_line(exc)}\n"
            "  start it (`sudo systemctl start docker`, or `dockerd &`), make sure you may use its "
            "socket (the `docker` group), or point DOCKER_HOST at it;\n"
            "  or run without docker: `repromatrix run --backend local --python PATH`"
        ) from None


def has_nvidia_runtime(client: docker.DockerClient) -> bool:
    """Whether the daemon can hand GPUs to containers (NVIDIA container toolkit installed)."""
    try:
        return "nvidia" in (client.info().get("Runtimes") or {})
    except ENGINE_ERRORS:
        return False


def find_image(client: docker.DockerClient, tag: str) -> Any | None:
    """The local image with this tag, or None."""
    try:
        return client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None


def check_base_images(client: docker.DockerClient, specs: Iterable[ImageSpec]) -> None:
    """Every base image still needed is local or pullable; else BaseImageMissing (exit 3)."""
    needed: dict[str, list[ImageSpec]] = {}
    for spec in specs:
        if find_image(client, spec.tag) is None:
            needed.setdefault(spec.base_image, []).append(spec)
    missing = []
    for base, users in needed.items():
        if find_image(client, base) is not None:
            continue
        try:
            client.images.get_registry_data(base)
        except ENGINE_ERRORS as exc:
            missing.append(_missing_base_line(base, users, exc))
    if missing:
        err = BaseImageMissing(
            f"{len(missing)} base image(s) are not present locally and cannot be pulled:\n"
            + "\n".join(missing) + "\n"
            "  what to do: pull or load them (`docker pull IMAGE`, `docker load`); or map each to an "
            "image you have with the mirror-map setting `defaults.base_images` in matrix.yaml or "
            "`--base-image PUBLIC=LOCAL` (scripts/make-base-image.sh makes a local Python base "
            "image); or leave those stacks out of the selection (-k)")
        err.missing = {users[0].public_base: [s.stack.id for s in users]
                       for base, users in needed.items() if any(base in line for line in missing)}
        raise err


def cleanup(client: docker.DockerClient, run_id: str | None = None) -> list[str]:
    """Remove every harness container (of one run, when given); returns their names."""
    labels = [f"{LABEL_MANAGED}=1"] + ([f"{LABEL_RUN}={run_id}"] if run_id else [])
    removed = []
    with contextlib.suppress(*ENGINE_ERRORS):
        for c in client.containers.list(all=True, filters={"label": labels}, ignore_removed=True):
            if remove_container(c):
                removed.append(c.name)
    return removed


def owner_label() -> str:
    """Who runs this process's containers: host, pid and the pid's start time (pids are reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{_start_time(os.getpid())}"


def _start_time(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]  # field 22: start time in ticks
    except (OSError, IndexError):
        return "?"


def _owner_alive(owner: str) -> bool:
    host, _, rest = owner.partition(":")
    pid, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True  # another machine's run (a shared daemon): not ours to judge
    return _start_time(int(pid)) == start != "?"


def reap_orphans(client: docker.DockerClient) -> list[str]:
    """Remove harness containers whose `repromatrix` process on this host is gone (killed
    with -9, say): a container must never outlive the run that started it."""
    removed = []
    with contextlib.suppress(*ENGINE_ERRORS):
        for c in client.containers.list(all=True, filters={"label": f"{LABEL_MANAGED}=1"},
                                           ignore_removed=True):
            owner = (c.labels or {}).get(LABEL_OWNER)
            if owner and not _owner_alive(owner) and remove_container(c):
                removed.append(c.name)
    return removed


def remove_container(container: Any) -> bool:
    """Force-remove one container (running or not); False if the daemon refused."""
    try:
        container.remove(force=True)
        return True
    except ENGINE_ERRORS:
        return False


def first_line(exc: BaseException) -> str:
    """An SDK error's first line (``textsafe.first_line``), else its type's name."""
    return textsafe.first_line(exc) or type(exc).__name__


def _missing_base_line(base: str, users: list[ImageSpec], exc: BaseException) -> str:
    public = users[0].public_base
    mapped = f" (mapped from {public})" if public != base else ""
    stacks = ", ".join(s.stack.id for s in users)
    return f"  {base}{mapped} for {stacks}: {_registry_cause(exc)}"


def _registry_cause(exc: BaseException) -> str:
    """The daemon's own reason inside an SDK error, e.g. 'lookup nvcr.io ...: no such host'."""
    text = first_line(exc)
    quoted = re.search(r'\("(.*)"\)\s*$', text)
    inner = quoted.group(1) if quoted else text
    return re.sub(r'^Get "[^"]*":\s*', "", inner)
