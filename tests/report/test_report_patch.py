"""A render after new records patches the last render's site (``report.patch``): the same files.

Every step appends real ``Result``s through the real store, renders into one folder (patched
where the kept site allows it), then renders cold into a new folder; every file of the page
and every figure of the summary must be the same. Steps a patch cannot decide (a new cell, a
stack whose versions changed, a new stage name, pieces another render replaced) must render
in full, and still agree.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from support.sites import page_files as site_files

from repromatrix.model import Repro
from repromatrix.report.chunks import read_payload
from repromatrix.report.last_site import KEPT_NAME
from repromatrix.report.render import ReportSummary, render_site
from repromatrix.store.record import SCHEMA_VERSION, Result
from repromatrix.store.results import ResultStore

NOW = datetime(2026, 11, 26, 3, 0, tzinfo=timezone.utc)
CATALOG = {
    "bug": Repro("bug", "bug.py", "A bug", expect=(
        {"when": {"torch": "<2.5"}, "status": "fail", "note": "fixed in 2.5"},)),
    "other": Repro("other", "other.py", "Another bug"),
}
PUBLISHED = {f"pip-s{n}" for n in range(4)}  # s4 is a one-off run, s5 a bisect probe
TORCH = ["2.3.1", "2.4.1", "2.5.0", "2.5.1", "2.6.0", "2.4.0"]


def record(stack: int, repro: str, run: int, status: str, *, attempt: int = 1,
           torch: str | None = None, stage: str = "eager", message: str = "m",
           workaround: str | None = None) -> Result:
    day = f"2026-11-{run + 1:02d}"
    tags = ["bisect"] if stack == 5 else []
    return Result.from_dict({
        "schema_version": SCHEMA_VERSION, "run_id": f"run-{run}", "cell": f"pip-s{stack}--{repro}",
        "stack": {"id": f"pip-s{stack}", "kind": "pip", "torch": torch or TORCH[stack],
                  "tags": tags},
        "repro": repro, "status": status, "message": message, "workaround": workaround,
        "host": "h", "attempt": attempt,
        "stages": [{"name": stage, "role": "main", "status": status},
                   {"name": "fix", "role": "workaround", "status": workaround or "skip"}],
        "started_at": f"{day}T00:00:{attempt:02d}+00:00",
        "finished_at": f"{day}T00:01:{attempt:02d}+00:00",
    })


def figures(summary: ReportSummary) -> dict:
    return {k: getattr(summary, k) for k in ("records", "cells", "stacks", "repros", "skipped",
                                             "conflicts", "contradictions", "changes", "chunks",
                                             "standin")}


class Page:
    """One --out folder rendered again after each step, checked against a cold render."""

    def __init__(self, tmp: Path, store: ResultStore) -> None:
        self.tmp, self.store, self.steps = tmp, store, 0

    def render(self, *, patched: bool, matrix: str = "matrix.yaml") -> list[str]:
        self.steps += 1
        inc = render_site([self.store.root], self.tmp / "inc", CATALOG, matrix=matrix,
                          published=PUBLISHED, now=NOW)
        cold = render_site([self.store.root], self.tmp / f"cold-{self.steps}", CATALOG,
                           matrix=matrix, published=PUBLISHED, now=NOW)
        assert inc.patched is patched, f"step {self.steps}"
        assert not cold.patched
        assert site_files(self.tmp / "inc") == site_files(self.tmp / f"cold-{self.steps}"), \
            f"step {self.steps}"
        assert figures(inc) == figures(cold), f"step {self.steps}"
        return inc.rewritten


def test_a_patched_render_writes_what_a_full_render_writes(tmp_path):
    store = ResultStore(tmp_path / "results")
    for run, status in enumerate(["fail", "pass"]):
        for stack in range(6):
            store.append(record(stack, "bug", run, status if stack % 2 else "fail",
                                workaround="pass" if stack == 1 else None))
            store.append(record(stack, "other", run, "pass"))
    page = Page(tmp_path, store)
    page.render(patched=False)  # the first render keeps its site
    assert page.render(patched=True) == []  # nothing changed: nothing written

    store.append(record(1, "bug", 2, "fail", workaround="fail"))  # pass -> fail, workaround fails
    rewritten = page.render(patched=True)
    assert len([n for n in rewritten if n.startswith("data/c")]) == 1  # one detail chunk
    assert "data/verdicts.js" in rewritten and "data/environments.js" not in rewritten  # (the box)
    assert {"index.html", "repro-bug.html", "results.csv", "results.json.gz"} <= set(rewritten)

    store.append(record(3, "bug", 2, "pass"))  # contradicts "fail below 2.5"? no: 2.5.1
    store.append(record(0, "bug", 2, "pass"))  # contradicts: torch 2.3.1 should fail
    page.render(patched=True)
    store.append(record(2, "bug", 2, "broken", message="no image"))  # a whole row broken
    store.append(record(2, "other", 2, "broken", message="no image"))
    page.render(patched=True)
    store.append(record(1, "bug", 2, "pass", attempt=2))  # a flaky cell: its attempts disagree
    page.render(patched=True)
    store.append(record(4, "other", 2, "error"))  # a one-off stack: hidden by default
    store.append(record(5, "bug", 2, "pass"))  # a bisect probe
    page.render(patched=True)

    store.append(record(3, "other", 3, "pass", torch="2.5.2"))  # the stack's versions changed
    page.render(patched=False)
    store.append(record(3, "third", 3, "fail"))  # a new cell
    page.render(patched=False)
    store.append(record(0, "other", 4, "pass", stage="compile"))  # a new stage name
    page.render(patched=False)
    store.append(record(0, "other", 5, "fail", stage="compile"))
    page.render(patched=True)


def test_a_column_or_row_that_folds_or_unfolds_is_patched_as_a_full_render(tmp_path):
    """A column whose every cell cannot tell folds (report.fold); one record saying yes or no
    unfolds it, and one that cannot tell again folds it back; a row likewise."""
    store = ResultStore(tmp_path / "results")
    for stack in range(4):
        store.append(record(stack, "bug", 0, "fail"))
        store.append(record(stack, "other", 0, "skip"))
    page = Page(tmp_path, store)
    index = lambda: (tmp_path / "inc" / "index.html").read_text(encoding="utf-8")  # noqa: E731
    page.render(patched=False)
    assert '<li data-repro="other">' in index()
    store.append(record(1, "other", 1, "pass"))
    page.render(patched=True)
    assert 'id="folds"' not in index()
    store.append(record(1, "other", 2, "error"))
    page.render(patched=True)
    assert '<li data-repro="other">' in index() and 'class="fold-note"' not in index()
    store.append(record(2, "bug", 3, "skip"))  # the row of stack 2: every cell skip
    page.render(patched=True)
    assert index().count('class="fold-note"') == 1


def test_pieces_of_another_render_are_not_patched_in(tmp_path):
    """A render with another matrix into another folder replaces the cells' pieces in the
    store's cache (``report.cache``, shared by every page of the store): the next render into
    the first folder finds them not its own and renders in full, never patching the other's
    in (its commands name its matrix); the one after patches again."""
    store = ResultStore(tmp_path / "results")
    for stack in range(3):
        store.append(record(stack, "bug", 0, "fail"))
    page = Page(tmp_path, store)
    page.render(patched=False, matrix="X.yaml")
    render_site([store.root], tmp_path / "y", CATALOG, matrix="Y.yaml", published=PUBLISHED,
                now=NOW)
    store.append(record(1, "bug", 1, "pass"))
    page.render(patched=False, matrix="X.yaml")
    chunks = "".join(read_payload(p)[1] for p in (tmp_path / "inc" / "data").glob("c*.js"))
    assert "X.yaml" in chunks and "Y.yaml" not in chunks
    store.append(record(2, "bug", 1, "pass"))
    page.render(patched=True, matrix="X.yaml")
    chunks = "".join(read_payload(p)[1] for p in (tmp_path / "inc" / "data").glob("c*.js"))
    assert "X.yaml" in chunks and "Y.yaml" not in chunks


def test_a_page_changed_since_the_last_render_is_rendered_in_full(tmp_path):
    """A page edited, or the kept site deleted or damaged, after a render: the next render
    assembles every cell again, and writes what a cold render writes."""
    store = ResultStore(tmp_path / "results")
    for stack in range(3):
        store.append(record(stack, "bug", 0, "fail"))
    page = Page(tmp_path, store)
    page.render(patched=False)
    index = tmp_path / "inc" / "index.html"
    index.write_text(index.read_text().replace("pip-s1", "pip-sX"))
    store.append(record(1, "bug", 1, "pass"))
    page.render(patched=False)
    (tmp_path / "inc" / KEPT_NAME).unlink()
    store.append(record(2, "bug", 1, "pass"))
    page.render(patched=False)
    (tmp_path / "inc" / KEPT_NAME).write_bytes(b"\x00damaged")
    store.append(record(0, "bug", 1, "pass"))
    page.render(patched=False)
    store.append(record(0, "bug", 2, "fail"))
    page.render(patched=True)


def test_a_render_of_anything_but_one_store_keeps_no_site(tmp_path):
    """Two stores (or loose files) are read record by record: no site is kept, and a kept one
    left by an earlier render of one store is not used for them."""
    store = ResultStore(tmp_path / "results")
    store.append(record(0, "bug", 0, "fail"))
    shard = ResultStore(tmp_path / "shard")
    shard.append(record(1, "bug", 0, "pass"))
    out = tmp_path / "site"
    assert not render_site([store.root], out, now=NOW).patched
    assert (out / KEPT_NAME).exists()
    both = render_site([store.root, shard.root], out, now=NOW)
    assert not both.patched and both.cells == 2 and not (out / KEPT_NAME).exists()


def test_records_gone_from_the_store_are_patched_out_or_rendered_in_full(tmp_path):
    """A run's file removed (or rewritten) under the page: its cells show their earlier
    records again, a stack may be shown from another of its cells, and a cell with no
    record left vanishes; whatever the render decides, it writes what a cold render writes."""
    store = ResultStore(tmp_path / "results")
    for stack in range(3):
        store.append(record(stack, "bug", 0, "fail"))
        store.append(record(stack, "other", 0, "pass"))
    store.append(record(1, "bug", 1, "pass", torch="2.4.2"))  # shows stack s1 as 2.4.2
    store.append(record(2, "bug", 1, "pass"))
    store.close()
    page = Page(tmp_path, store)
    page.render(patched=False)
    run1 = next((tmp_path / "results").glob("*/run-1.jsonl"))
    lines = run1.read_text().splitlines(keepends=True)
    run1.write_text(lines[1])  # s1's newer record gone: s1 is shown as 2.4.1 again
    page.render(patched=False)
    run1.unlink()  # s2--bug is shown from run 0 again: its stack did not change
    page.render(patched=True)
    store.append(record(2, "third", 2, "fail"))
    page.render(patched=False)
    next((tmp_path / "results").glob("*/run-2.jsonl")).unlink()  # a cell vanishes
    page.render(patched=False)


def test_a_render_cut_off_midway_leaves_no_site_to_patch(tmp_path, monkeypatch):
    """A render that stops after writing some pages (killed, a full disk) leaves no kept
    site: the next render assembles every cell, never patching pages it did not describe."""
    from repromatrix.report import patch

    store = ResultStore(tmp_path / "results")
    for stack in range(3):
        store.append(record(stack, "bug", 0, "fail"))
    page = Page(tmp_path, store)
    page.render(patched=False)
    store.append(record(1, "bug", 1, "pass"))

    def cut_off(*args, **kwargs):
        raise OSError("no space left on device")

    with monkeypatch.context() as m, pytest.raises(OSError, match="no space"):
        m.setattr(patch, "write_feed", cut_off)
        render_site([store.root], tmp_path / "inc", CATALOG, published=PUBLISHED, now=NOW)
    assert not (tmp_path / "inc" / KEPT_NAME).exists()
    store.append(record(2, "bug", 1, "pass"))
    page.render(patched=False)
    store.append(record(0, "bug", 1, "pass"))
    page.render(patched=True)


def test_a_file_rewritten_while_a_patch_reads_it_is_rendered_in_full(tmp_path,
                                                                      rewrite_after_blocks):
    """A run file rewritten after the patch read the index but before results.json.gz copies
    it: the patch gives way to a full render, which reads the file as it is now."""
    store = ResultStore(tmp_path / "results")
    for stack in range(3):
        store.append(record(stack, "bug", 0, "fail"))
    page = Page(tmp_path, store)
    page.render(patched=False)
    path = store.append(record(1, "bug", 1, "fail"))
    store.close()
    rewritten = rewrite_after_blocks(path)
    summary = render_site([store.root], tmp_path / "inc", CATALOG, published=PUBLISHED, now=NOW)
    assert rewritten and not summary.patched and summary.records == 4
    assert "pip-s1--bug" in summary.changes["newly passing"]
    page.render(patched=True)
