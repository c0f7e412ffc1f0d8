"""The `docker` engine: one content-hash image per stack, one container per stack run.

``prepare`` builds the stack's image unless its tag exists (``engines.docker.build``);
``start`` owns one container's whole life (cibuildwheel's ``OCIContainer``
idea): create it with the harness mounted read-only at ``/repromatrix``, the
repros at ``/repros`` (``container_mounts``) and
a result folder at ``/out``, no network, GPUs only
when the daemon has the NVIDIA runtime; start it; and always remove it on
exit unless ``--keep`` (then it is kept for debugging and its name is logged).
Containers carry ``repromatrix.managed=1`` and ``repromatrix.run=<run id>``,
so ``close`` can remove whatever an interrupted run left behind.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import docker
import docker.errors
import docker.types

from repromatrix.engines import EngineContext, Prepared, RunnerJob, standins
from repromatrix.engines.diagnose import explain
from repromatrix.engines.images import ImageSpec, image_spec
from repromatrix.engines.indexes import check_indexes
from repromatrix.lock import hold
from repromatrix.model import Note, Running, Stack
from repromatrix.paths import cache_dir
from repromatrix.store.record import EngineFacts
from repromatrix.store.results import safe_component

from . import registry
from .build import build_image, tail_text
from .daemon import (
    ENGINE_ERRORS,
    LABEL_MANAGED,
    LABEL_OWNER,
    LABEL_RUN,
    LABEL_STACK,
    check_base_images,
    cleanup,
    connect,
    find_image,
    has_nvidia_runtime,
    owner_label,
    reap_orphans,
    remove_container,
)

HARNESS_MOUNT = "/repromatrix"
REPROS_MOUNT = "/repros"
OUT_MOUNT = "/out"
KILL_GRACE_S = 30.0
OOM_SETTLE_S = 2.0  # how long an OOM kill may take to reach the daemon's view of the container


class DockerEngine:
    """Engine over a docker daemon (see the module docstring)."""

    name = "docker"
    stack_kinds = ("pip", "ngc")

    def __init__(self, ctx: EngineContext, client: docker.DockerClient | None = None) -> None:
        self.ctx = ctx
        self._client = client
        self._nvidia: bool | None = None
        self._lane: tuple[str, ...] | None = None
        self._made: list[str] = []  # images this run built or pulled, least recently used first
        self._done: set[str] = set()  # images whose stacks have finished

    @property
    def client(self) -> docker.DockerClient:
        if self._client is None:
            self._client = connect()
        return self._client

    def preflight(self, stacks: Sequence[Stack]) -> None:
        """Ping the daemon; remove containers of dead runs; check the base images and the
        package indexes of the images still to build (``engines.indexes.check_indexes``)."""
        for name in reap_orphans(self.client):
            self.ctx.log(f"removed {name}: its run is no longer alive")
        specs = [self._spec(s) for s in stacks]
        check_base_images(self.client, specs)
        to_build = [spec.stack for spec in specs if find_image(self.client, spec.tag) is None]
        if not self.ctx.options.registry:  # with a registry, a missing image may be pulled instead
            check_indexes(to_build, self.ctx.settings, where="this machine (docker builds use its "
                          "network)", log=self.ctx.log)
        if self.ctx.options.gpus and not self.nvidia:
            self.ctx.log("warning: --gpus given but the daemon has no NVIDIA runtime; "
                         "running without GPUs (GPU stages will be skipped)")

    @property
    def nvidia(self) -> bool:
        if self._nvidia is None:
            self._nvidia = has_nvidia_runtime(self.client)
        return self._nvidia

    def fingerprint(self, stack: Stack) -> str:
        """The content-hash image tag: it changes whenever anything built into the image does."""
        return self._spec(stack).tag

    def _spec(self, stack: Stack) -> ImageSpec:
        """The stack's image, on the stand-in lane when the run asks for it (``--standin``)."""
        return image_spec(stack, self.ctx.settings, standin=self.lane,
                          harness_dir=self.ctx.harness_dir)

    @property
    def lane(self) -> tuple[str, ...]:
        """The stand-ins this engine builds with (none for the matrix's wish on a GPU daemon)."""
        if self._lane is None:
            o = self.ctx.options
            self._lane = standins.lane_here(o.standins, o.standins_from_matrix,
                                            bool(o.standins) and self.nvidia, self.ctx.log, "docker")
        return self._lane

    def prepare(self, stack: Stack, stop: threading.Event) -> Prepared:
        try:
            spec = self._spec(stack)
        except Exception as exc:  # noqa: BLE001 - a bad stack is broken, the others go on
            return Prepared(stack, ok=False, reason=str(exc), log_tail=str(exc))
        if spec.standin_source:
            self.ctx.log(standins.label(stack))
        options = self.ctx.options
        locks = cache_dir() / "locks"
        locks.mkdir(parents=True, exist_ok=True)
        with hold(locks / f"{safe_component(spec.tag)}.lock", what=f"the build of {spec.tag}",
                  run_id=self.ctx.run_id, on_wait=self.ctx.log):  # one build per tag at a time
            pulled = bool(options.registry) and find_image(self.client, spec.tag) is None and \
                registry.pull(self.client, options.registry, spec.tag, self.ctx.log)
            built = build_image(self.client, spec, options.work, log=self.ctx.log, stop=stop,
                                keep_context=options.keep)
        if built.ok and (pulled or not built.cached):
            self._made.append(built.tag)
        if built.ok and options.push:
            registry.push(self.client, options.push, built.tag, self.ctx.log)
        image = built.record_image()
        if not built.ok:
            reason = explain(f"image build failed: {built.error}", built.log_tail, built.log_path)
            return Prepared(stack, ok=False, image=image, reason=reason, log_tail=built.log_tail,
                            log_path=built.log_path, duration_s=built.duration_s)
        return Prepared(stack, ok=True, handle=built.tag, image=image, log_path=built.log_path,
                        cached=built.cached, duration_s=built.duration_s)

    @contextlib.contextmanager
    def start(self, prepared: Prepared, job: RunnerJob) -> Iterator[ContainerProcess]:
        container = self._create(prepared, job)
        try:
            container.start()
            self.ctx.log(Running(prepared.stack.id, f"running {len(job.repros)} repro(s) in "
                         f"{container.name}"))
            yield ContainerProcess(container)
        finally:
            self._save_logs(container, prepared.stack.id)
            if self.ctx.options.keep:
                with contextlib.suppress(*ENGINE_ERRORS):
                    container.stop(timeout=1)
                self.ctx.log(Note(prepared.stack.id,
                                  f"kept container {container.name} and {job.outdir}"))
            else:
                remove_container(container)

    def release(self, prepared: Prepared) -> None:
        """A stack is done with its image: keep this run's images within --image-budget."""
        budget = self.ctx.options.image_budget_gb
        if budget is None or not prepared.handle:
            return
        if prepared.handle in self._made:  # least recently used first
            self._made.remove(prepared.handle)
            self._made.append(prepared.handle)
        self._done.add(prepared.handle)
        for tag in enforce_budget(self.client, self._made, self._done, budget * 1e9):
            self.ctx.log(f"removed image {tag} (--image-budget {budget:g} GB)")
            self._made.remove(tag)

    def close(self) -> None:
        """Remove every container of this run still there (an interrupted run's, say)."""
        if self._client is not None and not self.ctx.options.keep:
            cleanup(self._client, self.ctx.run_id)

    def _create(self, prepared: Prepared, job: RunnerJob) -> Any:
        ctx, settings = self.ctx, self.ctx.settings
        job.outdir.mkdir(parents=True, exist_ok=True)
        job.outdir.chmod(0o777)
        volumes, repros_at = container_mounts(ctx.harness_dir, ctx.repros_dir, job.outdir)
        cmd = ["python", *job.runner_args(f"{HARNESS_MOUNT}/runner.py", OUT_MOUNT, repros_at)]
        sid = prepared.stack.id
        labels = {LABEL_MANAGED: "1", LABEL_RUN: ctx.run_id, LABEL_STACK: sid,
                  LABEL_OWNER: owner_label()}
        env = {"HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", **job.env}
        return self.client.containers.create(
            prepared.handle, cmd, name=container_name(ctx.run_id, sid), labels=labels,
            volumes=volumes, network_mode="none", shm_size=settings.shm_size,
            mem_limit=settings.memory, memswap_limit=settings.memory, pids_limit=settings.pids,
            user=f"{os.getuid()}:{os.getgid()}", environment=env,
            device_requests=self._device_requests(job.gpu), working_dir="/tmp", detach=True)

    def _device_requests(self, gpu: str | None) -> list[docker.types.DeviceRequest]:
        if not self.nvidia:
            return []
        if gpu is not None:
            return [docker.types.DeviceRequest(device_ids=[gpu], capabilities=[["gpu"]])]
        return [docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])]

    def _save_logs(self, container: Any, stack_id: str) -> None:
        path = self.ctx.options.work / "logs" / f"{stack_id}.run.log"
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(container_logs(container), encoding="utf-8")


class ContainerProcess:
    """RunnerProcess over a started container."""

    def __init__(self, container: Any) -> None:
        self.container = container
        self._state: dict[str, Any] = {}

    def poll(self) -> bool:
        try:
            self.container.reload()
        except docker.errors.NotFound:
            return True  # removed from outside
        except ENGINE_ERRORS:
            return False  # a slow or busy daemon: ask again (the stack time limit still holds)
        self._state = self.container.attrs.get("State", {})
        return self._state.get("Status") in ("exited", "dead")

    def wait(self, seconds: float) -> None:
        time.sleep(seconds)  # the next poll asks the daemon

    def stop(self) -> None:
        with contextlib.suppress(*ENGINE_ERRORS):
            self.container.kill()
        with contextlib.suppress(*ENGINE_ERRORS):
            self.container.wait(timeout=KILL_GRACE_S)
        self.poll()

    def memory_killed(self) -> bool:
        """Whether the container's memory limit has killed a process in it (so far). Asked
        when the runner saw a stage die of SIGKILL: the daemon hears of an OOM kill a moment
        after it happens (an event from containerd), so a "no" is asked again for up to
        OOM_SETTLE_S."""
        deadline = time.monotonic() + OOM_SETTLE_S
        while True:
            with contextlib.suppress(*ENGINE_ERRORS):
                self.container.reload()
                self._state = self.container.attrs.get("State", {})
            if self._state.get("OOMKilled") or time.monotonic() >= deadline:
                return bool(self._state.get("OOMKilled"))
            time.sleep(0.1)

    def facts(self, timed_out: bool, limit_s: float) -> EngineFacts:
        code = self._state.get("ExitCode")
        oom = bool(self._state.get("OOMKilled")) or (
            code == 137 and not timed_out and self.memory_killed())
        return EngineFacts(exit_code=None if timed_out else code, timed_out=timed_out,
                           limit_s=limit_s, oom_killed=oom,
                           signal="SIGKILL" if timed_out else None,
                           log_tail=tail_text(container_logs(self.container)))


def enforce_budget(client: docker.DockerClient, made: list[str], done: set[str],
                   budget_bytes: float) -> list[str]:
    """Remove finished images of ``made`` (oldest use first) while ``made`` exceeds the budget.

    Only images this run built or pulled are counted and removed: never one it found."""
    sizes = {}
    for tag in made:
        image = find_image(client, tag)
        sizes[tag] = image.attrs.get("Size", 0) if image is not None else 0
    total, removed = sum(sizes.values()), []
    for tag in [t for t in made if t in done]:
        if total <= budget_bytes:
            break
        with contextlib.suppress(*ENGINE_ERRORS):
            client.images.remove(tag, force=True)
            total -= sizes[tag]
            removed.append(tag)
    return removed


def container_mounts(harness: Path, repros: Path, outdir: Path) -> tuple[dict[str, Any], str]:
    """The container's bind mounts (host path -> bind) and where the runner finds the repros.

    The harness (``paths.harness_dir()``) is mounted at ``/repromatrix``, the catalog (the
    built-in folder, or a staged one) at ``/repros``, the result folder at ``/out``; the
    runner puts ``/repromatrix`` on the repros' ``sys.path``. docker-py keys mounts by host
    path, so a catalog that *is* the harness folder is not mounted twice: the runner
    reads it at ``/repromatrix``."""
    harness_host, repros_host = str(harness.resolve()), str(repros.resolve())
    volumes: dict[str, Any] = {harness_host: {"bind": HARNESS_MOUNT, "mode": "ro"}}
    repros_at = HARNESS_MOUNT
    if repros_host != harness_host:
        volumes[repros_host] = {"bind": REPROS_MOUNT, "mode": "ro"}
        repros_at = REPROS_MOUNT
    volumes[str(outdir.resolve())] = {"bind": OUT_MOUNT, "mode": "rw"}
    return volumes, repros_at


def container_logs(container: Any) -> str:
    with contextlib.suppress(*ENGINE_ERRORS):
        return container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
    return ""


def container_name(run_id: str, stack_id: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "_.-" else "-" for ch in f"{run_id}-{stack_id}")
    return f"repromatrix-{safe}"[:200]
