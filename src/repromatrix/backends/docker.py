"""Docker backend: build each stack's image, then run its repros in one container.

Flow: plan -> images -> **run (docker)** -> results. For every stack group:

1. ``images.image_spec`` renders the Dockerfile and its content-hash tag; the
   image is built with the classic builder (``network_mode="host"``) unless the
   tag already exists. Build logs go to ``<work_dir>/logs/<stack id>.log``; a
   failed build turns that stack's cells into ``broken`` records.
2. One container per stack runs ``python /repros/runner.py`` with the repros
   mounted read-only at ``/repros`` and a result folder at ``/out``, no network,
   GPUs only when the daemon has the NVIDIA runtime, and a per-stack timeout
   that kills it. Records are emitted as each ``/out/<repro>.json`` appears.
3. Containers carry ``repromatrix.managed=1`` and ``repromatrix.run=<run id>``
   and are removed in ``finally`` (also on Ctrl-C) unless ``ctx.keep``.

A builder thread keeps building the next images while ``ctx.jobs`` workers run
stacks (one GPU each when ``ctx.gpus`` is given). Engine failures become
``DockerUnavailable``/``BaseImageMissing`` before any work, or ``broken``
records for the stack concerned: never a raw SDK traceback.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import docker
import docker.errors
import docker.types
import requests.exceptions

from ..errors import BaseImageMissing, DockerUnavailable
from ..images import ImageResult, ImageSpec, build_context, image_spec
from ..model import TRACEBACK_LIMIT, Settings, Stack, StackGroup, Status
from ..records import now_iso
from . import RunContext

LABEL_MANAGED = "repromatrix.managed"
LABEL_RUN = "repromatrix.run"
LABEL_STACK = "repromatrix.stack_id"
RUNNER = "/repros/runner.py"
POLL_S = 0.25
KILL_GRACE_S = 30.0
LOG_TAIL_LINES = 60
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
ENGINE_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException, OSError)


# -- the daemon --------------------------------------------------------------------------

def connect(timeout: float = 120.0) -> docker.DockerClient:
    """A client for the daemon from the environment, pinged; else DockerUnavailable (exit 3)."""
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        client = docker.from_env(timeout=int(timeout))
        client.ping()
        return client
    except ENGINE_ERRORS as exc:
        raise DockerUnavailable(
            f"cannot reach the docker daemon at {where}: {_first_line(exc)}\n"
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
        raise BaseImageMissing(
            f"{len(missing)} base image(s) are not present locally and cannot be pulled:\n"
            + "\n".join(missing) + "\n"
            "  what to do: pull or load them (`docker pull IMAGE`, `docker load`); or map each to an "
            "image you have with the mirror-map setting `defaults.base_images` in matrix.yaml or "
            "`--base-image PUBLIC=LOCAL` (scripts/make-base-image.sh makes a local Python base "
            "image); or leave those stacks out, e.g. -k 'default and not ngc'")


def cleanup(client: docker.DockerClient, run_id: str | None = None) -> list[str]:
    """Remove every harness container (of one run, when given); returns their names."""
    labels = [f"{LABEL_MANAGED}=1"] + ([f"{LABEL_RUN}={run_id}"] if run_id else [])
    removed = []
    with contextlib.suppress(*ENGINE_ERRORS):
        for c in client.containers.list(all=True, filters={"label": labels}):
            with contextlib.suppress(*ENGINE_ERRORS):
                c.remove(force=True)
                removed.append(c.name)
    return removed


# -- build -------------------------------------------------------------------------------

def build_image(client: docker.DockerClient, spec: ImageSpec, work_dir: Path, *,
                log: Callable[[str], None] = print, stop: threading.Event | None = None,
                keep_context: bool = False) -> ImageResult:
    """Build one image (classic builder, host network) unless its tag exists; never raises."""
    sid = spec.stack.id
    t0 = time.monotonic()
    existing = find_image(client, spec.tag)
    if existing is not None:
        log(f"[{sid}] image {spec.tag} is cached")
        return ImageResult(sid, spec.tag, ok=True, id=existing.id, cached=True)
    log_path = work_dir / "logs" / f"{sid}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    ctx_dir = work_dir / "build" / sid
    log(f"[{sid}] building {spec.tag} from {spec.base_image} (log: {log_path})")
    error = ""
    try:
        build_context(spec, ctx_dir)
        with log_path.open("w", encoding="utf-8") as fh:
            fh.write(f"# repromatrix build of {spec.tag} for stack {sid}\n")
            error = _stream_build(client, spec, ctx_dir, fh, stop)
    except OSError as exc:
        error = f"cannot prepare the build context in {ctx_dir}: {exc}"
    finally:
        if not keep_context:
            shutil.rmtree(ctx_dir, ignore_errors=True)
    elapsed = time.monotonic() - t0
    image = None if error else find_image(client, spec.tag)
    if image is None:
        error = error or f"the build finished but {spec.tag} is not in the image store"
        tail = _tail(log_path)
        error = _build_error_summary(tail, error)
        log(f"[{sid}] build FAILED after {elapsed:.0f}s: {error}")
        return ImageResult(sid, spec.tag, ok=False, log_path=log_path, error=error,
                           log_tail=tail, duration_s=elapsed)
    log(f"[{sid}] built {spec.tag} in {elapsed:.0f}s")
    return ImageResult(sid, spec.tag, ok=True, id=image.id, log_path=log_path, duration_s=elapsed)


def _stream_build(client: docker.DockerClient, spec: ImageSpec, ctx_dir: Path, fh: Any,
                  stop: threading.Event | None) -> str:
    """Run the build, copying its output into ``fh``; returns the error text ('' when ok)."""
    try:
        stream = client.api.build(path=str(ctx_dir), tag=spec.tag, rm=True, forcerm=True,
                                  network_mode="host", decode=True, pull=False,
                                  labels={"repromatrix.inputs_hash": spec.inputs_hash})
        for chunk in stream:
            if stop is not None and stop.is_set():
                stream.close()
                return "build interrupted"
            if "stream" in chunk:
                fh.write(ANSI.sub("", chunk["stream"]))
            if "error" in chunk:
                fh.write(f"ERROR: {chunk['error']}\n")
                return str(chunk["error"]).strip()
            fh.flush()
    except ENGINE_ERRORS as exc:
        fh.write(f"ERROR: {exc}\n")
        return f"docker build failed: {_first_line(exc)}"
    return ""


def build_images(groups: Sequence[StackGroup], settings: Settings,
                 ctx: RunContext) -> dict[str, ImageResult]:
    """Build (or find cached) every group's image, one after the other: `repromatrix build`.

    Raises DockerUnavailable / BaseImageMissing before building anything; a failed
    build is an ``ok=False`` result and the others go on.
    """
    return _build_all(connect(), groups, settings, ctx.work_dir, log=ctx.log, keep=ctx.keep)


def _build_all(client: docker.DockerClient, groups: Sequence[StackGroup], settings: Settings,
               work_dir: Path, *, log: Callable[[str], None], keep: bool) -> dict[str, ImageResult]:
    specs = [image_spec(g.stack, settings) for g in groups]
    check_base_images(client, specs)
    return {s.stack.id: build_image(client, s, work_dir, log=log, keep_context=keep) for s in specs}


# -- run ---------------------------------------------------------------------------------

class DockerBackend:
    """backends.Backend on a docker daemon (see the module docstring)."""

    name = "docker"

    def __init__(self, client: docker.DockerClient | None = None) -> None:
        self._client = client

    @property
    def client(self) -> docker.DockerClient:
        if self._client is None:
            self._client = connect()
        return self._client

    def preflight(self, groups: Sequence[StackGroup], ctx: RunContext) -> None:
        """Ping the daemon; check the base images of every image still to build."""
        client = self.client
        check_base_images(client, [image_spec(g.stack, ctx.settings) for g in groups])

    def fingerprint(self, stack: Stack, ctx: RunContext) -> str:
        """What identifies a stack's environment for cell caching: its content-hash image tag."""
        return image_spec(stack, ctx.settings).tag

    def run(self, groups: Sequence[StackGroup], ctx: RunContext) -> None:
        """Build and run every group, emitting one record per cell as it finishes."""
        if not groups:
            return
        _Scheduler(self.client, list(groups), ctx).run()


class _Scheduler:
    """One builder thread feeding ``ctx.jobs`` runner threads; all containers tracked."""

    def __init__(self, client: docker.DockerClient, groups: list[StackGroup], ctx: RunContext):
        self.client, self.groups, self.ctx = client, groups, ctx
        self.stop = threading.Event()
        self.jobs = max(1, ctx.jobs)
        self.built: queue.Queue[tuple[StackGroup, ImageResult] | None] = queue.Queue(self.jobs)
        self.gpus: queue.Queue[str] = queue.Queue()
        for gpu in ctx.gpus:
            self.gpus.put(gpu)
        self.nvidia = has_nvidia_runtime(client)
        self.live: dict[str, Any] = {}
        self.lock = threading.Lock()
        self.emit_lock = threading.Lock()

    def run(self) -> None:
        if self.ctx.gpus and not self.nvidia:
            self.ctx.log("warning: --gpus given but the daemon has no NVIDIA runtime; "
                         "running without GPUs (GPU stages will be skipped)")
        threads = [threading.Thread(target=self._guard, args=(self._builder,), daemon=True,
                                    name="repromatrix-build")]
        threads += [threading.Thread(target=self._guard, args=(self._worker,), daemon=True,
                                     name=f"repromatrix-run-{i}") for i in range(self.jobs)]
        try:
            for t in threads:
                t.start()
            for t in threads:
                while t.is_alive():
                    t.join(0.2)
        except BaseException:
            self.stop.set()
            self._remove_live()
            deadline = time.monotonic() + 10.0  # let the workers run their `finally`
            for t in threads[1:]:
                t.join(max(0.0, deadline - time.monotonic()))
            self._remove_live()
            raise
        finally:
            if not self.ctx.keep:
                cleanup(self.client, self.ctx.run_id)

    def emit(self, record: dict[str, Any]) -> None:
        with self.emit_lock:
            self.ctx.emit(record)

    def _guard(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - a thread must not die silently
            self.ctx.log(f"internal error in {threading.current_thread().name}: {exc!r}")
            self.stop.set()

    def _builder(self) -> None:
        try:
            for group in self.groups:
                if self.stop.is_set():
                    break
                result = self._build(group)
                while not self.stop.is_set():
                    try:
                        self.built.put((group, result), timeout=0.2)
                        break
                    except queue.Full:
                        continue
        finally:
            for _ in range(self.jobs):
                while True:
                    try:
                        self.built.put(None, timeout=0.2)
                        break
                    except queue.Full:
                        if self.stop.is_set():
                            return

    def _build(self, group: StackGroup) -> ImageResult:
        try:
            spec = image_spec(group.stack, self.ctx.settings)
        except Exception as exc:  # noqa: BLE001 - a bad stack is broken, the others go on
            return ImageResult(group.stack.id, "", ok=False, error=str(exc), log_tail=str(exc))
        return build_image(self.client, spec, self.ctx.work_dir, log=self.ctx.log,
                           stop=self.stop, keep_context=self.ctx.keep)

    def _worker(self) -> None:
        while not self.stop.is_set():
            try:
                item = self.built.get(timeout=0.2)
            except queue.Empty:
                continue
            if item is None or self.stop.is_set():
                return
            group, image = item
            if not image.ok:
                self._broken(group, image, f"image build failed: {image.error}", image.log_tail)
                continue
            gpu = self.gpus.get() if self.ctx.gpus else None
            try:
                _StackRun(self, group, image, gpu).run()
            finally:
                if gpu is not None:
                    self.gpus.put(gpu)

    def _broken(self, group: StackGroup, image: ImageResult | None, reason: str,
                log_tail: str, started_at: str | None = None) -> None:
        from ..records import broken_records

        records = broken_records(group, ctx=self.ctx, backend="docker",
                                 image=image.record_image() if image and image.tag else None,
                                 reason=reason, log_tail=log_tail,
                                 started_at=started_at or now_iso())
        for rec in records:
            self.emit(rec)

    def _remove_live(self) -> None:
        with self.lock:
            containers = list(self.live.values())
        for c in containers:
            with contextlib.suppress(*ENGINE_ERRORS):
                if self.ctx.keep:
                    c.kill()
                else:
                    c.remove(force=True)


class _Interrupted(Exception):
    """The run was stopped (Ctrl-C or an internal error): cells in flight are dropped."""


class _StackRun:
    """One container running one stack's repros; owns that container's whole life."""

    def __init__(self, sched: _Scheduler, group: StackGroup, image: ImageResult, gpu: str | None):
        self.s, self.group, self.image, self.gpu = sched, group, image, gpu
        self.ctx = sched.ctx
        self.sid = group.stack.id
        self.outdir = self.ctx.work_dir / "out" / self.ctx.run_id / self.sid
        self.emitted: set[str] = set()
        self.started_at = now_iso()

    def run(self) -> None:
        container = None
        try:
            self._prepare_outdir()
            container = self._create()
            with self.s.lock:
                self.s.live[container.id] = container
            container.start()
            self.ctx.log(f"[{self.sid}] running {len(self.group.repros)} repro(s) in "
                         f"{container.name}")
            exit_code, timed_out = self._watch(container)
            self._save_logs(container)
            self._finish(exit_code, timed_out, container)
        except _Interrupted:
            self.ctx.log(f"[{self.sid}] interrupted")
        except ENGINE_ERRORS as exc:
            missing = [r for r in self.group.repros if r not in self.emitted]
            if missing:
                self.s._broken(StackGroup(self.group.stack, tuple(missing)), self.image,
                               f"container failed: {_first_line(exc)}", str(exc)[-TRACEBACK_LIMIT:],
                               self.started_at)
        finally:
            if container is not None:
                with self.s.lock:
                    self.s.live.pop(container.id, None)
                if not self.ctx.keep:
                    with contextlib.suppress(*ENGINE_ERRORS):
                        container.remove(force=True)
                else:
                    self.ctx.log(f"[{self.sid}] kept container {container.name} and {self.outdir}")

    def _prepare_outdir(self) -> None:
        if self.outdir.exists():
            shutil.rmtree(self.outdir)
        self.outdir.mkdir(parents=True)
        self.outdir.chmod(0o777)

    def _create(self) -> Any:
        ctx, settings = self.ctx, self.ctx.settings
        cmd = ["python", RUNNER, "--out", "/out", "--repros", ",".join(self.group.repros),
               "--timeout", _num(ctx.repro_timeout or settings.repro_timeout)]
        labels = {LABEL_MANAGED: "1", LABEL_RUN: ctx.run_id, LABEL_STACK: self.sid}
        return self.s.client.containers.create(
            self.image.tag, cmd, name=_container_name(ctx.run_id, self.sid), labels=labels,
            volumes={str(ctx.repros_dir.resolve()): {"bind": "/repros", "mode": "ro"},
                     str(self.outdir.resolve()): {"bind": "/out", "mode": "rw"}},
            network_mode="none", shm_size=settings.shm_size, user=f"{os.getuid()}:{os.getgid()}",
            environment={"HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"},
            device_requests=self._device_requests(), working_dir="/tmp", detach=True)

    def _device_requests(self) -> list[docker.types.DeviceRequest]:
        if not self.s.nvidia:
            return []
        if self.gpu is not None:
            return [docker.types.DeviceRequest(device_ids=[self.gpu], capabilities=[["gpu"]])]
        return [docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])]

    def _watch(self, container: Any) -> tuple[int | None, bool]:
        """Emit results as they appear until the container exits or overruns its time."""
        limit = self.ctx.stack_timeout or self.ctx.settings.stack_timeout
        deadline = time.monotonic() + limit
        while True:
            container.reload()
            state = container.attrs.get("State", {})
            self._emit_new()
            if state.get("Status") in ("exited", "dead"):
                return state.get("ExitCode"), False
            if self.s.stop.is_set():
                raise _Interrupted
            if time.monotonic() > deadline:
                self.ctx.log(f"[{self.sid}] stack timeout ({limit:g}s): killing {container.name}")
                with contextlib.suppress(*ENGINE_ERRORS):
                    container.kill()
                with contextlib.suppress(*ENGINE_ERRORS):
                    container.wait(timeout=KILL_GRACE_S)
                return None, True
            time.sleep(POLL_S)

    def _emit_new(self) -> None:
        done = [r for r in self.group.repros
                if r not in self.emitted and (self.outdir / f"{r}.json").is_file()]
        if done:
            self._emit(self._records(only=done))

    def _records(self, only: list[str] | None) -> list[dict[str, Any]]:
        from ..records import records_from_outdir

        return records_from_outdir(self.group, self.outdir, ctx=self.ctx, backend="docker",
                                   image=self.image.record_image(), started_at=self.started_at,
                                   only=only)

    def _emit(self, records: list[dict[str, Any]]) -> None:
        for rec in records:
            if rec.get("repro") in self.emitted:
                continue
            self.emitted.add(rec.get("repro"))
            self.s.emit(rec)

    def _finish(self, exit_code: int | None, timed_out: bool, container: Any) -> None:
        """Emit records for the repros that left no result file (stack died or overran)."""
        if all(r in self.emitted for r in self.group.repros):
            return
        records = [r for r in self._records(only=None) if r.get("repro") not in self.emitted]
        tail = _tail_text(self._logs_text(container))
        for rec in records:
            if timed_out:
                limit = self.ctx.stack_timeout or self.ctx.settings.stack_timeout
                rec["status"] = Status.TIMEOUT.value
                rec["message"] = (f"stack timeout: the container ran past {limit:g}s and was "
                                  "killed before this repro finished")
                rec["signal"] = "SIGKILL"
            elif _oom_killed(container):
                rec["message"] = f"container killed: out of memory. {rec.get('message', '')}"
            if exit_code is not None and rec.get("exit_code") is None:
                rec["exit_code"] = exit_code
            if tail and not rec.get("traceback"):
                rec["traceback"] = tail
        self._emit(records)

    def _logs_text(self, container: Any) -> str:
        with contextlib.suppress(*ENGINE_ERRORS):
            return container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
        return ""

    def _save_logs(self, container: Any) -> None:
        path = self.ctx.work_dir / "logs" / f"{self.sid}.run.log"
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self._logs_text(container), encoding="utf-8")


# -- helpers -----------------------------------------------------------------------------

def _container_name(run_id: str, stack_id: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "_.-" else "-" for ch in f"{run_id}-{stack_id}")
    return f"repromatrix-{safe}"[:200]


def _num(x: float) -> str:
    return f"{x:g}"


def _oom_killed(container: Any) -> bool:
    with contextlib.suppress(*ENGINE_ERRORS):
        container.reload()
        return bool(container.attrs.get("State", {}).get("OOMKilled"))
    return False


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:500]


def _tail(path: Path) -> str:
    try:
        return _tail_text(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return ""


def _tail_text(text: str) -> str:
    lines = text.rstrip().splitlines()[-LOG_TAIL_LINES:]
    return "\n".join(lines)[-TRACEBACK_LIMIT:]


def _build_error_summary(log_tail: str, error: str) -> str:
    """The most telling line of a failed build: pip's last ERROR line when there is one."""
    for line in reversed(log_tail.splitlines()):
        line = line.strip()
        if line.startswith("ERROR: ") and not line.startswith("ERROR: The command"):
            code = re.search(r"returned a non-zero code: (\d+)", error)
            where = f"a build step exited with {code.group(1)}" if code else _first_line(Exception(error))
            return f"{line[len('ERROR: '):]} ({where})"
    return error


def _missing_base_line(base: str, users: list[ImageSpec], exc: BaseException) -> str:
    public = users[0].public_base
    mapped = f" (mapped from {public})" if public != base else ""
    stacks = ", ".join(s.stack.id for s in users)
    return f"  {base}{mapped} for {stacks}: {_registry_cause(exc)}"


def _registry_cause(exc: BaseException) -> str:
    """The daemon's own reason inside an SDK error, e.g. 'lookup nvcr.io ...: no such host'."""
    text = _first_line(exc)
    quoted = re.search(r'\("(.*)"\)\s*$', text)
    inner = quoted.group(1) if quoted else text
    return re.sub(r'^Get "[^"]*":\s*', "", inner)
