"""The command line: exit codes, plan output, and no traceback for bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from repromatrix.cli import build_parser, main

COMMANDS = ("plan", "build", "run", "report", "matrix", "bisect", "export", "init", "env",
            "compat", "store", "check")


def repromatrix(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "repromatrix.cli", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120)


def test_plan_json_lists_every_default_cell():
    proc = repromatrix("plan", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    cells = json.loads(proc.stdout)
    assert cells and all("default" in c["tags"] for c in cells)
    assert len({c["cell"] for c in cells}) == len(cells)
    assert {c["stack"]["kind"] for c in cells} == {"pip", "ngc"}
    assert all(c["cell"] == f'{c["stack"]["id"]}--{c["repro"]}' for c in cells)


def test_plan_all_is_larger_and_k_narrows(capsys):
    assert main(["plan", "--all", "--format", "json"]) == 0
    everything = json.loads(capsys.readouterr().out)
    assert main(["plan", "-k", "ngc-23.12", "--format", "json"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert len(everything) > len(one) > 0
    assert {c["stack"]["id"] for c in one} == {"ngc-23.12"}


def test_plan_table_ends_with_a_count(capsys):
    assert main(["plan", "-k", "ngc-23.12"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:2] == ["cell", "kind"]
    assert out[-1].endswith("on 1 stacks")


@pytest.mark.parametrize("yaml_text, args, text", [
    ("stacks: [{kind: pip, torch: '2.5', torchvison: x}]", ["plan"], "did you mean"),
    ("stacks: [{kind: pip, torch: '2.5.1', torch_tensorrt: '2.4.0'}]", ["plan"], "needs torch"),
    ("stacks: [{kind: pip, torch: '2.5'\n", ["plan"], "malformed YAML"),
    ("stacks: [{kind: pip, torch: '2.5'}]", ["plan"], "selects no cells"),
    ("stacks: [{kind: pip, torch: '2.5'}]", ["plan", "-k", "(oops"], "ends too early"),
    ("stacks: [{kind: pip, torch: '2.5'}]", ["run", "--ca-bundle", "/nonexistent.pem"], "--ca-bundle"),
])
def test_bad_input_exits_2_without_a_traceback(tmp_path, yaml_text, args, text):
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(textwrap.dedent(yaml_text))
    proc = repromatrix(*args, "--matrix", str(matrix))
    assert proc.returncode == 2, proc.stderr
    assert text in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("repromatrix: error: ")


def test_unknown_option_exits_2():
    proc = repromatrix("plan", "--no-such-option")
    assert proc.returncode == 2 and "unrecognized arguments" in proc.stderr


def test_report_without_results_is_bad_input(tmp_path):
    proc = repromatrix("report", "--results", str(tmp_path / "none"), "--out", str(tmp_path / "site"))
    assert proc.returncode == 2 and "no such file or folder" in proc.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command):
    proc = repromatrix(command, "--help")
    assert proc.returncode == 0
    assert "usage: repromatrix " + command in proc.stdout


def test_parser_knows_every_command():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert set(sub.choices) == set(COMMANDS)


@pytest.mark.slow
def test_sigterm_unwinds_like_ctrl_c_and_stops_the_runner(tmp_path):
    """A terminated run exits 130 with the interrupted message (containers and runner
    processes are removed on that path), not with a bare signal death."""
    import signal
    import time

    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        "repros: [slow_one]\n"  # the folder beside joins the built-in catalog: run only this
        f"stacks: [{{kind: local, id: here, interpreter: {sys.executable}, tags: [default]}}]\n")
    repros = tmp_path / "repros"
    repros.mkdir()
    from repromatrix import paths
    for name in ("protocol.py", "runner.py"):
        (repros / name).write_text((paths.harness_dir() / name).read_text())
    (repros / "slow_one.py").write_text(
        'import time\nMETA = {"id": "slow_one", "title": "sleeps"}\ntime.sleep(60)\n')
    proc = subprocess.Popen([sys.executable, "-m", "repromatrix.cli", "run", "--backend", "local",
                             "--python", sys.executable, "--matrix", str(matrix),
                             "--results", str(tmp_path / "results")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list((tmp_path / "results").rglob("runner.log")):
        time.sleep(0.2)
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    time.sleep(1)
    leftover = subprocess.run(["pgrep", "-f", str(repros / "slow_one.py")], capture_output=True)
    assert leftover.stdout == b"", "the runner and its repro are stopped too"


@pytest.mark.slow
def test_kill_9_of_the_harness_takes_the_runner_and_its_repro_down(tmp_path):
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(f"repros: [slow_two]\n"
                      f"stacks: [{{kind: local, id: here, interpreter: {sys.executable}}}]\n")
    (tmp_path / "repros").mkdir()
    (tmp_path / "repros" / "slow_two.py").write_text(
        'import time\nMETA = {"id": "slow_two", "title": "sleeps"}\ntime.sleep(120)\n')
    proc = subprocess.Popen([sys.executable, "-m", "repromatrix.cli", "run", "--all", "--matrix",
                             str(matrix), "--results", str(tmp_path / "results")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    def alive() -> bytes:  # the run stages the user's script under its work folder
        return subprocess.run(["pgrep", "-f", f"{tmp_path}/.*slow_two.py"], capture_output=True).stdout

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not alive():
        time.sleep(0.2)
    assert alive(), "the repro started"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and alive():
        time.sleep(0.2)
    assert alive() == b"", "the runner and its repro die with the harness"


def test_init_writes_a_starter_that_plans_and_never_overwrites(tmp_path):
    proc = repromatrix("init", str(tmp_path / "mine"))
    assert proc.returncode == 0, proc.stderr
    assert {p.name for p in (tmp_path / "mine").rglob("*") if p.is_file()} == \
        {"matrix.yaml", "noxfile.py", "my_first_bug.py"}
    plan = subprocess.run([sys.executable, "-m", "repromatrix.cli", "plan"], cwd=tmp_path / "mine",
                          capture_output=True, text=True, timeout=120)
    assert plan.returncode == 0 and "--my_first_bug" in plan.stdout, plan.stderr
    (tmp_path / "mine" / "matrix.yaml").write_text("# mine\n")
    again = repromatrix("init", str(tmp_path / "mine"))
    assert again.returncode == 2 and "already has matrix.yaml" in again.stderr
    assert (tmp_path / "mine" / "matrix.yaml").read_text() == "# mine\n", "nothing overwritten"


def _options_without_help(parser, path=()):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options_without_help(sub, (*path, name))
        elif action.option_strings and not action.help:
            yield " ".join((*path, action.option_strings[-1]))


def test_help_describes_the_tool_and_every_option():
    proc = repromatrix("--help")
    assert proc.returncode == 0
    assert "PyTorch deployment stack" in proc.stdout
    assert "parse arguments" not in proc.stdout, "not the module's internal docstring"
    assert list(_options_without_help(build_parser())) == []
    bisect = repromatrix("bisect", "--help").stdout
    assert "what the releases between --good and --bad are of" in bisect


def test_the_compat_parser_s_default_index_is_releases_update_s():
    """cli.compat names the default without importing releases.update (every command builds
    that parser; the import cost a tenth of a second of `check`)."""
    from repromatrix.releases import PYPI_URL
    from repromatrix.releases.update import PYPI_URL as used

    assert PYPI_URL == used
