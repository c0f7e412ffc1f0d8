"""The GitHub Action (action.yml at the root): its steps run as a runner runs a composite
action's steps, and a workflow that `uses: ./` it passes actionlint.

Each `run:` step is written to a file and run with the runner's own bash line (`bash
--noprofile --norc -e -o pipefail FILE`), its `${{ inputs.x }}` substituted as the runner
does (the value given, else the input's default), its `env:` set, with GITHUB_ACTION_PATH
this checkout and a GITHUB_OUTPUT file per step. repromatrix is importable from this
checkout here, so the install step's own test finds it installed and installs nothing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml
from support import DATA, ROOT
from support.scale import cli_env
from support.tools import actionlint

DEFORM = re.compile(r"^affected +deform_conv2d_device ", re.M)  # its line of check's table

ACTION = ROOT / "action.yml"
INPUT = re.compile(r"\$\{\{\s*inputs\.([A-Za-z0-9_-]+)\s*\}\}")
STEP_OUTPUT = re.compile(r"^\$\{\{\s*steps\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)\s*\}\}$")
AFFECTED = "torch==2.4.1\ntorchvision==0.19.1\ntorch-tensorrt==2.4.0\n"


def action() -> dict:
    return yaml.safe_load(ACTION.read_text(encoding="utf-8"))


def outputs_of(text: str) -> dict[str, str]:
    """A GITHUB_OUTPUT file as the runner reads it: `name=value` and `name<<DELIMITER` blocks."""
    out, lines = {}, iter(text.splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            value = []
            for more in lines:
                if more == delimiter:
                    break
                value.append(more)
            else:
                raise AssertionError(f"{name}: no closing delimiter")
            out[name] = "\n".join(value)
        elif line:
            name, value = line.split("=", 1)
            out[name] = value
    return out


def run_action(work: Path, **given: str) -> tuple[int, dict[str, str], str]:
    """Run the action's steps in ``work`` (the workspace) with inputs ``given``; the exit code
    of the step that ended it, the action's outputs and the steps' log."""
    spec = action()
    assert spec["runs"]["using"] == "composite"
    inputs = {name: given.get(name, str(i.get("default", ""))) for name, i in spec["inputs"].items()}
    assert set(given) <= set(inputs), f"no such inputs: {set(given) - set(inputs)}"
    fill = lambda text: INPUT.sub(lambda m: inputs[m.group(1)], str(text))  # noqa: E731
    bin_dir = work / ".bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "repromatrix"           # the console script an editable install makes
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m repromatrix.cli "$@"\n')
    shim.chmod(0o755)
    (bin_dir / "python3").unlink(missing_ok=True)
    (bin_dir / "python3").symlink_to(sys.executable)
    steps, log, rc = {}, "", 0
    for n, step in enumerate(spec["runs"]["steps"]):
        assert step["shell"] == "bash"
        script, output = work / f".step-{n}.sh", work / f".output-{n}"
        script.write_text(fill(step["run"]))
        output.write_text("")
        env = {**cli_env(), **{k: fill(v) for k, v in (step.get("env") or {}).items()},
               "GITHUB_ACTION_PATH": str(ROOT), "GITHUB_WORKSPACE": str(work),
               "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(work / ".summary"),
               "RUNNER_TEMP": str(work), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", str(script)],
                              cwd=work, env=env, capture_output=True, text=True, timeout=300)
        log += proc.stdout + proc.stderr
        if "id" in step:
            steps[step["id"]] = outputs_of(output.read_text())
        rc = proc.returncode
        if rc:
            break                            # the runner stops at the failed step
    result = {}
    for name, o in spec["outputs"].items():
        m = STEP_OUTPUT.match(o["value"])
        assert m, o["value"]
        result[name] = steps.get(m.group(1), {}).get(m.group(2), "")
    return rc, result, log


def test_affected_requirements_fail_the_step_and_set_the_json_output(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text(AFFECTED)
    rc, out, log = run_action(tmp_path)
    assert "is installed from" in log, log           # the install step found this checkout
    assert rc == 1 and out["exit-code"] == "1", log
    answer = json.loads(out["json"])
    assert answer["exit"] == 1 and "deform_conv2d_device" in answer["affected"]
    assert re.search(DEFORM, log)  # the answer in words in the log ...
    assert re.search(DEFORM, (tmp_path / ".summary").read_text())  # ... and the summary


def test_ignore_and_fail_on_affected(tmp_path: Path) -> None:
    (tmp_path / "reqs").mkdir()
    (tmp_path / "reqs" / "prod.txt").write_text(AFFECTED)
    rc, out, log = run_action(tmp_path, requirements="reqs/prod.txt", **{"fail-on-affected": "false"})
    assert rc == 0 and out["exit-code"] == "1" and "::warning::" in log, log
    affected = json.loads(out["json"])["affected"]
    ignore = ", ".join(affected[:2]) + "\n" + " ".join(affected[2:])  # commas, spaces, new lines
    rc, out, log = run_action(tmp_path, requirements="reqs/prod.txt", ignore=ignore)
    answer = json.loads(out["json"])
    assert rc == 0 and answer["exit"] == 0 and sorted(answer["ignored"]) == sorted(affected), log


def test_ngc_release_instead_of_a_file(tmp_path: Path) -> None:
    rc, out, log = run_action(tmp_path, ngc="24.07")       # no requirements.txt: not read
    answer = json.loads(out["json"])
    assert rc == 1 and answer["environment"]["versions"]["ngc"] == "24.07", log
    assert "deform_conv2d_device" in answer["affected"]


def test_bad_input_fails_whatever_fail_on_affected_says(tmp_path: Path) -> None:
    rc, out, log = run_action(tmp_path, requirements="missing.txt", **{"fail-on-affected": "false"})
    assert rc == 2 and out == {"json": "", "exit-code": "2"}, log
    assert "missing.txt" in log


def test_a_workflow_using_the_action_passes_actionlint_which_reads_its_inputs(tmp_path: Path) -> None:
    exe = actionlint()
    example = DATA / "action" / "workflow.yml"
    ok = subprocess.run([exe, "-no-color", str(example)], capture_output=True, text=True, timeout=120,
                        cwd=ROOT)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    project = tmp_path / "project"        # a copy: actionlint reads `uses: ./` from the git root
    (project / ".github" / "workflows").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=60)
    (project / "action.yml").write_bytes(ACTION.read_bytes())
    broken = project / ".github" / "workflows" / "check.yml"
    broken.write_text(example.read_text().replace("ignore: torch", "ignor: torch"))
    bad = subprocess.run([exe, "-no-color", str(broken)], capture_output=True, text=True, timeout=120,
                         cwd=project)
    assert bad.returncode != 0 and '"ignor" is not defined' in bad.stdout
    inputs = yaml.safe_load(example.read_text())["jobs"]["check"]["steps"][2]["with"]
    assert set(inputs) <= set(action()["inputs"])
