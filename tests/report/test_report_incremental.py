"""A render into a folder that holds an earlier one: what it writes is what a cold render
writes, whichever way it reads the store (settled histories, copies, damaged lines, files
rewritten meanwhile)."""

from __future__ import annotations

import json
import os
import sqlite3
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

import pytest
from support.sites import ATOM, chunk_cells, history_record, site_records
from support.sites import page_files as site_files

from repromatrix.model import Repro
from repromatrix.report.chunks import read_payload
from repromatrix.report.render import render_site
from repromatrix.store.record import SCHEMA_VERSION, Result
from repromatrix.store.results import ResultStore


def merged(paths: list[Path], tmp_path: Path) -> list[Path]:
    """``paths`` and an empty store beside them: several stores, read through a temporary
    index (``store.index_merged``) rather than the store's own."""
    (tmp_path / "empty-store").mkdir(exist_ok=True)
    return [*paths, tmp_path / "empty-store"]


@pytest.mark.slow
def test_an_incremental_render_leaves_what_a_cold_render_writes(tmp_path, monkeypatch):
    """Render into one folder after each change; render cold into a new folder, and once
    more reading every record (not the histories the index keeps); every file equal. One
    new record rewrites one detail chunk, never the unchanged ones or static/."""

    now = datetime(2026, 11, 24, 1, 2, tzinfo=timezone.utc)
    store = ResultStore(tmp_path / "results")
    for run, status in enumerate(["fail", "pass"]):
        for s in range(120):
            store.append(history_record(f"pip-s{s:03d}", "bug", run, status if s % 3 else "skip"))
            store.append(history_record(f"pip-s{s:03d}", "other", run, "pass"))
    inc = tmp_path / "inc"
    steps = 0

    def both(paths: list[Path]) -> list[str]:
        nonlocal steps
        steps += 1
        rewritten = render_site(paths, inc, now=now).rewritten
        cold = render_site(paths, tmp_path / f"cold-{steps}", now=now)
        assert site_files(inc) == site_files(tmp_path / f"cold-{steps}"), f"step {steps}"
        render_site(merged(paths, tmp_path), tmp_path / f"every-{steps}", now=now)
        assert site_files(inc) == site_files(tmp_path / f"every-{steps}"), f"step {steps}"
        assert sorted(cold.rewritten) == sorted(site_files(tmp_path / f"cold-{steps}"))
        return rewritten

    both([store.root])
    assert both([store.root]) == []  # nothing changed: nothing written
    before = (inc / "results.json.gz").read_bytes()
    kept = json.loads((inc / ".render-state.json").read_text())["results"]["end"]
    store.append(history_record("pip-s005", "bug", 2, "error"))  # one new record
    rewritten = both([store.root])
    after = (inc / "results.json.gz").read_bytes()  # appended: one gzip member more
    assert after[:kept] == before[:kept] and after[kept:kept + 2] == b"\x1f\x8b"
    assert len(after) - len(before) < 1000
    assert len([n for n in rewritten if n.startswith("data/c")]) == 1  # one detail chunk
    assert "data/verdicts.js" in rewritten and "data/environments.js" not in rewritten  # (the box)
    assert not [n for n in rewritten if n.startswith("static/")]
    assert "changes.atom" in rewritten and "results.json.gz" in rewritten
    assert site_records(inc)["records"][-1]["status"] == "error"
    store.append(history_record("pip-s006", "bug", 2, "pass"))  # the same run file grows by one line
    assert "results.json.gz" in both([store.root])
    damaged = tmp_path / "results" / "h" / "zz-damaged.jsonl"  # a line path, not a whole file
    old = {**history_record("pip-s007", "bug", 3, "fail").to_dict(), "schema_version": 1}
    damaged.write_text("{bad\n" + json.dumps(old) + "\n")
    both([store.root])
    shard = ResultStore(tmp_path / "shard")  # merged stores: a conflict for one cache key
    shard.append(Result.from_dict({**history_record("pip-s009", "bug", 1, "fail").to_dict(), "host": "n2"}))
    both([store.root, tmp_path / "shard"])
    both([store.root, damaged])  # a file given on its own beside the folder that holds it
    both([store.root])
    with sqlite3.connect(store.root / ".render-cache.sqlite") as db:  # the cells' pieces, kept
        db.execute("ATTACH DATABASE ? AS store", (str(store.root / ".index.sqlite"),))
        assert db.execute("SELECT count(*) FROM store.cells c WHERE EXISTS (SELECT 1 FROM "
                          "pieces p WHERE p.cell = c.cell)").fetchone()[0] == 240
        # the others go once they are a tenth of the table (RenderCache.keep_only)
        assert db.execute("SELECT count(*) FROM pieces").fetchone()[0] <= 240 * 1.1 + 100
    for path in store.root.glob(".index.sqlite*"):
        path.unlink()  # no index: every record read again, the same page
    render_site([store.root], tmp_path / "no-index", now=now)
    assert site_files(tmp_path / "no-index") == site_files(inc)


def test_a_folder_rendered_by_another_format_is_written_anew(tmp_path):
    """The render state names its format: a folder an older harness rendered (whose bytes
    for the same records may differ) is written whole, as a cold render writes it."""
    from repromatrix.report.written import FORMAT, STATE_NAME

    store = ResultStore(tmp_path / "results")
    store.append(history_record("pip-a", "bug", 0, "fail"))
    out, now = tmp_path / "site", datetime(2026, 11, 25, 4, 30, tzinfo=timezone.utc)
    render_site([store.root], out, now=now)
    state = json.loads((out / STATE_NAME).read_text())
    assert state["format"] == FORMAT and render_site([store.root], out, now=now).rewritten == []
    (out / STATE_NAME).write_text(json.dumps({**state, "format": FORMAT - 1}))
    assert sorted(render_site([store.root], out, now=now).rewritten) == sorted(site_files(out))


def test_the_check_box_s_former_data_file_is_removed(tmp_path):
    """A site an earlier box was rendered into loses its data/upgrades.js (the box looks
    answers up in data/environments.js and data/verdicts.js now)."""
    store = ResultStore(tmp_path / "results")
    store.append(history_record("pip-a", "bug", 0, "fail"))
    out, now = tmp_path / "site", datetime(2026, 11, 25, 4, 30, tzinfo=timezone.utc)
    render_site([store.root], out, now=now)
    (out / "data" / "upgrades.js").write_text("repromatrixUpgrades({});\n")
    render_site([store.root], out, now=now)
    assert not (out / "data" / "upgrades.js").exists()
    assert (out / "data" / "environments.js").is_file() and (out / "data" / "verdicts.js").is_file()


def test_a_file_rewritten_after_a_render_is_read_again(tmp_path):
    """Same size, other records (a file replaced by a copy from elsewhere): the index reads
    it again, the pieces kept for the old lines are not used, results.json.gz is rewritten."""
    store = ResultStore(tmp_path / "results")
    path = store.append(history_record("pip-a", "bug", 0, "fail"))
    store.append(history_record("pip-b", "bug", 0, "fail"))
    store.close()
    render_site([store.root], tmp_path / "site")
    st = path.stat()
    path.write_text(path.read_text().replace('"fail"', '"pass"'))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    summary = render_site([store.root], tmp_path / "site")
    raw = site_records(tmp_path / "site")
    assert [r["status"] for r in raw["records"]] == ["pass", "pass"], "the records as they are now"
    assert summary.records == 2 and "pass" in (tmp_path / "site" / "results.csv").read_text()
    assert "fail" not in (tmp_path / "site" / "results.csv").read_text()


def test_a_moved_store_s_commands_follow_it(tmp_path, monkeypatch):
    """A store copied from where it was recorded (another machine, a shard, the published
    records): its reproduce commands name the folder it is read from now, relative to the
    current folder when inside it; a store read where it was recorded keeps them as they are."""
    recorded_at = "/elsewhere/results"
    command = ["repromatrix", "run", "--matrix", f"{recorded_at}/matrix.yaml", "--ca-bundle",
               "/etc/ssl/ca.pem", "--results", recorded_at, "-k", "pip-a--bug", "--rerun"]
    moved = ResultStore(tmp_path / "project" / "results" / "published")
    moved.append(Result.from_dict({**history_record("pip-a", "bug", 0, "fail").to_dict(),
                                   "reproduce": command}))
    here = ResultStore(tmp_path / "here")
    at_home = [*command[:6], "--results", str(here.root.resolve()), *command[8:]]
    here.append(Result.from_dict({**history_record("pip-b", "bug", 0, "pass").to_dict(),
                                  "reproduce": at_home}))
    monkeypatch.chdir(tmp_path / "project")
    render_site([moved.root, here.root], tmp_path / "site")
    cells = chunk_cells(tmp_path / "site")
    assert cells["pip-a--bug"]["command"] == (
        "repromatrix run --matrix results/published/matrix.yaml --ca-bundle /etc/ssl/ca.pem "
        "--results results/published -k pip-a--bug --rerun")
    assert cells["pip-b--bug"]["command"] == " ".join(at_home)
    # the store read through the folder that holds it (the default `results/`): the same
    render_site([tmp_path / "project" / "results"], tmp_path / "site-parent")
    assert chunk_cells(tmp_path / "site-parent")["pip-a--bug"]["command"] == (
        cells["pip-a--bug"]["command"])
    loose = tmp_path / "project" / "downloaded.jsonl"  # a file on its own: no store to follow
    loose.write_bytes(next(moved.root.glob("*/*.jsonl")).read_bytes())
    render_site([loose], tmp_path / "site-loose")
    assert chunk_cells(tmp_path / "site-loose")["pip-a--bug"]["command"] == " ".join(command)


def test_one_store_read_through_its_settled_histories_writes_what_every_record_does(
        tmp_path, monkeypatch):
    """A store whose files are exactly its records is read one row per cell, from the
    histories its index keeps; the page is byte for byte what reading every record writes,
    with long histories, flaky attempts, a stand-in verdict after a real one, and host
    folders whose path order and string order differ ('h' and 'h-2')."""
    from repromatrix.report import load

    now = datetime(2026, 11, 25, 9, 0, tzinfo=timezone.utc)
    store = ResultStore(tmp_path / "results")
    statuses = ["fail", "pass", "pass", "error", "fail"]
    for run, status in enumerate(statuses):
        for s in range(130):  # more cells changed than the feed holds changes
            rec = history_record(f"pip-s{s:03d}", "bug", run, status if s % 4 else "skip").to_dict()
            store.append(Result.from_dict({**rec, "host": "h-2" if s % 3 == 0 else "h"}))
            store.append(history_record(f"pip-s{s:03d}", "other", run, statuses[(run + s) % 5]))
    flaky = history_record("pip-s001", "bug", 9, "fail").to_dict()
    for attempt, status in ((1, "fail"), (2, "pass")):  # a --repeat run that disagrees
        store.append(Result.from_dict({**flaky, "attempt": attempt, "status": status}))
    stood_in = history_record("pip-s002", "bug", 9, "fail").to_dict()  # real earlier, stand-in later
    stood_in["stages"] = [{"name": "trt", "role": "main", "status": "fail",
                           "standins": ["tensorrt"]}]
    store.append(Result.from_dict(stood_in))
    calls = []
    monkeypatch.setattr(load, "_read_settled", lambda *a, _f=load._read_settled: (
        calls.append(1), _f(*a))[1])
    settled = render_site([store.root], tmp_path / "settled", now=now)
    assert calls, "a clean store is read through its cells' histories"
    every = render_site(merged([store.root], tmp_path), tmp_path / "every", now=now)
    assert site_files(tmp_path / "settled") == site_files(tmp_path / "every")
    assert (settled.records, settled.cells) == (every.records, every.cells) == (1303, 260)
    feed = ET.parse(tmp_path / "settled" / "changes.atom").getroot().findall(f"{ATOM}entry")
    assert len(feed) == 200, "more changes than the feed holds: the newest cells chosen first"
    details = chunk_cells(tmp_path / "settled")
    assert details["pip-s001--bug"]["flaky"] == "1 fail, 1 pass"
    assert details["pip-s002--bug"]["status"] == "fail" and details["pip-s002--bug"]["run_id"] == "run-4"
    assert len(details["pip-s000--other"]["history"]) == 4  # fail, pass x2, error, fail


def test_a_copy_sends_a_store_record_by_record_and_a_blank_line_does_not(tmp_path, monkeypatch):
    """Only files that are exactly their records are copied whole: a blank line between two
    records is left out of results.json.gz line by line, still through the cells' histories;
    the same record twice is sent once, its copy's file line by line (one read path: the
    histories). results.json.gz stays valid JSON with each record once."""
    from repromatrix.report import load

    calls: list[bool] = []
    monkeypatch.setattr(load, "_read_settled", lambda *a, _f=load._read_settled: (
        calls.append(True), _f(*a))[1])
    store = ResultStore(tmp_path / "results")
    path = store.append(history_record("pip-a", "bug", 0, "fail"))
    store.append(history_record("pip-b", "bug", 0, "pass"))
    store.close()
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + "\n" + lines[1])
    render_site([store.root], tmp_path / "blank")
    data = site_records(tmp_path / "blank")
    assert [r["status"] for r in data["records"]] == ["fail", "pass"] and calls == [True]
    (path.parent / "copy.jsonl").write_text(lines[1])  # the same record shipped twice
    summary = render_site([store.root], tmp_path / "copy")
    data = site_records(tmp_path / "copy")
    assert summary.records == 2 and sorted(r["status"] for r in data["records"]) == ["fail", "pass"]
    assert calls == [True, True], "a copy: through the histories too"


def test_blank_damaged_and_older_lines_are_read_through_the_histories_as_every_record_is(
        tmp_path, monkeypatch):
    """A store with a blank line, a damaged line, an older-schema record and a truncated last
    line is still read one row per cell: the page and results.json.gz are byte for byte what
    reading every record writes, after a render and after one more record."""
    from repromatrix.report import load

    now = datetime(2026, 11, 25, 9, 0, tzinfo=timezone.utc)
    store = ResultStore(tmp_path / "results")
    for run in range(3):
        for s in range(4):
            store.append(history_record(f"pip-s{s}", "bug", run, ["fail", "pass", "error"][(run + s) % 3]))
    store.close()
    odd = store.root / "h" / "odd.jsonl"
    older = {**history_record("pip-s9", "bug", 5, "fail").to_dict(), "schema_version": 1}
    newer = history_record("pip-s8", "bug", 5, "pass").to_dict()
    odd.write_text("\n".join([json.dumps(newer), "", "{damaged", json.dumps(older),
                              json.dumps(newer)[:-1].replace("run-5", "run-6")]) + "\n{trunc")
    calls: list[bool] = []
    monkeypatch.setattr(load, "_read_settled", lambda *a, _f=load._read_settled: (
        calls.append(True), _f(*a))[1])

    def both(name: str) -> load.Reduced:
        settled = render_site([store.root], tmp_path / f"{name}-settled", now=now)
        every = render_site(merged([store.root], tmp_path), tmp_path / f"{name}-every", now=now)
        assert site_files(tmp_path / f"{name}-settled") == site_files(tmp_path / f"{name}-every")
        assert [str(s) for s in settled.skipped] == [str(s) for s in every.skipped]
        return settled

    first = both("first")
    assert calls == [True, True] and len(first.skipped) == 3, first.skipped
    data = site_records(tmp_path / "first-settled")
    assert {r["schema_version"] for r in data["records"]} == {SCHEMA_VERSION}
    assert first.records == 12 + 2
    ResultStore(store.root).append(history_record("pip-s1", "bug", 7, "crash"))
    assert both("again").records == 15 and calls == [True] * 4
    # into the folders of the first render: results.json.gz goes on after the lines it holds
    render_site([store.root], tmp_path / "first-settled", now=now)
    render_site(merged([store.root], tmp_path), tmp_path / "first-every", now=now)
    for name in ("first-settled", "first-every"):
        assert site_files(tmp_path / name) == site_files(tmp_path / "again-settled"), name


def test_records_of_one_cell_in_two_host_folders_keep_the_readers_order(tmp_path, monkeypatch):
    """'h-2' sorts before 'h' as a string, after it as a path: a cell whose records live in
    both is met where a reader of the files meets it, on both paths alike."""

    store = ResultStore(tmp_path / "results")
    now = datetime(2026, 11, 25, 9, 0, tzinfo=timezone.utc)
    for stack, run, status, host, stage in (("pip-y", 0, "pass", "h-2", "alpha"),
                                            ("pip-x", 0, "fail", "h-2", "beta"),
                                            ("pip-x", 1, "pass", "h", "beta")):
        rec = {**history_record(stack, "bug", run, status).to_dict(), "host": host,
               "stages": [{"name": stage, "role": "main", "status": status}]}
        store.append(Result.from_dict(rec))
    store.close()
    render_site([store.root], tmp_path / "settled", now=now)
    render_site(merged([store.root], tmp_path), tmp_path / "every", now=now)
    assert site_files(tmp_path / "settled") == site_files(tmp_path / "every")


def test_the_order_of_a_rules_conditions_is_an_input_of_the_pieces(tmp_path):
    """The page shows a rule's conditions in the catalog's order: reordering them makes the
    pieces anew, and the page is what a cold render writes."""
    store = ResultStore(tmp_path / "results")
    now = datetime(2026, 11, 25, 9, 0, tzinfo=timezone.utc)
    store.append(Result.from_dict({**history_record("pip-a", "bug", 0, "fail").to_dict(),
                                   "env": {"torch": "2.4.1", "python": "3.11.2"}}))
    store.close()

    def catalog(when: list[tuple[str, str]]) -> dict[str, Repro]:
        return {"bug": Repro("bug", "bug.py", "A bug",
                             expect=({"when": dict(when), "status": "fail", "note": "n"},))}

    rules = [("torch", "<2.5"), ("python", ">=3.10")]
    render_site([store.root], tmp_path / "inc", catalog(rules), now=now)
    render_site([store.root], tmp_path / "inc", catalog(rules[::-1]), now=now)
    render_site([store.root], tmp_path / "cold", catalog(rules[::-1]), now=now)
    assert site_files(tmp_path / "inc") == site_files(tmp_path / "cold")
    assert "no rule applies" not in (tmp_path / "inc" / "repro-bug.html").read_text()


def test_pieces_another_render_replaced_meanwhile_are_made_again(tmp_path, monkeypatch):
    """A cell whose chunk is written again while its pieces are unchanged is read back from
    the chunk the last render wrote it in; when another render (another matrix) rewrote that
    folder between reading the heads and the details, its details are made again, never
    writing the other render's command into the chunks."""
    from repromatrix.report.cache import RenderCache

    store = ResultStore(tmp_path / "results")
    now = datetime(2026, 11, 25, 9, 0, tzinfo=timezone.utc)
    store.append(history_record("pip-a", "bug", 0, "fail"))
    store.append(history_record("pip-b", "bug", 0, "fail"))
    store.close()
    out = tmp_path / "x"
    render_site([store.root], out, matrix="X.yaml", now=now)
    store = ResultStore(tmp_path / "results")
    store.append(history_record("pip-b", "bug", 1, "pass"))  # pip-a's chunk is written again
    store.close()
    placed, asked, meanwhile = RenderCache.placed, [], []

    def other_render_first(self, cells):
        cells = list(cells)
        asked.extend(cells)
        if meanwhile == ["now"]:
            meanwhile.append("Y")
            render_site([store.root], out, matrix="Y.yaml", now=now)
        return placed(self, cells)

    monkeypatch.setattr(RenderCache, "placed", other_render_first)
    render_site([store.root], out, matrix="X.yaml", now=now)
    assert asked == ["pip-a--bug"]  # read back, not made: its pieces did not change
    chunk = read_payload(out / "data" / "c0.js")[1]
    assert "X.yaml" in chunk and "Y.yaml" not in chunk
    store = ResultStore(tmp_path / "results")
    store.append(history_record("pip-b", "bug", 2, "fail"))
    store.close()
    meanwhile.append("now")
    render_site([store.root], out, matrix="X.yaml", now=now)
    chunk = read_payload(out / "data" / "c0.js")[1]
    assert meanwhile == ["now", "Y"] and "X.yaml" in chunk and "Y.yaml" not in chunk
    fresh = tmp_path / "fresh"
    render_site([store.root], fresh, matrix="X.yaml", now=now)
    assert (fresh / "data" / "c0.js").read_bytes() == (out / "data" / "c0.js").read_bytes()


def test_a_last_record_without_its_newline_is_read_on_both_paths(tmp_path, monkeypatch):
    """A file whose last line has no newline (edited by hand): its record counts, and
    results.json.gz stays valid JSON."""

    store = ResultStore(tmp_path / "results")
    path = store.append(history_record("pip-a", "bug", 0, "fail"))
    store.append(history_record("pip-b", "bug", 0, "pass"))
    store.close()
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    for settled in (True, False):
        out = tmp_path / f"site-{settled}"
        paths = [store.root] if settled else merged([store.root], tmp_path)
        assert render_site(paths, out).records == 2
        data = site_records(out)
        assert [r["status"] for r in data["records"]] == ["fail", "pass"]


def test_hostile_text_reads_back_from_kept_pieces_as_it_was_made(tmp_path, monkeypatch):
    """A cell's markup is kept joined by NUL (``report.cell.stored_head``): a record whose
    text holds a NUL, a lone surrogate or the fallback's marker renders from its kept pieces
    exactly as when they were made, and as reading every record does. A lone surrogate
    (from a tool other than the runner) is read as its visible escape, in an id too."""
    from repromatrix.report import cell

    store = ResultStore(tmp_path / "results")
    now = datetime(2026, 11, 25, 9, 0, tzinfo=timezone.utc)
    texts = ("nul \x00 inside", "\x01 marker first", "lone \ud800 surrogate", "<b>&amp;</b>")
    for n, text in enumerate(texts):
        store.append(history_record(f"pip-{n}", "bug", 0, "fail", message=text, workaround=text))
    store.append(history_record("pip-\udcff", "bug", 0, "pass"))  # even in an id the index keeps
    store.close()
    render_site([store.root], tmp_path / "made", now=now)  # every cell's pieces made and kept
    with sqlite3.connect(store.root / ".render-cache.sqlite") as db:
        kept = dict(db.execute("SELECT cell, markup FROM pieces"))
    assert kept["pip-0--bug"].startswith(b"\x01") and b"\x00" in kept["pip-3--bug"]
    # another page of the same store: every cell's pieces read back from the store's cache
    render_site([store.root], tmp_path / "kept", now=now)
    assert site_files(tmp_path / "kept") == site_files(tmp_path / "made")
    page = (tmp_path / "kept" / "repro-bug.html").read_text()
    assert "nul \x00 inside" in page and "lone \\ud800 surrogate" in page  # shown escaped
    assert "pip-\\udcff--bug" in page
    render_site(merged([store.root], tmp_path), tmp_path / "every", now=now)  # the same page
    assert site_files(tmp_path / "every") == site_files(tmp_path / "kept")
    heads = cell.Head({"id": "x"}, [], "[]", "e", ["a\x00b", "\x01c"], ["d", "", "\ud800"], "f")
    assert cell.read_head(*cell.stored_head(heads)) == heads
    plain = heads._replace(td=["<td", "x"])
    assert cell.read_head(*cell.stored_head(plain)) == plain


def test_a_render_leaves_the_collector_as_it_found_it(tmp_path):
    """The render pauses the cyclic collector and hands what it made to the oldest generation
    unscanned: nothing is left frozen, a caller's frozen objects stay frozen, and the
    collector is on again only when it was on before."""
    import gc

    store = ResultStore(tmp_path / "results")
    store.append(history_record("pip-a", "bug", 0, "fail"))
    store.close()
    assert gc.isenabled()
    render_site([store.root], tmp_path / "a")
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        gc.disable()
        render_site([store.root], tmp_path / "b")
        assert not gc.isenabled() and gc.get_freeze_count() == frozen
    finally:
        gc.enable()
        gc.unfreeze()


def test_an_unknown_duration_is_shown_as_unknown_not_as_zero(tmp_path):
    """A duration stored as null (a NaN the store could not keep) reads back as unknown: the
    drawer shows none, where it used to show "0.0 s"; a known one is shown."""
    store = ResultStore(tmp_path / "results")
    rec = history_record("pip-a", "bug", 0, "fail").to_dict()
    rec["stages"][0]["duration_s"] = float("nan")
    store.append(Result.from_dict({**rec, "duration_s": None}))
    store.append(Result.from_dict({**history_record("pip-b", "bug", 0, "pass").to_dict(),
                                   "duration_s": 2.0}))
    store.close()
    render_site([store.root], tmp_path / "site")
    details = chunk_cells(tmp_path / "site")
    unknown, known = details["pip-a--bug"], details["pip-b--bug"]
    assert "duration" not in unknown and unknown["stages"][0]["duration"] == ""
    assert known["duration"] == "2.0 s"
    loaded = ResultStore(store.root).load().records
    assert {r.cell: r.duration_s for r in loaded} == {"pip-a--bug": None, "pip-b--bug": 2.0}


def test_skipped_lines_are_listed_for_a_store_named_by_a_relative_path(tmp_path, monkeypatch):
    """`report --results .`: the index names a damaged line's file as it names the file
    itself, so the line is listed in results.json.gz on both paths (it was dropped)."""

    store = ResultStore(tmp_path / "results")
    path = store.append(history_record("pip-a", "bug", 0, "fail"))
    store.close()
    with path.open("a") as fh:
        fh.write("{damaged\n")
    monkeypatch.chdir(store.root)
    for settled in (True, False):
        paths = [Path(".")] if settled else merged([Path(".")], tmp_path)
        summary = render_site(paths, tmp_path / f"site-{settled}")
        data = site_records(tmp_path / f"site-{settled}")
        assert [(s["line"], s["reason"][:12]) for s in data["skipped"]] == [(2, "invalid JSON")]
        assert len(summary.skipped) == 1


def test_a_file_rewritten_while_the_settled_path_reads_it_is_read_again(tmp_path,
                                                                        rewrite_after_blocks):
    """A file rewritten after its store's histories were read but before results.json.gz copies
    it: the render marks it to be read again (a write, outside the read transaction) and
    renders once more, with the file as it is now."""
    store = ResultStore(tmp_path / "results")
    path = store.append(history_record("pip-a", "bug", 0, "fail"))
    store.close()
    rewritten = rewrite_after_blocks(path)
    summary = render_site([store.root], tmp_path / "site")
    assert rewritten and summary.records == 1
    data = site_records(tmp_path / "site")
    assert [r["status"] for r in data["records"]] == ["pass"]
    assert chunk_cells(tmp_path / "site")["pip-a--bug"]["status"] == "pass"


def test_a_plain_results_json_an_earlier_release_wrote_goes(tmp_path):
    """The records are published as results.json.gz: a plain results.json that a render of an
    earlier release left in the folder is removed, not left beside it, stale."""
    store = ResultStore(tmp_path / "results")
    store.append(history_record("pip-a", "bug", 0, "fail"))
    out = tmp_path / "site"
    (out).mkdir()
    (out / "results.json").write_text('{"records": []}')
    render_site([store.root], out)
    assert not (out / "results.json").exists()
    assert site_records(out)["records"][0]["cell"] == "pip-a--bug"
