"""The page's freshness section: the newest releases, when they were checked, releases
without a stack, and each stack's pairing confidence."""

from __future__ import annotations

from pathlib import Path

from support.sites import CATALOG, Node, golden, parse, render
from support.sites import result as _result

from repromatrix.report.render import render_site
from repromatrix.store.results import ResultStore

# ----------------------------------------------------------------- freshness


def fresh_site(tmp_path: Path, stacks_yaml: str, checked: dict | None, *sets: str) -> Node:
    from repromatrix.config.compat import load_table
    from repromatrix.config.matrix import load_matrix
    from repromatrix.report.freshness import freshness

    path = tmp_path / "matrix.yaml"
    path.write_text(f"stacks:\n{stacks_yaml}")
    data = freshness(load_table(), checked, load_matrix(path).stacks)
    render_site([golden(tmp_path, s) for s in sets or ("every_status",)], tmp_path / "site", CATALOG,
                freshness=data)
    return parse(tmp_path / "site" / "index.html")


CHECKED = {"date": "2026-11-24", "newest": {"torch": "2.15.0", "torchvision": "0.29.2",
                                            "torch-tensorrt": "2.14.0", "tensorrt": "11.4.0.106"}}


def fresh_rows(doc: Node) -> dict[str, list[str]]:
    table = doc.find("table", id="fresh-table")
    return {tr.attrs["data-package"]: [td.text() for td in tr.find_all("td")]
            for tr in table.find("tbody").find_all("tr")}


def test_freshness_names_newest_releases_checked_date_and_releases_without_a_stack(tmp_path):
    doc = fresh_site(tmp_path, '  - {kind: pip, torch: "2.14"}\n  - {kind: ngc, ngc: "26.08"}\n', CHECKED)
    section = doc.find("section", id="freshness")
    assert "last compared with PyPI on 2026-11-24" in section.find("p", id="fresh-checked").text()
    rows = fresh_rows(doc)
    assert rows["torch"] == ["2.15.0", "2.15.0", "2.14.1"]          # table, PyPI when checked, stack
    assert rows["tensorrt"] == ["11.3.0", "11.4.0.106", "11.1"]      # 11.3.0: NGC 26.09's
    assert rows["NGC PyTorch"] == ["26.09", "–", "26.08"]
    waiting = section.find("p", id="fresh-waiting").text()
    assert waiting == "Known releases with no stack yet: torch 2.15.0, tensorrt 11.3.0, NGC PyTorch 26.09."


def test_freshness_without_a_checked_record_and_with_every_release_stacked(tmp_path):
    doc = fresh_site(tmp_path, '  - {kind: pip, torch: "2.15"}\n  - {kind: ngc, ngc: "26.09"}\n', None,
                     "empty")
    assert "has not been compared with PyPI" in doc.find("p", id="fresh-checked").text()
    assert fresh_rows(doc)["torch"] == ["2.15.0", "–", "2.15.0"]
    assert "none" in doc.find("p", id="fresh-waiting").classes


def test_freshness_reads_the_checked_record_compat_update_writes(tmp_path):
    from repromatrix.releases.update import Proposal, apply
    from repromatrix.report.freshness import table_checked

    table = Path(__file__).resolve().parents[2] / "src" / "repromatrix" / "data" / "compat.yaml"
    text = apply(table.read_text(), Proposal(checked=CHECKED), str(table))
    (tmp_path / "compat.yaml").write_text(text)
    assert table_checked(tmp_path / "compat.yaml") == CHECKED


def test_report_command_shows_freshness_and_no_section_without_it(tmp_path):
    import subprocess
    import sys

    from support.scale import cli_env

    proc = subprocess.run([sys.executable, "-m", "repromatrix.cli", "report", "--results",
                           str(golden(tmp_path, "every_status")), "--out", str(tmp_path / "site")],
                          capture_output=True, text=True, env=cli_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = parse(tmp_path / "site" / "index.html")
    from packaging.version import Version

    from repromatrix.config.matrix import load_matrix

    newest = max((s.torch for s in load_matrix().stacks if s.kind == "pip"), key=Version)
    assert fresh_rows(doc)["torch"][2] == newest  # the newest torch the project's matrix stacks
    _, plain, _ = render(tmp_path / "plain", "every_status")
    assert not plain.find_all("section", id="freshness")


def test_stack_row_states_a_torchvision_pairing_confidence(tmp_path):
    """torch 2.15.0 + torchvision 0.29.2 (paired by tv's requirement) says its confidence."""
    from repromatrix.store.results import ResultStore

    store = ResultStore(tmp_path / "results")
    for sid, torch, tv in (("new", "2.15.0", "0.29.2"), ("old", "2.14.1", "0.29.1")):
        store.append(_result(cell=f"{sid}--demo", repro="demo", status="skip",
                             stack={"id": sid, "kind": "pip", "torch": torch, "torchvision": tv},
                             finished_at="2026-11-23T00:00:01+00:00"))
    render_site([store.root], tmp_path / "site")
    doc = parse(tmp_path / "site" / "index.html")
    heads = {th.parent.attrs["data-stack"]: th for th in doc.find_all("th", cls="stack")}
    pairing = heads["new"].find("small", cls="pairing")
    assert "pairing confidence M" in pairing.text()
    assert "pairing confidence M" in heads["new"].attrs["title"]
    assert heads["old"].find_all("small", cls="pairing") == []


def test_a_new_run_of_a_known_stack_keeps_its_pairing_note_without_the_table(tmp_path):
    """The note comes from the pieces kept for the stack's other cells: a render after a new
    run of a known stack that decides nothing new (the check box's answers, made with the
    table, change only with a record that says yes or no) reads no compatibility table (its
    import costs more than that render), and still writes what a cold render does."""
    import subprocess
    import sys

    store = ResultStore(tmp_path / "results")
    stack = {"id": "new", "kind": "pip", "torch": "2.15.0", "torchvision": "0.29.2"}
    for repro in ("demo", "other"):
        store.append(_result(cell=f"new--{repro}", repro=repro, status="skip", stack=stack,
                             finished_at="2026-11-23T00:00:01+00:00"))
    now = "datetime.datetime(2026, 11, 24, tzinfo=datetime.timezone.utc)"
    script = ("import datetime, sys; from pathlib import Path\n"
              "from repromatrix.report.render import render_site\n"
              f"render_site([Path(sys.argv[1])], Path(sys.argv[2]), now={now})\n"
              "print('repromatrix.config.compat' in sys.modules)")

    def render_in_process(out: Path) -> str:
        proc = subprocess.run([sys.executable, "-c", script, str(store.root), str(out)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    assert render_in_process(tmp_path / "site") == "True"  # the first render works the note out
    store.append(_result(cell="new--demo", repro="demo", status="error", stack=stack, run_id="r2",
                         finished_at="2026-11-23T00:05:00+00:00"))
    assert render_in_process(tmp_path / "site") == "False"
    for path in [*store.root.glob(".index.sqlite*"), *store.root.glob(".render-cache.sqlite*")]:
        path.unlink()  # a cold render: every cell's pieces made anew, each note from the table
    assert render_in_process(tmp_path / "cold") == "True"
    for name in ("index.html", "repro-demo.html", "results.csv"):
        assert (tmp_path / "site" / name).read_bytes() == (tmp_path / "cold" / name).read_bytes()
    head = parse(tmp_path / "site" / "index.html").find("th", cls="stack")
    assert "pairing confidence M" in head.find("small", cls="pairing").text()
