"""One cell: its record's summary, its view, and the pieces of the page it decides.

Flow: report.load -> **report.cell** -> report.render (assembly) -> out/.
``record_summary`` is what only a cell's record decides. ``make_pieces`` adds what the
cell's own history and the catalog decide (previous status, timeline, flaky attempts,
conflict, expectation, reproduce command) and renders everything of the cell that does
not depend on the rest of the site:

    head    the light view the site model reads (status, previous, expectation, ...),
            its stack's versions, its stages and environment keys, the grid's <td> and
            the repro page's <tr> around the parts the whole site decides (detail chunk,
            stage codes, stack label and scope), and its results.csv row without the
            stack's columns
    detail  what the drawer shows: the start of its entry in a chunk (``report.chunks``)
    env     its environment probe as rows

``pieces_key`` digests every input of those pieces, so the report's cache keeps them
(``RenderCache.keep_pieces``) and a later render of that store reuses them, into any folder,
until one input changes: a render costs what changed, plus the assembly of the site.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import os
import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency
    _orjson = None

from repromatrix.model import TRACEBACK_LIMIT, Repro, Status
from repromatrix.rules.verdict import said, untold
from repromatrix.store.lines import dumps, loads
from repromatrix.store.reader import Span
from repromatrix.store.record import Result, StageResult

from . import expect as expect_mod
from .answers import BISECT_TAG
from .chunks import detail_json
from .data_files import CSV_COLUMNS, csv_safe
from .markup import STATUS_INFO, script_json, td_pieces, tr_pieces
from .stacks import pairing_note, stack_versions

MESSAGE_LIMIT = 2000
_JSON_ENCODER = json.JSONEncoder(default=str, ensure_ascii=False)
_HERE = Path(__file__).resolve().parent
# a cell's pieces change only with the report's sources, those it reads records with, the
# rules it reads them by, and the compatibility table and its reader (a stack's pairing note)
PIECES_VERSION = hashlib.sha1(b"".join(
    [p.read_bytes() for p in sorted(_HERE.glob("*.py"))]
    + [(_HERE.parent / name).read_bytes() for name in ("model.py", "store/record.py",
                                                       "store/reader.py", "store/lines.py",
                                                       "rules/verdict.py", "rules/versions.py",
                                                       "data/compat.yaml", "config/compat.py")]
)).hexdigest()[:16]
_OWN_CSV = CSV_COLUMNS[1:-2]
PAIRINGS = "pairings"  # make_pieces' ``seen``: torch/torchvision pair -> pairing note
# what the site model reads of a cell (the rest is in its pieces)
LIGHT_KEYS = ("id", "stack", "repro", "status", "previous", "contradicted", "expected",
              "expected_when", "workaround", "message", "standin", "verdict", "untold",
              "finished_at")


def env_rows(env: Any) -> list[list[str]]:
    """An env probe as [key, value] rows; nested values shown as compact JSON."""
    if not isinstance(env, Mapping):
        return [] if env is None else [["probe", str(env)]]
    rows = []
    for key, value in env.items():
        scalar = _SCALAR_JSON.get(type(value))
        text = value if isinstance(value, str) else scalar(value) if scalar is not None \
            else _JSON_ENCODER.encode(value)
        rows.append([str(key), text[:MESSAGE_LIMIT]])
    return rows


# what the JSON encoder writes for these exact types, without its per-call setup (most of
# an environment's values; every other type but text goes through it)
_SCALAR_JSON: dict[type, Any] = {int: int.__repr__, bool: lambda v: "true" if v else "false",
                                 type(None): lambda v: "null"}


class RecordFacts(NamedTuple):
    """What the page needs of a record beyond its view: expectations, stacks, the command
    (the attribute names of ``Result``, so ``expect``, ``StackBook`` and
    ``reproduce_command`` take either)."""

    cell: str
    repro: str
    status: str
    run_id: str
    stack_id: str
    stack: Mapping[str, Any]
    env: Mapping[str, Any]
    finished_at: str
    backend: str
    reproduce: Sequence[str]
    evidence_level: str  # rules.verdict: what decided it (real, standin or "")


def record_summary(rec: Result) -> dict[str, Any]:
    """The part of a cell's view that only its record decides (JSON data)."""
    view = {
        "id": rec.cell, "stack": rec.stack_id, "repro": rec.repro,
        "status": rec.status, "letter": STATUS_INFO[rec.status][0],
        "signature": _text(rec.signature), "workaround": _text(rec.workaround),
        "message": _text(rec.message)[:MESSAGE_LIMIT],
        "traceback": _text(rec.traceback)[-TRACEBACK_LIMIT:],
        "duration": _duration(rec.duration_s),
        "exit": _exit(rec), "stages": stage_rows(rec.stages),
        "image": image_text(rec.image),
        "run_id": _text(rec.run_id), "host": _text(rec.host),
        "backend": _text(rec.backend),
        "started_at": _text(rec.started_at), "finished_at": _text(rec.finished_at),
        "evidence": skip_evidence(rec.status, rec.stages),
        "standin": rec.standin_note,  # the verdict's evidence level when TensorRT was stood in
        "verdict": said(rec.status, rec.evidence_level),  # rules.verdict: bad, good, cannot tell
        # why it cannot tell, in one line (an error's new problem: not the bug), rules.verdict
        "untold": untold(rec.status, rec.evidence_level, rec.message,
                         ({"name": st.name, "role": st.role, "status": st.status,
                           "message": st.message} for st in rec.stages)),
        "built": rec.built_note,  # PyPI's build made instead of the pinned index's
    }
    facts = [rec.cell, rec.repro, rec.status, rec.run_id, rec.stack_id, dict(rec.stack),
             rec.env, rec.finished_at, rec.backend, list(rec.reproduce), rec.evidence_level]
    return {"view": view, "stages": [[st.name, st.status] for st in rec.stages], "facts": facts}


def cell_view(summary: Mapping[str, Any], repro: Repro | None, previous: str, conflict: bool,
              matrix: str, store: str = "") -> dict[str, Any]:
    """One cell as the drawer and the grid see it: its record's summary (``record_summary``)
    and what its history and the catalog decide (``store``: the folder its record is read
    from now)."""
    facts = RecordFacts(*summary["facts"])
    expectation = expect_mod.evaluate(repro.expect, facts) if repro else None  # type: ignore[arg-type]
    view = dict(summary["view"])
    view.update({
        "expected": expectation.status if expectation else "",
        "expected_note": expectation.note if expectation else "",
        "expected_when": expectation.when_text if expectation else "",
        "contradicted": bool(expectation and expectation.contradicted),
        "conflict": conflict, "previous": previous,
        "command": reproduce_command(facts, matrix, store),  # type: ignore[arg-type]
    })
    return view


def skip_evidence(status: str, stages: Iterable[StageResult]) -> str:
    """For a skipped cell, the stand-in stages that still ran (e.g. CPU stages with fake
    CUDA tensors): "evidence: fake_export pass, emulated_decomposition fail"."""
    if status != Status.SKIP.value:
        return ""
    ran = [f"{s.name} {s.status}" for s in stages
           if s.role == "info" and s.status in ("pass", "fail")]
    return "evidence: " + ", ".join(ran) if ran else ""


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _duration(value: Any) -> str:
    try:
        return f"{float(value):.1f} s"
    except (TypeError, ValueError):
        return ""


def _exit(rec: Result) -> str:
    if rec.signal:
        return f"signal {rec.signal}"
    return "" if rec.exit_code is None else f"exit {rec.exit_code}"


def stage_rows(stages: Iterable[StageResult]) -> list[dict[str, str]]:
    """Per-stage rows: name, role, status, duration, message (hostile text, bounded)."""
    rows = []
    for st in stages:
        evidence = st.evidence
        rows.append({
            "name": st.name, "role": st.role, "status": st.status,
            "duration": _duration(st.duration_s),
            "message": st.message[:MESSAGE_LIMIT],
            "standins": ", ".join(st.standins),
            "evidence": "" if evidence in (None, "", {}, [])
            else _JSON_ENCODER.encode(evidence)[:MESSAGE_LIMIT],
        })
    return rows


def image_text(image: Any) -> str:
    """Image tag and id/digest as one line."""
    if image is None or not isinstance(image, (dict, Mapping)):
        return _text(image)
    parts = [f"{k} {image[k]}" for k in ("tag", "id", "digest") if image.get(k)]
    return "; ".join(parts)


def reproduce_command(rec: Result, matrix: str, store: str = "") -> str:
    """A shell command that re-runs exactly this cell: the one its run recorded (with the
    matrix, catalog, mirror map, CA bundle, wheelhouses and backend it used; its paths
    moved along with the store, see ``relocated``), else one rebuilt from the record
    (records written before runs recorded theirs).

    A cell of the stack that `--backend local` folds pip/ngc stacks into (``local``)
    is selected by its repro and re-run on the same interpreter."""
    if rec.reproduce:
        return shlex.join(relocated(rec.reproduce, store))
    folded = rec.backend == "local" and rec.stack_id == "local"
    args = ["repromatrix", "run", "--matrix", matrix, "-k", rec.repro if folded else rec.cell,
            "--rerun"]
    if folded:
        args += ["--backend", "local", "--python", str(rec.stack.get("interpreter") or "python3")]
    elif rec.backend in ("venv",):
        args += ["--backend", rec.backend]
    return shlex.join(args)


def relocated(command: Sequence[str], store: str) -> list[str]:
    """A recorded command whose ``--results`` folder is not where its store is read from now
    (a store copied from another machine, shards merged, published records): every argument
    under the old folder follows the store, shown relative to the current folder when it is
    inside it (a published page's commands then work from a checkout). Unchanged otherwise."""
    old = next((b for a, b in zip(command, command[1:], strict=False) if a == "--results"), "")
    if not store or not old or os.path.normpath(old) == os.path.normpath(store):
        return list(command)
    try:
        here = os.getcwd()
        now = os.path.relpath(store, here) if os.path.commonpath([here, store]) == here else store
    except (OSError, ValueError):  # no current folder (deleted), or another drive
        now = store
    old = old.rstrip("/")
    return [now + arg[len(old):] if arg == old or arg.startswith(old + "/") else arg
            for arg in command]


class Head(NamedTuple):
    """What the site's assembly reads of a cell (see the module's docstring)."""

    view: dict[str, Any]       # LIGHT_KEYS
    stack: list[Any]           # [stack id, kind, versions, finished at, scope's stack fields,
                               #  pairing note]
    stage_key: str             # [name, status] of each stage, as JSON: the same text, the
                               # same stage codes
    env_key: str               # a digest of the environment rows
    td: list[str]              # markup.td_pieces
    tr: list[str]              # markup.tr_pieces
    csv: str                   # the results.csv row up to the stack's columns


class Pieces(NamedTuple):
    """A cell's pieces (see the module's docstring)."""

    head: Head
    detail: bytes
    env: bytes


def stored_head(head: Head) -> tuple[bytes, bytes]:
    """``head`` as the report's cache keeps it: its data as JSON, and its markup (most of it) as its
    parts joined by NUL, which reads back without a JSON parse (as JSON after ``\x01`` when
    a part holds a NUL itself)."""
    parts = [*head.td, *head.tr, head.csv]
    plain = not parts[0].startswith("\x01") and not any("\x00" in p for p in parts)
    markup = "\x00".join(parts) if plain else "\x01" + json.dumps(parts)
    return (dumps([head.view, head.stack, head.stage_key, head.env_key]),
            markup.encode("utf-8", "surrogatepass"))


def read_head(data: bytes, markup: bytes) -> Head:
    """The ``Head`` that ``stored_head`` stored as ``data`` and ``markup``."""
    text = markup.decode("utf-8", "surrogatepass")
    parts = json.loads(text[1:]) if text[:1] == "\x01" else text.split("\x00")
    view, stack, stage_key, env_key = loads(data)
    return Head(view, stack, stage_key, env_key, parts[:2], parts[2:5], parts[5])


def _exact(value: Any) -> Any:
    """An exact, hashable key for JSON data (C-speed serialisation where it can)."""
    if _orjson is not None:
        try:
            return _orjson.dumps(value, option=_orjson.OPT_SORT_KEYS)
        except (TypeError, _orjson.JSONEncodeError):
            pass
    return json.dumps(value, sort_keys=True, default=repr)


def site_key(repros: Mapping[str, Repro], matrix: str) -> str:
    """A digest of what decides every cell's pieces alike: the report's sources, the
    catalog's expectations, the matrix named in commands and the current folder (commands
    of a moved store are shown relative to it)."""
    try:
        here = os.getcwd()
    except OSError:
        here = ""
    expect = [[rid, list(r.expect)] for rid, r in sorted(repros.items())]
    # not sort_keys: the order of a rule's conditions is in the text the page shows
    text = json.dumps([PIECES_VERSION, matrix, here, expect], default=str)
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def pieces_key(site: str, record: str, store: str, history: str) -> str:
    """A key of every input of a cell's pieces: the site's (``site_key``) and the store it is
    read from (digested together, once per store), its record's digest and its own history's
    (``history_key``, or the index's digest of it)."""
    return f"{_site_store(site, store)} {record} {history}"


@functools.lru_cache(maxsize=64)
def _site_store(site: str, store: str) -> str:
    return hashlib.sha1(f"{site} {store}".encode("utf-8", "surrogatepass")).hexdigest()


def history_key(previous: str, conflict: bool, flaky: str, history: Sequence[Span],
                dropped: int) -> str:
    """A digest of what a cell's own history puts in its pieces (``repr`` tells every str,
    int and bool apart; ``tuple.__repr__`` is the C one)."""
    text = repr((previous, conflict, flaky, dropped, [tuple.__repr__(s) for s in history]))
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def make_pieces(summary: Mapping[str, Any], repro: Repro | None, *, previous: str,
                conflict: bool, flaky: str, history: list[Span], dropped: int, matrix: str,
                store: str, seen: dict[Any, Any] | None = None) -> Pieces:
    """Everything of one cell that the rest of the site does not decide (``seen``: what
    cells made in one go share, such as their stack's environment, worked out once, and
    under ``PAIRINGS`` the pairing notes known so far, see ``stacks.known_pairings``)."""
    view = cell_view(summary, repro, previous, conflict, matrix, store)
    view["history"], view["history_dropped"], view["flaky"] = history, dropped, flaky
    facts = RecordFacts(*summary["facts"])
    tags = facts.stack.get("tags")
    scope_stack = {"id": str(facts.stack.get("id", "")),
                   "tags": [BISECT_TAG] if isinstance(tags, list) and BISECT_TAG in tags else []}
    seen = {} if seen is None else seen
    known = seen.setdefault(PAIRINGS, {})
    key = (_exact(facts.stack), _exact(facts.env))
    if key not in seen:
        env_text = str(script_json(env_rows(facts.env)))
        versions = stack_versions(facts)  # type: ignore[arg-type]
        seen[key] = (env_text, hashlib.sha1(env_text.encode("utf-8")).hexdigest(), versions,
                     pairing_note(versions, known))
    env_text, env_key, versions, pairing = seen[key]
    stages = summary["stages"]
    row = io.StringIO(newline="")
    csv.writer(row).writerow([csv_safe(view["id"]), *[csv_safe(view[k]) for k in _OWN_CSV]])
    head = Head(
        {k: view[k] for k in LIGHT_KEYS},
        [facts.stack_id, str(facts.stack.get("kind") or ""), dict(versions), facts.finished_at,
         scope_stack, pairing],
        json.dumps(stages, ensure_ascii=False), env_key,
        td_pieces(view), tr_pieces(view), row.getvalue()[:-2],
    )
    detail = f"[{script_json(view['id'])},{detail_json(view)}"
    return Pieces(head, detail.encode("utf-8"), env_text.encode("utf-8"))


