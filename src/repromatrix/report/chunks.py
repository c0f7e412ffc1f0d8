"""Cell details as static data chunks that load on demand, from file:// too.

Flow: report -> **report.chunks** -> out/data/c<N>.js. The index and the repro
pages embed only what the grid needs; a cell's details (message, stages,
traceback tail, environment probe, history, command) sit in one chunk of at
most ``CHUNK_CELLS`` cells of one repro column, shared by every page. A chunk
is a script that registers its data (``repromatrixChunk(N, "...")``): browsers
refuse ``fetch`` from file://, but load scripts.

The data is JSON (``{"envs": [...], "cells": [[id, detail], ...]}``: cells as pairs, so no
hostile id ever becomes an object key, ``__proto__``), compressed with zlib and written as
one base64 string (``pack``; the page inflates it with the browser's
``DecompressionStream("deflate")``, ``read_payload`` here): a cell's detail repeats its
record's stages and traceback, which ``results.json.gz`` holds too, and compressed the chunks
are about a tenth of their JSON.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import zlib
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repromatrix.rules.verdict import STANDIN
from repromatrix.store.reader import Span

from .cache import write_sourced
from .markup import script_json
from .written import RenderState

if TYPE_CHECKING:
    from .load import Reduced

CHUNK_CELLS = 50
Member = tuple[str, str, str]  # a chunk's cell: (id, pieces key, scope)
Details = Callable[[list[str], Path, RenderState], Mapping[str, tuple[bytes, bytes]]]
_DECODER = json.JSONDecoder()
DATA_DIR = "data"
LEVEL = 1  # zlib's fastest: a tenth of the JSON of real records, for half the time of its default
_CHUNK = re.compile(rb'repromatrixChunk\((\d+),"([A-Za-z0-9+/=]*)"\);\n')
_DETAIL_KEYS = ("id", "stack", "repro", "status", "signature", "workaround", "message",
                "traceback", "duration", "exit", "stages", "image", "run_id", "host",
                "backend", "started_at", "finished_at", "expected", "expected_note",
                "contradicted", "conflict", "flaky", "previous", "command", "standin", "built",
                "untold")


def assign_chunks(columns: Sequence[Sequence[str]], leftover: Sequence[str],
                  cells: Mapping[str, dict[str, Any]]) -> int:
    """Number every cell's chunk (``cell["chunk"]``): each repro column in blocks of
    CHUNK_CELLS, in row order; cells outside the grid last. Returns the chunk count."""
    chunk = 0
    for group in (*columns, leftover):
        for start in range(0, len(group), CHUNK_CELLS):
            for cid in group[start:start + CHUNK_CELLS]:
                cells[cid]["chunk"] = chunk
            chunk += 1
    return chunk


def history_rows(segments: Sequence[Span]) -> list[list[Any]]:
    """A timeline as compact rows: [status, first run, first at, last run, last at, runs]."""
    return [[s.status, s.first_run, s.first_at, s.last_run, s.last_at, s.runs]
            + ([s.evidence] if s.evidence == STANDIN else []) for s in segments]


def detail_json(cell: Mapping[str, Any]) -> str:
    """What the drawer shows of one cell (empty fields left out), as script-safe JSON
    without its closing brace: the chunk writer adds the cell's env and scope."""
    out = {k: cell[k] for k in _DETAIL_KEYS if cell[k] not in ("", None, [], False)}
    out["history"] = history_rows(cell["history"])
    if cell["history_dropped"]:
        out["history_dropped"] = cell["history_dropped"]
    return str(script_json(out))[:-1]


def chunk_groups(cells: Mapping[str, Mapping[str, Any]]) -> dict[int, list[Member]]:
    """Each chunk's cells, in the site's cell order: (id, pieces key, scope)."""
    groups: dict[int, list[Member]] = {}
    for cell in cells.values():
        groups.setdefault(cell["chunk"], []).append((cell["id"], cell["pieces"], cell["scope"]))
    return groups


def chunk_source(number: int, members: Sequence[Member]) -> str:
    """A digest of what chunk ``number`` is made from: its cells' pieces and scopes."""
    return hashlib.sha1(json.dumps([number, [list(m) for m in members]]).encode(
        "utf-8", "surrogatepass")).hexdigest()


def write_chunks(out: Path, groups: Mapping[int, Sequence[Member]], sources: Mapping[int, str],
                 details: Details, state: RenderState, book: Reduced | None = None) -> int:
    """Write data/c<N>.js for every chunk whose source (``chunk_source``) changed since the
    last render into ``out`` (chunks no longer used go), copied or made (``report.cache.
    write_sourced``) of ``details(cells, folder, state)``: each cell's detail (its entry's
    start) and environment rows (``report.cell.Pieces``; a cell's may be read back from the
    chunk it was written in: ``read_entries``). Returns the chunk count."""
    folder = out / DATA_DIR
    folder.mkdir(parents=True, exist_ok=True)
    numbers = {f"{DATA_DIR}/c{number}.js": number for number in sources}

    def make(names: list[str]) -> dict[str, bytes]:
        found = details([c for name in names for c, _, _ in groups[numbers[name]]], folder, state)
        scopes: dict[str, bytes] = {}
        return {name: _made(numbers[name], groups[numbers[name]], found, scopes) for name in names}

    written = write_sourced(out, {n: sources[k] for n, k in numbers.items()}, make, state, book)
    if book is not None and written:
        book.keep_placed([(cid, key, numbers[name], sources[numbers[name]]) for name in written
                          for cid, key, _ in groups[numbers[name]]])
    state.remove_others(folder, "c*.js")
    return len(sources)


def _made(number: int, members: Sequence[Member], found: Mapping[str, tuple[bytes, bytes]],
          scopes: dict[str, bytes]) -> bytes:
    """Chunk ``number``'s script, made of its cells' details and environments (``found``)."""
    local: dict[bytes, int] = {}  # each environment once (equal rows, equal digest)
    rows = []
    for cid, _, scope_name in members:
        detail, env = found[cid]
        if env not in local:
            local[env] = len(local)
        scope = scopes.get(scope_name)
        if scope is None:
            scope = scopes[scope_name] = str(script_json(scope_name)).encode("utf-8")
        rows.append(b'%s,"env":%d,"scope":%s}]' % (detail, local[env], scope))
    return pack(number, b'{"envs":[%s],"cells":[%s]}' % (b",".join(local), b",".join(rows)))


def read_entries(path: Path, cells: Collection[str]) -> dict[str, tuple[bytes, bytes]]:
    """The detail and environment rows of each of ``cells`` in the chunk ``path`` (as
    ``write_chunks`` wrote them, byte for byte); a cell not found, or a file that is not
    such a chunk, gives nothing (the caller makes them again)."""
    try:
        text = read_payload(path)[1]
        if not text.startswith('{"envs":['):
            return {}
        head = len('{"envs":[')
        envs, end = _elements(text, head)
        if not text.startswith('"cells":[', end + 2):
            return {}
        rows, _ = _elements(text, end + 2 + len('"cells":['))
        found = {}
        for value, raw in rows:
            if not (isinstance(value, list) and len(value) == 2 and value[0] in cells):
                continue
            env, scope = value[1]["env"], value[1]["scope"]
            tail = f',"env":{env},"scope":{script_json(scope)}}}]'
            if type(env) is int and 0 <= env < len(envs) and raw.endswith(tail):
                found[value[0]] = (raw[:-len(tail)].encode("utf-8"), envs[env][1].encode("utf-8"))
        return found
    except (OSError, ValueError, IndexError, TypeError, KeyError, RecursionError, zlib.error):
        return {}


def pack(number: int, payload: bytes) -> bytes:
    """Chunk ``number``'s script: its JSON ``payload`` deflated (zlib) in one base64 string."""
    return b'repromatrixChunk(%d,"%s");\n' % (
        number, base64.b64encode(zlib.compress(payload, LEVEL)))


def read_payload(path: Path) -> tuple[int, str]:
    """A chunk's number and its JSON text, as ``pack`` wrote them; ValueError when ``path``
    is not such a chunk (OSError when it cannot be read)."""
    found = _CHUNK.fullmatch(path.read_bytes())
    if found is None:
        raise ValueError(f"{path}: not a data chunk")
    try:
        text = zlib.decompress(base64.b64decode(found.group(2), validate=True)).decode("utf-8")
    except (zlib.error, ValueError) as exc:
        raise ValueError(f"{path}: not a data chunk ({exc})") from exc
    return int(found.group(1)), text


def _elements(text: str, at: int) -> tuple[list[tuple[Any, str]], int]:
    """The JSON values of the list whose first element starts at ``at`` (each with its own
    text), and where its closing bracket is."""
    out = []
    while text[at] != "]":
        value, end = _DECODER.raw_decode(text, at)
        out.append((value, text[at:end]))
        at = end + 1 if text[end] == "," else end
    return out, at
