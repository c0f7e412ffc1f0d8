"""Cell details as static data chunks that load on demand, from file:// too.

Flow: report -> **report.chunks** -> out/data/c<N>.js. The index and the repro
pages embed only what the grid needs; a cell's details (message, stages,
traceback tail, environment probe, history, command) sit in one chunk of at
most ``CHUNK_CELLS`` cells of one repro column, shared by every page. A chunk
is a script that registers its data (``repromatrixChunk(N, {...})``): browsers
refuse ``fetch`` from file://, but load scripts.

A chunk holds JSON made script-safe, and lists cells as ``[id, detail]`` pairs
so no hostile id ever becomes an object key (``__proto__``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from repromatrix.store.reader import Span
from repromatrix.store.record import STANDIN

from .markup import script_json
from .state import RenderState

CHUNK_CELLS = 50
SEARCH_LIMIT = 300
DATA_DIR = "data"
_DETAIL_KEYS = ("id", "stack", "repro", "status", "signature", "workaround", "message",
                "traceback", "duration", "exit", "stages", "image", "run_id", "host",
                "backend", "started_at", "finished_at", "expected", "expected_note",
                "contradicted", "conflict", "flaky", "previous", "command", "standin")


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


def write_chunks(out: Path, cells: Mapping[str, Mapping[str, Any]],
                 details: Callable[[list[str]], Mapping[str, tuple[bytes, bytes]]],
                 state: RenderState) -> int:
    """Write data/c<N>.js for every chunk whose cells' pieces or scopes changed since the
    last render into ``out`` (others stay as they are, unread; chunks no longer used go);
    ``details(cells)``: each cell's detail (the start of its ``[id, {...}]`` entry) and
    environment rows (``report.cell.Pieces``), asked once for every chunk to write.
    Returns the chunk count."""
    folder = out / DATA_DIR
    folder.mkdir(parents=True, exist_ok=True)
    groups: dict[int, list[Mapping[str, Any]]] = {}
    for cell in cells.values():
        groups.setdefault(cell["chunk"], []).append(cell)
    sources = {number: hashlib.sha1(json.dumps(
        [number, [[c["id"], c["pieces"], c["scope"]] for c in members]]).encode(
            "utf-8", "surrogatepass")).hexdigest() for number, members in groups.items()}
    stale = [number for number, source in sources.items()
             if not state.kept(folder / f"c{number}.js", source)]
    found = details([c["id"] for number in stale for c in groups[number]])
    scopes: dict[str, bytes] = {}
    for number in stale:
        local: dict[str, int] = {}
        envs, rows = [], []
        for cell in groups[number]:
            detail, env = found[cell["id"]]
            if cell["env"] not in local:
                local[cell["env"]] = len(local)
                envs.append(env)
            scope = scopes.get(cell["scope"])
            if scope is None:
                scope = scopes[cell["scope"]] = str(script_json(cell["scope"])).encode("utf-8")
            rows.append(b'%s,"env":%d,"scope":%s}]' % (detail, local[cell["env"]], scope))
        data = b'repromatrixChunk(%d,{"envs":[%s],"cells":[%s]});\n' % (
            number, b",".join(envs), b",".join(rows))
        state.write_made(folder / f"c{number}.js", sources[number], data)
    state.remove_others(folder, "c*.js")
    return len(groups)
