"""Turn the runner's result files into result records (model.py schema).

Run stage, host side: a backend runs ``repros/runner.py`` somewhere (a
container, a local interpreter), which leaves ``env.json`` and one
``<repro>.json`` per finished repro in an output directory. This module reads
those files, validates them and wraps each in a complete record, or builds
``broken`` / ``error`` records for repros that left nothing behind.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import __version__
from .backends import RunContext
from .model import SCHEMA_VERSION, TRACEBACK_LIMIT, StackGroup, Status, cell_id

STATUSES = {s.value for s in Status}
STAGE_KEYS = ("name", "status", "duration_s", "message", "evidence")


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def new_record(group: StackGroup, repro: str, *, ctx: RunContext, backend: str,
               image: dict[str, Any] | None, env: dict[str, Any], started_at: str,
               status: str, message: str = "", stages: list[dict[str, Any]] | None = None,
               signature: str | None = None, workaround: str | None = None,
               traceback: str = "", duration_s: float = 0.0, exit_code: int | None = None,
               signal: str | None = None, finished_at: str | None = None) -> dict[str, Any]:
    """A complete record for one cell; every schema key is present."""
    if status not in STATUSES:
        status, message = Status.ERROR.value, f"unknown status {status!r} from the runner: {message}"
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": ctx.run_id,
        "cell": cell_id(group.stack.id, repro),
        "stack": group.stack.spec(),
        "repro": repro,
        "repro_sha256": ctx.repro_hashes.get(repro, ""),
        "cache_key": None,
        "status": status,
        "stages": stages or [],
        "signature": signature,
        "workaround": workaround,
        "message": _one_line(message),
        "traceback": (traceback or "")[-TRACEBACK_LIMIT:],
        "duration_s": float(duration_s or 0.0),
        "exit_code": exit_code,
        "signal": signal,
        "env": env,
        "image": image,
        "backend": backend,
        "harness_version": __version__,
        "host": socket.gethostname(),
        "started_at": started_at,
        "finished_at": finished_at or now_iso(),
    }


def _one_line(message: str) -> str:
    lines = str(message or "").strip().splitlines()
    return lines[0][:500] if lines else ""


def read_env(outdir: Path) -> dict[str, Any]:
    """The runner's probe (``env.json``), or ``{}`` when absent or unreadable."""
    data = _read_json(outdir / "env.json")
    return data if isinstance(data, dict) else {}


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _stages(raw: Any) -> list[dict[str, Any]]:
    out = []
    for s in raw if isinstance(raw, list) else []:
        if isinstance(s, dict) and "name" in s and s.get("status") in STATUSES:
            stage = {k: s.get(k) for k in STAGE_KEYS}
            stage["evidence"] = stage["evidence"] or {}
            for extra in ("role", "signature", "checks"):
                if extra in s:
                    stage[extra] = s[extra]
            out.append(stage)
    return out


def record_from_result(group: StackGroup, repro: str, result: Any, *, ctx: RunContext,
                       backend: str, image: dict[str, Any] | None, env: dict[str, Any],
                       started_at: str) -> dict[str, Any]:
    """Wrap one ``<repro>.json`` (already parsed, possibly garbage) in a record."""
    common = dict(ctx=ctx, backend=backend, image=image, env=env, started_at=started_at)
    if not isinstance(result, dict) or not isinstance(result.get("status"), str):
        return new_record(group, repro, status=Status.ERROR.value,
                          message="the runner's result file is not a result object", **common)
    return new_record(
        group, repro, status=result["status"], message=str(result.get("message") or ""),
        stages=_stages(result.get("stages")), signature=result.get("signature"),
        workaround=result.get("workaround"),
        traceback=str(result.get("traceback") or result.get("log_tail") or ""),
        duration_s=_float(result.get("duration_s")), exit_code=result.get("exit_code"),
        signal=result.get("signal"), **common)


def _float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return 0.0


def records_from_outdir(group: StackGroup, outdir: Path, *, ctx: RunContext, backend: str,
                        image: dict[str, Any] | None, started_at: str,
                        only: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Records for ``group``'s repros from a runner output directory.

    With ``only``: records for those repros whose result file exists (the
    others are left for later). Without: one record for every repro of the
    group; a missing result becomes ``broken`` when the probe failed (torch
    not importable), else ``error`` ("the runner left no result").
    """
    env = read_env(outdir)
    wanted = list(only) if only is not None else list(group.repros)
    out = []
    for repro in wanted:
        path = outdir / f"{repro}.json"
        common = dict(ctx=ctx, backend=backend, image=image, env=env, started_at=started_at)
        if path.is_file():
            out.append(record_from_result(group, repro, _read_json(path), **common))
        elif only is None:
            out.append(_missing(group, repro, env, outdir, common))
    return out


def _missing(group: StackGroup, repro: str, env: dict[str, Any], outdir: Path,
             common: dict[str, Any]) -> dict[str, Any]:
    if not env:
        return new_record(group, repro, status=Status.BROKEN.value,
                          message="the runner wrote no environment probe (it never started)",
                          traceback=_log_tail(outdir), **common)
    if env.get("error"):
        return new_record(group, repro, status=Status.BROKEN.value, message=str(env["error"]),
                          **common)
    return new_record(group, repro, status=Status.ERROR.value,
                      message="the runner left no result for this repro (it stopped early)",
                      traceback=_log_tail(outdir, repro), **common)


def _log_tail(outdir: Path, repro: str | None = None) -> str:
    for name in ([f"{repro}.log"] if repro else []) + ["runner.log", "probe.log"]:
        p = outdir / name
        if p.is_file():
            return p.read_text(encoding="utf-8", errors="replace")[-TRACEBACK_LIMIT:]
    return ""


def broken_records(group: StackGroup, *, ctx: RunContext, backend: str,
                   image: dict[str, Any] | None, reason: str, log_tail: str,
                   started_at: str) -> list[dict[str, Any]]:
    """One ``broken`` record per repro: the environment could not be built or started."""
    return [new_record(group, repro, ctx=ctx, backend=backend, image=image, env={},
                       started_at=started_at, status=Status.BROKEN.value, message=reason,
                       traceback=log_tail) for repro in group.repros]
