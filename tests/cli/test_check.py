"""`repromatrix check` as a user runs it: exit codes like pip-audit's (0 no known bug, 1 one
at least, 2 bad input, never a traceback), each input kind, and JSON that the shipped schema
accepts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib import resources

import jsonschema
import pytest
from support.cli import repromatrix

from repromatrix.config.catalog import repro_files
from repromatrix.paths import repros_dir

REPORTED = ("torch==2.4.1", "torch-tensorrt==2.4.0", "torchvision==0.19.1")
CATALOG = [p.stem for p in repro_files(repros_dir())]  # the built-in bugs check answers for


def schema() -> dict:
    return json.loads(resources.files("repromatrix").joinpath("data/check.schema.json").read_text())


def kind_words(bug: str) -> str:
    """A catalog bug's kind, in the words check prints (``model.KINDS``)."""
    from repromatrix.cli.check import catalog
    from repromatrix.model import KINDS

    return KINDS[catalog()[bug]["kind"]]


def valid(stdout: str) -> dict:
    data = json.loads(stdout)
    jsonschema.Draft202012Validator.check_schema(schema())
    jsonschema.validate(data, schema(), cls=jsonschema.Draft202012Validator)
    return data


def test_a_stack_with_a_known_bug_exits_1_and_says_the_upgrade():
    # without the torchvision bug (fixed only with torch 2.11: tests/check/test_decide.py)
    proc = repromatrix("check", *REPORTED, "--ignore", "tv_masks_to_boxes_empty", "--verbose")
    assert proc.returncode == 1, proc.stderr
    out = " ".join(proc.stdout.split(" "))  # lines are wrapped at 100 columns
    assert "AFFECTED  deform_conv2d_device" in out and "fixed in: torch-tensorrt 2.5.0" in out
    assert "TensorRT stood in" in " ".join(proc.stdout.split())
    # 2.5.0 brings trt_convert_method_inputs_dropped, 2.6.0 to 2.13.0 may bring the var-kwargs
    # limitation: the smallest upgrade that brings no defect is 2.14.0, which meets two removals
    # and save's retrace default
    assert "pip install torch==2.14.0 torchvision==0.29.0 torch-tensorrt==2.14.0" in out
    assert ("meets: export_capture_pre_autograd_graph_removed, pt2e_quant_removed, "
            "trt_save_retrace_needs_inputs (breaking "
            "changes or user errors: not there now)") in " ".join(proc.stdout.split())
    assert "APPLIES   export_program_call_removed (breaking change)" in out
    assert "not counted in the exit code" in out


def test_no_known_bug_exits_0():
    proc = repromatrix("check", "torch==2.4.1", "--ignore", "torchscript_device_mix",
                       "--ignore", "tv_masks_to_boxes_empty")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # the ExportedProgram call removed in torch 2.3 applies: told, not counted
    assert (f"0 of {len(CATALOG)} known bug(s) affect this environment (2 ignored); 1 breaking "
            f"change(s) or user error(s) apply (not counted); ") in proc.stdout
    assert re.search(r"^applies +export_program_call_removed +breaking change +torch +2\.4\.1 +- ",
                     proc.stdout, re.M), proc.stdout
    assert proc.stdout.rstrip().endswith("; exit 0")


@pytest.mark.parametrize("args", [
    REPORTED, ("--ngc", "25.01"), ("torch==2.4.1", "--ignore", "torchscript_device_mix"),
    ("torch==2.2.2", "torch-tensorrt==2.2.0", "torchvision==0.17.2", "onnx==1.16.0", "onnxscript==0.1.0"),
])
def test_the_json_answer_follows_the_shipped_schema(args):
    proc = repromatrix("check", *args, "--format", "json")
    data = valid(proc.stdout)
    assert proc.returncode == data["exit"]
    assert len(data["bugs"]) == len(CATALOG) and data["source"]["kind"] == "snapshot"


def test_a_requirements_file_and_a_store(tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("torch==2.4.1+cu124\ntorch-tensorrt==2.4.0\ntorchvision==0.19.1+cu124\nnumpy==2.1\n")
    from_file = valid(repromatrix("check", "-r", str(req), "--format", "json").stdout)
    from_pins = valid(repromatrix("check", *REPORTED, "--format", "json").stdout)
    assert from_file["affected"] == from_pins["affected"]
    file_install, pins_install = from_file["upgrade"].pop("install"), from_pins["upgrade"].pop("install")
    # the file gives numpy, which export_strict_default_changed needs: decided there (torch 2.4.1
    # exports with strict=True by default, the upgrade's 2.14 does not), cannot tell from the
    # pins; a breaking change, so the upgrade meets it rather than brings it
    strict = "export_strict_default_changed"
    assert strict in from_file["upgrade"]["meets"] and strict not in from_pins["upgrade"]["meets"]
    from_file["upgrade"]["meets"].remove(strict)
    assert from_file["upgrade"] == from_pins["upgrade"]
    # the file's CUDA 12.4 build is kept where it exists, else said (tests/check/test_candidates.py)
    assert file_install.startswith(pins_install)
    assert "has no cu124 build" in file_install or "--index-url https://download.pytorch.org/whl/cu124" \
        in file_install


def test_pins_without_torchvision_take_the_table_s_pairing():
    """The deform_conv2d report's environment as typed: torchvision is not "not installed"."""
    proc = repromatrix("check", "torch==2.4.1", "torch-tensorrt==2.4.0", "--format", "json")
    data = valid(proc.stdout)
    assert proc.returncode == 1 and not data["environment"]["complete"]
    assert data["environment"]["inferred"] == {
        "torchvision": "0.19.1 (paired with torch 2.4.1 by the table)"}
    assert "deform_conv2d_device" in data["affected"]
    text = repromatrix("check", "torch==2.4.1", "torch-tensorrt==2.4.0").stdout
    assert "note: torchvision not given: taken as 0.19.1" in text
    assert re.search(r"^affected +deform_conv2d_device ", text, re.M), text


def test_pip_freeze_on_standard_input():
    freeze = ("filelock==3.16.1\njinja2==3.1.4\nnetworkx==3.3\nsympy==1.13.1\n"
              "torch==2.4.1+cu124\ntorch-tensorrt==2.4.0\ntyping-extensions==4.12.2\n")
    proc = repromatrix("check", "-r", "-", "--format", "json", stdin=freeze)
    data = valid(proc.stdout)
    assert data["environment"]["complete"] and data["environment"]["label"] == "-r -"
    deform = {b["id"]: b for b in data["bugs"]}["deform_conv2d_device"]
    assert deform["verdict"] == "not affected" and "torchvision" in deform["why"]


@pytest.mark.torch
def test_python_reads_the_distributions_without_importing_torch():
    """--python is read by importlib.metadata in the interpreter: no package of the stack is
    imported (what it costs is measured in benchmarks/, not here)."""
    python = os.environ.get("REPROMATRIX_TEST_PY_T214")
    if not python:
        pytest.skip("no torch interpreter: set REPROMATRIX_TEST_PY_T214")
    from repromatrix.engines.interpreter import _DISTRIBUTIONS, distributions_probe

    found = distributions_probe(python)
    assert found["torch"].startswith("2.14") and "error" not in found
    # the very code the probe runs, with every import it makes listed (-X importtime)
    ran = subprocess.run([python, "-X", "importtime", "-c", _DISTRIBUTIONS], capture_output=True,
                         text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0]
                for line in ran.stderr.splitlines() if line.startswith("import time:")}
    assert "importlib" in imported and not imported & {"torch", "torchvision", "torch_tensorrt",
                                                       "numpy", "onnx"}, sorted(imported)
    proc = repromatrix("check", "--python", python, "--format", "json")
    data = valid(proc.stdout)
    assert data["environment"]["versions"]["torchvision"].startswith("0.29")
    assert data["environment"]["complete"] and data["environment"]["inferred"] == {}


@pytest.mark.torch
def test_an_interpreter_is_probed_in_a_child_process():
    python = os.environ.get("REPROMATRIX_TEST_PY_T214")
    if not python:
        pytest.skip("no torch interpreter: set REPROMATRIX_TEST_PY_T214")
    proc = subprocess.run([sys.executable, "-m", "repromatrix.cli", "check", "--python", python,
                           "--format", "json"], capture_output=True, text=True, timeout=300)
    data = valid(proc.stdout)  # (no memory cap: importing torch maps more than 1 GiB)
    assert data["environment"]["versions"]["torch"].startswith("2.14.1")
    assert proc.returncode == data["exit"]


@pytest.mark.slow
@pytest.mark.torch
def test_run_checks_by_running_the_catalog_now(tmp_path):
    """--run runs the repros of the bugs it answers for (--kind: the breaking changes) on
    the interpreter with the local engine, records them, and sets each beside the records'
    verdict (on torch 2.13.0's CPU build, where they end in seconds)."""
    python = os.environ.get("REPROMATRIX_TEST_PY_T213")
    if not python:
        pytest.skip("no torch interpreter: set REPROMATRIX_TEST_PY_T213")
    results = tmp_path / "results"
    proc = subprocess.run([sys.executable, "-m", "repromatrix.cli", "check", "--python", python,
                           "--run", "--run-results", str(results), "--kind", "breaking-change",
                           "--format", "json"], capture_output=True, text=True, timeout=1200)
    data = valid(proc.stdout)
    assert proc.returncode == data["exit"], proc.stderr[-2000:]
    from repromatrix.config.catalog import load_catalog

    breaking = [rid for rid, r in load_catalog(repros_dir()).items() if r.kind == "breaking-change"]
    assert len(breaking) >= 5 and len(data["bugs"]) == len(breaking)
    assert data["run"]["ran"] == len(breaking) and all(b["run"] for b in data["bugs"])
    ran = {json.loads(line)["repro"] for p in results.rglob("*.jsonl") for line in p.read_text().splitlines()}
    assert ran == set(breaking), "only the bugs answered for were run"
    for bug in data["bugs"]:  # each beside the records: a disagreement is listed
        assert (bug["run"]["agrees"] is False) == (bug["id"] in data["run"]["disagree"])
    assert len(list(results.rglob("*.jsonl"))) == 1, "the run's records are kept"


@pytest.mark.parametrize("args, needle", [
    (("torchh==2.4.1",), 'did you mean "torch"'),
    (("torch==2.4.x",), "is not a version"),
    (("--python", sys.executable), "has no working torch"),
    (("--python", "/bin/true"), "not a working Python interpreter"),
    (("--python", "/no/such/python"), "no such interpreter"),
    (("--ngc", "25.13"), "not a known NGC PyTorch release"),
    (("-r", "/no/such/requirements.txt"), "cannot read"),
    (("-r", "/dev/null/x"), "cannot read"),
    (("-r", "/dev/zero"), "not a regular file"),
    (("torch==2.4.1", "--from", "/etc/hostname"), "not a page's results.json.gz"),
    (("torch==2.4.1", "--results", "/no/such/store"), "not a results folder"),
    (("torch==2.4.1", "--ignore", "deform_conv2d"), 'did you mean "deform_conv2d_device"'),
    (("torch==2.4.1", "--kind", "bug,breaking"),
     '--kind breaking: no such kind (did you mean "breaking-change"?)'),
    (("torch==2.4.1", "--ngc", "25.01"), "give one environment"),
    (("torch==2.4.1", "--run"), "--run runs an interpreter (--python), not pins"),
    (("torch==2.41",), 'torch==2.41: not a torch release the compatibility table knows (did you mean'),
    (("torch==2.5.1", "torch-tensorrt==2.4.0"), "torch-tensorrt==2.4.0 does not install with torch==2.5.1"),
    (("torch==2.4.1", "python==3.13"), "torch 2.4.1 has no wheels for Python 3.13"),
])
def test_bad_input_exits_2_with_a_message(args, needle):
    proc = repromatrix("check", *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "repromatrix: error: " in proc.stderr and needle in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_default_is_a_short_table_affected_first():
    proc = repromatrix("check", *REPORTED, "--ignore", "tv_masks_to_boxes_empty")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    alias = repromatrix("check", *REPORTED, "--ignore", "tv_masks_to_boxes_empty", "--format", "text")
    assert len(lines) < len(CATALOG) + 8 and lines == alias.stdout.splitlines()
    assert lines[3].split() == ["verdict", "bug", "kind", "package", "installed", "fixed", "in",
                                "workaround", "link"]
    row = next(line.split() for line in lines if " deform_conv2d_device " in line)
    assert row[:2] == ["affected", "deform_conv2d_device"]
    assert " ".join(row[2:]).startswith(f"{kind_words('deform_conv2d_device')} torch-tensorrt 2.4.0 2.5.0 ")
    assert row[-1] == "https://github.com/pytorch/TensorRT/issues/3556"
    verdicts = [line.split()[0] for line in lines[5:] if line.startswith(("affected", "cannot"))]
    verdicts = [line.split()[0] for line in lines[5:] if line.startswith(("affected", "applies", "cannot"))]
    assert verdicts == sorted(verdicts) and not any(line.startswith("not affected") for line in lines)
    assert "applies" in verdicts  # torch 2.3 removed calling an ExportedProgram: after the defects
    assert "  pip install torch==2.14.0 torchvision==0.29.0 torch-tensorrt==2.14.0" in lines


def test_markdown_for_a_pull_request_and_output_to_a_file(tmp_path):
    shown = repromatrix("check", *REPORTED, "--format", "markdown")
    assert shown.returncode == 1 and "| verdict | bug | kind | package |" in shown.stdout
    kind = kind_words("deform_conv2d_device")
    assert f"| affected | deform_conv2d_device | {kind} | torch-tensorrt | 2.4.0 | 2.5.0 |" in shown.stdout
    out = tmp_path / "check.md"
    proc = repromatrix("check", *REPORTED, "--format", "markdown", "--output", str(out))
    assert proc.returncode == 1 and out.read_text() == shown.stdout
    affected = len(json.loads(repromatrix("check", *REPORTED, "--format", "json").stdout)["affected"])
    assert proc.stdout == (f"{affected} known bug(s) affect this environment; the answer (markdown) is in "
                           f"{out}; exit 1\n")
    bad = repromatrix("check", *REPORTED, "--output", str(tmp_path / "no" / "such" / "f"))
    assert bad.returncode == 2 and "--output" in bad.stderr and "Traceback" not in bad.stderr


def test_strict_fails_on_cannot_tell_too():
    args = ("check", "torch==2.4.1", "--ignore", "torchscript_device_mix",
            "--ignore", "tv_masks_to_boxes_empty")
    assert repromatrix(*args).returncode == 0
    strict = repromatrix(*args, "--strict", "--format", "json")
    assert strict.returncode == 1 and valid(strict.stdout)["exit"] == 1
    unknown = [b["id"] for b in valid(strict.stdout)["bugs"]
               if b["verdict"] == "cannot tell" and not b["ignored"]]
    assert unknown
    told = [a for bug in unknown for a in ("--ignore", bug)]
    assert repromatrix(*args, *told, "--strict").returncode == 0


def test_github_actions_gets_the_step_summary_and_an_annotation_per_bug(tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    proc = repromatrix("check", "torch==2.4.1", "--strict", "--format", "json", env=env)
    assert proc.returncode == 1 and json.loads(proc.stdout)["exit"] == 1  # stdout stays the answer
    answer = json.loads(proc.stdout)
    notes = [line for line in proc.stderr.splitlines() if line.startswith("::")]
    assert any(n.startswith("::error title=repromatrix check%3A torchscript_device_mix::"
                            "torchscript_device_mix affects this environment (torch 2.4.1)")
               for n in notes)
    said = [n.split("::")[1] for n in notes]
    # an error per defect, a notice per breaking change that applies (the two in the table's
    # order), a warning per defect that cannot be told (--strict)
    told = {**{b: "error" for b in answer["affected"]}, **{b: "notice" for b in answer["notices"]}}
    defects = {"bug", "silent-wrong-output"}
    assert answer["notices"] == ["export_program_call_removed"]
    assert said == [f"{told[b]} title=repromatrix check%3A {b}"
                    for b in sorted(told, key=lambda b: (told[b] == "notice", b))] + [
        f"warning title=repromatrix check%3A {b['id']}" for b in answer["bugs"]
        if b["verdict"] == "cannot tell" and b["kind"] in defects]
    assert any("export_program_call_removed applies to this environment (a breaking change: "
               "told, not counted)" in n for n in notes)
    text = summary.read_text()
    assert text.startswith("earlier step\n") and "### repromatrix check: torch==2.4.1" in text
    kind = kind_words("torchscript_device_mix")
    assert f"| affected | torchscript_device_mix | {kind} | torch | 2.4.1 | no fix yet |" in text
    plain = repromatrix("check", "torch==2.4.1", env={"GITHUB_ACTIONS": "false",
                                                        "GITHUB_STEP_SUMMARY": str(summary)})
    assert "::" not in plain.stderr and summary.read_text() == text


def test_kind_answers_only_the_bugs_of_that_kind():
    from repromatrix.cli.check import catalog
    from repromatrix.model import KINDS

    kinds = {bug_id: bug["kind"] for bug_id, bug in catalog().items()}
    assert set(kinds.values()) <= set(KINDS)
    for kind in ("bug", "breaking-change"):
        data = valid(repromatrix("check", *REPORTED, "--kind", kind, "--format", "json").stdout)
        assert [b["id"] for b in data["bugs"]] == sorted(k for k, v in kinds.items() if v == kind)
        assert data["kinds"] == [kind] and {b["kind"] for b in data["bugs"]} <= {kind}
    # repeatable, comma-separated, by key or in words: the same answer
    both = repromatrix("check", *REPORTED, "--kind", "breaking change,user-error", "--kind", "bug",
                       "--format", "json")
    data = valid(both.stdout)
    assert data["kinds"] == ["bug", "breaking-change", "user-error"]
    assert [b["id"] for b in data["bugs"]] == sorted(
        k for k, v in kinds.items() if v in data["kinds"])
    text = repromatrix("check", *REPORTED, "--kind", "breaking-change", "-v").stdout
    assert "kinds: breaking change only (--kind)" in text


def test_the_json_says_each_bug_s_kind_and_the_schema_knows_every_kind():
    from repromatrix.cli.check import catalog
    from repromatrix.model import KINDS

    data = valid(repromatrix("check", *REPORTED, "--format", "json").stdout)
    assert {b["id"]: b["kind"] for b in data["bugs"]} == {k: v["kind"] for k, v in catalog().items()}
    assert "kinds" not in data
    assert schema()["$defs"]["bug"]["properties"]["kind"]["enum"] == list(KINDS)
    assert schema()["properties"]["kinds"]["items"]["enum"] == list(KINDS)
