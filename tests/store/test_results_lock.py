"""One run per results folder (a lock that says who holds it) and pruning work folders.

The lock is tested with real processes: a holder, a waiter, a kill -9.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from repromatrix.errors import ResultsBusy
from repromatrix.store.results import LOCK_NAME, ResultStore, locked, prune_work

DEADLINE_S = 60.0

HOLDER = """
import sys
from repromatrix.store.results import locked
with locked(sys.argv[1], run_id="run-A"):
    print("held", flush=True)
    sys.stdin.readline()  # hold until the test says so
"""

WAITER = """
import sys
from repromatrix.store.record import Result
from repromatrix.store.results import ResultStore
store = ResultStore(sys.argv[1])
with store.lock(wait=True, run_id="run-B"):
    store.append(Result.from_dict({"schema_version": 1, "run_id": "run-B", "host": "h",
                                   "cell": "s--r", "repro": "r", "status": "pass",
                                   "stack": {"id": "s"}}))
    print("got it", flush=True)
"""


def start(script: str, folder: Path, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", script, str(folder)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, **kw)


def wait_for(predicate, what: str) -> None:
    end = time.monotonic() + DEADLINE_S
    while not predicate():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def holder(tmp_path):
    proc = start(HOLDER, tmp_path / "results")
    assert proc.stdout.readline().strip() == "held"
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)


def test_second_run_waits_and_says_who_holds_the_folder(tmp_path, holder):
    results = tmp_path / "results"
    err = tmp_path / "waiter.err"
    with err.open("w") as fh:
        waiter = start(WAITER, results, stderr=fh)
    try:
        wait_for(lambda: "waiting" in err.read_text(), "the waiter to say whom it waits for")
        message = err.read_text()
        assert f"the results folder {results} is in use by run run-A (pid {holder.pid} on " \
               f"{socket.gethostname()}, since 20" in message
        assert waiter.poll() is None, "still waiting while run-A holds the folder"
        assert not list(results.rglob("*.jsonl")), "nothing written while waiting"
        holder.stdin.write("release\n")
        holder.stdin.flush()
        out, _ = waiter.communicate(timeout=DEADLINE_S)
        assert waiter.returncode == 0 and out.strip() == "got it"
    finally:
        if waiter.poll() is None:
            waiter.kill()
    loaded = ResultStore(results).load()
    assert not loaded.skipped, "the lock file is not mistaken for results"
    assert [r.run_id for r in loaded.records] == ["run-B"]


def test_without_wait_the_second_run_is_refused_naming_the_holder(tmp_path, holder):
    with pytest.raises(ResultsBusy) as info:
        with locked(tmp_path / "results", wait=False, run_id="run-C"):
            pass
    assert info.value.exit_code == 3
    assert f"in use by run run-A (pid {holder.pid} on {socket.gethostname()}" in str(info.value)


def test_a_killed_holder_leaves_no_stale_lock(tmp_path, holder):
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    with locked(tmp_path / "results", wait=False, run_id="run-D") as me:
        note = json.loads((tmp_path / "results" / LOCK_NAME).read_text())
        assert note["pid"] == os.getpid() == me.pid and note["run_id"] == "run-D"
    assert (tmp_path / "results" / LOCK_NAME).read_text() == "", "the note is cleared on release"


def test_child_processes_do_not_inherit_the_lock(tmp_path):
    folder = tmp_path / "results"
    with locked(folder, run_id="run-E"):
        child = subprocess.Popen(["sleep", "60"], close_fds=False)
    try:
        with locked(folder, wait=False):
            pass  # the sleeping child does not keep the folder locked
    finally:
        child.kill()
        child.wait()


# ------------------------------------------------------------------ prune_work

RUNS = ["20260101T000000Z-aaaaaa", "20260102T000000Z-bbbbbb", "20260103T000000Z-cccccc",
        "20260104T000000Z-dddddd", "20260105T000000Z-eeeeee"]


def make_work(tmp_path: Path) -> Path:
    work = tmp_path / "results" / ".work"
    for run in RUNS:
        d = work / "out" / run / "pip-torch2.5.1"
        d.mkdir(parents=True)
        (d / "runner.log").write_text("x" * 1000)
    (work / "out" / "notes").mkdir()  # not a run folder: never touched
    (work / "out" / "20260106T000000Z-ffffff").write_text("a file, not a folder")
    return work


def test_prune_keeps_the_newest_and_the_current_run(tmp_path):
    work = make_work(tmp_path)
    removed = prune_work(work, keep=2, current=RUNS[0])
    assert [p.name for p in removed] == RUNS[1:3]
    left = sorted(p.name for p in (work / "out").iterdir())
    assert left == sorted([RUNS[0], *RUNS[3:], "notes", "20260106T000000Z-ffffff"])
    assert (work / "out" / RUNS[0] / "pip-torch2.5.1" / "runner.log").exists()


def test_prune_edge_cases(tmp_path):
    assert prune_work(tmp_path / "nothing-here") == []
    work = make_work(tmp_path)
    assert prune_work(work, keep=10) == []
    assert len(prune_work(work, keep=0)) == len(RUNS)
    with pytest.raises(ValueError):
        prune_work(work, keep=-1)


def test_prune_never_follows_a_symlink(tmp_path):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("mine")
    out = tmp_path / "work" / "out"
    out.mkdir(parents=True)
    (out / RUNS[0]).symlink_to(precious, target_is_directory=True)
    assert prune_work(tmp_path / "work", keep=0) == []
    assert (precious / "keep.txt").read_text() == "mine"
