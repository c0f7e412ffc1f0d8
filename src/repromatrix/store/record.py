"""The result record: one frozen ``Result`` per cell run, made in one place.

Run stage -> results store -> report / bisect. The runner (container side)
leaves ``<repro>.json`` files; the engine that ran it (docker, a local
process) reports what it saw from outside as ``EngineFacts``. ``make_result``
combines the two into a ``Result``; nothing else decides a cell's status, and
no engine edits one afterwards.

Serialized as one JSON object per line (``to_dict`` / ``from_dict``); the
schema is the dataclass below. ``from_dict`` upgrades older records through
``MIGRATIONS`` (asv's ``Results.update_to_2`` idea), so a store written by an
earlier harness stays readable.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

from repromatrix import __version__
from repromatrix.model import TRACEBACK_LIMIT, Status, cell_id
from repromatrix.rules.verdict import STANDIN, evidence_level
from repromatrix.textsafe import bounded

from .record_versions import migrate

SCHEMA_VERSION = 3
STATUSES = frozenset(s.value for s in Status)
ROLES = ("main", "workaround", "info")
MESSAGE_LIMIT = 500
STAGE_TEXT_LIMIT = 4000  # a stage's message, and each text value of its evidence and checks
EVIDENCE_KEYS_LIMIT = 50
CHECKS_LIMIT = 50
NAME_LIMIT = 200  # stage names, signature ids, workaround status, signal names
RECORD_LIMIT = 64 * 1024  # bytes of one record's JSON line, whatever the repro writes
STANDINS_LIMIT = 20
# Evidence levels of a verdict (``rules.verdict.evidence_level``): a real GPU / TensorRT stack
# decided it, or torch-tensorrt's own code did with TensorRT stood in (repros/harness/_standin.py).
STANDIN_BAD = "reproduced in torch-tensorrt's code, TensorRT stood in"
STANDIN_GOOD = "not reproduced in torch-tensorrt's code up to where TensorRT is needed " \
               "(TensorRT stood in)"


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class StageResult:
    """One named step of a repro, as the runner recorded it."""

    name: str
    status: str
    role: str = "main"
    duration_s: float | None = 0.0  # None: unknown
    message: str = ""
    evidence: Mapping[str, Any] = field(default_factory=dict)
    signature: str | None = None
    checks: tuple[Any, ...] = ()
    standins: tuple[str, ...] = ()  # what was stood in while it ran (empty: nothing)

    @classmethod
    def from_raw(cls, raw: Any) -> StageResult | None:
        """A stage from the runner's JSON, or None when it is not one."""
        if not isinstance(raw, dict):
            return None
        get = raw.get  # every record's stages pass here: each key is looked up once
        name, status, role = get("name"), get("status"), get("role")
        if not isinstance(name, str) or status not in STATUSES:
            return None
        checks, standins, message = get("checks"), get("standins"), get("message")
        return cls(standins=tuple(bounded(str(x), 100) for x in standins[:STANDINS_LIMIT])
                   if isinstance(standins, list) and standins else (),
                   name=bounded(name, NAME_LIMIT), status=status, duration_s=_seconds(get("duration_s")),
                   role=role if role in ROLES else "main",
                   message=bounded(message if isinstance(message, str) else str(message or ""),
                                   STAGE_TEXT_LIMIT),
                   evidence=_bounded_evidence(get("evidence")),
                   signature=_name(get("signature")),
                   checks=tuple(_bounded_check(c, STAGE_TEXT_LIMIT) for c in checks[:CHECKS_LIMIT])
                   if isinstance(checks, list) and checks else ())

    def shrunk(self, limit: int) -> StageResult:
        """This stage with every text cut to ``limit`` characters (head and tail kept)."""
        return replace(self, message=bounded(self.message, limit),
                       evidence=_bounded_evidence(self.evidence, limit),
                       checks=tuple(_bounded_check(c, limit) for c in self.checks))

    def to_dict(self) -> dict[str, Any]:
        # field by field, not dataclasses.asdict: its deep copy was a third of a report's time
        out = {f.name: getattr(self, f.name) for f in _STAGE_FIELDS}
        out["checks"] = list(self.checks)
        out["evidence"] = dict(self.evidence)
        out["standins"] = list(self.standins)
        return out


_STAGE_FIELDS = dataclasses.fields(StageResult)


@dataclass(frozen=True)
class EngineFacts:
    """What the engine saw of the runner process from outside (never a verdict)."""

    exit_code: int | None = None
    signal: str | None = None
    timed_out: bool = False
    limit_s: float | None = None
    oom_killed: bool = False
    log_tail: str = ""
    reason: str = ""  # why the environment could not be prepared or started (broken)
    unavailable: str = ""  # why no engine can make the environment on this machine (skip)


@dataclass(frozen=True)
class Result:
    """The record of one cell run. Field order is the JSON key order."""

    run_id: str
    cell: str
    stack: Mapping[str, Any]
    repro: str
    status: str
    repro_sha256: str = ""
    cache_key: str | None = None
    attempt: int = 1
    stages: tuple[StageResult, ...] = ()
    signature: str | None = None
    workaround: str | None = None
    message: str = ""
    traceback: str = ""
    duration_s: float | None = 0.0  # None: unknown
    exit_code: int | None = None
    signal: str | None = None
    env: Mapping[str, Any] = field(default_factory=dict)
    image: Mapping[str, Any] | None = None
    backend: str = ""
    backend_reason: str = ""  # why this engine made the environment (a fallback chain's choice)
    reproduce: tuple[str, ...] = ()  # the run's options a pasted command needs (reproduce_args)
    harness_version: str = __version__
    host: str = ""
    started_at: str = ""
    finished_at: str = ""
    schema_version: int = SCHEMA_VERSION

    @property
    def stack_id(self) -> str:
        return str(self.stack.get("id", ""))

    def stage(self, name: str) -> StageResult | None:
        return next((s for s in self.stages if s.name == name), None)

    @functools.cached_property
    def evidence_level(self) -> str:
        """What decided this record: ``real`` (a fail or pass on the real stack),
        ``standin`` (a fail raised in torch-tensorrt's code, every main stand-in stage
        cleared the bug's point, or a plain script passed, with TensorRT stood in), or ""
        (no verdict). Worked out once per Result (its fields never change)."""
        return evidence_level(self.status, [{"role": s.role, "status": s.status, "standins": s.standins,
                                             "evidence": s.evidence} for s in self.stages])

    @property
    def standin_verdict(self) -> str | None:
        """``bad`` / ``good`` when stand-in stages decided this record, else None."""
        if not any(s.standins for s in self.stages) or self.evidence_level != STANDIN:
            return None
        return "bad" if self.status == "fail" else "good"

    @property
    def standin_note(self) -> str:
        """The stand-in evidence level in words ("" when stand-ins did not decide it)."""
        return {"bad": STANDIN_BAD, "good": STANDIN_GOOD}.get(self.standin_verdict or "", "")

    @property
    def built_note(self) -> str:
        """How the environment differs from the stack's pins, in words ("" when made as
        pinned): PyPI's build taken where the pinned CUDA index could not be reached
        (``engines.choice.pypi_instead``; ``backend_reason`` says why), and torch symbols
        a torch-tensorrt wheel needs that its torch lacks, stood in (``env.standins``)."""
        notes = []
        pinned = self.stack.get("pinned_index")
        if pinned:
            notes.append(f"made from PyPI's build (CUDA {self.stack.get('cuda') or '?'}), not from "
                         f"the {pinned} index the stack pins, which could not be reached")
        standins = self.env.get("standins")
        missing = standins.get("missing_symbols") if standins is not None \
            and isinstance(standins, (dict, Mapping)) else None
        if missing:
            notes.append(f"not installable as published: torch-tensorrt {self.env.get('torch_tensorrt')}'s "
                         f"wheel needs {len(missing)} symbol(s) torch {self.env.get('torch')} lacks, "
                         "stood in here, so the verdict is about its code, not a stack to install")
        return "; ".join(notes)

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["stack"] = dict(self.stack)
        out["env"] = dict(self.env)
        out["image"] = dict(self.image) if self.image is not None else None
        out["stages"] = [s.to_dict() for s in self.stages]
        out["reproduce"] = list(self.reproduce)
        return out

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Result:
        """A Result from its JSON form (any known schema version); ValueError says why not."""
        data = migrate(raw)
        problem = _problem(data)
        if problem:
            raise ValueError(problem)
        kwargs = {k: v for k, v in data.items() if k in _RESULT_FIELDS}
        kwargs["stages"] = tuple(filter(None, map(StageResult.from_raw, data.get("stages") or [])))
        kwargs["env"] = data.get("env") if isinstance(data.get("env"), dict) else {}
        kwargs["duration_s"] = _seconds(data.get("duration_s"))
        again = data.get("reproduce")
        kwargs["reproduce"] = tuple(str(a) for a in again) if isinstance(again, list) else ()
        return cls(**kwargs)


_RESULT_FIELDS = frozenset(f.name for f in dataclasses.fields(Result))  # Result.from_dict keeps these


def _problem(data: Mapping[str, Any]) -> str | None:
    version = data.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        return f"unknown schema_version {version!r} (this harness reads 1 to {SCHEMA_VERSION})"
    for key in ("run_id", "cell", "repro", "status"):
        if not isinstance(data.get(key), str) or not data[key]:
            return f"missing or non-string {key!r}"
    if data["status"] not in STATUSES:
        return f"unknown status {data['status']!r}"
    stack = data.get("stack")
    if not isinstance(stack, dict) or not isinstance(stack.get("id"), str):
        return "missing stack.id"
    return None


# -- making results ------------------------------------------------------------------------

@dataclass(frozen=True)
class CellRun:
    """What the run stage knows about a cell before it runs: the constant part of its Result."""

    run_id: str
    stack: Mapping[str, Any]
    repro: str
    repro_sha256: str
    cache_key: str
    backend: str
    backend_reason: str = ""
    image: Mapping[str, Any] | None = None
    started_at: str = field(default_factory=now_iso)
    attempt: int = 1
    reproduce: tuple[str, ...] = ()


def make_result(cell: CellRun, runner: Any, env: Mapping[str, Any] | None,
                facts: EngineFacts | None) -> Result:
    """The one constructor of a Result.

    ``runner`` is the parsed ``<repro>.json`` (None when the runner left none,
    possibly garbage); ``env`` is the runner's probe (``env.json``, None when
    absent); ``facts`` is what the engine saw, None while the runner still runs.
    """
    env = dict(env) if isinstance(env, Mapping) else {}
    if isinstance(runner, dict) and isinstance(runner.get("status"), str):
        fields = _from_runner(runner)
        if facts is not None and facts.oom_killed and fields["status"] == Status.CRASH.value:
            fields["message"] = f"out of memory (killed at the memory limit): {fields['message']}"
    elif runner is not None:
        fields = {"status": Status.ERROR.value,
                  "message": "the runner's result file is not a result object"}
    else:
        fields = _without_runner(env, facts or EngineFacts())
    if facts is not None:
        if fields.get("exit_code") is None:
            fields["exit_code"] = facts.exit_code
        if not fields.get("traceback"):
            fields["traceback"] = facts.log_tail
    if fields["status"] not in STATUSES:
        fields = {"status": Status.ERROR.value,
                  "message": f"unknown status {fields['status']!r} from the runner: "
                             f"{fields.get('message', '')}"}
    fields["message"] = _one_line(fields.get("message", ""))
    fields["traceback"] = bounded(str(fields.get("traceback") or ""), TRACEBACK_LIMIT)
    return fit_record(Result(
        run_id=cell.run_id, cell=cell_id(str(cell.stack["id"]), cell.repro), stack=dict(cell.stack),
        repro=cell.repro, repro_sha256=cell.repro_sha256, cache_key=cell.cache_key,
        attempt=cell.attempt, env=escaped(env), image=cell.image, backend=cell.backend,
        backend_reason=bounded(cell.backend_reason, MESSAGE_LIMIT * 4),
        reproduce=tuple(cell.reproduce), host=socket.gethostname(), started_at=cell.started_at,
        finished_at=now_iso(), **escaped(fields)))


def escaped(value: Any) -> Any:
    """``value`` with every string that cannot be UTF-8 (lone surrogates, e.g. a file name
    decoded with ``os.fsdecode``) written with visible escapes (``\\udcff``): kept, not lost."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {escaped(k): escaped(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(escaped(v) for v in value)
    if isinstance(value, StageResult):
        return StageResult(**{f.name: escaped(getattr(value, f.name))
                              for f in dataclasses.fields(value)})
    return value


def finite(value: Any, key: str = "") -> Any:
    """``value`` with every number JSON cannot hold (NaN, ±Infinity, which a repro's numeric
    evidence may carry) replaced, so every record line and ``results.json.gz`` stay JSON that
    any parser reads: a duration by null (unknown), anything else by its text."""
    if isinstance(value, float) and not math.isfinite(value):
        if key == "duration_s":
            return None
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: finite(v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def record_size(result: Result) -> int:
    """Bytes of the record's JSON line (as ``ResultStore.append`` writes it)."""
    line = json.dumps(finite(result.to_dict()), ensure_ascii=False, sort_keys=True, default=str)
    return len(line.encode("utf-8", "backslashreplace")) + 1


def fit_record(result: Result) -> Result:
    """``result`` cut to RECORD_LIMIT bytes: stage texts, then the traceback and the
    environment probe, then trailing stages; the traceback's first line says what was cut."""
    if record_size(result) <= RECORD_LIMIT:
        return result
    fitted = result
    for limit in (1000, 200, 40):
        fitted = replace(result, stages=tuple(s.shrunk(limit) for s in result.stages),
                         traceback=bounded(result.traceback, limit * 4),
                         env=_bounded_evidence(result.env, limit))
        if record_size(fitted) <= RECORD_LIMIT - 200:
            break
    kept, dropped = len(fitted.stages), 0
    if record_size(fitted) > RECORD_LIMIT - 200:  # the most leading stages that fit: bisect
        low, high = 0, kept - 1
        while low < high:
            mid = (low + high + 1) // 2
            fits = record_size(replace(fitted, stages=fitted.stages[:mid])) <= RECORD_LIMIT - 200
            low, high = (mid, high) if fits else (low, mid - 1)
        fitted, dropped = replace(fitted, stages=fitted.stages[:low]), kept - low
    what = f"stage texts cut to {limit} characters" + (
        f", the last {dropped} of {len(result.stages)} stages dropped" if dropped else "")
    if record_size(fitted) > RECORD_LIMIT - 200:
        fitted, what = replace(fitted, env={}), what + ", the environment probe dropped"
    note = f"[record cut to fit {RECORD_LIMIT // 1024} KB ({record_size(result):,} bytes): {what}]"
    return replace(fitted, traceback=f"{note}\n{fitted.traceback}")


def _from_runner(raw: Mapping[str, Any]) -> dict[str, Any]:
    stages = raw.get("stages") if isinstance(raw.get("stages"), list) else []
    return {
        "status": raw["status"], "message": str(raw.get("message") or ""),
        "stages": tuple(s for s in map(StageResult.from_raw, stages) if s),
        "signature": _name(raw.get("signature")),
        "workaround": _name(raw.get("workaround")),
        "traceback": str(raw.get("traceback") or raw.get("log_tail") or ""),
        "duration_s": _seconds(raw.get("duration_s")),
        "exit_code": raw.get("exit_code") if isinstance(raw.get("exit_code"), int) else None,
        "signal": _name(raw.get("signal")),
    }


def _name(value: Any) -> str | None:
    """A short text field of the runner's (signature id, workaround status, signal), bounded."""
    return bounded(value, NAME_LIMIT) if isinstance(value, str) else None


def _without_runner(env: Mapping[str, Any], facts: EngineFacts) -> dict[str, Any]:
    """A repro that left no result: the environment, the engine or the runner is to blame."""
    if facts.unavailable:
        return {"status": Status.SKIP.value, "message": facts.unavailable}
    if facts.reason:
        return {"status": Status.BROKEN.value, "message": facts.reason}
    if facts.timed_out:
        limit = f" ({facts.limit_s:g}s)" if facts.limit_s else ""
        return {"status": Status.TIMEOUT.value, "signal": "SIGKILL",
                "message": f"stack timeout{limit}: the runner was killed before this repro finished"}
    if facts.oom_killed:
        return {"status": Status.CRASH.value, "signal": facts.signal or "SIGKILL",
                "message": "out of memory: the runner was killed at its memory limit"}
    if not env:
        return {"status": Status.BROKEN.value, "signal": facts.signal,
                "message": "the runner wrote no environment probe (it never started)"}
    if env.get("error"):
        return {"status": Status.BROKEN.value, "message": str(env["error"])}
    return {"status": Status.ERROR.value, "signal": facts.signal,
            "message": "the runner left no result for this repro (it stopped early)"}


def broken_results(cells: Iterable[CellRun], reason: str, log_tail: str = "") -> list[Result]:
    """One ``broken`` Result per cell: the environment could not be prepared or started."""
    facts = EngineFacts(reason=reason, log_tail=log_tail)
    return [make_result(c, None, None, facts) for c in cells]


def unavailable_results(cells: Iterable[CellRun], reason: str) -> list[Result]:
    """One ``skip`` Result per cell: no engine can make the stack's environment here."""
    facts = EngineFacts(unavailable=reason)
    return [make_result(c, None, None, facts) for c in cells]


def _bounded_evidence(raw: Any, limit: int = STAGE_TEXT_LIMIT) -> dict[str, Any]:
    """A mapping (a stage's evidence, a check, the environment probe) with every text bounded
    to ``limit`` (head and tail kept, the cut said); nested values as bounded JSON text."""
    if not isinstance(raw, (dict, Mapping)) or not raw:
        return {}
    out: dict[str, Any] = {}
    for key, value in list(raw.items())[:EVIDENCE_KEYS_LIMIT]:
        if isinstance(value, str):
            value = bounded(value, limit)
        elif isinstance(value, int) and not isinstance(value, bool) and len(str(value)) > limit:
            value = bounded(str(value), limit)
        elif not isinstance(value, (int, float, bool, type(None))):
            text = json.dumps(value, default=str, ensure_ascii=False)
            value = value if len(text) <= limit else bounded(text, limit)
        out[bounded(str(key), NAME_LIMIT)] = value
    return out


def _bounded_check(raw: Any, limit: int) -> Any:
    """One check entry (a mapping from the protocol) with its texts bounded."""
    if isinstance(raw, (dict, Mapping)):
        return _bounded_evidence(raw, limit)
    return bounded(json.dumps(raw, default=str, ensure_ascii=False), limit)


def _one_line(message: Any) -> str:
    lines = str(message or "").strip().splitlines()
    return shorten(lines[0], MESSAGE_LIMIT) if lines else ""


def shorten(text: str, limit: int) -> str:
    """``text`` cut at a word boundary (never mid-word), with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    head = cut.rsplit(" ", 1)[0] if " " in cut[limit // 2:] else cut
    return head.rstrip(" ,;:") + "…"


def _seconds(v: Any) -> float | None:
    """A duration as recorded: None when unknown (null, missing, or not a finite number, as
    ``finite`` writes one), never a made-up 0."""
    if v is None or isinstance(v, bool):
        return None
    try:
        seconds = float(v)
    except (TypeError, ValueError):
        return None
    return seconds if math.isfinite(seconds) else None
