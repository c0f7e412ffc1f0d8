"""check.records: the shipped snapshot is the published records' rows, and a store, a
page's results.json.gz and the snapshot give the same answer from the same records."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from support import ROOT

from repromatrix.check.records import (
    SNAPSHOT,
    make_snapshot,
    results_json_rows,
    snapshot_rows,
    store_rows,
)
from repromatrix.errors import UsageError

PUBLISHED = ROOT / "results" / "published"


@pytest.fixture
def published(tmp_path: Path) -> Path:
    """A copy of results/published (its records only): a store of real records."""
    store = tmp_path / "store"
    shutil.copytree(PUBLISHED / "vm", store / "vm")
    return store


def test_the_shipped_snapshot_is_current_with_results_published(published):
    """Regenerate it with `python -m repromatrix.check.records` when this fails."""
    shipped = (ROOT / "src" / "repromatrix" / SNAPSHOT).read_text(encoding="utf-8")
    assert make_snapshot(published) == shipped


def by_cell(rows: list[dict]) -> dict[str, dict]:
    return {r["cell"]: r for r in rows}


def test_a_store_and_a_page_s_results_json_give_the_snapshot_s_rows(published, tmp_path):
    from repromatrix.report.render import render_site

    snapshot, source = snapshot_rows()
    assert source["kind"] == "snapshot" and source["cells"] == len(snapshot) > 20
    rows, source = store_rows(published)
    assert by_cell(rows) == by_cell(snapshot) and source["kind"] == "store"
    render_site([published], tmp_path / "site")
    page, source = results_json_rows(str(tmp_path / "site" / "results.json.gz"))
    assert by_cell(page) == by_cell(snapshot) and source["kind"] == "results.json"


@pytest.mark.parametrize("content, needle", [
    (b"not json at all", "not a page's results.json.gz"),
    (b'{"generated_at": "x", "rows": []}', "not a page's results.json.gz"),
    (b'{"records": [{"cell": 1}]}', "no usable results record"),
    (b"\x1f\x8b\x08\x00 damaged", "a damaged gzip file"),
    (gzip.compress(b'{"rows": []}', mtime=0), "not a page's results.json.gz"),
])
def test_a_file_that_is_no_results_json_is_refused(tmp_path, content, needle):
    path = tmp_path / "results.json"
    path.write_bytes(content)
    with pytest.raises(UsageError, match=needle):
        results_json_rows(str(path))


def test_a_page_s_records_are_read_compressed_or_as_pages_wrote_them_before(published, tmp_path):
    """``--from`` reads a page's results.json.gz, and the plain results.json of a page an
    earlier release rendered: the same rows from the same records."""
    from repromatrix.report.render import render_site

    render_site([published], tmp_path / "site")
    packed = tmp_path / "site" / "results.json.gz"
    plain = tmp_path / "results.json"
    plain.write_bytes(gzip.decompress(packed.read_bytes()))
    rows = by_cell(results_json_rows(str(packed))[0])
    assert rows and by_cell(results_json_rows(str(plain))[0]) == rows


def test_a_missing_or_irregular_results_json_and_a_missing_store_are_refused(tmp_path):
    with pytest.raises(UsageError, match="cannot read"):
        results_json_rows(str(tmp_path / "absent.json"))
    with pytest.raises(UsageError, match="not a regular file"):
        results_json_rows(str(tmp_path))
    with pytest.raises(UsageError, match="not a results folder"):
        store_rows(tmp_path / "absent")


def test_the_snapshot_is_json_with_one_row_a_line():
    text = (ROOT / "src" / "repromatrix" / SNAPSHOT).read_text(encoding="utf-8")
    data = json.loads(text)
    assert text.count("\n") == len(data["rows"]) + 2 and data["made_from"] == "results/published"


def test_a_store_read_again_follows_new_records_from_its_index_alone(tmp_path, monkeypatch):
    """Each row comes from what the index keeps per record (versions, kind, GPU): nothing
    cached per user, and a store whose records changed answers as one read afresh."""
    store = tmp_path / "store"
    (store / "vm").mkdir(parents=True)
    runs = sorted((PUBLISHED / "vm").glob("*.jsonl"))
    first_day = [p for p in runs if p.name.startswith("20261124")]
    assert first_day and len(first_day) < len(runs)
    for path in first_day:
        shutil.copy(path, store / "vm" / path.name)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    before, _ = store_rows(store)
    assert by_cell(store_rows(store)[0]) == by_cell(before)
    for path in runs:
        shutil.copy(path, store / "vm" / path.name)
    after, _ = store_rows(store)
    assert by_cell(after) != by_cell(before)
    assert by_cell(after) == by_cell(snapshot_rows()[0])
    assert not (tmp_path / "cache").exists()


def test_a_results_json_is_fetched_from_a_url(published, tmp_path):
    import functools
    import http.server
    import threading

    from repromatrix.report.render import render_site

    render_site([published], tmp_path / "site")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "site"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        rows, source = results_json_rows(f"{base}/results.json.gz")
        assert by_cell(rows) == by_cell(snapshot_rows()[0]) and source["where"].startswith(base)
        with pytest.raises(UsageError, match="answered 404"):
            results_json_rows(f"{base}/absent.json")
    finally:
        server.shutdown()


def test_a_results_json_with_differing_copies_of_one_record_is_settled(published, tmp_path):
    """Two different lines for one (run, cell, attempt) in results.json: the conflict rule
    compares them from the page's own lines (they are in no store file)."""
    line = next(iter((published / "vm").glob("*.jsonl"))).read_text().splitlines()[0]
    record = json.loads(line)
    other = {**record, "message": record.get("message", "") + " (written again)"}
    page = tmp_path / "results.json"
    page.write_text(json.dumps({"records": [record, other, {**record}]}))
    rows, source = results_json_rows(str(page))
    assert [r["cell"] for r in rows] == [record["cell"]] and source["cells"] == 1


def test_the_index_keeps_each_record_s_versions_as_check_reads_them(published):
    """What the index keeps per record (kind, GPU seen, versions) is ``check.decide.row_of``'s
    reading of that record, for every published record, shown or not."""
    import sqlite3

    from repromatrix.check.decide import row_of
    from repromatrix.rules.versions import RECORD_PACKAGES
    from repromatrix.store.index import INDEX_NAME

    store_rows(published)  # the index made
    with sqlite3.connect(published / INDEX_NAME) as db:
        kept = {(run, cell, attempt): (kind, bool(gpu), dict(zip(RECORD_PACKAGES, versions, strict=True)))
                for run, cell, attempt, kind, gpu, *versions in db.execute(
                    f"SELECT run_id, cell, attempt, kind, gpu, {', '.join(RECORD_PACKAGES)} FROM records")}
    read = {}
    for path in sorted((published / "vm").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                row = row_of(record)
                read[(record["run_id"], record["cell"], record.get("attempt", 1))] = (
                    row["kind"], row["gpu"], row["versions"])
    assert len(kept) > 100 and kept == read
