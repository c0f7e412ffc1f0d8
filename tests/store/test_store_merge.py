"""`repromatrix store merge`: one store from many, never losing or doubling a record."""

from __future__ import annotations

import subprocess
import sys

from support.scale import ROOT, cli_env

from repromatrix.store.index import StoreIndex
from repromatrix.store.merge import merge_stores
from repromatrix.store.results import latest_by_cell, load_records

RESULTS = ROOT / "tests" / "data" / "results"


def lines(store) -> list[str]:
    return sorted(line for f in store.rglob("*.jsonl") for line in f.read_text().splitlines())


def test_merge_twice_adds_nothing_and_keeps_every_record(tmp_path):
    into = tmp_path / "store"
    first = merge_stores([RESULTS / "every_status", RESULTS / "single_cell"], into)
    assert (first.added, first.present) == (16, 0)
    before = lines(into)
    again = merge_stores([RESULTS / "every_status", RESULTS / "single_cell", into], into)
    assert (again.added, again.present) == (0, 16) and lines(into) == before
    merged = load_records([into])
    sources = load_records([RESULTS / "every_status", RESULTS / "single_cell"])
    assert {(r.run_id, r.cell) for r in merged.records} == {(r.run_id, r.cell) for r in sources.records}
    with StoreIndex.open(into) as index:             # the run stage's reuse reads this index
        assert {c: r.run_id for c, r in index.shown_records().items()} == \
            {c: r.run_id for c, r in latest_by_cell(merged.records).items()}


def test_a_different_record_for_the_same_run_and_cell_is_kept_and_flagged(tmp_path):
    into = tmp_path / "store"
    merge_stores([RESULTS / "every_status"], into)
    summary = merge_stores([RESULTS / "sparse"], into)   # sparse's run-1 differs from every_status's
    assert summary.added == 3 and summary.differing == 1
    loaded = load_records([into])
    assert [c.cell for c in loaded.conflicts] == ["pip-torch2.4.1--deform_conv2d_device"]


def test_unreadable_lines_are_named_and_the_rest_merged(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "repromatrix.cli", "store", "merge",
                           str(RESULTS / "damaged"), "--into", str(tmp_path / "s")],
                          capture_output=True, text=True, env=cli_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "run-1.jsonl:2: unknown schema_version 99" in proc.stderr
    assert "truncated last line" in proc.stderr and "record(s) added" in proc.stdout
    assert len(load_records([tmp_path / "s"]).records) >= 1


def test_missing_source_is_bad_input_before_anything_is_written(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "repromatrix.cli", "store", "merge",
                           str(RESULTS / "every_status"), str(tmp_path / "nope"), "--into",
                           str(tmp_path / "s")], capture_output=True, text=True, env=cli_env(), timeout=120)
    assert proc.returncode == 2 and "nope: no such file or folder" in proc.stderr
    assert not (tmp_path / "s").exists()
