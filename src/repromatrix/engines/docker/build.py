"""Image builds with the classic builder: one content-hash tag per stack, never rebuilt.

Images stage, docker side: ``engines.images.image_spec`` says what to build (pure);
``build_image`` builds it unless the tag exists, with host networking, logging
to ``<work_dir>/logs/<stack id>.log``. A failed build is an ``ImageResult``
with ``ok=False`` and the most telling log line, never an exception.
"""

from __future__ import annotations

import re
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import docker

from repromatrix.engines.images import ImageResult, ImageSpec, build_context
from repromatrix.model import TRACEBACK_LIMIT, Note, Preparing, Say

from .daemon import ENGINE_ERRORS, find_image, first_line

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
LOG_TAIL_LINES = 60
LABEL_CA = "repromatrix.ca_bundle_sha256"  # which CA bundle the image trusts (part of its tag)


def build_image(client: docker.DockerClient, spec: ImageSpec, work_dir: Path, *,
                log: Say = print, stop: threading.Event | None = None,
                keep_context: bool = False) -> ImageResult:
    """Build one image (classic builder, host network) unless its tag exists; never raises."""
    sid = spec.stack.id
    t0 = time.monotonic()
    existing = find_image(client, spec.tag)
    if existing is not None:
        log(Preparing(sid, f"image {spec.tag} is cached"))
        return ImageResult(sid, spec.tag, ok=True, id=existing.id, cached=True)
    log_path = work_dir / "logs" / f"{sid}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    ctx_dir = work_dir / "build" / sid
    log(Preparing(sid, f"building {spec.tag} from {spec.base_image} (log: {log_path})"))
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
        tail = _last_lines(log_path)
        error = _build_error_summary(tail, error)
        log(Note(sid, f"build FAILED after {elapsed:.0f}s: {error}"))
        return ImageResult(sid, spec.tag, ok=False, log_path=log_path, error=error,
                           log_tail=tail, duration_s=elapsed)
    log(Preparing(sid, f"built {spec.tag} in {elapsed:.0f}s"))
    return ImageResult(sid, spec.tag, ok=True, id=image.id, log_path=log_path, duration_s=elapsed)


def _stream_build(client: docker.DockerClient, spec: ImageSpec, ctx_dir: Path, fh: Any,
                  stop: threading.Event | None) -> str:
    """Run the build, copying its output into ``fh``; returns the error text ('' when ok)."""
    try:
        stream = client.api.build(path=str(ctx_dir), tag=spec.tag, rm=True, forcerm=True,
                                  network_mode="host", decode=True, pull=False,
                                  labels={**spec.labels, LABEL_CA: spec.ca_sha256 or "none"})
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
        return f"docker build failed: {first_line(exc)}"
    return ""


def _last_lines(path: Path) -> str:
    try:
        return tail_text(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return ""


def tail_text(text: str) -> str:
    lines = text.rstrip().splitlines()[-LOG_TAIL_LINES:]
    return "\n".join(lines)[-TRACEBACK_LIMIT:]


def _build_error_summary(log_tail: str, error: str) -> str:
    """The most telling line of a failed build: pip's last ERROR line when there is one."""
    for line in reversed(log_tail.splitlines()):
        line = line.strip()
        if line.startswith("ERROR: ") and not line.startswith("ERROR: The command"):
            code = re.search(r"returned a non-zero code: (\d+)", error)
            where = f"a build step exited with {code.group(1)}" if code else first_line(Exception(error))
            return f"{line[len('ERROR: '):]} ({where})"
    return error
