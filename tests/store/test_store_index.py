"""The SQLite index beside the result logs: rebuilt, kept current, and answering like the loader.

Real files, a real SQLite database and a real second process; the records are
the golden sets in tests/data/results and records shaped like the run stage's.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from repromatrix.store.index import INDEX_NAME, StaleIndex, StoreIndex, recorded_keys, recorded_shown
from repromatrix.store.index_db import RECORD_INDEXES
from repromatrix.store.reader import Settler, Span, history
from repromatrix.store.record import SCHEMA_VERSION, Result
from repromatrix.store.results import ResultStore, latest_by_cell, load_records, previous_by_cell

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "results"


def record(cell: int = 0, run: int = 1, status: str = "fail", **over) -> dict:
    stack, repro = f"pip-t2.{cell % 7}", f"repro_{cell}"
    rec = {
        "schema_version": SCHEMA_VERSION, "run_id": f"run-{run}", "cell": f"{stack}--{repro}",
        "stack": {"id": stack, "kind": "pip"}, "repro": repro, "status": status,
        "cache_key": f"key-{run}", "stages": [{"name": "eager", "status": status}],
        "message": f"{status} in run {run}", "traceback": "Traceback ...\n" * 20,
        "env": {"torch": "2.4.1"}, "backend": "local", "host": "box",
        "started_at": f"2026-01-{run:02d}T00:00:00Z", "finished_at": f"2026-01-{run:02d}T00:01:00Z",
    }
    rec.update(over)
    return rec


def append(store: ResultStore, **kw) -> Path:
    return store.append(Result.from_dict(record(**kw)))


def assert_like_loader(root: Path, index: StoreIndex) -> None:
    """The index's answers, through the store's one reader, are the JSONL loader's."""
    loaded = load_records([root])
    latest = index.shown_records()
    assert latest == latest_by_cell(loaded.records)
    assert {c: (k.run_id, k.status, k.finished_at, k.workaround) for c, k in index.keys().items()} \
        == {c: (r.run_id, r.status, r.finished_at, r.workaround) for c, r in latest.items()}
    assert sorted(map(str, index.skipped())) == sorted(map(str, loaded.skipped))
    kept, conflicts = settle(index)
    assert [str(c) for c in conflicts] == [str(c) for c in loaded.conflicts]
    assert len(kept) == len(loaded.records)
    assert {c: (e.run_id, e.status) for c, e in previous_by_cell(kept).items()} \
        == {c: (r.run_id, r.status) for c, r in previous_by_cell(loaded.records).items()}
    settled = {h.shown.cell: h for h in index.histories()}  # each cell, settled on arrival
    assert {c: (h.shown.run_id, h.shown.status) for c, h in settled.items()} \
        == {c: (r.run_id, r.status) for c, r in latest.items()}
    assert sum(h.kept for h in settled.values()) == len(loaded.records)
    assert {c: h.history().previous for c, h in settled.items() if h.history().previous} \
        == {c: r.status for c, r in previous_by_cell(loaded.records).items()}


def settle(index: StoreIndex) -> tuple[list, list]:
    """The index's entries through the store's conflict rule, as the report reads them."""
    settler = Settler()
    for e, _ in index.entries():
        settler.add(e)
    return settler.finish()


def count(index: StoreIndex) -> int:
    return len(settle(index)[0])


@pytest.mark.parametrize("name", sorted(p.name for p in GOLDEN.iterdir()))
def test_answers_like_the_jsonl_loader_on_every_golden_set(tmp_path, name):
    root = tmp_path / name
    shutil.copytree(GOLDEN / name, root)
    with StoreIndex.open(root) as index:
        assert_like_loader(root, index)
    assert (root / INDEX_NAME).is_file()


def test_conflicts_identical_copies_and_history_like_the_loader(tmp_path):
    store = ResultStore(tmp_path)
    for run in (1, 2, 3, 4):
        for cell in range(5):
            append(store, cell=cell, run=run, status="pass" if run in (2, 3) else "fail")
    line = (tmp_path / "box" / "run-4.jsonl").read_text().splitlines()[0]
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "copy.jsonl").write_text(line + "\n")  # the same run shipped twice
    changed = dict(json.loads(line), status="error", finished_at="2026-01-04T00:02:00Z")
    (tmp_path / "other" / "conflict.jsonl").write_text(json.dumps(changed) + "\n")
    store.close()
    with StoreIndex.open(tmp_path) as index:
        assert_like_loader(tmp_path, index)
        kept, conflicts = settle(index)
        assert len(conflicts) == 1
        assert history(e for e in kept if e.cell == "pip-t2.0--repro_0") == ([
            Span("fail", 1, "run-1", "2026-01-01T00:01:00Z", "run-1", "2026-01-01T00:01:00Z", "real"),
            Span("pass", 2, "run-2", "2026-01-02T00:01:00Z", "run-3", "2026-01-03T00:01:00Z", "real"),
            Span("error", 1, "run-4", "2026-01-04T00:02:00Z", "run-4", "2026-01-04T00:02:00Z")], 0)
        assert history(e for e in kept if e.cell == "pip-t2.1--repro_1")[0][-1].status == "fail"


def test_rebuilt_when_deleted_or_damaged(tmp_path):
    store = ResultStore(tmp_path)
    for run in (1, 2):
        for cell in range(3):
            append(store, cell=cell, run=run)
    store.close()
    db = tmp_path / INDEX_NAME
    before = StoreIndex.open(tmp_path)
    keys = before.keys()
    before.close()
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    with StoreIndex.open(tmp_path) as index:
        assert index.keys() == keys and len(keys) == 3
        assert_like_loader(tmp_path, index)
    db.write_bytes(b"this is not an SQLite database" * 100)
    with StoreIndex.open(tmp_path) as index:
        assert index.keys() == keys


def record_indexes(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {name for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'records'"
            " AND name NOT LIKE 'sqlite_%'")}


def test_a_first_build_makes_the_record_indexes_after_its_rows(tmp_path):
    store = ResultStore(tmp_path)
    for cell in range(3):
        append(store, cell=cell, run=1)
    store.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{tmp_path / INDEX_NAME}{suffix}").unlink(missing_ok=True)
    with StoreIndex.open(tmp_path) as index:  # a first build: an empty records table filled
        assert len(index.keys()) == 3
    assert record_indexes(tmp_path / INDEX_NAME) == set(RECORD_INDEXES)
    with (tmp_path / "more.jsonl").open("w", encoding="utf-8") as fh:  # read into a full one
        fh.write(json.dumps(record(cell=4, run=2)) + "\n")
    with StoreIndex.open(tmp_path) as index:
        assert len(index.keys()) == 4
        assert_like_loader(tmp_path, index)
    assert record_indexes(tmp_path / INDEX_NAME) == set(RECORD_INDEXES)


def test_updated_on_append_without_reading_the_files_again(tmp_path):
    store = ResultStore(tmp_path)
    append(store, cell=0, run=1)
    with StoreIndex.open(tmp_path) as index:
        append(store, cell=0, run=2, status="pass")
        append(store, cell=1, run=2)
        keys = index.keys()
        assert keys["pip-t2.0--repro_0"].status == "pass"
        assert keys["pip-t2.0--repro_0"].run_id == "run-2"
        assert set(keys) == {"pip-t2.0--repro_0", "pip-t2.1--repro_1"}
        assert index.refresh() == 0  # every appended line was indexed as it was written
        assert_like_loader(tmp_path, index)
    store.close()


APPENDER = """
import json, sys
with open(sys.argv[1], "a", encoding="utf-8") as fh:
    fh.write(sys.argv[2] + "\\n")
"""


def test_a_file_grown_by_another_process_is_read_from_where_the_index_stopped(tmp_path):
    store = ResultStore(tmp_path)
    path = append(store, cell=0, run=1)
    for cell in range(1, 4):
        append(store, cell=cell, run=1)
    store.close()
    with StoreIndex.open(tmp_path) as index:
        assert index.refresh() == 0
        line = json.dumps(record(cell=0, run=1, status="pass", finished_at="2026-01-01T00:05:00Z"))
        subprocess.run([sys.executable, "-c", APPENDER, str(path), line], check=True)
        assert index.refresh() == 1  # one new line read, not the four before it
        assert index.keys()["pip-t2.0--repro_0"].status == "pass"
        assert_like_loader(tmp_path, index)


def test_a_rewritten_file_is_read_again_from_the_start(tmp_path):
    store = ResultStore(tmp_path)
    path = append(store, cell=0, run=1)
    append(store, cell=1, run=1)
    store.close()
    with StoreIndex.open(tmp_path) as index:
        path.write_text(json.dumps(record(cell=2, run=1)) + "\n")  # shorter, different content
        index.refresh()
        assert set(index.keys()) == {"pip-t2.2--repro_2"}
        assert_like_loader(tmp_path, index)
        path.unlink()
        index.refresh()
        assert index.keys() == {} and count(index) == 0


def test_damaged_lines_are_skipped_and_named_and_a_finished_line_is_picked_up(tmp_path):
    path = tmp_path / "box" / "run-1.jsonl"
    path.parent.mkdir()
    good = json.dumps(record(cell=0))
    late = json.dumps(record(cell=1))
    path.write_bytes(good.encode() + b"\n{not json\n\n[1, 2]\n\xff\xfe\n"
                     + json.dumps(record(schema_version=99)).encode() + b"\n" + late[:40].encode())
    with StoreIndex.open(tmp_path) as index:
        assert_like_loader(tmp_path, index)
        reasons = {s.line: s.reason for s in index.skipped()}
        assert sorted(reasons) == [2, 4, 5, 6, 7]
        assert reasons[2].startswith("invalid JSON") and "truncated last line" in reasons[7]
        assert all(s.file == str(path) for s in index.skipped())
        with path.open("ab") as fh:  # the writer finishes its line
            fh.write(late[40:].encode() + b"\n")
        assert index.refresh() == 1
        assert sorted(index.keys()) == ["pip-t2.0--repro_0", "pip-t2.1--repro_1"]
        assert_like_loader(tmp_path, index)


def test_a_last_line_without_newline_then_completed_keeps_line_numbers(tmp_path):
    path = tmp_path / "box" / "run-1.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps(record(cell=0)))  # valid, no newline yet: the loader keeps it
    with StoreIndex.open(tmp_path) as index:
        assert list(index.keys()) == ["pip-t2.0--repro_0"]
        with path.open("a") as fh:
            fh.write("\n{bad\n" + json.dumps(record(cell=1)) + "\n")
        index.refresh()
        assert_like_loader(tmp_path, index)
        assert [s.line for s in index.skipped()] == [2]


def test_a_noop_lookup_reads_the_index_not_the_files(tmp_path):
    """Same size and mtime: the index answers from its tables without opening the logs."""
    store = ResultStore(tmp_path)
    path = append(store, cell=0, run=1)
    store.close()
    assert recorded_keys(tmp_path, ["pip-t2.0--repro_0"])["pip-t2.0--repro_0"].status == "fail"
    st = path.stat()
    path.write_bytes(b"x" * st.st_size)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert recorded_keys(tmp_path, ["pip-t2.0--repro_0"])["pip-t2.0--repro_0"].status == "fail"
    assert recorded_keys(tmp_path / "missing", ["pip-t2.0--repro_0"]) == {}


def test_work_folders_are_not_searched(tmp_path):
    store = ResultStore(tmp_path)
    append(store, cell=0)
    store.close()
    (tmp_path / ".work" / "out").mkdir(parents=True)
    (tmp_path / ".work" / "out" / "stray.jsonl").write_text(json.dumps(record(cell=5)) + "\n")
    with StoreIndex.open(tmp_path) as index:
        assert list(index.keys()) == ["pip-t2.0--repro_0"]
        assert_like_loader(tmp_path, index)


def test_a_folder_that_cannot_hold_the_index_gets_a_private_one(tmp_path):
    root = tmp_path / "results"
    store = ResultStore(root, index=False)
    append(store, cell=0)
    (root / INDEX_NAME).mkdir()  # in the way, like a read-only folder: no database can go there
    with StoreIndex.open(root) as index:
        assert list(index.keys()) == ["pip-t2.0--repro_0"]
        private = index.db
        assert private.parent != root and private.is_file()
    assert not private.exists()
    store = ResultStore(root)
    append(store, cell=1)  # the record is written even though the index cannot be
    store.close()
    assert len(load_records([root]).records) == 2


WRITER = """
import json, sys
from repromatrix.store.record import Result
from repromatrix.store.results import ResultStore
store = ResultStore(sys.argv[1])
for line in open(sys.argv[2]):
    store.append(Result.from_dict(json.loads(line)))
store.close()
"""


def test_two_processes_appending_at_once_keep_one_index_current(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = []
    for run in (1, 2):
        todo = tmp_path / f"todo-{run}.txt"
        todo.write_text("".join(json.dumps(record(cell=c, run=run)) + "\n" for c in range(60)))
        procs.append(subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / "results"),
                                       str(todo)], env=env))
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    tmp_path = tmp_path / "results"
    with StoreIndex(tmp_path) as index:
        assert index.refresh() == 0  # both writers indexed every line they wrote
        assert count(index) == 120
        assert_like_loader(tmp_path, index)


def test_an_index_damaged_inside_is_rebuilt(tmp_path):
    store = ResultStore(tmp_path)
    for run in range(1, 30):
        for cell in range(20):
            append(store, cell=cell, run=run)
    store.close()
    db = tmp_path / INDEX_NAME
    with StoreIndex.open(tmp_path) as index:
        keys = index.keys()
    data = bytearray(db.read_bytes())
    assert len(data) > 16 * 4096
    data[8 * 4096:12 * 4096] = b"\xa5" * (4 * 4096)  # pages of the tables, header intact
    db.write_bytes(bytes(data))
    with StoreIndex.open(tmp_path) as index:
        assert index.keys() == keys
        assert_like_loader(tmp_path, index)


def test_a_record_changed_under_an_open_index_is_refused_not_returned(tmp_path):
    store = ResultStore(tmp_path)
    path = append(store, cell=0, status="fail")
    store.close()
    with StoreIndex.open(tmp_path) as index:
        path.write_text(path.read_text().replace('"fail"', '"pass"'))  # same length, other record
        with pytest.raises(StaleIndex, match="changed since it was indexed"):
            next(index.iter_shown())
        index.refresh()  # reads the file again from the start
        assert index.keys()["pip-t2.0--repro_0"].status == "pass"
        path.write_text(path.read_text().replace('"pass"', '"skip"'))
        assert index.shown_records()["pip-t2.0--repro_0"].status == "skip"  # refreshed and read again
        assert_like_loader(tmp_path, index)


def test_an_append_after_lines_the_index_missed_reads_them_in_its_transaction(tmp_path):
    """A line written while the index could not be updated (another writer, an error) is
    read by the next append to that file, in the same transaction: the index stays current."""
    blind = ResultStore(tmp_path, index=False)
    append(blind, cell=0, run=1)
    append(blind, cell=1, run=1)
    store = ResultStore(tmp_path)
    append(store, cell=2, run=1)  # the same file: its first two lines were never indexed
    store.close()
    with StoreIndex(tmp_path) as index:
        assert index.refresh() == 0
        assert sorted(index.keys()) == ["pip-t2.0--repro_0", "pip-t2.1--repro_1", "pip-t2.2--repro_2"]
        assert_like_loader(tmp_path, index)


def test_a_line_over_the_limit_is_skipped_unread_by_every_reader(tmp_path, monkeypatch):
    """A line longer than LINE_LIMIT (a foreign file, a file with no newline) is named and
    skipped, never held whole; the records around it are read, and line numbers and offsets
    stay right, also while such a line is still being written."""
    from repromatrix.report.load import reduce_records
    from repromatrix.store import lines

    monkeypatch.setattr(lines, "LINE_LIMIT", 4096)
    store = ResultStore(tmp_path)
    path = append(store, cell=0)
    with path.open("ab") as fh:
        fh.write(b"x" * 10000 + b"\n")
    assert append(store, cell=1) == path
    cells = ["pip-t2.0--repro_0", "pip-t2.1--repro_1"]
    with StoreIndex.open(tmp_path) as index:
        assert sorted(index.keys()) == cells
        [skipped] = index.skipped()
        assert (skipped.line, skipped.reason) == (
            2, "a line of 10001 bytes, over the 4096-byte limit: not read")
        assert_like_loader(tmp_path, index)
        with path.open("ab") as fh:  # one still being written: named, read again when finished
            fh.write(b"y" * 9000)
        index.refresh()
        assert [s.line for s in index.skipped()] == [2, 4] and sorted(index.keys()) == cells
        assert_like_loader(tmp_path, index)
        with path.open("ab") as fh:
            fh.write(b"\n" + json.dumps(record(cell=2)).encode() + b"\n")
        index.refresh()
        assert sorted(index.keys()) == [*cells, "pip-t2.2--repro_2"]
        assert [s.line for s in index.skipped()] == [2, 4]
        assert "9001 bytes" in index.skipped()[1].reason
        assert_like_loader(tmp_path, index)
        named = [(s.line, s.reason) for s in index.skipped()]
    with reduce_records([path]) as loose:  # a file read on its own, outside its store
        assert sorted(loose.latest) == [*cells, "pip-t2.2--repro_2"]
        assert [(s.line, s.reason) for s in loose.skipped] == named


def _strict(text: str):
    """JSON as RFC 8259 (and a browser's JSON.parse) reads it: no NaN or Infinity."""
    def refuse(token: str):
        raise ValueError(f"{token} is not JSON")
    return json.loads(text, parse_constant=refuse)


def test_numbers_json_cannot_hold_are_kept_as_text_in_the_store_and_results_json(tmp_path):
    """A repro's evidence may be NaN or infinite (a numeric check on a broken output): the
    record line, and results.json.gz from new and from older lines, stay JSON every parser
    reads; the value is kept as its text, a duration becomes unknown."""
    from support.sites import site_text

    from repromatrix.report.chunks import read_payload
    from repromatrix.report.render import render_site

    nan_stage = {"name": "eager", "status": "fail", "duration_s": float("inf"),
                 "evidence": {"max_abs_diff": float("nan"), "scale": [float("-inf"), 1.5]}}
    store = ResultStore(tmp_path / "results")
    path = append(store, cell=0, stages=[nan_stage], duration_s=float("nan"))
    line = _strict(path.read_text())
    assert line["stages"][0]["evidence"] == {"max_abs_diff": "NaN", "scale": ["-Infinity", 1.5]}
    assert line["duration_s"] is None and line["stages"][0]["duration_s"] is None
    with path.open("a") as fh:  # a line written before records were kept finite
        fh.write(json.dumps(record(cell=1, stages=[nan_stage])) + "\n")
    assert "NaN" in path.read_text().splitlines()[1]
    for source in (store.root, path):  # through the index, and a file read on its own
        site = tmp_path / f"site-{source.name}"
        render_site([source], site)
        records = {r["cell"]: r for r in _strict(site_text(site))["records"]}
        assert [records[c]["stages"][0]["evidence"]["max_abs_diff"] for c in sorted(records)] \
            == ["NaN", "NaN"]
        chunk = read_payload(site / "data" / "c1.js")[1]  # the older line's cell, on the page
        assert '\\"max_abs_diff\\": \\"NaN\\"' in chunk and "inf s" not in chunk, chunk
    with StoreIndex.open(store.root) as index:
        latest = index.shown_records()
        assert latest["pip-t2.1--repro_1"].stages[0].evidence["scale"] == ["-Infinity", 1.5]
        assert_like_loader(store.root, index)


def test_a_cell_shows_one_record_wherever_it_is_asked(tmp_path):
    """The record a cell shows is its settled history's (a real verdict outranks a newer
    stand-in one): what bisect, check --run and run's outlook read; the latest run's key
    fields stay what run's reuse compares."""
    def record(run: str, day: int, stages: list[dict], status: str) -> Result:
        return Result.from_dict({
            "schema_version": SCHEMA_VERSION, "run_id": run, "cell": "s--x", "repro": "x",
            "stack": {"id": "s"}, "status": status, "cache_key": run, "stages": stages,
            "started_at": f"2026-11-{day:02d}T00:00:00+00:00",
            "finished_at": f"2026-11-{day:02d}T00:01:00+00:00"})

    store = ResultStore(tmp_path)
    store.append(record("gpu", 1, [{"name": "a", "status": "pass", "role": "main"}], "pass"))
    store.append(record("lane", 2, [{"name": "a", "status": "fail", "role": "main",
                                     "standins": ["tensorrt"]}], "fail"))
    assert recorded_shown(tmp_path, ["s--x"])["s--x"].run_id == "gpu"
    assert recorded_keys(tmp_path, ["s--x"])["s--x"].run_id == "lane"
    with StoreIndex.open(tmp_path) as index:
        assert index.histories_of(["s--x"])["s--x"].shown.run_id == "gpu"
