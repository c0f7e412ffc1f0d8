"""One signal_name per side: a return code of -N (subprocess's own child) is always a
death by signal N; 128+N (a shell, docker run, the script wrapper) only where asked."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from repromatrix.textsafe import file_tail, signal_name

HARNESS = Path(__file__).resolve().parents[2] / "repros" / "harness"
sys.path.insert(0, str(HARNESS))

import _outcome  # noqa: E402

SIDES = {"host": signal_name, "container": _outcome.signal_name}


@pytest.mark.parametrize("side", sorted(SIDES))
def test_a_negative_return_code_is_a_signal_on_both_sides(side: str) -> None:
    name = SIDES[side]
    assert name(-signal.SIGSEGV) == "SIGSEGV"
    assert name(-signal.SIGKILL, shell_status=True) == "SIGKILL"
    assert name(-99) == "SIG99"
    assert name(None) is None and name(0) is None and name(1) is None


@pytest.mark.parametrize("side", sorted(SIDES))
def test_128_plus_n_is_a_signal_only_for_a_caller_whose_child_is_a_shell(side: str) -> None:
    name = SIDES[side]
    assert name(128 + signal.SIGSEGV) is None, "an exit status unless asked"
    assert name(128 + signal.SIGSEGV, shell_status=True) == "SIGSEGV"
    assert name(128 + signal.SIGTERM, shell_status=True) == "SIGTERM"
    assert name(128, shell_status=True) is None and name(160, shell_status=True) is None
    assert name(125, shell_status=True) is None


def test_a_shell_reports_its_childs_signal_as_128_plus_n() -> None:
    direct = subprocess.run([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"])
    shell = subprocess.run(["sh", "-c", f"'{sys.executable}' -c 'import os, signal; "
                            "os.kill(os.getpid(), signal.SIGTERM)'; exit $?"])
    for name in SIDES.values():
        assert name(direct.returncode) == "SIGTERM"
        assert name(shell.returncode) is None and name(shell.returncode, shell_status=True) == "SIGTERM"


def test_the_runner_reads_a_script_wrappers_128_plus_n_as_a_crash() -> None:
    import runner

    res = runner.classify("r", None, 128 + signal.SIGSEGV, False, "", 10.0)
    assert res["status"] == "crash" and res["signal"] == "SIGSEGV"
    assert runner.classify("r", None, 3, False, "", 10.0)["status"] == "error"


def test_file_tail_reads_only_the_end(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_bytes(b"x" * 10_000 + "é!".encode())
    assert file_tail(log, 2) == "\ufffd!" and file_tail(log, 2, chars=True) == "é!"
    assert _outcome.file_tail(str(log), 2) == "\ufffd!"
    assert file_tail(tmp_path / "none", 5) == "" and _outcome.file_tail(str(tmp_path / "none"), 5) == ""
