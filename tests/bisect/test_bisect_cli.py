"""`repromatrix bisect`: bad input, the probe/verdict glue, resume, and one real bisect.

The glue tests run the real run stage and results store with a scripted engine
(a backend whose cells end as the test says: scheduling logic only). The
end-to-end test builds real uv environments for torch 2.13.0, 2.14.0 and
2.14.1 from PyPI and finds where fake-mode convolution started checking
devices (stage `fake_export_conv_mixed` of `onnx_export_device`).
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from support.net import pypi_reachable

from repromatrix.bisect.command import classify, outcome, parse_bad_if
from repromatrix.bisect.paste import _git, _release
from repromatrix.bisect.search import Verdict
from repromatrix.cli import bisect as bisect_command
from repromatrix.cli import build_parser, main
from repromatrix.engines import Prepared, RunnerJob
from repromatrix.engines import choice as engine_choice
from repromatrix.errors import InfraError, UsageError
from repromatrix.model import Stack
from repromatrix.store.record import EngineFacts, Result

REPRO = "onnx_export_device"
STAGE = "fake_export_conv_mixed"
CPU_PINS = ["--base", "torchvision=none", "--base", "torch_tensorrt=none"]


def bisect(results: Path, *extra: str, good: str = "2.9.0", bad: str = "2.14.1") -> list[str]:
    return ["bisect", "--repro", REPRO, "--good", good, "--bad", bad, "--backend", "venv",
            "--results", str(results), *CPU_PINS, *extra]


# ------------------------------------------------------------------ bad input

@pytest.mark.parametrize(("argv", "message"), [
    (["--repro", "onnx_export_devise", "--good", "2.13.0", "--bad", "2.14.1"],
     'unknown repro (did you mean "onnx_export_device"?)'),
    (["--repro", REPRO, "--good", "2.14.1", "--bad", "2.13.0"],
     "--good 2.14.1 is newer than --bad 2.13.0"),
    (["--repro", REPRO, "--good", "2.13.0", "--bad", "2.14.1", "--find-fix"],
     "with --find-fix the bad release comes first"),
    (["--repro", REPRO, "--good", "2.13.0", "--bad", "2.13.0"], "are the same torch release"),
    (["--repro", REPRO, "--good", "2.13.9", "--bad", "2.14.1"],
     '--good 2.13.9: not a torch release on the torch axis (did you mean "2.13.0"?)'),
    (["--repro", REPRO, "--good", "2.13.0", "--bad", "26.08"], "--bad 26.08: not a torch release"),
    (["--repro", REPRO, "--axis", "ngc", "--good", "24.13", "--bad", "26.08"],
     "--good 24.13: not an NGC release on the ngc axis"),
    (["--repro", REPRO, "--axis", "torch_tensorrt", "--good", "1.4.0", "--bad", "2.14.0"],
     "--good 1.4.0: not a torch_tensorrt release"),
    (["--repro", REPRO, "--good", "2.13.0", "--bad", "2.14.1", "--base", "python=3.9"],
     "no torch release from 2.13.0 to 2.14.1 resolves to an installable stack with --base python=3.9"),
    (["--repro", REPRO, "--good", "2.14.1", "--bad", "2.15.0", "--base", "python=3.10"],
     "--bad 2.15.0: no installable stack with --base python=3.10: torch 2.15.0 has no wheels"),
    (["--repro", REPRO, "--good", "2.13.0", "--bad", "2.14.1", "--backend", "local"],
     "a bisect needs one environment per release"),
    (["--repro", REPRO, "--good", "2.13.0", "--bad", "2.14.1", "--bad-if", "fail,broken"],
     "--bad-if broken: broken says nothing about the bug"),
    (["--repro", REPRO, "--good", "2.13.0", "--bad", "2.14.1", "--bad-if", "pass"], "use --find-fix"),
    (["--repro", REPRO, "--good", "2.13.0", "--bad", "2.14.1", "--bad-if", "eror"],
     '--bad-if eror: not a status (did you mean "error"?)'),
    (["--repro", REPRO, "--good", "2.13.0", "--bad", "2.14.1", "--base", "torchvison=none"],
     '--base torchvison: not a pin of the torch axis\' stacks (did you mean "torchvision"?)'),
    (["--repro", REPRO, "--good", "2.13.0", "--bad", "2.14.1", "--base", "torch=2.5"],
     "--base torch: not a pin of the torch axis' stacks"),
    (["--repro", REPRO, "--good", "2.13.0", "--bad", "2.14.1", "--base", "index"],
     "expected KEY=VALUE"),
])
def test_bad_input_exits_2_with_a_clear_message(argv, message, tmp_path, capsys) -> None:
    assert main(["bisect", *argv, "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert not any(tmp_path.iterdir()), "nothing ran"


# ------------------------------------------------------- verdicts and output

def test_predicate_never_counts_infrastructure_as_a_verdict() -> None:
    bad_if = parse_bad_if("fail")
    assert classify("fail", bad_if, find_fix=False) is Verdict.NEW
    assert classify("pass", bad_if, find_fix=False) is Verdict.OLD
    for status in ("broken", "timeout", "error", "skip", "crash", "missing"):
        assert classify(status, bad_if, find_fix=False) is Verdict.SKIP
    assert classify("error", parse_bad_if("fail,error"), find_fix=False) is Verdict.NEW
    assert classify("fail", bad_if, find_fix=True) is Verdict.OLD
    assert classify("pass", bad_if, find_fix=True) is Verdict.NEW
    with pytest.raises(UsageError):
        parse_bad_if(" , ")


def _record(status: str, message: str, stages: list[dict[str, Any]]) -> Result:
    return Result.from_dict({"schema_version": 2, "run_id": "r", "cell": "s--a", "repro": "a",
                             "stack": {"id": "s"}, "status": status, "message": message,
                             "stages": stages})


def test_stage_outcome_is_read_from_the_record() -> None:
    rec = _record("skip", "legacy_export: no CUDA device",
                  [{"name": STAGE, "status": "fail", "message": "signature matched: RuntimeError"}])
    assert outcome(rec, STAGE) == ("fail", "signature matched: RuntimeError")
    assert outcome(rec, None) == ("skip", "legacy_export: no CUDA device")
    status, note = outcome(rec, "no_such_stage")
    assert status == "missing" and f"stages: {STAGE}" in note
    assert outcome(_record("broken", "uv failed", []), STAGE)[0] == "broken"


def test_versions_for_links() -> None:
    assert _release("2.14.0+cu130") == "2.14.0"
    assert _release("2.14.0a0+4fdf77b940") is None
    assert _git("2.14.0a0+4fdf77b940") == "4fdf77b940"
    assert _git("2.14.0+cu130") is None


# ------------------------------------- the glue over the real run stage/store

class DoneProcess:
    """A runner that has already ended (its files are written)."""

    def poll(self) -> bool:
        return True

    def wait(self, seconds: float) -> None:
        pass

    def stop(self) -> None:
        pass

    def facts(self, timed_out: bool, limit_s: float) -> EngineFacts:
        return EngineFacts(exit_code=0)


class ScriptedEngine:
    """An engine whose runner writes the result files the test scripted per torch version."""

    name = "venv"
    stack_kinds = ("pip",)

    def __init__(self, script: dict[str, Any], calls: list[str]) -> None:
        self.script, self.calls = script, calls

    def preflight(self, stacks: Sequence[Stack]) -> None:
        pass

    def fingerprint(self, stack: Stack) -> str:
        return "scripted:" + stack.id

    def prepare(self, stack: Stack, stop: Any) -> Prepared:
        self.calls.append(stack.torch)
        what = self.script.get(stack.torch, "pass")
        if what == "interrupt":
            raise KeyboardInterrupt
        if what == "broken":
            return Prepared(stack, ok=False, reason="scripted broken")
        return Prepared(stack, ok=True, handle="scripted")

    @contextlib.contextmanager
    def start(self, prepared: Prepared, job: RunnerJob) -> Iterator[DoneProcess]:
        torch = prepared.stack.torch
        what = self.script.get(torch, "pass")
        stage_status, cell_status = (what, "skip") if what in ("pass", "fail", "error") else (what, what)
        (job.outdir / "env.json").write_text(json.dumps({"torch": f"{torch}+cu130", "python": "3.11.7"}))
        for repro in job.repros:
            stages = [{"name": STAGE, "status": stage_status, "duration_s": 0.1,
                       "message": f"scripted {stage_status}{self.script.get('note', '')}",
                       "evidence": {}}]
            (job.outdir / f"{repro}.json").write_text(json.dumps(
                {"repro": repro, "status": cell_status, "stages": stages,
                 "message": f"scripted {cell_status}{self.script.get('note', '')}"}))
        yield DoneProcess()

    def release(self, prepared: Prepared) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.fixture
def scripted(monkeypatch):
    """Install a scripted engine; returns (script dict, list of torch versions run)."""
    script: dict[str, Any] = {}
    calls: list[str] = []
    monkeypatch.setattr(engine_choice, "load_engine", lambda name, ctx: ScriptedEngine(script, calls))
    return script, calls


def regression_from(first_bad: str) -> dict[str, str]:
    from packaging.version import Version

    from repromatrix.config.compat import load_table

    return {v: ("fail" if Version(v) >= Version(first_bad) else "pass")
            for v in load_table().torch_versions()}


def test_finds_the_first_bad_release_and_reuses_every_probe(scripted, tmp_path, capsys) -> None:
    script, calls = scripted
    script.update(regression_from("2.12.0"))
    argv = bisect(tmp_path, "--stage", STAGE)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert calls[:2] == ["2.9.0", "2.14.1"], "bounds are verified first"
    assert "bound torch 2.9.0: pass -> good" in out and "bound torch 2.14.1: fail -> bad" in out
    assert "- last good: torch 2.11.0" in out and "- first bad: torch 2.12.0" in out
    assert "| torch | 2.11.0+cu130 | 2.12.0+cu130 **changed** |" in out
    assert "https://github.com/pytorch/pytorch/compare/v2.11.0...v2.12.0" in out
    assert "https://github.com/pytorch/pytorch/releases/tag/v2.12.0" in out
    assert "env/bin/pip install torch==2.12.0 onnx onnxscript" in out.replace(
        "--extra-index-url https://pypi.nvidia.com ", "")
    assert "--good 2.11.0 --bad 2.12.0" in out
    assert len(calls) <= 2 + 4  # 9 candidates: ceil(log2 9) + 2

    probed = list(calls)
    calls.clear()
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert calls == [], "a second bisect over the same range runs nothing"
    assert out.count("[recorded]") == len(probed)
    assert f"Probes ({len(probed)}, {len(probed)} reused" in out


def test_json_output_and_find_fix(scripted, tmp_path, capsys) -> None:
    script, _ = scripted
    script.update({v: ("pass" if s == "fail" else "fail") for v, s in regression_from("2.11.0").items()})
    assert main(bisect(tmp_path, "--stage", STAGE, "--find-fix", "--json", good="2.14.1", bad="2.9.0")) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["result"] == "found" and data["direction"] == "fix"
    assert data["last_bad"]["version"] == "2.10.0" and data["first_good"]["version"] == "2.11.0"
    assert data["changes"]["torch"] == ["2.10.0+cu130", "2.11.0+cu130"]
    assert "bound torch 2.9.0: fail -> bad" in captured.err, "progress goes to stderr with --json"


def test_untestable_candidates_are_skipped_never_guessed(scripted, tmp_path, capsys) -> None:
    script, calls = scripted
    script.update(regression_from("2.13.0"))
    script.update({"2.12.1": "broken", "2.13.0": "timeout"})
    assert main(bisect(tmp_path, "--stage", STAGE, good="2.12.0", bad="2.14.0")) == 0
    out = capsys.readouterr().out
    assert "torch 2.12.1: broken -> cannot tell" in out
    assert "torch 2.13.0: timeout -> cannot tell" in out
    assert "**Ambiguous:** the first bad release is one of 2.12.1, 2.13.0, 2.14.0" in out
    assert "- last good: torch 2.12.0" in out and "- first bad: torch 2.14.0" in out


def test_a_wrong_bound_stops_before_searching(scripted, tmp_path, capsys) -> None:
    script, calls = scripted
    script.update(regression_from("2.12.0"))
    assert main(bisect(tmp_path, "--stage", STAGE, good="2.12.0")) == 2
    err = capsys.readouterr().err
    assert "--good 2.12.0 is not good: it gave fail (scripted fail)" in err
    assert calls == ["2.12.0", "2.14.1"]


def test_a_broken_bound_is_an_infrastructure_error(scripted, tmp_path, capsys) -> None:
    script, _ = scripted
    script.update(regression_from("2.12.0"))
    script["2.14.1"] = "broken"
    assert main(bisect(tmp_path, "--stage", STAGE)) == 3
    err = capsys.readouterr().err
    assert "cannot tell: infrastructure — --bad 2.14.1's environment could not be built" in err
    assert "scripted broken" in err, "the cause is named"
    assert "pick other bounds" not in err and "--bad-if" not in err, "the bound is not blamed"


def test_interrupted_bisect_prints_the_resume_command_and_resumes(scripted, tmp_path, capsys) -> None:
    script, calls = scripted
    script.update(regression_from("2.12.0"))
    script["2.12.0"] = "interrupt"
    argv = bisect(tmp_path, "--stage", STAGE)
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert "To resume (recorded probes are reused), run:" in err
    resume = err.split("run:\n", 1)[1].strip().splitlines()[0]
    assert resume.startswith("repromatrix bisect --repro onnx_export_device --good 2.9.0 --bad 2.14.1")
    assert f"--results {tmp_path}" in resume and "--base torch_tensorrt=none" in resume
    done = list(calls)
    calls.clear()
    script["2.12.0"] = "fail"
    assert main(argv) == 0
    assert not set(calls) & set(done[:-1]), "probes recorded before the interrupt are reused"
    assert "- first bad: torch 2.12.0" in capsys.readouterr().out


# ------------------------------------------------------------ real, end to end

@pytest.mark.slow
@pytest.mark.torch
def test_real_bisect_finds_torch_2_14_0_for_fake_conv_device_checks(tmp_path, capsys) -> None:
    """Three real uv environments (torch 2.13.0, 2.14.0, 2.14.1 CUDA wheels from PyPI, ~20 s each)."""
    if not shutil.which("uv"):
        pytest.skip("uv is not on PATH (pip install uv)")
    if not pypi_reachable():
        pytest.skip("PyPI is unreachable: the environments cannot be built")
    # Environments go to the backend's cache folder (REPROMATRIX_VENV_DIR, else ~/.cache/repromatrix):
    # beside uv's cache, so uv hard-links the ~5 GB per torch build instead of copying it.
    argv = bisect(tmp_path / "results", "--stage", STAGE, "--json", good="2.13.0", bad="2.14.1")
    assert main(argv) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["result"] == "found"
    assert data["last_good"]["version"] == "2.13.0" and data["first_bad"]["version"] == "2.14.0"
    assert data["last_good"]["status"] == "pass"
    assert "weight is on cuda:0, different from other tensors on cpu" in data["first_bad"]["note"]
    before, after = data["changes"]["torch"]
    assert before.startswith("2.13.0") and after.startswith("2.14.0")
    assert [p["version"] for p in data["probes"]] == ["2.13.0", "2.14.1", "2.14.0"]
    assert "https://github.com/pytorch/pytorch/compare/v2.13.0...v2.14.0" in data["links"]

    assert main(argv) == 0, "the same bisect again"
    again = capsys.readouterr()
    assert all(p["reused"] for p in json.loads(again.out)["probes"])
    assert "building environment" not in again.err and "running 1 repro" not in again.err


@pytest.mark.parametrize(("bounds", "error", "code"), [
    ({"2.9.0": "fail"}, UsageError, 2),      # --good is not good: the user's bounds
    ({"2.14.1": "broken"}, InfraError, 3),   # --bad could not be verified: infrastructure
])
def test_bisect_outcomes_leave_through_the_error_classes(scripted, tmp_path, bounds, error, code) -> None:
    script, _ = scripted
    script.update({**regression_from("2.12.0"), **bounds})
    args = build_parser().parse_args(bisect(tmp_path, "--stage", STAGE))
    with pytest.raises(error) as info:
        bisect_command.run(args)
    assert type(info.value).exit_code == code


def test_interrupted_bisect_raises_keyboard_interrupt_after_the_resume_hint(scripted, tmp_path,
                                                                            capsys) -> None:
    script, _ = scripted
    script["2.9.0"] = "interrupt"
    with pytest.raises(KeyboardInterrupt):
        bisect_command.run(build_parser().parse_args(bisect(tmp_path, "--stage", STAGE)))
    assert "To resume" in capsys.readouterr().err


def test_record_text_reaches_the_terminal_escaped(scripted, tmp_path, capsys) -> None:
    script, _ = scripted
    script.update(regression_from("2.12.0"))
    script["note"] = "\x1b]0;pwned\x07\x1b[2J\r"
    assert main(bisect(tmp_path, "--stage", STAGE)) == 0
    captured = capsys.readouterr()
    for text in (captured.out, captured.err):
        assert "\x1b" not in text and "\x07" not in text and "\r" not in text
    assert "scripted fail\\x1b]0;pwned\\x07\\x1b[2J" in captured.out
