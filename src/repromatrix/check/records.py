"""The records `repromatrix check` answers from, as verdict rows (``check.decide.row_of``).

Flow: a store, a published page's records or the shipped snapshot -> **check.records**
-> check.decide. One row per cell whose shown record says yes or no (``pass``, ``fail``, a
stand-in ``skip``: ``check.decide.decisive``): the record its page shows (``store.reader``'s
rule: the latest, a real verdict over a stand-in one).

- the snapshot (default): ``data/check-snapshot.json`` in the package, the rows of
  ``results/published`` made when the snapshot was last regenerated
  (``python -m repromatrix.check.records``; a test holds it equal to the records);
- a store (``--results DIR``): through its index (``StoreIndex.shown``: each cell's shown
  record, with its stack's versions as the index keeps them per record, no line read);
- a published page's records (``--from FILE|URL``: its ``results.json.gz``, or the plain
  ``results.json`` pages wrote before 2026-11-29): every record in it, settled per cell here.
"""

from __future__ import annotations

import gzip
import io
import json
import sys
import zlib
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from repromatrix.errors import ConfigError, InfraError, UsageError
from repromatrix.rules.verdict import DECIDED_SQL
from repromatrix.rules.versions import RECORD_PACKAGES
from repromatrix.store.lines import canonical, dumps, loads
from repromatrix.store.reader import entry, settle_cell
from repromatrix.textsafe import bounded

from .decide import decisive, row_of

if TYPE_CHECKING:
    from repromatrix.store.index import StoreIndex

SNAPSHOT = "data/check-snapshot.json"
SNAPSHOT_FORMAT = 1
PUBLISHED = Path("results") / "published"  # what the snapshot is made from, in a checkout
# the records that say yes or no (rules.verdict), in SQL over a record ``r``
DECISIVE_SQL = f"WHERE {DECIDED_SQL}"
FETCH_TIMEOUT = 30.0
FETCH_LIMIT = 512 * 1024 * 1024


def snapshot_rows() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The shipped snapshot's rows and what it says of itself."""
    data = json.loads(resources.files("repromatrix").joinpath(SNAPSHOT).read_bytes())
    return data["rows"], {"kind": "snapshot", "where": data["made_from"],
                          "cells": len(data["rows"]), "newest": data["newest"]}


def make_snapshot(store: Path) -> str:
    """The snapshot's text for ``store`` (``results/published``): one row a line, sorted."""
    rows, source = store_rows(store)
    lines = [json.dumps(r, sort_keys=True, ensure_ascii=False) for r in
             sorted(rows, key=lambda r: r["cell"])]
    head = {"format": SNAPSHOT_FORMAT, "made_from": PUBLISHED.as_posix(),
            "newest": source["newest"]}
    return (json.dumps(head, sort_keys=True)[:-1] + ', "rows": [\n' + ",\n".join(lines)
            + "\n]}\n")


def store_rows(root: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each cell's shown record in the store ``root`` that says yes or no, as rows (through
    its index: what it keeps per record)."""
    from repromatrix.store.index import StoreIndex

    if not root.is_dir():
        raise UsageError(f"--results {root}: not a results folder (a store `repromatrix run` "
                         f"writes)")
    with StoreIndex.open(root) as index:
        rows = index_rows(index)
    return rows, rows_source("store", str(root), rows)


def index_rows(index: StoreIndex) -> list[dict[str, Any]]:
    """``store_rows`` of an open index (of one store, or a merged one): each row from the
    columns the index keeps per record (its key fields, its stack's kind and versions, a
    GPU seen), no record line read."""
    return [{"stack": key.stack_id, "kind": key.kind, "gpu": bool(key.gpu),
             "versions": {p: getattr(key, p) for p in RECORD_PACKAGES},
             "cell": key.cell, "repro": key.repro, "status": key.status,
             "evidence": key.evidence or "", "workaround": key.workaround,
             "run_id": key.run_id, "finished_at": key.finished_at,
             "host": PurePosixPath(key.path).parent.name}
            for key in index.shown(DECISIVE_SQL)]


def rows_source(kind: str, where: str, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Where ``rows`` came from, as the answer's ``source`` says it."""
    return {"kind": kind, "where": where, "cells": len(rows),
            "newest": max((r["finished_at"] for r in rows), default="")}


def results_json_rows(where: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The rows of a published page's ``results.json.gz`` (a file, or an http(s) URL)."""
    raw = _fetch(where) if where.startswith(("http://", "https://")) else _read(where)
    return results_rows(raw, where)


def results_rows(raw: bytes, where: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``results_json_rows`` of the bytes of a ``results.json(.gz)`` read from ``where``."""
    try:
        data = loads(inflated(raw, where))
    except (ValueError, RecursionError):
        data = None
    records = data.get("records") if isinstance(data, dict) else None
    if not isinstance(records, list):
        raise UsageError(f"--from {bounded(where, 300)}: not a page's results.json.gz (a JSON "
                         f"object with \"records\": [...], as `repromatrix report` writes)")
    rows = [r for r in settled_rows(r for r in records if isinstance(r, dict)) if decisive(r)]
    if records and not any(isinstance(r, dict) and isinstance(r.get("cell"), str) for r in records):
        raise UsageError(f"--from {bounded(where, 300)}: holds no usable results record")
    return rows, rows_source("results.json", where, rows)


def inflated(raw: bytes, where: str) -> bytes:
    """``raw`` as JSON text: a gzip file (every member) inflated, at most ``FETCH_LIMIT`` bytes
    of it; other bytes as they are."""
    if not raw.startswith(b"\x1f\x8b"):
        return raw
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as gz:
            text = gz.read(FETCH_LIMIT + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise UsageError(f"--from {bounded(where, 300)}: a damaged gzip file ({exc})") from None
    if len(text) > FETCH_LIMIT:
        raise UsageError(f"--from {bounded(where, 300)}: larger than {FETCH_LIMIT >> 20} MB inflated")
    return text


def settled_rows(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each cell's shown record among ``records``, by the store's one rule, as rows."""
    by_cell: dict[str, list[tuple[Any, Mapping[str, Any]]]] = {}
    lines: dict[str, bytes] = {}  # each record's line by its source, for the conflict rule
    for n, rec in enumerate(records):
        if not all(isinstance(rec.get(k), str) and rec.get(k) for k in
                   ("run_id", "cell", "repro", "status")):
            continue
        lines[f"#{n}"] = dumps(rec)
        by_cell.setdefault(rec["cell"], []).append((entry(dict(rec), lines[f"#{n}"], f"#{n}"), rec))
    out = []
    for pairs in by_cell.values():  # (sources are not file:line: the lines come from here)
        shown = settle_cell((e for e, _ in pairs), lambda e: canonical(lines[e.source])).shown
        out.append(row_of(next(r for e, r in pairs if e.source == shown.source)))
    return out


def _read(where: str) -> bytes:
    from repromatrix.config.validate import read_regular

    try:
        return read_regular(Path(where), "give a page's results.json.gz")
    except ConfigError as exc:
        raise UsageError(f"--from {exc}") from None
    except OSError as exc:
        raise UsageError(f"--from {bounded(where, 300)}: cannot read: {exc.strerror or exc}") from None


def _fetch(url: str) -> bytes:
    import urllib.error  # only here: with http, ssl and email, 30 ms of a report's start
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT) as response:  # noqa: S310
            data: bytes = response.read(FETCH_LIMIT + 1)
    except urllib.error.HTTPError as exc:
        raise UsageError(f"--from {bounded(url, 300)}: the server answered {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise InfraError(f"--from {bounded(url, 300)}: cannot fetch it: "
                         f"{getattr(exc, 'reason', None) or exc}") from None
    if len(data) > FETCH_LIMIT:
        raise UsageError(f"--from {bounded(url, 300)}: larger than {FETCH_LIMIT >> 20} MB")
    return data


def main(argv: list[str]) -> int:
    """``python -m repromatrix.check.records [STORE] [OUT]``: write the snapshot."""
    store = Path(argv[0]) if argv else PUBLISHED
    out = Path(argv[1]) if len(argv) > 1 else Path("src/repromatrix") / SNAPSHOT
    out.write_text(make_snapshot(store), encoding="utf-8")
    print(f"{out}: the rows of {store}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
