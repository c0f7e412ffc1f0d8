"""Nothing from a record reaches the terminal or a file name raw (issue 12)."""

from __future__ import annotations

import json
import subprocess
import sys

from support import DATA

GOLDEN = DATA / "results" / "single_cell" / "gpu-box-1" / "run-1.jsonl"
HOSTILE = "\x1b]0;pwned\x07\x1b[2J"


def test_report_escapes_cell_ids_run_ids_and_file_names(tmp_path):
    record = json.loads(GOLDEN.read_text().splitlines()[0])
    record["cell"] = f"pip-torch2.4.1--deform{HOSTILE}"
    record["run_id"] = f"run{HOSTILE}"
    record["repro"] = "deform_conv2d_device\n"
    results = tmp_path / "results"
    (results / "a").mkdir(parents=True)
    (results / "b").mkdir()
    (results / "a" / "r.jsonl").write_text(json.dumps(record) + "\n")
    (results / "b" / "r.jsonl").write_text(json.dumps({**record, "status": "pass"}) + "\n")
    (results / "b" / f"bad{HOSTILE}.jsonl").write_text("{not json\n")
    proc = subprocess.run([sys.executable, "-m", "repromatrix.cli", "report", "--results",
                           str(results), "--out", str(tmp_path / "site")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "2 different records" in proc.stderr and "invalid JSON" in proc.stderr
    for text in (proc.stdout, proc.stderr):
        assert "\x1b" not in text and "\x07" not in text
    assert "deform\\x1b]0;pwned\\x07\\x1b[2J in run run\\x1b]0;pwned" in proc.stderr
    assert f"bad{HOSTILE}.jsonl".encode("unicode_escape").decode() in proc.stderr
    names = [p.name for p in (tmp_path / "site").rglob("*")]
    assert names and not any(ch in n for n in names for ch in "\n\x1b\x07")
