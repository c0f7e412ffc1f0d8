"""`compat update` keeps the table's `onnx` section (onnxscript and onnxruntime releases)
with PyPI's final releases, read from the recorded pages (tests/data/pypi/simple)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from support.scale import ROOT, cli_env

from repromatrix.config.compat import parse_table
from repromatrix.config.yamlfile import load_yaml
from repromatrix.releases import pypi
from repromatrix.releases.facts import gather

RECORDED = ROOT / "tests" / "data" / "pypi"
TABLE = ROOT / "src" / "repromatrix" / "data" / "compat.yaml"


def compat(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "repromatrix.cli", "compat", "update", *map(str, args)],
                          capture_output=True, text=True, env=cli_env(), timeout=300)


def test_the_table_has_every_final_onnx_release_the_recorded_pages_show():
    table = parse_table(load_yaml(TABLE.read_bytes(), str(TABLE)), str(TABLE))
    facts = gather(pypi.RecordedIndex(RECORDED), table)
    assert facts.versions("onnxscript") == list(table.onnx["onnxscript"])
    assert facts.versions("onnxruntime") == list(table.onnx["onnxruntime"])


def test_a_missing_onnxscript_release_is_proposed_and_written(tmp_path):
    text = TABLE.read_text().replace(', "0.7.2"]', "]")
    text = re.sub(r"\n# When `repromatrix compat update.*", "\n", text, flags=re.S)
    table = tmp_path / "compat.yaml"
    table.write_text(text)
    behind = compat("--check", "--from", RECORDED, "--table", table)
    assert behind.returncode == 1, behind.stdout + behind.stderr
    assert "compat: onnx onnxscript: new release(s) 0.7.2 [V]" in behind.stdout
    assert compat("--write", "--from", RECORDED, "--table", table).returncode == 0
    written = parse_table(load_yaml(table.read_bytes(), str(table)), str(table))
    assert written.onnx["onnxscript"][-2:] == ("0.7.1", "0.7.2")
    assert 'onnxscript: "0.7.2", onnxruntime: "1.32.0"' in table.read_text()  # the checked record
    assert compat("--check", "--from", RECORDED, "--table", table).returncode == 0
