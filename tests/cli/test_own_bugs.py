"""Bring your own bug: a user's repro folder and plain scripts, run from a folder of one's own.

The run tests drive the real runner on a real torch interpreter (`local` stacks);
printed commands are run as printed, with `repromatrix` resolving to this tree.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from repromatrix import paths
from repromatrix.bisect.candidates import bug_base, probe_settings
from repromatrix.cli import main
from repromatrix.cli.hints import base_image_hint
from repromatrix.config.matrix import load_matrix
from repromatrix.config.options import RunOptions
from repromatrix.errors import BaseImageMissing, ConfigError
from repromatrix.model import Plan, Settings, Stack, StackGroup
from repromatrix.onefile.standalone import export
from repromatrix.report.chunks import read_payload
from repromatrix.store.results import load_records

PY = os.environ.get("REPROMATRIX_TEST_PY_T213") or os.environ.get("REPROMATRIX_TEST_PY_T214")
SRC = Path(__file__).resolve().parents[2] / "src"

USER_REPRO = '''\
"""A user's repro: uses the harness's protocol and _torchutil, and its own helper."""
import protocol

import _mine

META = {"id": "user_bug", "title": "my own bug", "upstream": [], "description": "mine",
        "requires": [], "expect": [{"when": {"torch": ">=2.0"}, "status": "pass",
                                    "note": "my expectation note"}]}


def stage_add(s):
    import torch

    import _torchutil

    s.note("helper", _mine.WHO)
    s.check(callable(_torchutil.fake_mode), "the harness helper is importable")
    x = torch.ones(3)
    s.check_close(x + x, torch.full((3,), 2.0))


if __name__ == "__main__":
    protocol.main(META, [], lambda r: r.stage("add", stage_add))
'''


def cli(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`repromatrix ARGV` as a user types it, resolving to this tree."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run([sys.executable, "-m", "repromatrix.cli", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def run_printed(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    argv = shlex.split(command)
    assert argv[0] == "repromatrix", command
    return cli(*argv[1:], cwd=cwd)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A folder outside the project: a matrix of one local torch stack, a repros folder with
    stray copies of the harness's files that must never be used."""
    if not PY or not Path(PY).exists():
        pytest.skip("no torch interpreter: set REPROMATRIX_TEST_PY_T213 or _T214")
    (tmp_path / "matrix.yaml").write_text(
        f"stacks: [{{kind: local, id: here, interpreter: {PY}, tags: [default]}}]\n")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "user_bug.py").write_text(USER_REPRO)
    (mine / "_mine.py").write_text('WHO = "the user\'s helper"\n')
    for stray in ("protocol.py", "runner.py", "_torchutil.py"):
        (mine / stray).write_text(f'raise SystemExit("the stray {stray} was used")\n')
    return tmp_path


def page_cells(site: Path) -> dict[str, dict]:
    """Every cell's details as the page loads them: from its data chunks (data/c<N>.js)."""
    cells: dict[str, dict] = {}
    for path in (site / "data").glob("c*.js"):
        cells.update(dict(json.loads(read_payload(path)[1])["cells"]))
    assert cells, "the page holds its data"
    return cells


# ------------------------------------------------------------------ catalog

def test_user_repros_join_the_built_in_catalog_and_a_clash_names_both_files(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "user_bug.py").write_text(USER_REPRO)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text("stacks: [{kind: pip, torch: '2.14'}]\n")
    m = load_matrix(matrix, extra_repros=[mine])
    built_in = set(load_matrix(matrix).repros)
    assert set(m.repros) == built_in | {"user_bug"} and list(m.repros)[-1] == "user_bug"
    assert m.stacks[0].repros == tuple(m.repros), "`repros: all` is the joined catalog"
    assert m.catalog_args == ("--repros", str(mine.resolve()))

    (mine / "onnx_export_device.py").write_text('META = {"id": "onnx_export_device"}\n')
    with pytest.raises(ConfigError) as info:
        load_matrix(matrix, extra_repros=[mine])
    assert str(mine / "onnx_export_device.py") in str(info.value)
    assert str(paths.repros_dir() / "onnx_export_device.py") in str(info.value)
    assert main(["plan", "--matrix", str(matrix), "--repros", str(mine)]) == 2

    beside = tmp_path / "repros"
    beside.mkdir()
    (beside / "beside_bug.py").write_text(USER_REPRO.replace("user_bug", "beside_bug"))
    assert "beside_bug" in load_matrix(matrix).repros, "a repros/ beside the matrix joins too"
    assert main(["plan", "--matrix", str(tmp_path / "none.yaml"), "--repros", str(tmp_path / "no")]) == 2


def test_selects_no_cells_hint_lists_the_same_matrix_and_catalog(tmp_path: Path, capsys) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "user_bug.py").write_text(USER_REPRO)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text("stacks: [{kind: pip, torch: '2.14'}]\n")
    assert main(["plan", "--matrix", str(matrix), "--repros", str(mine), "-k", "nothing"]) == 2
    hint = re.search(r"`(repromatrix plan [^`]*)` lists them all", capsys.readouterr().err)
    assert hint, "the hint names a command"
    listed = run_printed(hint.group(1), cwd=Path("/"))
    assert listed.returncode == 0, listed.stderr
    assert "user_bug" in listed.stdout and str(matrix.resolve()) in hint.group(1)


# ------------------------------------------------------------------ runs

@pytest.mark.torch  # the home fixture's local stack is a torch interpreter
def test_a_user_repro_runs_with_the_harness_files_never_the_stray_copies(home: Path) -> None:
    results = home / "results"
    assert main(["run", "--matrix", str(home / "matrix.yaml"), "--repros", str(home / "mine"),
                 "-k", "user_bug", "--results", str(results)]) == 0
    (rec,) = load_records([results]).records
    assert rec.status == "pass", rec.message
    assert rec.stage("add").evidence["helper"] == "the user's helper"
    assert rec.reproduce[:2] == ("repromatrix", "run") and "--repros" in rec.reproduce

    site = home / "site"
    assert main(["report", "--matrix", str(home / "matrix.yaml"), "--repros", str(home / "mine"),
                 "--results", str(results), "--out", str(site), "--check"]) == 0
    page = (site / "repro-user_bug.html").read_text()
    assert "my own bug" in page and "my expectation note" in page


SCRIPTS = {
    "exit 0": ("import sys\nimport torch\nprint(torch.ones(2).sum())\n", None, "pass", None),
    "exit 3": ("import sys\nprint('broken here')\nsys.exit(3)\n", None, "fail", None),
    "exit 125": ("import sys\nsys.exit(125)\n", None, "skip", None),
    "signal": ("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n", None, "crash", "SIGSEGV"),
    "prints the bug": ("print('all fine?')\nprint('BUG: wrong value 3')\n", r"BUG: \w+", "fail", None),
    "other failure": ("import sys\nsys.exit(2)\n", r"BUG: \w+", "error", None),
    "prints nothing bad": ("print('fine')\n", r"BUG: \w+", "pass", None),
}


@pytest.mark.torch  # the home fixture's local stack is a torch interpreter
@pytest.mark.parametrize("case", list(SCRIPTS))
def test_a_plain_script_becomes_a_cell_by_its_exit_code(case: str, home: Path) -> None:
    source, regex, status, sig = SCRIPTS[case]
    script = home / "my-check.py"
    script.write_text(source)
    results = home / "results"
    argv = ["run", "--matrix", str(home / "matrix.yaml"), "--script", str(script),
            "--results", str(results)]
    assert main([*argv, *(["--bad-if-output", regex] if regex else [])]) == 0
    (rec,) = load_records([results]).records
    assert (rec.cell, rec.status, rec.signal) == ("here--my_check", status, sig), rec.message
    assert rec.stages and rec.stages[-1].name == "script"
    assert (results / "scripts" / "my_check.py").is_file()


@pytest.mark.torch  # the home fixture's local stack is a torch interpreter
def test_the_page_command_reruns_the_same_cell_as_printed(home: Path) -> None:
    script = home / "bug.py"
    script.write_text("import sys\nimport torch\nsys.exit(0 if torch.__version__ < '2' else 4)\n")
    results = home / "results"
    first = cli("run", "--matrix", "matrix.yaml", "--script", "bug.py", "--results", "results",
                "--backend", "local", cwd=home)
    assert first.returncode == 0, first.stderr
    report = cli("report", "--results", "results", "--out", "site", cwd=home)
    assert report.returncode == 0, report.stderr
    cells = page_cells(home / "site")
    assert set(cells) == {"here--bug"} and cells["here--bug"]["status"] == "fail"
    assert "bug.py (plain script)" in (home / "site" / "repro-bug.html").read_text()
    command = cells["here--bug"]["command"]
    assert "--script" in command and str(home / "results") in command

    elsewhere = home / "elsewhere"
    elsewhere.mkdir()
    again = run_printed(command, cwd=elsewhere)
    assert again.returncode == 0, again.stderr
    records = load_records([results]).records
    assert [r.cell for r in records] == ["here--bug", "here--bug"], "the same cell, run again"
    assert records[0].status == records[1].status == "fail"
    assert records[0].cache_key == records[1].cache_key


@pytest.mark.torch  # the home fixture's local stack is a torch interpreter
def test_bad_script_input_is_refused_before_anything_runs(home: Path, capsys) -> None:
    matrix = str(home / "matrix.yaml")
    assert main(["run", "--matrix", matrix, "--script", str(home / "absent.py")]) == 2
    (home / "bad.py").write_text("def broken(:\n")
    assert main(["run", "--matrix", matrix, "--script", str(home / "bad.py")]) == 2
    (home / "ok.py").write_text("print(1)\n")
    assert main(["run", "--matrix", matrix, "--script", str(home / "ok.py"), "--bad-if-output", "("]) == 2
    assert main(["run", "--matrix", matrix, "--bad-if-output", "x"]) == 2
    assert main(["bisect", "--good", "2.13.0", "--bad", "2.14.1"]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and "syntax error on line 1" in err
    assert "not a regular expression" in err and "--bad-if-output needs --script" in err
    assert "bisect needs --repro ID" in err
    assert not (home / "results").exists()


# ------------------------------------------------------------------ exports and environments

@pytest.mark.torch  # the home fixture's local stack is a torch interpreter
def test_the_one_file_export_runs_without_the_harness(home: Path, tmp_path: Path) -> None:
    name, text = export(home / "mine" / "user_bug.py", paths.harness_dir(), "my own bug")
    folder = tmp_path / "upstream"
    folder.mkdir()
    (folder / name).write_text(text)
    proc = subprocess.run([PY, name], cwd=folder, capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[repro] user_bug: pass" in proc.stdout


def test_a_helper_holding_the_frame_markers_is_embedded_whole(tmp_path: Path) -> None:
    """The export's frame is cut at its own markers, never at a helper's lines like them."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "user_bug.py").write_text(USER_REPRO)
    (mine / "_markers.py").write_text("A = 1\n# <repro>\n# </modules>\nB = 2\n")
    name, text = export(mine / "user_bug.py", paths.harness_dir(), "# <repro> in a title")
    compile(text, name, "exec")  # a cut export is a syntax error
    assert "# </modules>\nB = 2" in text and text.count("_REPRO = ") == 1


def test_a_title_of_several_lines_stays_a_comment(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "user_bug.py").write_text(USER_REPRO)
    name, text = export(mine / "user_bug.py", paths.harness_dir(), "first line\nraise SystemExit(3)\r\n")
    compile(text, name, "exec")
    assert text.startswith("#!/usr/bin/env python3\n# -*- coding: utf-8 -*-\n# first line\n"
                           "# raise SystemExit(3)\n# One-file")
    # a title that reads like a coding declaration (PEP 263 looks at lines 1 and 2) is not one
    name, text = export(mine / "user_bug.py", paths.harness_dir(), "TRT decoding: wrong output")
    compile(text.encode("utf-8"), name, "exec")


def test_probe_environments_hold_what_the_bug_needs_and_nothing_else() -> None:
    assert bug_base("torch", ["cuda", "onnx", "onnxscript>=0.1"], [], {}) == {
        "torchvision": "none", "torch_tensorrt": "none", "packages": ["onnx", "onnxscript>=0.1"]}
    assert bug_base("torch", ["torchvision"], ["numpy==2.1.0"], {}) == {
        "torch_tensorrt": "none", "packages": ["numpy==2.1.0"]}
    assert bug_base("torch", ["torch_tensorrt", "torch>=2.4"], ["torchvision==0.29.1"], {}) == {
        "torchvision": "0.29.1"}
    assert bug_base("torch", [], [], {"torch_tensorrt": "2.14.0"}) == {
        "torchvision": "none", "torch_tensorrt": "2.14.0"}
    assert bug_base("torch_tensorrt", ["cuda"], [], {}) == {"torchvision": "none"}
    settings = Settings(packages=("onnx",), extra_index_urls=("https://pypi.nvidia.com",))
    plain = probe_settings(settings, Stack(id="a", kind="pip", torch="2.14.0"))
    assert plain.packages == () and plain.extra_index_urls == ()
    trt = probe_settings(settings, Stack(id="b", kind="pip", torch="2.14.0", torch_tensorrt="2.14.0"))
    assert trt.packages == () and trt.extra_index_urls == ("https://pypi.nvidia.com",)


def test_base_image_hint_leaves_out_only_stacks_the_selection_has(tmp_path: Path) -> None:
    import argparse

    matrix = tmp_path / "matrix.yaml"
    matrix.write_text("stacks: [{kind: pip, torch: '2.14'}, {kind: ngc, ngc: '26.09'}]\n")
    m = load_matrix(matrix)
    pip, ngc = m.stacks
    args = argparse.Namespace(command="run", expr=None, all_stacks=False)
    exc = BaseImageMissing("missing")
    exc.missing = {"nvcr.io/nvidia/pytorch:26.09-py3": [ngc.id]}
    both = Plan((StackGroup(pip, ("user",)), StackGroup(ngc, ("user",))))

    def commands(text: str) -> list[str]:
        return [line.strip() for line in text.splitlines() if "repromatrix run" in line]

    [cmd] = commands(str(base_image_hint(exc, args, m, RunOptions(), both)))  # ONE command
    assert "-k '(default) and not ngc'" in cmd and f"--matrix {matrix.resolve()}" in cmd
    assert "LOCAL" not in cmd and "--base-image" not in cmd

    exc.missing = {"python:3.11-slim": [pip.id]}
    [cmd] = commands(str(base_image_hint(exc, args, m, RunOptions(), both)))
    local = "repromatrix-local/bookworm-python:3.11"
    assert cmd.startswith(f"{paths.PROJECT_ROOT / 'scripts' / 'make-base-image.sh'} {local} && ")
    assert f"--base-image python:3.11-slim={local}" in cmd and " not " not in cmd

    exc.missing = {"python:3.11-slim": [pip.id], "nvcr.io/nvidia/pytorch:26.09-py3": [ngc.id]}
    [cmd] = commands(str(base_image_hint(exc, args, m, RunOptions(), both)))
    assert f"--base-image python:3.11-slim={local}" in cmd and "-k '(default) and not ngc'" in cmd

    exc.missing = {"nvcr.io/nvidia/pytorch:26.09-py3": [ngc.id]}
    alone = Plan((StackGroup(ngc, ("user",)),))
    text = str(base_image_hint(exc, args, m, RunOptions(), alone))
    assert not commands(text) and "no selected stack can be built here" in text


def test_a_plain_script_is_inlined_as_the_user_wrote_it(tmp_path: Path) -> None:
    from repromatrix.onefile.plain import ScriptSpec, read_wrapper, write_wrapper

    script = tmp_path / "Weird Name.py"
    script.write_text("print('''quotes''' + \"\\\\\")\n")
    spec = ScriptSpec(script, r"BUG\d")
    path = write_wrapper(spec, tmp_path / "scripts")
    assert path.name == "weird_name.py"
    info = read_wrapper(path)
    assert info is not None and info.source == script.read_text() and info.bad_if_output == r"BUG\d"
    assert export(path, paths.harness_dir()) == ("Weird Name.py", script.read_text())


# ------------------------------------------------------------------ real bisects, end to end

FAKE_CONV_SCRIPT = '''\
"""Fake-mode export of a conv with (fake) CUDA weights and a CPU input: refused from torch 2.14."""
import sys

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

conv = torch.nn.Sequential(torch.nn.Conv2d(3, 8, kernel_size=3, padding=1)).eval()
with FakeTensorMode():
    for mod in conv.modules():
        for name, p in list(mod._parameters.items()):
            if p is not None:
                mod._parameters[name] = torch.nn.Parameter(torch.empty(p.shape, device="cuda"))
    try:
        torch.export.export(conv, (torch.empty(1, 3, 16, 16),), strict=False)
    except RuntimeError as e:
        print("BUG:", str(e).splitlines()[0])
        sys.exit(1)
print("exported", torch.__version__)
'''

FAKE_CONV_REPRO = '''\
"""The same bug as a protocol repro in a user's folder."""
import protocol
from protocol import Signature

META = {"id": "fake_conv_device", "title": "fake-mode export checks conv devices",
        "upstream": [], "description": "torch.export of a conv with fake CUDA weights, CPU input",
        "requires": ["cuda_build"],
        "expect": [{"when": {"torch": ">=2.14"}, "status": "fail", "note": "checked from 2.14"},
                   {"when": {"torch": "<2.14"}, "status": "pass", "note": "exports silently"}]}

SIGNATURES = [Signature("conv_device_checked", exc="RuntimeError", stage="export",
                        pattern=r"Expected all tensors to be on the same device")]


def stage_export(s):
    import torch

    import _torchutil

    conv = torch.nn.Sequential(torch.nn.Conv2d(3, 8, kernel_size=3, padding=1)).eval()
    with _torchutil.fake_mode():
        _torchutil.fake_cuda_params(conv)
        torch.export.export(conv, (torch.empty(1, 3, 16, 16),), strict=False)


def stage_eager(s):
    import torch

    conv = torch.nn.Conv2d(3, 8, kernel_size=3, padding=1).eval()
    x = torch.randn(1, 3, 16, 16)
    s.check_close(conv(x), torch.nn.functional.conv2d(x, conv.weight, conv.bias, padding=1))


def main(r):
    r.stage("export", stage_export, requires=["cuda_build"])
    r.stage("eager", stage_eager, after=["export"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
'''


def _fenced(report: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)\n```", report, re.S)


def _probe_pythons(results: Path) -> dict[str, str]:
    """torch version -> the probed environment's interpreter (the venv backend's image id)."""
    return {str(r.stack["torch"]): str(r.image["id"]) for r in load_records([results]).records
            if r.image}


def _check_report(report: str, results: Path, folder: Path, name: str) -> None:
    """The paste-ready block: exact pins, the script inline, and it runs as printed."""
    assert "- last good: torch 2.13.0" in report and "- first bad: torch 2.14.0" in report
    assert "https://github.com/pytorch/pytorch/compare/v2.13.0...v2.14.0" in report
    reproduce = _fenced(report, "sh")[0].splitlines()
    assert reproduce[1] == "env/bin/pip install torch==2.14.0", "exactly the probed versions"
    assert reproduce[2] == f"env/bin/python {name}"
    head = report.split("```python", 1)[0]  # a protocol repro's export embeds protocol.py
    assert "onnx" not in head and "pypi.nvidia.com" not in head and "torchvision" not in head
    (script,) = _fenced(report, "python")
    upstream = folder / "upstream"
    upstream.mkdir()
    (upstream / name).write_text(script + "\n")
    pythons = _probe_pythons(results)
    plain = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for torch, expected in (("2.14.0", 1), ("2.13.0", 0)):
        ran = subprocess.run([pythons[torch], name], cwd=upstream, env=plain, capture_output=True,
                             text=True, timeout=300)
        assert ran.returncode == expected, f"torch {torch}: {ran.stdout}{ran.stderr}"
    again = _fenced(report, "sh")[1]
    rerun = run_printed(again, cwd=folder)
    assert rerun.returncode == 0, rerun.stderr
    assert "first bad: torch 2.14.0" in rerun.stdout and "(2, 2 reused" in rerun.stdout


@pytest.mark.slow
@pytest.mark.torch
def test_real_bisects_of_a_users_script_and_repro_from_a_folder_of_their_own(tmp_path: Path) -> None:
    """Three real uv environments (torch 2.13.0, 2.14.0, 2.14.1 from PyPI), shared by both bisects."""
    import shutil

    from support.net import pypi_reachable

    if not shutil.which("uv"):
        pytest.skip("uv is not on PATH (pip install uv)")
    if not pypi_reachable():
        pytest.skip("PyPI is unreachable: the environments cannot be built")
    (tmp_path / "fake_conv.py").write_text(FAKE_CONV_SCRIPT)
    bounds = ["--good", "2.13.0", "--bad", "2.14.1", "--backend", "venv"]
    found = cli("bisect", "--script", "fake_conv.py", *bounds, cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    _check_report(found.stdout.split("### Bisect", 1)[1], tmp_path / "results", tmp_path, "fake_conv.py")

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "fake_conv_device.py").write_text(FAKE_CONV_REPRO)
    (mine / "protocol.py").write_text('raise SystemExit("the stray protocol.py was used")\n')
    found = cli("bisect", "--repros", "mine", "--repro", "fake_conv_device", *bounds, cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    report = found.stdout.split("### Bisect", 1)[1]
    (tmp_path / "upstream").rename(tmp_path / "upstream-script")
    _check_report(report, tmp_path / "results", tmp_path, "fake_conv_device.py")

    site = cli("report", "--repros", "mine", "--out", "site", "--check", cwd=tmp_path)
    assert site.returncode == 0, site.stdout + site.stderr
    page = (tmp_path / "site" / "repro-fake_conv_device.html").read_text()
    assert "fake-mode export checks conv devices" in page and "checked from 2.14" in page
    assert "fake_conv.py (plain script)" in (tmp_path / "site" / "repro-fake_conv.html").read_text()
    cells = page_cells(tmp_path / "site")
    cell = next(c for c in cells.values() if c["repro"] == "fake_conv" and "2.14.0" in c["stack"])
    assert cell["command"].startswith("repromatrix bisect --good 2.13.0 --bad 2.14.1")
    rerun = run_printed(cell["command"], cwd=tmp_path / "mine")
    assert rerun.returncode == 0, rerun.stderr
    again = [r for r in load_records([tmp_path / "results"]).records if r.cell == cell["id"]]
    assert len(again) == 2 and again[0].status == again[1].status == "fail", "the same cell, run again"


def test_the_container_side_frames_are_real_files_that_run_on_their_own(tmp_path: Path) -> None:
    """The script wrapper and the one-file frame are linted Python files, not strings: each
    runs with its placeholders (a script that exits 0 is a pass; an empty repro exits 0)."""
    from repromatrix.onefile import plain, standalone

    result = tmp_path / "r.json"
    subprocess.run([sys.executable, str(plain.WRAPPER), "--result", str(result)], check=True,
                   capture_output=True, cwd=tmp_path)
    assert json.loads(result.read_text())["status"] == "pass"
    subprocess.run([sys.executable, str(standalone.FRAME)], check=True, cwd=tmp_path)
    assert "# <settings>" not in plain.wrapper_body() and "placeholders" not in plain.wrapper_body()
