"""What the page derives from many runs: per-cell timelines, the Atom feed, scopes, answers, size.

Records are real ``Result``s written through the real store; the site is rendered by
``render_site`` and read back from its files.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

from repromatrix.model import Repro
from repromatrix.report.answers import axis_answer, stack_scope
from repromatrix.report.load import reduce_records
from repromatrix.report.render import render_site
from repromatrix.store.reader import Entry, history
from repromatrix.store.record import SCHEMA_VERSION, Result
from repromatrix.store.results import ResultStore

ATOM = "{http://www.w3.org/2005/Atom}"


def record(stack: str, repro: str, run: int, status: str, *, tags=(), torch: str = "2.4.1",
           message: str = "m", workaround: str | None = None) -> Result:
    day = f"2026-11-{run + 1:02d}"
    return Result.from_dict({
        "schema_version": SCHEMA_VERSION, "run_id": f"run-{run}", "cell": f"{stack}--{repro}",
        "stack": {"id": stack, "kind": "pip", "torch": torch, "tags": list(tags)}, "repro": repro,
        "status": status, "message": message, "workaround": workaround, "host": "h",
        "stages": [{"name": "eager", "role": "main", "status": status},
                   {"name": "fix", "role": "workaround", "status": workaround or "skip"}],
        "started_at": f"{day}T00:00:00+00:00", "finished_at": f"{day}T00:01:00+00:00",
    })


def chunks(out: Path) -> dict[str, dict]:
    cells = {}
    for path in (out / "data").glob("c*.js"):
        payload = re.fullmatch(r"repromatrixChunk\((\d+),(.*)\);\n", path.read_text(), re.S).group(2)
        cells.update(dict(json.loads(payload)["cells"]))
    return cells


def test_timeline_collapses_runs_and_keeps_the_newest_changes():
    seen = [Entry(f"r{d}", "c", 1, s, None, f"2026-11-{d:02d}", "", "", "")
            for d, s in enumerate(["fail", "fail", "pass", "pass", "pass", "fail"], start=1)]
    segments, dropped = history(reversed(seen))   # order of arrival does not matter
    assert [(s.status, s.first_run, s.last_run, s.runs) for s in segments] == [
        ("fail", "r1", "r2", 2), ("pass", "r3", "r5", 3), ("fail", "r6", "r6", 1)]
    assert dropped == 0
    segments, dropped = history(seen, limit=2)
    assert [s.status for s in segments] == ["pass", "fail"] and dropped == 1


def test_history_in_the_drawer_data_and_the_atom_feed(tmp_path):
    store = ResultStore(tmp_path / "results")
    for run, status in enumerate(["fail", "fail", "pass", "fail"]):
        store.append(record("pip-a", "bug", run, status))
        store.append(record("pip-a", "other", run, "pass"))
    summary = render_site([store.root], tmp_path / "site")
    assert summary.records == 8 and summary.cells == 2
    cell = chunks(tmp_path / "site")["pip-a--bug"]
    assert cell["history"] == [
        ["fail", "run-0", "2026-11-01T00:01:00+00:00", "run-1", "2026-11-02T00:01:00+00:00", 2],
        ["pass", "run-2", "2026-11-03T00:01:00+00:00", "run-2", "2026-11-03T00:01:00+00:00", 1],
        ["fail", "run-3", "2026-11-04T00:01:00+00:00", "run-3", "2026-11-04T00:01:00+00:00", 1]]
    assert cell["previous"] == "pass"
    feed = ET.parse(tmp_path / "site" / "changes.atom").getroot()
    entries = feed.findall(f"{ATOM}entry")
    assert [e.find(f"{ATOM}title").text for e in entries] == ["pip-a--bug: pass → fail",
                                                             "pip-a--bug: fail → pass"]
    assert entries[0].find(f"{ATOM}updated").text == "2026-11-04T00:01:00+00:00"
    assert entries[0].find(f"{ATOM}link").get("href") == "index.html#cell=pip-a--bug"
    assert len({e.find(f"{ATOM}id").text for e in entries}) == 2


def test_feed_survives_hostile_text(tmp_path):
    store = ResultStore(tmp_path / "results")
    hostile = "pip-\x01<b>&amp;"
    store.append(record(hostile, "bug", 0, "fail"))
    store.append(record(hostile, "bug", 1, "pass"))
    render_site([store.root], tmp_path / "site")
    feed = ET.parse(tmp_path / "site" / "changes.atom").getroot()   # well-formed XML
    [entry] = feed.findall(f"{ATOM}entry")
    assert entry.find(f"{ATOM}title").text == "pip-<b>&amp;--bug: fail → pass"


def test_page_size_follows_cells_not_history(tmp_path):
    def site(runs: int) -> Path:
        store = ResultStore(tmp_path / f"r{runs}")
        for run in range(runs):
            for s in range(10):
                for r in range(5):
                    store.append(record(f"pip-s{s}", f"r{r}", run, "fail", message="x" * 3000))
        out = tmp_path / f"site{runs}"
        render_site([store.root], out)
        return out

    one, many = site(1), site(8)
    size = lambda out: (out / "index.html").stat().st_size  # noqa: E731
    assert abs(size(many) - size(one)) < 200   # the run count printed in the header differs
    data = lambda out: sum(p.stat().st_size for p in (out / "data").glob("*.js"))  # noqa: E731
    assert data(many) < data(one) * 1.5        # history is a timeline, not every record
    raw = json.loads((many / "results.json").read_text())
    assert len(raw["records"]) == 400          # the raw data stays complete
    assert "x" * 3000 not in (many / "index.html").read_text()


def test_bisect_probes_and_one_off_stacks_are_off_the_published_matrix(tmp_path):
    store = ResultStore(tmp_path / "results")
    store.append(record("pip-a", "bug", 0, "fail"))
    store.append(record("pip-probe", "bug", 0, "pass", tags=["bisect"]))
    store.append(record("local", "bug", 0, "pass"))
    render_site([store.root], tmp_path / "site", published={"pip-a", "pip-probe"})
    html = (tmp_path / "site" / "index.html").read_text()
    rows = dict(re.findall(r'<tr data-stack="([^"]+)" data-scope="([^"]+)"', html))
    assert rows == {"pip-a": "published", "pip-probe": "bisect", "local": "one-off"}
    hidden = set(re.findall(r'<tr data-stack="([^"]+)"[^>]*class="[^"]*scope-off', html))
    assert hidden == {"pip-probe", "local"}
    assert 'data-default="published"' in html
    # answers count the published stacks only
    page = (tmp_path / "site" / "repro-bug.html").read_text()
    assert "reproduces on 1 of 1 stack" in page
    assert stack_scope({"id": "x"}, None) == "published"


def test_only_one_off_runs_show_everything(tmp_path):
    store = ResultStore(tmp_path / "results")
    store.append(record("local", "bug", 0, "fail"))
    render_site([store.root], tmp_path / "site", published={"pip-a"})
    html = (tmp_path / "site" / "index.html").read_text()
    assert 'data-default="all"' in html and "scope-off" not in html


def test_axis_answer_names_last_bad_and_first_good():
    def entry(version: str, status: str) -> dict:
        return {"cell": {"status": status}, "stack": {"versions": {"torch_tensorrt": version}}}

    fixed = axis_answer([entry("2.4.0", "fail"), entry("2.4.1", "fail"), entry("2.5.0", "pass"),
                         entry("2.6.0", "skip"), entry("2.6.0+cu124", "pass")], "torch_tensorrt", "trt")
    assert (fixed["kind"], fixed["from"], fixed["to"]) == ("fixed", "trt 2.4.1", "trt 2.5.0")
    assert fixed["text"] == "first fixed in trt 2.5.0 (last bad 2.4.1)"
    introduced = axis_answer([entry("2.4.0", "pass"), entry("2.5.0", "fail")], "torch_tensorrt", "trt")
    assert introduced["kind"] == "introduced" and introduced["to"] == "trt 2.5.0"
    still = axis_answer([entry("2.4.0", "fail"), entry("2.5.0", "fail")], "torch_tensorrt", "trt")
    assert still["kind"] == "still"
    assert axis_answer([entry("2.4.0", "fail")], "torch_tensorrt", "trt") is None
    assert axis_answer([entry("2.4.0", "pass"), entry("2.5.0", "pass")], "torch_tensorrt", "trt") is None


def test_workaround_and_stage_codes_reach_the_grid(tmp_path):
    store = ResultStore(tmp_path / "results")
    store.append(record("pip-a", "bug", 0, "fail", workaround="pass"))
    store.append(record("pip-b", "bug", 0, "pass", torch="2.5.1"))
    render_site([store.root], tmp_path / "site")
    html = (tmp_path / "site" / "index.html").read_text()
    tds = dict(re.findall(r'<td class="cell[^"]*" data-cell="([^"]+)"([^>]*)>', html))
    assert 'data-sg="0F.1P"' in tds["pip-a--bug"] and 'data-w="pass"' in tds["pip-a--bug"]
    assert 'data-sg="0P.1S"' in tds["pip-b--bug"] and "data-w" not in tds["pip-b--bug"]
    data = json.loads(html.split('id="report-data">', 1)[1].split("</script>", 1)[0])
    assert data["stages"] == ["eager", "fix"]
    page = (tmp_path / "site" / "repro-bug.html").read_text()
    assert "workaround works on 1 of 1" in page


def test_duplicates_and_conflicts_while_streaming(tmp_path):
    store = ResultStore(tmp_path / "a")
    rec = record("pip-a", "bug", 0, "fail")
    store.append(rec)
    copy = ResultStore(tmp_path / "b")
    copy.append(rec)                                        # the same run shipped twice
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "x.jsonl").write_text(json.dumps(rec.to_dict(), indent=None) + "\n")  # reformatted
    with reduce_records([tmp_path / "a", tmp_path / "b", tmp_path / "c"]) as reduced:
        pass
    assert reduced.records == 1 and reduced.conflicts == []
    other = ResultStore(tmp_path / "d")
    other.append(record("pip-a", "bug", 0, "pass"))
    with reduce_records([tmp_path / "a", tmp_path / "d"]) as reduced:
        shown = reduced.result("pip-a--bug")  # read back while the indexes are open
    assert reduced.records == 1 and len(reduced.conflicts) == 1
    assert [s.status for s in reduced.timeline("pip-a--bug")] == [shown.status]


def test_changes_list_is_capped_on_the_page_but_complete_in_the_summary(tmp_path):
    store = ResultStore(tmp_path / "results")
    for run, status in enumerate(["pass", "fail"]):
        for s in range(120):
            store.append(record(f"pip-s{s}", "bug", run, status))
    summary = render_site([store.root], tmp_path / "site")
    html = (tmp_path / "site" / "index.html").read_text()
    assert len(summary.changes["newly failing"]) == 120
    assert html.count('class="permalink"') == 100 and "… and 20 more" in html


def merged(paths: list[Path], tmp_path: Path) -> list[Path]:
    """``paths`` and an empty store beside them: several stores, read through a temporary
    index (``store.index_merged``) rather than the store's own."""
    (tmp_path / "empty-store").mkdir(exist_ok=True)
    return [*paths, tmp_path / "empty-store"]


def site_files(out: Path) -> dict[str, bytes]:
    """Every file of a rendered site but the render's own caches (dot files: the render
    state, the kept site, the report's cache), which are not part of the page."""
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and not p.name.startswith(".")}


def test_an_incremental_render_leaves_what_a_cold_render_writes(tmp_path, monkeypatch):
    """Render into one folder after each change; render cold into a new folder, and once
    more reading every record (not the histories the index keeps); every file equal. One
    new record rewrites one detail chunk, never the unchanged ones or static/."""

    now = datetime(2026, 11, 24, 1, 2, tzinfo=timezone.utc)
    store = ResultStore(tmp_path / "results")
    for run, status in enumerate(["fail", "pass"]):
        for s in range(120):
            store.append(record(f"pip-s{s:03d}", "bug", run, status if s % 3 else "skip"))
            store.append(record(f"pip-s{s:03d}", "other", run, "pass"))
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
    store.append(record("pip-s005", "bug", 2, "error"))  # one new record
    rewritten = both([store.root])
    assert len([n for n in rewritten if n.startswith("data/")]) == 1
    assert not [n for n in rewritten if n.startswith("static/")]
    assert "changes.atom" in rewritten and "results.json" in rewritten
    assert json.loads((inc / "results.json").read_text())["records"][-1]["status"] == "error"
    store.append(record("pip-s006", "bug", 2, "pass"))  # the same run file grows by one line
    assert "results.json" in both([store.root])
    damaged = tmp_path / "results" / "h" / "zz-damaged.jsonl"  # a line path, not a whole file
    old = {**record("pip-s007", "bug", 3, "fail").to_dict(), "schema_version": 1}
    damaged.write_text("{bad\n" + json.dumps(old) + "\n")
    both([store.root])
    shard = ResultStore(tmp_path / "shard")  # merged stores: a conflict for one cache key
    shard.append(Result.from_dict({**record("pip-s009", "bug", 1, "fail").to_dict(), "host": "n2"}))
    both([store.root, tmp_path / "shard"])
    both([store.root, damaged])  # a file given on its own beside the folder that holds it
    both([store.root])
    with sqlite3.connect(inc / ".render-cache.sqlite") as db:  # the cells' pieces, kept
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
    store.append(record("pip-a", "bug", 0, "fail"))
    out, now = tmp_path / "site", datetime(2026, 11, 25, 4, 30, tzinfo=timezone.utc)
    render_site([store.root], out, now=now)
    state = json.loads((out / STATE_NAME).read_text())
    assert state["format"] == FORMAT and render_site([store.root], out, now=now).rewritten == []
    (out / STATE_NAME).write_text(json.dumps({**state, "format": FORMAT - 1}))
    assert sorted(render_site([store.root], out, now=now).rewritten) == sorted(site_files(out))


def test_a_file_rewritten_after_a_render_is_read_again(tmp_path):
    """Same size, other records (a file replaced by a copy from elsewhere): the index reads
    it again, the pieces kept for the old lines are not used, results.json is rewritten."""
    store = ResultStore(tmp_path / "results")
    path = store.append(record("pip-a", "bug", 0, "fail"))
    store.append(record("pip-b", "bug", 0, "fail"))
    store.close()
    render_site([store.root], tmp_path / "site")
    st = path.stat()
    path.write_text(path.read_text().replace('"fail"', '"pass"'))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    summary = render_site([store.root], tmp_path / "site")
    raw = json.loads((tmp_path / "site" / "results.json").read_text())
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
    moved.append(Result.from_dict({**record("pip-a", "bug", 0, "fail").to_dict(),
                                   "reproduce": command}))
    here = ResultStore(tmp_path / "here")
    at_home = [*command[:6], "--results", str(here.root.resolve()), *command[8:]]
    here.append(Result.from_dict({**record("pip-b", "bug", 0, "pass").to_dict(),
                                  "reproduce": at_home}))
    monkeypatch.chdir(tmp_path / "project")
    render_site([moved.root, here.root], tmp_path / "site")
    cells = chunks(tmp_path / "site")
    assert cells["pip-a--bug"]["command"] == (
        "repromatrix run --matrix results/published/matrix.yaml --ca-bundle /etc/ssl/ca.pem "
        "--results results/published -k pip-a--bug --rerun")
    assert cells["pip-b--bug"]["command"] == " ".join(at_home)
    # the store read through the folder that holds it (the default `results/`): the same
    render_site([tmp_path / "project" / "results"], tmp_path / "site-parent")
    assert chunks(tmp_path / "site-parent")["pip-a--bug"]["command"] == (
        cells["pip-a--bug"]["command"])
    loose = tmp_path / "project" / "downloaded.jsonl"  # a file on its own: no store to follow
    loose.write_bytes(next(moved.root.glob("*/*.jsonl")).read_bytes())
    render_site([loose], tmp_path / "site-loose")
    assert chunks(tmp_path / "site-loose")["pip-a--bug"]["command"] == " ".join(command)


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
            rec = record(f"pip-s{s:03d}", "bug", run, status if s % 4 else "skip").to_dict()
            store.append(Result.from_dict({**rec, "host": "h-2" if s % 3 == 0 else "h"}))
            store.append(record(f"pip-s{s:03d}", "other", run, statuses[(run + s) % 5]))
    flaky = record("pip-s001", "bug", 9, "fail").to_dict()
    for attempt, status in ((1, "fail"), (2, "pass")):  # a --repeat run that disagrees
        store.append(Result.from_dict({**flaky, "attempt": attempt, "status": status}))
    stood_in = record("pip-s002", "bug", 9, "fail").to_dict()  # real earlier, stand-in later
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
    details = chunks(tmp_path / "settled")
    assert details["pip-s001--bug"]["flaky"] == "1 fail, 1 pass"
    assert details["pip-s002--bug"]["status"] == "fail" and details["pip-s002--bug"]["run_id"] == "run-4"
    assert len(details["pip-s000--other"]["history"]) == 4  # fail, pass x2, error, fail


def test_a_copy_sends_a_store_record_by_record_and_a_blank_line_does_not(tmp_path, monkeypatch):
    """Only files that are exactly their records are copied whole: a blank line between two
    records is left out of results.json line by line, still through the cells' histories;
    the same record twice is sent once, its copy's file line by line (one read path: the
    histories). results.json stays valid JSON with each record once."""
    from repromatrix.report import load

    calls: list[bool] = []
    monkeypatch.setattr(load, "_read_settled", lambda *a, _f=load._read_settled: (
        calls.append(True), _f(*a))[1])
    store = ResultStore(tmp_path / "results")
    path = store.append(record("pip-a", "bug", 0, "fail"))
    store.append(record("pip-b", "bug", 0, "pass"))
    store.close()
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + "\n" + lines[1])
    render_site([store.root], tmp_path / "blank")
    data = json.loads((tmp_path / "blank" / "results.json").read_text())
    assert [r["status"] for r in data["records"]] == ["fail", "pass"] and calls == [True]
    (path.parent / "copy.jsonl").write_text(lines[1])  # the same record shipped twice
    summary = render_site([store.root], tmp_path / "copy")
    data = json.loads((tmp_path / "copy" / "results.json").read_text())
    assert summary.records == 2 and sorted(r["status"] for r in data["records"]) == ["fail", "pass"]
    assert calls == [True, True], "a copy: through the histories too"


def test_blank_damaged_and_older_lines_are_read_through_the_histories_as_every_record_is(
        tmp_path, monkeypatch):
    """A store with a blank line, a damaged line, an older-schema record and a truncated last
    line is still read one row per cell: the page and results.json are byte for byte what
    reading every record writes, after a render and after one more record."""
    from repromatrix.report import load

    now = datetime(2026, 11, 25, 9, 0, tzinfo=timezone.utc)
    store = ResultStore(tmp_path / "results")
    for run in range(3):
        for s in range(4):
            store.append(record(f"pip-s{s}", "bug", run, ["fail", "pass", "error"][(run + s) % 3]))
    store.close()
    odd = store.root / "h" / "odd.jsonl"
    older = {**record("pip-s9", "bug", 5, "fail").to_dict(), "schema_version": 1}
    newer = record("pip-s8", "bug", 5, "pass").to_dict()
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
    data = json.loads((tmp_path / "first-settled" / "results.json").read_text())
    assert {r["schema_version"] for r in data["records"]} == {SCHEMA_VERSION}
    assert first.records == 12 + 2
    ResultStore(store.root).append(record("pip-s1", "bug", 7, "crash"))
    assert both("again").records == 15 and calls == [True] * 4
    # into the folders of the first render: results.json goes on after the lines it holds
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
        rec = {**record(stack, "bug", run, status).to_dict(), "host": host,
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
    store.append(Result.from_dict({**record("pip-a", "bug", 0, "fail").to_dict(),
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
    """Two renders of one store with other matrices keep one set of pieces per cell: a render
    whose pieces were replaced between reading their heads and their details makes them
    again, never writing the other render's command into its chunks."""
    from repromatrix.report import load

    store = ResultStore(tmp_path / "results")
    now = datetime(2026, 11, 25, 9, 0, tzinfo=timezone.utc)
    store.append(record("pip-a", "bug", 0, "fail"))
    store.close()
    render_site([store.root], tmp_path / "x", matrix="X.yaml", now=now)
    details, meanwhile = load.Reduced.details, []

    def other_render_first(self, cells):
        if not meanwhile:
            meanwhile.append("Y")
            render_site([store.root], tmp_path / "y", matrix="Y.yaml", now=now)
        return details(self, cells)

    monkeypatch.setattr(load.Reduced, "details", other_render_first)
    render_site([store.root], tmp_path / "x2", matrix="X.yaml", now=now)
    assert meanwhile
    chunk = (tmp_path / "x2" / "data" / "c0.js").read_text()
    assert "X.yaml" in chunk and "Y.yaml" not in chunk


def test_a_last_record_without_its_newline_is_read_on_both_paths(tmp_path, monkeypatch):
    """A file whose last line has no newline (edited by hand): its record counts, and
    results.json stays valid JSON."""

    store = ResultStore(tmp_path / "results")
    path = store.append(record("pip-a", "bug", 0, "fail"))
    store.append(record("pip-b", "bug", 0, "pass"))
    store.close()
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    for settled in (True, False):
        out = tmp_path / f"site-{settled}"
        paths = [store.root] if settled else merged([store.root], tmp_path)
        assert render_site(paths, out).records == 2
        data = json.loads((out / "results.json").read_text())
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
        store.append(record(f"pip-{n}", "bug", 0, "fail", message=text, workaround=text))
    store.append(record("pip-\udcff", "bug", 0, "pass"))  # even in an id the index keeps
    store.close()
    render_site([store.root], tmp_path / "made", now=now)  # every cell's pieces made and kept
    with sqlite3.connect(tmp_path / "made" / ".render-cache.sqlite") as db:
        kept = dict(db.execute("SELECT cell, markup FROM pieces"))
    assert kept["pip-0--bug"].startswith(b"\x01") and b"\x00" in kept["pip-3--bug"]
    (tmp_path / "kept").mkdir()  # the report's cache beside another page: every cell's pieces
    shutil.copy(tmp_path / "made" / ".render-cache.sqlite", tmp_path / "kept")  # read back
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
    store.append(record("pip-a", "bug", 0, "fail"))
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
    rec = record("pip-a", "bug", 0, "fail").to_dict()
    rec["stages"][0]["duration_s"] = float("nan")
    store.append(Result.from_dict({**rec, "duration_s": None}))
    store.append(Result.from_dict({**record("pip-b", "bug", 0, "pass").to_dict(),
                                   "duration_s": 2.0}))
    store.close()
    render_site([store.root], tmp_path / "site")
    details = chunks(tmp_path / "site")
    unknown, known = details["pip-a--bug"], details["pip-b--bug"]
    assert "duration" not in unknown and unknown["stages"][0]["duration"] == ""
    assert known["duration"] == "2.0 s"
    loaded = ResultStore(store.root).load().records
    assert {r.cell: r.duration_s for r in loaded} == {"pip-a--bug": None, "pip-b--bug": 2.0}


def test_skipped_lines_are_listed_for_a_store_named_by_a_relative_path(tmp_path, monkeypatch):
    """`report --results .`: the index names a damaged line's file as it names the file
    itself, so the line is listed in results.json on both paths (it was dropped)."""

    store = ResultStore(tmp_path / "results")
    path = store.append(record("pip-a", "bug", 0, "fail"))
    store.close()
    with path.open("a") as fh:
        fh.write("{damaged\n")
    monkeypatch.chdir(store.root)
    for settled in (True, False):
        paths = [Path(".")] if settled else merged([Path(".")], tmp_path)
        summary = render_site(paths, tmp_path / f"site-{settled}")
        data = json.loads((tmp_path / f"site-{settled}" / "results.json").read_text())
        assert [(s["line"], s["reason"][:12]) for s in data["skipped"]] == [(2, "invalid JSON")]
        assert len(summary.skipped) == 1


def test_a_file_rewritten_while_the_settled_path_reads_it_is_read_again(tmp_path,
                                                                        rewrite_after_blocks):
    """A file rewritten after its store's histories were read but before results.json copies
    it: the render marks it to be read again (a write, outside the read transaction) and
    renders once more, with the file as it is now."""
    store = ResultStore(tmp_path / "results")
    path = store.append(record("pip-a", "bug", 0, "fail"))
    store.close()
    rewritten = rewrite_after_blocks(path)
    summary = render_site([store.root], tmp_path / "site")
    assert rewritten and summary.records == 1
    data = json.loads((tmp_path / "site" / "results.json").read_text())
    assert [r["status"] for r in data["records"]] == ["pass"]
    assert chunks(tmp_path / "site")["pip-a--bug"]["status"] == "pass"
