"""The static site from golden result sets (tests/data/results), asserted on HTML structure
(the expectation rules are in test_expect.py, the freshness section in test_freshness.py)."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest
from support import ROOT
from support.sites import (
    CATALOG,
    DATA,
    DEFORM,
    STATUSES,
    chunk_data,
    golden,
    matrix,
    parse,
    render,
    site_records,
)
from support.sites import result as _result

from repromatrix.report.chunks import read_payload
from repromatrix.report.render import (
    page_name,
    render_site,
    report_assets_dir,
    reproduce_command,
    script_json,
)
from repromatrix.store.record import SCHEMA_VERSION, Result
from repromatrix.store.results import ResultStore

# ----------------------------------------------------------------- golden sets


def test_every_status_matrix_order_letters_and_legend(tmp_path):
    summary, doc, out = render(tmp_path, "every_status")
    rows, cols, cells = matrix(doc)
    # rows grouped by axis (torch minor, then NGC year), in version order: 2.10 sorts after 2.9
    assert rows == ["pip-torch2.4.1", "pip-torch2.5.1", "pip-torch2.9.1", "pip-torch2.10.0", "ngc-24.05"]
    groups = [tr.text().strip() for tr in doc.find("table", id="matrix").find_all("tr", cls="group")]
    assert groups == ["torch 2.4", "torch 2.5", "torch 2.9", "torch 2.10", "NGC 2024"]
    labels = {tr.attrs["data-stack"]: tr.find("span", cls="sid").text()
              for tr in doc.find("table", id="matrix").find("tbody").find_all("tr")
              if "data-stack" in tr.attrs}
    assert labels["ngc-24.05"].startswith("NGC 24.05 · torch 2.4.0")
    assert labels["pip-torch2.4.1"].startswith("torch 2.4.1 · trt 2.4.0")
    assert cols == ["deform_conv2d_device", "dynamic_unet_shapes", "onnx_export_device",
                    "torchscript_device_mix", "ts_device_gpu_id"]
    statuses = {k: td.attrs["data-status"] for k, td in cells.items() if td.attrs["data-status"]}
    assert sorted(set(statuses.values())) == sorted(STATUSES)
    assert statuses[("pip-torch2.4.1", "ts_device_gpu_id")] == "error"
    assert statuses[("pip-torch2.5.1", "deform_conv2d_device")] == "pass"   # latest run wins
    letters = {"pass": "P", "fail": "F", "error": "E", "crash": "C", "timeout": "T", "skip": "S",
               "broken": "B"}
    for (_, _), td in cells.items():
        st = td.attrs["data-status"]
        assert f"st-{st or 'none'}" in td.classes
        assert td.text().startswith(letters[st] if st else "·")
    assert len([td for td in cells.values() if td.attrs["data-status"]]) == summary.cells == 9
    legend = doc.find("details", cls="legend")
    shown = {b.find("b").text(): b.text().split()[-1] for b in legend.find_all("span", cls="badge")
             if any(c.startswith("st-") and c != "st-none" for c in b.classes)}
    assert shown == {v: k for k, v in letters.items()}
    assert (summary.records, summary.stacks, summary.repros) == (15, 5, 5)


def test_contradiction_changes_and_drawer_data(tmp_path):
    summary, doc, out = render(tmp_path, "every_status")
    _, _, cells = matrix(doc)
    contra = cells[("pip-torch2.10.0", "deform_conv2d_device")]
    assert "contra" in contra.classes and "!" in contra.text()
    assert summary.contradictions == ["pip-torch2.10.0--deform_conv2d_device"]
    assert [td for td in cells.values() if "contra" in td.classes] == [contra]
    changes = doc.find("section", id="changes")
    kinds = {d.attrs["data-kind"]: [a.attrs["data-cell"] for a in d.find_all("a", cls="permalink")]
             for d in changes.find_all("details", cls="change-kind")}
    assert kinds == {
        "newly failing": ["pip-torch2.10.0--deform_conv2d_device"],
        "newly passing": ["pip-torch2.5.1--deform_conv2d_device"],
        "new errors": ["ngc-24.05--dynamic_unet_shapes", "pip-torch2.4.1--ts_device_gpu_id",
                       "pip-torch2.5.1--ts_device_gpu_id"],
    }
    assert summary.changes == kinds
    data = chunk_data(out)
    assert set(data["cells"]) == {td.attrs["data-cell"] for td in cells.values() if "data-cell" in td.attrs}
    cell = data["cells"]["ngc-24.05--deform_conv2d_device"]
    assert cells[("ngc-24.05", "deform_conv2d_device")].attrs["data-k"] == str(data["chunk_of"][cell["id"]])
    assert [s["role"] for s in cell["stages"]] == ["main", "main", "main"]   # schema 1: no roles
    assert cell["command"] == ("repromatrix run --matrix matrix.yaml -k ngc-24.05--deform_conv2d_device"
                               " --rerun")
    assert [s["name"] for s in cell["stages"]] == ["eager", "compile", "workaround"]
    # torch_tensorrt 2.4.0.dev0 meets a boundary as 2.4 (rules.versions.boundary_version): the
    # fixture's ">=2.4,<2.5" rule applies to this NGC record, which agrees with it
    assert cell["signature"] == "trt3556-device-mismatch" and cell["expected"] == "fail"
    assert dict(data["envs"][cell["id"]])["torch"] == "2.4.0a0+07cecf4168"
    assert "sha256:" in cell["image"] and cell["duration"] == "12.5 s"
    assert "hidden" in doc.find("aside", id="drawer").attrs


def test_repro_page_answers_beside_expectation(tmp_path):
    _, doc, out = render(tmp_path, "every_status")
    link = doc.find("th", cls="repro", data_repro="deform_conv2d_device").find("a")
    page = parse(out / link.attrs["href"])
    assert page.find("h2", cls="repro-title").text().startswith("deform_conv2d_device")
    rules = [[td.text().strip() for td in tr.find_all("td")] for tr in page.find("table", cls="rules")
             .find("tbody").find_all("tr")]
    # NGC 24.05's torch_tensorrt 2.4.0.dev0 meets the boundary as 2.4: the first rule's
    assert [r[0] for r in rules] == ["torch_tensorrt >=2.4,<2.5", "torch_tensorrt >=2.5"]
    assert [r[3] for r in rules] == ["F fail 2", "P pass 1 F fail 1"]   # records beside each rule
    assert [r[4] for r in rules] == ["0", "1"]
    summary = page.find("p", id="answer-summary").text()
    # the fix as `check` names it (2.10.0 failed: the first release after it), then the records
    assert summary.startswith("reproduces on 3 of 4 stacks · fixed in torch-tensorrt 2.11.0 (by its "
                              "rules: no record on that release); NGC: ")
    assert ("· records: bad on torch-tensorrt 2.4.0, good on 2.5.0; good on torch-tensorrt 2.5.0, "
            "bad again on 2.10.0 ·") in summary
    assert summary.endswith("workaround works on 3 of 3")
    trt = page.find("dd", cls="axis", data_axis="torch_tensorrt")
    assert trt.attrs["data-kind"] == "regressed"
    rows = [tr for tr in page.find("table", cls="by-stack").find_all("tr") if "data-cell" in tr.attrs]
    assert [r.attrs["data-cell"].split("--")[0] for r in rows] == [
        "pip-torch2.4.1", "pip-torch2.5.1", "pip-torch2.10.0", "ngc-24.05"]
    assert [r.attrs["data-cell"] for r in rows if "contra" in r.classes] == [
        "pip-torch2.10.0--deform_conv2d_device"]
    upstream = page.find("section", cls="upstream")
    assert [a.attrs["href"] for a in upstream.find_all("a")] == [DEFORM.upstream[0]]
    assert "javascript:alert(1)" in upstream.text()  # shown as text, never as a link
    # a repro without catalog entry still gets a page
    assert (out / page_name("ts_device_gpu_id")).is_file()


def test_raw_json_and_csv_beside_the_page(tmp_path):
    summary, _, out = render(tmp_path, "every_status")
    raw = site_records(out)
    assert len(raw["records"]) == 15 and raw["skipped"] == [] and raw["conflicts"] == []
    with open(out / "results.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == summary.cells == 9
    by_cell = {r["cell"]: r for r in rows}
    assert by_cell["pip-torch2.10.0--deform_conv2d_device"]["contradicted"] == "True"
    assert by_cell["pip-torch2.5.1--deform_conv2d_device"]["previous"] == "fail"
    assert (out / "static" / "report.css").is_file() and (out / "static" / "report.js").is_file()


def test_page_needs_no_network(tmp_path):
    _, doc, out = render(tmp_path, "every_status")
    for path in [out / "index.html", *out.glob("repro-*.html")]:
        page = parse(path)
        refs = [n.attrs.get("src") or n.attrs.get("href") for n in page.iter()
                if n.tag in ("script", "link", "img", "iframe")]
        refs = [r for r in refs if r]
        assert refs and all(r.startswith(("static/", "data:")) or r == "changes.atom" for r in refs), refs
        assert all((out / r).is_file() for r in refs if r.startswith("static/"))


def test_empty_store(tmp_path):
    summary, doc, out = render(tmp_path, "empty", repros={})
    assert doc.find("section", id="empty").find("h2").text() == "No results yet"
    assert doc.find_all("table", id="matrix") == [] and doc.find_all("script") == []
    assert (summary.records, summary.cells, summary.skipped) == (0, 0, [])
    assert site_records(out)["records"] == []
    assert (out / "results.csv").read_text().splitlines()[0].startswith("cell,")


def test_single_cell(tmp_path):
    _, doc, _ = render(tmp_path, "single_cell")
    rows, cols, cells = matrix(doc)
    assert (rows, cols) == (["pip-torch2.4.1"], ["deform_conv2d_device"])
    [td] = cells.values()
    assert td.attrs["data-status"] == "fail"
    assert td.attrs["data-cell"] == "pip-torch2.4.1--deform_conv2d_device"


def test_sparse_matrix_from_two_hosts(tmp_path):
    _, doc, _ = render(tmp_path, "sparse", repros={})
    rows, cols, cells = matrix(doc)
    assert rows == ["pip-torch2.4.1", "pip-torch2.10.0", "ngc-24.05"]
    assert cols == ["deform_conv2d_device", "dynamic_unet_shapes", "onnx_export_device"]
    filled = {k for k, td in cells.items() if td.attrs["data-status"]}
    assert filled == {("ngc-24.05", "dynamic_unet_shapes"), ("pip-torch2.4.1", "deform_conv2d_device"),
                      ("pip-torch2.10.0", "onnx_export_device")}
    assert all("st-none" in td.classes and td.text() == "·" for k, td in cells.items() if k not in filled)


def test_stack_with_only_broken(tmp_path):
    _, doc, _ = render(tmp_path, "only_broken")
    table = doc.find("table", id="matrix")
    [row] = [tr for tr in table.find_all("tr") if tr.attrs.get("data-stack") == "pip-torch2.9.1"]
    assert "all-broken" in row.classes
    cells = row.find_all("td", cls="cell")
    assert {td.attrs["data-status"] for td in cells} == {"broken"}
    assert row.find("small", cls="broken-note").text() == "environment broken"
    # every cell cannot tell: the row folds into one cell saying what would decide them
    assert "folded" in row.classes
    n = len(cells)
    assert row.find("td", cls="fold-note").text() == (
        f"cannot tell on {'its one repro' if n == 1 else f'any of its {n} repros'} here ({n} broken): "
        "needs a machine that can build its environment")
    other = [tr for tr in table.find_all("tr") if tr.attrs.get("data-stack") == "pip-torch2.10.0"]
    assert "all-broken" not in other[0].classes


def test_truncated_line_and_unknown_schema_render_the_rest(tmp_path):
    summary, doc, _ = render(tmp_path, "damaged")
    _, _, cells = matrix(doc)
    assert {td.attrs["data-cell"] for td in cells.values() if td.attrs["data-status"]} == {
        "pip-torch2.4.1--deform_conv2d_device", "pip-torch2.5.1--deform_conv2d_device"}
    assert [(Path(s.file).name, s.line) for s in summary.skipped] == [("run-1.jsonl", 2), ("run-1.jsonl", 4)]
    notice = doc.find("details", cls="skipped")
    items = [li.text() for li in notice.find_all("li")]
    assert len(items) == 2
    assert "run-1.jsonl:2" in items[0] and "schema_version 99" in items[0]
    assert "run-1.jsonl:4" in items[1] and "truncated" in items[1]


def test_conflicting_duplicates_are_flagged(tmp_path):
    src = DATA / "single_cell" / "gpu-box-1" / "run-1.jsonl"
    rec = json.loads(src.read_text().splitlines()[0])
    store = tmp_path / "store"
    ResultStore(store).append(Result.from_dict(rec))
    ResultStore(store).append(Result.from_dict(
        dict(rec, host="gpu-box-2", status="pass", finished_at="2026-11-03T11:00:00Z")))
    summary = render_site([store], tmp_path / "site", CATALOG)
    doc = parse(tmp_path / "site" / "index.html")
    _, _, cells = matrix(doc)
    [td] = cells.values()
    assert "conflict" in td.classes and "≠" in td.text()
    assert len(summary.conflicts) == 1
    assert "not merged" in doc.find("details", cls="conflicts").find("summary").text()


def test_shards_disagreeing_are_flagged_when_merged(tmp_path):
    """`report --results A B`: one cell, one cache key, two outcomes in two shard folders."""
    src = DATA / "single_cell" / "gpu-box-1" / "run-1.jsonl"
    rec = json.loads(src.read_text().splitlines()[0])
    ResultStore(tmp_path / "shard-1").append(Result.from_dict(dict(rec, run_id="s1")))
    ResultStore(tmp_path / "shard-2").append(Result.from_dict(dict(rec, run_id="s2", status="pass",
                                                  finished_at="2026-11-03T11:00:00Z")))
    summary = render_site([tmp_path / "shard-1", tmp_path / "shard-2"], tmp_path / "site", CATALOG)
    doc = parse(tmp_path / "site" / "index.html")
    [td] = matrix(doc)[2].values()
    assert "conflict" in td.classes and "≠" in td.text()
    [conflict] = summary.conflicts
    assert conflict.cache_key == rec["cache_key"]
    assert "for one cache key in runs s1, s2" in doc.find("details", cls="conflicts").text()
    raw = site_records(tmp_path / "site")
    assert raw["conflicts"][0]["cache_key"] == rec["cache_key"]


# ----------------------------------------------------------------- hostile input


HOSTILE_BITS = ("<script>window.__pwned = 1; alert(1)</script>", "\"><img src=x onerror=")


def test_hostile_strings_are_text_not_markup(tmp_path):
    summary, doc, out = render(tmp_path, "hostile")
    pages = [out / "index.html", *sorted(out.glob("repro-*.html"))]
    for path in pages:
        page = parse(path)
        assert page.find_all("img") == [], path
        scripts = page.find_all("script")
        assert all(s.attrs.get("src") in ("static/report.js", "static/check.js")
                   or s.attrs.get("type") == "application/json" for s in scripts), path
        assert not any(k.startswith("on") for n in page.iter() for k in n.attrs), path
    repro_page = parse(out / page_name("deform_conv2d_device"))
    text = repro_page.text()
    assert all(bit in text for bit in HOSTILE_BITS)
    # inline JSON cannot close its <script> or open a comment, and still decodes to the original
    raw = (out / "index.html").read_text(encoding="utf-8")
    inline = raw.split('id="report-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in inline and ">" not in inline
    data = chunk_data(out)
    assert data["cells"]["pip-torch2.4.1--deform_conv2d_device"]["message"].startswith(HOSTILE_BITS[0])
    for chunk in (out / "data").glob("c*.js"):   # a chunk is one call with one base64 string
        assert re.fullmatch(r'repromatrixChunk\(\d+,"[A-Za-z0-9+/=]+"\);\n', chunk.read_text("utf-8"))
        assert "<" not in read_payload(chunk)[1]  # its JSON script-safe too
    verdicts = (out / "data" / "verdicts.js").read_text(encoding="utf-8")  # the check box's data
    assert re.fullmatch(r"repromatrixVerdicts\(\{.*\}\);\n", verdicts, re.S) and "<" not in verdicts
    # a hostile repro id gets a hashed file name
    odd = "<img src=x onerror=window.__pwned=1>"
    assert page_name(odd).startswith("repro-x") and (out / page_name(odd)).is_file()
    with open(out / "results.csv", newline="", encoding="utf-8") as fh:
        messages = {r["repro"]: r["message"] for r in csv.DictReader(fh)}
    assert messages[odd].startswith("'=")


def test_script_json_escapes_script_breakers():
    text = str(script_json({"m": "</script><!-- \u2028 & <b>"}))
    assert "</" not in text and "<!--" not in text and "\u2028" not in text and "&" not in text
    assert json.loads(text) == {"m": "</script><!-- \u2028 & <b>"}


# ----------------------------------------------------------------- commands, assets, scale


def test_reproduce_command_quotes_and_local_backend():
    folded = _result(cell="local--r", backend="local",
                     stack={"id": "local", "kind": "local", "interpreter": "/opt/py 3/bin/python"})
    assert reproduce_command(folded, "m.yaml") == (
        "repromatrix run --matrix m.yaml -k r --rerun --backend local --python '/opt/py 3/bin/python'")
    own = _result(cell="mine--r", backend="local", stack={"id": "mine", "kind": "local",
                                                          "interpreter": "/x/python"})
    assert reproduce_command(own, "m.yaml") == "repromatrix run --matrix m.yaml -k mine--r --rerun"
    assert reproduce_command(_result(cell="a b;rm -rf"), "matrix.yaml").endswith(
        "-k 'a b;rm -rf' --rerun")


def test_assets_dir_holds_templates_and_static():
    root = report_assets_dir()
    assert (root / "templates" / "index.html.j2").is_file()
    assert (root / "static" / "report.js").is_file()


def test_assets_dir_override(tmp_path, monkeypatch):
    shutil.copytree(report_assets_dir(), tmp_path / "assets")
    (tmp_path / "assets" / "static" / "extra.txt").write_text("x")
    monkeypatch.setenv("REPROMATRIX_REPORT_DIR", str(tmp_path / "assets"))
    render_site([golden(tmp_path, "single_cell")], tmp_path / "site")
    assert (tmp_path / "site" / "static" / "extra.txt").is_file()


def synthetic(root: Path, stacks: int, repros: int, runs: int = 1) -> None:
    store = ResultStore(root)
    for run in range(runs):
        for s in range(stacks):
            for r in range(repros):
                st = STATUSES[(s * 7 + r * 3 + run) % len(STATUSES)]
                sid, rid, day = f"pip-t2.{s}.0", f"r{r:02d}", f"2026-11-0{run + 1}"
                store.append(Result.from_dict({
                    "schema_version": SCHEMA_VERSION, "run_id": f"run-{run}", "cell": f"{sid}--{rid}",
                    "stack": {"id": sid, "kind": "pip", "torch": f"2.{s}.0"}, "repro": rid,
                    "status": st, "stages": [], "message": f"{st} message", "traceback": "",
                    "duration_s": 1.0, "env": {"torch": f"2.{s}.0"}, "host": "h",
                    "started_at": f"{day}T00:00:00Z", "finished_at": f"{day}T00:01:00Z",
                }))


@pytest.mark.slow
def test_hundred_stacks_by_twenty_repros(tmp_path):
    synthetic(tmp_path / "store", 100, 20, runs=2)
    summary = render_site([tmp_path / "store"], tmp_path / "site")
    rows, cols, cells = matrix(parse(tmp_path / "site" / "index.html"))
    assert (len(rows), len(cols), len(cells)) == (100, 20, 2000)
    assert rows[:3] == ["pip-t2.0.0", "pip-t2.1.0", "pip-t2.2.0"] and rows[-1] == "pip-t2.99.0"
    assert summary.records == 4000 and summary.cells == 2000
    assert sum(len(v) for v in summary.changes.values()) > 0


def test_a_cell_made_from_pypi_s_build_instead_of_its_pinned_index_says_so(tmp_path):
    """A stack whose CUDA index could not be reached, made from PyPI's build (the run records the
    index it stood for as the stack's ``pinned_index``): the drawer's data says so; a cell made
    as pinned gets no such field."""
    store = tmp_path / "store"
    stack = {"id": "pip-torch2.4.1-trt2.4.0-cu124-py3.11", "kind": "pip", "torch": "2.4.1",
             "index": "pypi", "cuda": "12.1", "pinned_index": "cu124"}
    ResultStore(store).append(_result(cell=f"{stack['id']}--r", stack=stack))
    ResultStore(store).append(_result(cell="s--r"))
    render_site([store], tmp_path / "site", CATALOG)
    cells = chunk_data(tmp_path / "site")["cells"]
    note = cells[f"{stack['id']}--r"]["built"]
    assert "PyPI's build (CUDA 12.1)" in note and "cu124" in note
    assert "built" not in cells["s--r"]
    assert _result(stack=stack).built_note == note and _result().built_note == ""


def test_a_cell_whose_torch_tensorrt_needed_symbols_stood_in_says_it_is_not_installable(tmp_path):
    """torch-tensorrt 2.3.0's PyPI wheel needs torch symbols no PyPI torch 2.3.x has; the lane
    stands them in (``env.standins.missing_symbols``). A published record of it: the drawer's
    data and the record's note say the verdict is about its code, not a stack to install."""
    published = ROOT / "results" / "published" / "vm"
    line = next(line for f in sorted(published.glob("*.jsonl")) for line in f.read_text().splitlines()
                if '"pip-torch2.3.1-trt2.3.0-pypi-py3.11--ts_device_gpu_id"' in line)
    record = Result.from_dict(json.loads(line))
    assert len(record.env["standins"]["missing_symbols"]) == 4
    note = record.built_note
    assert note.startswith("not installable as published: torch-tensorrt 2.3.0's wheel needs 4 symbol(s) "
                           "torch 2.3.1+cu121 lacks, stood in here")
    store = tmp_path / "store"
    ResultStore(store).append(record)
    render_site([store], tmp_path / "site", CATALOG)
    assert chunk_data(tmp_path / "site")["cells"][record.cell]["built"] == note


def test_every_published_error_cell_says_why_it_is_not_the_bug(tmp_path):
    """Each published cell whose record reads ``error`` has, in its drawer, the new problem in
    one line (the stage that raised, its exception's type and first line), and its repro page
    lists that line with a link to the cell, errors grouped first."""
    from markupsafe import escape

    from repromatrix import paths
    from repromatrix.config.catalog import load_catalog
    from repromatrix.report.markup import fragment

    out = tmp_path / "site"
    render_site([ROOT / "results" / "published"], out, load_catalog(paths.repros_dir()))
    cells = chunk_data(out)["cells"]
    errors = {cid: c for cid, c in cells.items() if c["status"] == "error"}
    assert errors  # the published records have some
    pages: dict[str, str] = {}
    for cid, cell in errors.items():
        stage = next(s for s in cell["stages"] if s["role"] == "main" and s["status"] == "error")
        assert cell["untold"].startswith(f"{stage['name']}: "), cid
        problem = cell["untold"][len(stage["name"]) + 2:]
        assert re.match(r"[A-Za-z_.]+: \S", problem), cell["untold"]  # the exception's type
        page = pages.setdefault(cell["repro"], (out / page_name(cell["repro"])).read_text(encoding="utf-8"))
        section = page.split('<section class="untold" id="untold">', 1)[1].split("</section>", 1)[0]
        group = next(li for li in section.split("<li ")[1:] if f'href="#{fragment(cid)}"' in li)
        assert group.startswith('data-status="error"')
        assert f'<code class="untold-line">{escape(cell["untold"])}</code>' in group
    decided = [c for c in cells.values() if c["status"] in ("pass", "fail")]
    assert decided and not any(c.get("untold") for c in decided)
