"""`repromatrix compat update` against PyPI answers recorded once (tests/data/pypi, trimmed
to what the command reads: the PEP 691 pages' Linux files and each wheel's Requires-Dist),
and against the live PyPI where this machine reaches it (skipped with the reason when it
does not, unless REPROMATRIX_REQUIRE_PYPI=1: CI reaches PyPI)."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import threading
import urllib.error
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from support.compat_rows import BEFORE_2150, ROW_2150
from support.scale import ROOT, cli_env

from repromatrix.config.compat import parse_table
from repromatrix.config.yamlfile import load_yaml, read_yaml
from repromatrix.releases import pypi
from repromatrix.releases.facts import floors, gather, parse_requires
from repromatrix.releases.update import missing_stacks, propose, torchvision_pairing

RECORDED = ROOT / "tests" / "data" / "pypi"
TABLE = ROOT / "src" / "repromatrix" / "data" / "compat.yaml"

def compat(*args: str | Path, check: bool = False) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "repromatrix.cli", "compat", "update", *map(str, args)],
                          capture_output=True, text=True, env=cli_env(), timeout=300)
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def table_copy(tmp_path: Path, edit=lambda text: text) -> Path:
    """The table as it was before torch 2.15.0 got its torchvision by hand (issue 21), edited;
    its `checked` record dropped (written by --write)."""
    text = re.sub(r"\n# When `repromatrix compat update.*", "\n", TABLE.read_text(), flags=re.S)
    text = ROW_2150.sub(BEFORE_2150, text)
    path = tmp_path / "compat.yaml"
    path.write_text(edit(text))
    return path


def with_issue21_row(text: str) -> str:
    """The torch 2.15.0 row as added by hand: torchvision 0.29.2 (pip's pick) beside it."""
    return ROW_2150.sub('  "2.15.0": {torchvision: ["0.29.2"], python: ">=3.11", pypi_cuda: "13.2", '
                        'indexes: [], src: V}', text)


def test_reports_torch_2_15_pairing_missing_then_nothing_once_present(tmp_path):
    table = table_copy(tmp_path)
    out = compat("--check", "--from", RECORDED, "--table", table)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "torch 2.15.0: missing pairing [M]" in out.stdout
    assert "torchvision 0.29.2 requires torch>=2.14.0 (open upper bound" in out.stdout
    assert "Requires-Dist of torchvision-0.29.2-py3-none-manylinux_2_28_x86_64.whl" in out.stdout
    assert '+  "2.15.0": {torchvision: ["0.29.2"]' in out.stdout     # the diff
    assert out.stdout.count("missing pairing") == 1                  # nothing else is behind
    assert "download.pytorch.org" in out.stdout and "NGC release notes" in out.stdout
    assert table.read_text() == table_copy(tmp_path).read_text()     # --check writes nothing
    present = table_copy(tmp_path, with_issue21_row)
    again = compat("--check", "--from", RECORDED, "--table", present)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "the table has every release and pairing" in again.stdout and "+  " not in again.stdout


def test_write_applies_the_rows_records_checked_and_check_is_then_clean(tmp_path):
    table = table_copy(tmp_path)
    before = table.read_text()
    compat("--write", "--from", RECORDED, "--table", table, check=True)
    after = table.read_text()
    assert after != before and before.splitlines()[:30] == after.splitlines()[:30]  # comments kept
    raw = read_yaml(table)
    row = raw["torch"]["2.15.0"]
    assert row["torchvision"] == ["0.29.2"] and row["src"] == "M" and row["pypi_cuda"] == "13.2"
    assert raw["checked"]["newest"] == {"torch": "2.15.0", "torchvision": "0.29.2",
                                        "torch-tensorrt": "2.14.0", "tensorrt": "11.4.0.106",
                                        "onnxscript": "0.7.2", "onnxruntime": "1.32.0"}
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", raw["checked"]["date"])
    parse_table(raw, str(table))
    clean = compat("--check", "--from", RECORDED, "--table", table)
    assert clean.returncode == 0, clean.stdout + clean.stderr


def test_a_torch_release_missing_from_the_table_gets_a_whole_row(tmp_path):
    table = table_copy(tmp_path, lambda t: ROW_2150.sub("", t))
    out = compat("--check", "--from", RECORDED, "--table", table)
    assert out.returncode == 1 and "torch 2.15.0: new row [M]" in out.stdout, out.stdout
    assert "python >=3.11,<3.16 from the CPython tags" in out.stdout
    assert "pypi_cuda 13.2 from the CUDA pin in Requires-Dist of torch-2.15.0-cp311" in out.stdout
    compat("--write", "--from", RECORDED, "--table", table, check=True)
    row = read_yaml(table)["torch"]["2.15.0"]
    assert row == {"torchvision": ["0.29.2"], "python": ">=3.11,<3.16", "pypi_cuda": "13.2",
                   "indexes": [], "src": "M", "note": "indexes unknown: download.pytorch.org not checked"}
    lines = table.read_text().splitlines()
    assert lines.index(next(x for x in lines if x.startswith('  "2.15.0"'))) == \
        lines.index(next(x for x in lines if x.startswith('  "2.14.1"'))) + 1   # version order


def test_a_torch_tensorrt_release_missing_gets_a_row_with_a_derived_index(tmp_path):
    table = table_copy(tmp_path, lambda t: re.sub(r'^  "2\.14\.0": \{torch: .*\n', "", t, flags=re.M))
    out = compat("--from", RECORDED, "--table", table, "--write")
    assert "torch_tensorrt 2.14.0: new row [M]" in out.stdout, out.stdout
    assert "index cu130 derived [M]" in out.stdout
    row = read_yaml(table)["torch_tensorrt"]["2.14.0"]
    assert row["torch"] == ">=2.14.0,<2.15.0" and row["tensorrt"] == "11.1"
    assert row["python"] == ">=3.10,<3.15" and row["index"] == "cu130" and row["src"] == "M"


def test_stanza_for_a_torch_minor_without_a_stack(tmp_path):
    matrix = tmp_path / "matrix.yaml"
    shutil.copy(ROOT / "matrix.yaml", matrix)
    matrix.write_text(re.sub(r'^  - \{kind: pip, torch: "2\.15"\}.*\n', "", matrix.read_text(), flags=re.M))
    table = table_copy(tmp_path, with_issue21_row)
    out = compat("--stanza", "--from", RECORDED, "--table", table, "--matrix", matrix, check=True)
    assert out.stdout == '  - {kind: pip, torch: "2.15"}\n'
    behind = compat("--check", "--from", RECORDED, "--table", table, "--matrix", matrix)
    assert behind.returncode == 1 and "torch 2.15 has no stack in the matrix file" in behind.stdout
    compat("--write", "--from", RECORDED, "--table", table, "--matrix", matrix, check=True)
    text = matrix.read_text()
    lines = text.splitlines(keepends=True)
    at = lines.index('  - {kind: pip, torch: "2.15"}\n')
    assert 'torch: "2.14"' in lines[at - 1]  # after the newest minor's stack
    compat("--check", "--from", RECORDED, "--table", table, "--matrix", matrix, check=True)
    from repromatrix.config.matrix import load_matrix

    stacks = {s.torch for s in load_matrix(matrix).stacks if s.kind == "pip"}
    assert "2.15.0" in stacks                # the new stack resolves against the table


def test_pairing_rule_pins_first_then_what_pip_picks():
    before = ROW_2150.sub(BEFORE_2150, TABLE.read_text()).encode()  # without the issue-21 pairing
    table = parse_table(load_yaml(before, str(TABLE)), str(TABLE))
    facts = gather(pypi.RecordedIndex(RECORDED), table)
    assert torchvision_pairing("2.9.1", facts) == (["0.24.1"], ["0.24.1"], "V")
    assert torchvision_pairing("2.14.0", facts) == (["0.29.0"], ["0.29.0", "0.29.1", "0.29.2"], "V")
    assert torchvision_pairing("2.15.0", facts) == ([], ["0.29.1", "0.29.2"], "M")
    assert floors(table)["torchvision"] == "0.15.1"
    proposal = propose(table, facts, "2026-11-24")
    assert [r.summary() for r in proposal.rows] == ["torch 2.15.0: missing pairing [M]"]
    assert "torch 2.15.0: no torch-tensorrt release requires it yet" in proposal.notes


def test_requires_dist_reading():
    text = (RECORDED / "metadata" / "torch_tensorrt-2.14.0-cp311-cp311-manylinux_2_28_x86_64.whl.metadata")
    req = parse_requires("w.whl", text.read_text())
    assert str(req.torch) and req.torch.contains("2.14.1") and not req.torch.contains("2.15.0")
    assert req.tensorrt is not None and req.tensorrt.contains("11.1.0") and req.cuda is None
    old = parse_requires("tv.whl", (RECORDED / "metadata" /
                                    "torchvision-0.24.1-cp311-cp311-manylinux_2_28_x86_64.whl.metadata").read_text())
    assert str(old.torch) == "==2.9.1"


def test_matrix_without_pip_stacks_asks_for_none():
    table = parse_table(load_yaml(TABLE.read_bytes(), str(TABLE)), str(TABLE))
    assert missing_stacks(table, "stacks:\n  - {kind: ngc, ngc: '26.09'}\n") == []


@pytest.mark.slow
def test_unreachable_index_is_exit_3_naming_the_url(tmp_path):
    out = compat("--check", "--index", "http://127.0.0.1:9", "--table", table_copy(tmp_path))
    assert out.returncode == 3 and "http://127.0.0.1:9/simple/torch/" in out.stderr, out.stderr


def pypi_reachable() -> str | None:
    try:
        socket.create_connection(("pypi.org", 443), timeout=10).close()
    except OSError as exc:
        return f"pypi.org is not reachable from here ({exc})"
    return None


@pytest.mark.pypi
def test_live_pypi_agrees_with_the_recording(tmp_path):
    reason = pypi_reachable()
    if reason:
        pytest.skip(reason)      # a failure where REPROMATRIX_REQUIRE_PYPI is set (conftest)
    out = compat("--check", "--table", table_copy(tmp_path, with_issue21_row), "--record", tmp_path / "rec")
    assert out.returncode in (0, 1), out.stdout + out.stderr   # 1: PyPI has moved on since
    assert "note: not checked: download.pytorch.org" in out.stdout
    for recorded in sorted((RECORDED / "metadata").glob("torchvision-0.29.2*")) + sorted(
            (RECORDED / "metadata").glob("torch-2.15.0*")):     # read live from the wheel (range requests)
        assert (tmp_path / "rec" / "metadata" / recorded.name).read_text() == recorded.read_text()


class _IndexHandler(BaseHTTPRequestHandler):
    """A PEP 691 index with PEP 658 metadata files, serving the recorded answers over HTTP."""

    def do_GET(self):  # noqa: N802 - http.server's name
        name = self.path.strip("/").split("/")
        if name[0] == "simple":
            page = json.loads((RECORDED / "simple" / f"{name[1]}.json").read_text())
            for f in page["files"]:   # this index offers every wheel's metadata (PEP 658)
                f["core-metadata"] = f["filename"].startswith("torchvision-0.29")
                f["url"] = f"http://{self.headers['Host']}/files/{f['filename']}"
            body, kind = json.dumps(page).encode(), pypi.SIMPLE_JSON
        elif name[0] == "files" and name[1].endswith(".metadata"):
            body, kind = (RECORDED / "metadata" / name[1]).read_bytes(), "text/plain"
        else:
            body, kind = b"a whole wheel", "application/octet-stream"   # no range support
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class _FlakyHandler(BaseHTTPRequestHandler):
    """The recorded torchvision page: after two 503s at /simple/torchvision/, after a body
    cut short at /simple/cut/; 404 to paths it does not know (never retried)."""

    seen: dict[str, int] = {}

    def do_GET(self):  # noqa: N802 - http.server's name
        self.seen[self.path] = self.seen.get(self.path, 0) + 1
        known = self.path in ("/simple/torchvision/", "/simple/cut/")
        busy = self.path == "/simple/torchvision/" and self.seen[self.path] <= 2
        code = 404 if not known else 503 if busy else 200
        body = (RECORDED / "simple" / "torchvision.json").read_bytes() if code == 200 else b"no"
        cut = self.path == "/simple/cut/" and self.seen[self.path] == 1
        self.send_response(code)
        self.send_header("Content-Type", pypi.SIMPLE_JSON if code == 200 else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[:100] if cut else body)  # cut: the connection drops mid-body
        if cut:
            self.close_connection = True

    def log_message(self, *args):
        pass


def test_a_transient_index_failure_is_tried_again_a_lasting_one_is_not(monkeypatch):
    monkeypatch.setattr(pypi, "RETRY_WAITS_S", (0.01, 0.01))
    _FlakyHandler.seen.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FlakyHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        index = pypi.LiveIndex(f"http://127.0.0.1:{server.server_address[1]}")
        assert "0.29.2" in index.project("torchvision")       # third try answers
        with pytest.raises(pypi.IndexUnavailable, match="Not Found"):
            index.project("no-such-project")
        assert "0.29.2" in index.project("cut")   # the first body was cut short: read again
    finally:
        server.shutdown()
    assert _FlakyHandler.seen == {"/simple/torchvision/": 3, "/simple/no-such-project/": 1,
                                  "/simple/cut/": 2}
    flaky_dns = socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
    no_such_host = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    assert pypi.transient(urllib.error.URLError(flaky_dns))
    assert not pypi.transient(urllib.error.URLError(no_such_host))


def test_pep_658_metadata_is_read_where_the_index_offers_it():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _IndexHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        index = pypi.LiveIndex(f"http://127.0.0.1:{server.server_address[1]}")
        files = index.project("torchvision")
        wheel = next(f for f in files["0.29.2"] if f.filename.endswith("manylinux_2_28_x86_64.whl"))
        assert wheel.core_metadata and wheel.upload_time and wheel.requires_python == ">=3.10,!=3.14.1"
        text = index.metadata(wheel)
        assert parse_requires(wheel.filename, text).torch.contains("2.15.0")
        older = next(f for f in files["0.28.0"] if f.filename.startswith("torchvision-0.28.0-cp311"))
        with pytest.raises(pypi.IndexUnavailable, match="does not answer range requests"):
            index.metadata(older)        # no PEP 658 file: the wheel is read by range, refused here
    finally:
        server.shutdown()
