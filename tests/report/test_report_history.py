"""What the page derives from many runs: per-cell timelines, the Atom feed, scopes, answers, size.

Records are real ``Result``s written through the real store; the site is rendered by
``render_site`` and read back from its files.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from support.sites import ATOM, chunk_cells, history_record, site_records

from repromatrix.report.answers import axis_answer, stack_scope
from repromatrix.report.load import reduce_records
from repromatrix.report.render import render_site
from repromatrix.rules.verdict import said
from repromatrix.store.reader import Entry, history
from repromatrix.store.results import ResultStore


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
        store.append(history_record("pip-a", "bug", run, status))
        store.append(history_record("pip-a", "other", run, "pass"))
    summary = render_site([store.root], tmp_path / "site")
    assert summary.records == 8 and summary.cells == 2
    cell = chunk_cells(tmp_path / "site")["pip-a--bug"]
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
    store.append(history_record(hostile, "bug", 0, "fail"))
    store.append(history_record(hostile, "bug", 1, "pass"))
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
                    store.append(history_record(f"pip-s{s}", f"r{r}", run, "fail", message="x" * 3000))
        out = tmp_path / f"site{runs}"
        render_site([store.root], out)
        return out

    one, many = site(1), site(8)
    size = lambda out: (out / "index.html").stat().st_size  # noqa: E731
    assert abs(size(many) - size(one)) < 200   # the run count printed in the header differs
    data = lambda out: sum(p.stat().st_size for p in (out / "data").glob("*.js"))  # noqa: E731
    assert data(many) < data(one) * 1.5        # history is a timeline, not every record
    raw = site_records(many)
    assert len(raw["records"]) == 400          # the raw data stays complete
    assert "x" * 3000 not in (many / "index.html").read_text()


def test_bisect_probes_and_one_off_stacks_are_off_the_published_matrix(tmp_path):
    store = ResultStore(tmp_path / "results")
    store.append(history_record("pip-a", "bug", 0, "fail"))
    store.append(history_record("pip-probe", "bug", 0, "pass", tags=["bisect"]))
    store.append(history_record("local", "bug", 0, "pass"))
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
    store.append(history_record("local", "bug", 0, "fail"))
    render_site([store.root], tmp_path / "site", published={"pip-a"})
    html = (tmp_path / "site" / "index.html").read_text()
    assert 'data-default="all"' in html and "scope-off" not in html


def test_axis_answer_names_last_bad_and_first_good():
    def entry(version: str, status: str) -> dict:
        return {"cell": {"status": status, "verdict": said(status, "")},
                "stack": {"versions": {"torch_tensorrt": version}}}

    fixed = axis_answer([entry("2.4.0", "fail"), entry("2.4.1", "fail"), entry("2.5.0", "pass"),
                         entry("2.6.0", "skip"), entry("2.6.0+cu124", "pass")], "torch_tensorrt", "trt")
    assert (fixed["kind"], fixed["from"], fixed["to"]) == ("fixed", "trt 2.4.1", "trt 2.5.0")
    assert fixed["text"] == "records: bad on trt 2.4.1, good on 2.5.0"
    introduced = axis_answer([entry("2.4.0", "pass"), entry("2.5.0", "fail")], "torch_tensorrt", "trt")
    assert introduced["kind"] == "introduced" and introduced["to"] == "trt 2.5.0"
    still = axis_answer([entry("2.4.0", "fail"), entry("2.5.0", "fail")], "torch_tensorrt", "trt")
    assert still["kind"] == "still"
    assert axis_answer([entry("2.4.0", "fail")], "torch_tensorrt", "trt") is None
    assert axis_answer([entry("2.4.0", "pass"), entry("2.5.0", "pass")], "torch_tensorrt", "trt") is None


def test_workaround_and_stage_codes_reach_the_grid(tmp_path):
    store = ResultStore(tmp_path / "results")
    store.append(history_record("pip-a", "bug", 0, "fail", workaround="pass"))
    store.append(history_record("pip-b", "bug", 0, "pass", torch="2.5.1"))
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
    rec = history_record("pip-a", "bug", 0, "fail")
    store.append(rec)
    copy = ResultStore(tmp_path / "b")
    copy.append(rec)                                        # the same run shipped twice
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "x.jsonl").write_text(json.dumps(rec.to_dict(), indent=None) + "\n")  # reformatted
    with reduce_records([tmp_path / "a", tmp_path / "b", tmp_path / "c"]) as reduced:
        pass
    assert reduced.records == 1 and reduced.conflicts == []
    other = ResultStore(tmp_path / "d")
    other.append(history_record("pip-a", "bug", 0, "pass"))
    with reduce_records([tmp_path / "a", tmp_path / "d"]) as reduced:
        shown = reduced.result("pip-a--bug")  # read back while the indexes are open
    assert reduced.records == 1 and len(reduced.conflicts) == 1
    assert [s.status for s in reduced.timeline("pip-a--bug")] == [shown.status]


def test_changes_list_is_capped_on_the_page_but_complete_in_the_summary(tmp_path):
    store = ResultStore(tmp_path / "results")
    for run, status in enumerate(["pass", "fail"]):
        for s in range(120):
            store.append(history_record(f"pip-s{s}", "bug", run, status))
    summary = render_site([store.root], tmp_path / "site")
    html = (tmp_path / "site" / "index.html").read_text()
    assert len(summary.changes["newly failing"]) == 120
    assert html.count('class="permalink"') == 100 and "… and 20 more" in html
