"""The results store: append, load many files, skip bad lines, conflicts, latest/previous."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.records import make_record

from repromatrix.store.record import Result
from repromatrix.store.results import ResultStore, latest_by_cell, load_records, previous_by_cell


def result(**over) -> Result:
    return Result.from_dict(make_record(**over))


def write_lines(path: Path, lines: list[str], trailing_newline: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines) + ("\n" if trailing_newline else "")
    path.write_text(text, encoding="utf-8")
    return path


def test_append_writes_one_line_per_record_under_host_and_run(tmp_path):
    store = ResultStore(tmp_path)
    p1 = store.append(result())
    p2 = store.append(result(repro="ts_device_gpu_id", status="pass"))
    assert p1 == p2 == tmp_path / "box" / "run-1.jsonl"
    lines = p1.read_text(encoding="utf-8").splitlines()
    assert [json.loads(x)["status"] for x in lines] == ["fail", "pass"]
    loaded = store.load()
    assert len(loaded.records) == 2 and not loaded.skipped and not loaded.conflicts


def test_append_never_escapes_the_root(tmp_path):
    store = ResultStore(tmp_path / "store")
    path = store.append(result(host="../../etc", run_id="/x/../passwd"))
    assert tmp_path / "store" in path.parents
    assert path.parent.parent == tmp_path / "store"


def test_killed_writer_keeps_every_finished_cell(tmp_path):
    """A writer killed mid-run loses at most the record in flight."""
    src = Path(__file__).resolve().parents[2] / "src"
    template = tmp_path / "record.json"
    template.write_text(json.dumps(make_record()), encoding="utf-8")
    script = textwrap.dedent(f"""
        import json, sys, time
        sys.path.insert(0, {str(src)!r})
        from repromatrix.store.record import Result
        from repromatrix.store.results import ResultStore
        record = json.loads(open({str(template)!r}).read())
        store = ResultStore({str(tmp_path / "store")!r})
        for i in range(10000):
            store.append(Result.from_dict(dict(record, cell="c%d" % i)))
            print(i, flush=True)
            time.sleep(0.01)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        for _ in range(5):
            proc.stdout.readline()
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    loaded = load_records([tmp_path / "store"])
    assert len(loaded.records) >= 5
    assert len(loaded.skipped) <= 1  # at most the line in flight


def test_truncated_last_line_and_unknown_schema_are_skipped_and_named(tmp_path):
    good = json.dumps(make_record())
    future = json.dumps(make_record(schema_version=99, cell="x--y"))
    f = write_lines(tmp_path / "h" / "r.jsonl", [good, future, good[:40]], trailing_newline=False)
    loaded = load_records([tmp_path])
    assert len(loaded.records) == 1
    reasons = {(s.file, s.line): s.reason for s in loaded.skipped}
    assert set(reasons) == {(str(f), 2), (str(f), 3)}
    assert "schema_version 99" in reasons[(str(f), 2)]
    assert "truncated" in reasons[(str(f), 3)]


@pytest.mark.parametrize("line, reason", [
    ("[1, 2]", "not a JSON object"),
    ('{"schema_version": 1}', "run_id"),
    (json.dumps(make_record(status="flaky")), "unknown status"),
    (json.dumps(make_record(stack="s") | {"stack": "s"}), "stack.id"),
    (json.dumps(make_record(schema_version=True)), "schema_version"),
    ("{not json", "invalid JSON"),
])
def test_unusable_lines_are_skipped_with_a_reason(tmp_path, line, reason):
    f = write_lines(tmp_path / "a.jsonl", [line, json.dumps(make_record())])
    loaded = load_records([f])
    assert len(loaded.records) == 1
    [skip] = loaded.skipped
    assert (skip.file, skip.line) == (str(f), 1) and reason in skip.reason
    assert str(skip).startswith(f"{f}:1: ")


def test_invalid_utf8_and_missing_paths_are_not_fatal(tmp_path):
    f = tmp_path / "b.jsonl"
    f.write_bytes(b"\xff\xfe{}\n" + json.dumps(make_record()).encode() + b"\n")
    loaded = load_records([f, tmp_path / "nope"])
    assert len(loaded.records) == 1
    assert {s.reason for s in loaded.skipped} == {"not valid UTF-8", "no such file or directory"}


def test_identical_copies_count_once_and_different_ones_conflict(tmp_path):
    rec = make_record()
    write_lines(tmp_path / "m1" / "run-1.jsonl", [json.dumps(rec)])
    write_lines(tmp_path / "m2" / "run-1.jsonl", [json.dumps(rec)])
    assert (len(load_records([tmp_path]).records), load_records([tmp_path]).conflicts) == (1, [])
    other = make_record(status="pass", finished_at="2026-01-01T00:00:09Z")
    write_lines(tmp_path / "m3" / "run-1.jsonl", [json.dumps(other)])
    loaded = load_records([tmp_path])
    assert len(loaded.records) == 1 and loaded.records[0].status == "pass"
    [conflict] = loaded.conflicts
    assert conflict.cell == rec["cell"] and set(conflict.statuses) == {"fail", "pass"}
    assert len(conflict.sources) == 2 and conflict.kept.startswith(str(tmp_path / "m3"))


def test_same_file_given_twice_is_read_once(tmp_path):
    f = write_lines(tmp_path / "a.jsonl", [json.dumps(make_record())])
    loaded = load_records([f, tmp_path, f])
    assert len(loaded.records) == 1 and not loaded.conflicts


def test_latest_and_previous_by_cell():
    r1 = result(run_id="r1", status="pass", finished_at="2026-01-01T00:00:00Z")
    r2 = result(run_id="r2", status="fail", finished_at="2026-01-02T00:00:00Z")
    r3 = result(run_id="r3", status="error", finished_at="2026-01-03T00:00:00Z")
    only = result(repro="other", run_id="r3")
    latest = latest_by_cell([r2, r3, r1, only])
    assert latest[r1.cell].run_id == "r3" and latest[only.cell].run_id == "r3"
    previous = previous_by_cell([r2, r3, r1, only])
    assert previous == {r1.cell: r2}


def test_empty_inputs():
    loaded = load_records([])
    assert (loaded.records, loaded.skipped, loaded.conflicts) == ([], [], [])
    assert latest_by_cell([]) == {} and previous_by_cell([]) == {}


def test_shards_disagreeing_about_one_cache_key_conflict_across_stores(tmp_path):
    """Two stores (shards) with different outcomes for one cell and cache key: flagged."""
    a = make_record(run_id="shard1", host="n1", cache_key="k1", status="fail",
                    finished_at="2026-01-01T00:00:01Z")
    b = make_record(run_id="shard2", host="n2", cache_key="k1", status="pass",
                    finished_at="2026-01-01T00:00:05Z")
    ResultStore(tmp_path / "s1").append(Result.from_dict(a))
    ResultStore(tmp_path / "s2").append(Result.from_dict(b))
    for paths in ([tmp_path / "s1", tmp_path / "s2"], [tmp_path]):
        loaded = load_records(paths)
        [conflict] = loaded.conflicts
        assert (conflict.cell, conflict.cache_key, conflict.run_id) == (a["cell"], "k1", "shard1, shard2")
        assert set(conflict.statuses) == {"fail", "pass"} and len(conflict.sources) == 2
        assert conflict.kept.startswith(str(tmp_path / "s2")) and "one cache key" in str(conflict)
    assert latest_by_cell(loaded.records)[a["cell"]].status == "pass"


@pytest.mark.parametrize("b_over, why", [
    ({"status": "fail"}, "same outcome"),
    ({"cache_key": "k2"}, "a different environment: a change, not a conflict"),
    ({"status": "broken"}, "broken is infrastructure, never a verdict"),
])
def test_agreeing_or_different_environments_do_not_conflict(tmp_path, b_over, why):
    a = make_record(run_id="shard1", cache_key="k1", status="fail")
    b = make_record(**{"run_id": "shard2", "cache_key": "k1", "finished_at": "2026-01-01T00:00:05Z",
                       **b_over})
    ResultStore(tmp_path / "s1").append(Result.from_dict(a))
    ResultStore(tmp_path / "s2").append(Result.from_dict(b))
    assert load_records([tmp_path / "s1", tmp_path / "s2"]).conflicts == [], why


def test_one_store_history_with_one_cache_key_is_not_a_conflict(tmp_path):
    store = ResultStore(tmp_path / "s")
    store.append(result(run_id="r1", cache_key="k1", status="fail"))
    store.append(result(run_id="r2", cache_key="k1", status="pass",
                             finished_at="2026-01-02T00:00:00Z"))
    assert load_records([store.root]).conflicts == []


def test_an_old_cache_key_disagreeing_is_not_flagged_once_the_cell_moved_on(tmp_path):
    ResultStore(tmp_path / "s1").append(result(run_id="r1", cache_key="old", status="fail"))
    ResultStore(tmp_path / "s2").append(result(run_id="r2", cache_key="old", status="pass"))
    ResultStore(tmp_path / "s2").append(result(run_id="r3", cache_key="new", status="pass",
                                                    finished_at="2026-01-03T00:00:00Z"))
    assert load_records([tmp_path]).conflicts == []
