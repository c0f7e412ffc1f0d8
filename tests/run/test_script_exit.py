"""`--script` (issue 19): the outcome comes from the script's exit status, not from its
output closing; what it leaves running is ended; its temporary folder is removed.
A real run of the generated repro through the runner on a real torch interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

PY = os.environ.get("REPROMATRIX_TEST_PY_T213") or os.environ.get("REPROMATRIX_TEST_PY_T214")
SRC = Path(__file__).resolve().parents[2] / "src"

LEAVES_A_CHILD = '''\
import subprocess, sys
PIDFILE = %r
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
open(PIDFILE, "w").write(str(child.pid))
print("left a child behind", flush=True)
'''

pytestmark = [pytest.mark.torch]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


def test_a_script_that_leaves_a_background_child_passes_and_leaves_nothing(tmp_path):
    if not PY or not Path(PY).exists():
        pytest.skip("no torch interpreter: set REPROMATRIX_TEST_PY_T213 or _T214")
    (tmp_path / "matrix.yaml").write_text(
        f"stacks: [{{kind: local, id: here, interpreter: {PY}, tags: [default]}}]\n")
    pidfile = tmp_path / "child.pid"
    script = tmp_path / "bg.py"
    script.write_text(LEAVES_A_CHILD % str(pidfile))
    scratch = tmp_path / "tmp"  # the runner's TMPDIR: where the script's folder is made
    scratch.mkdir()
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "repromatrix.cli", "run", "--matrix", str(tmp_path / "matrix.yaml"),
         "--script", str(script), "--results", str(tmp_path / "results"), "--stack-timeout", "90"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(SRC), "TMPDIR": str(scratch)})
    took = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-3000:]
    (line,) = [ln for f in (tmp_path / "results").rglob("*.jsonl") for ln in f.read_text().splitlines()]
    record = json.loads(line)
    assert record["status"] == "pass", record["message"]
    assert took < 80, f"took {took:.0f}s: the run waited for the child's output to close"
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid), "the script's background child is ended with its group"
    assert list(scratch.iterdir()) == [], "no repromatrix-script-* folder left behind"


def test_a_script_past_the_repro_time_limit_is_ended_with_what_it_started(tmp_path):
    if not PY or not Path(PY).exists():
        pytest.skip("no torch interpreter: set REPROMATRIX_TEST_PY_T213 or _T214")
    (tmp_path / "matrix.yaml").write_text(
        f"stacks: [{{kind: local, id: here, interpreter: {PY}, tags: [default]}}]\n")
    pidfile = tmp_path / "child.pid"
    script = tmp_path / "hang.py"
    script.write_text(LEAVES_A_CHILD % str(pidfile) + "import time\ntime.sleep(600)\n")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "repromatrix.cli", "run", "--matrix", str(tmp_path / "matrix.yaml"),
         "--script", str(script), "--results", str(tmp_path / "results"), "--timeout", "5"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(SRC), "TMPDIR": str(scratch)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    (line,) = [ln for f in (tmp_path / "results").rglob("*.jsonl") for ln in f.read_text().splitlines()]
    assert json.loads(line)["status"] == "timeout"
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid), "the runner's group kill reaches the script and its children"
    assert list(scratch.iterdir()) == [], "no repromatrix-script-* folder left behind"
