"""The local backend and the record conversion: a real interpreter, real runner, real records."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from repromatrix.backends import RunContext
from repromatrix.backends.local import LocalBackend
from repromatrix.errors import UsageError
from repromatrix.model import SCHEMA_VERSION, Settings, Stack, StackGroup
from repromatrix.probe import env_probe, pin_mismatches
from repromatrix.records import broken_records, records_from_outdir

ROOT = Path(__file__).resolve().parents[1]
RECORD_KEYS = {"schema_version", "run_id", "cell", "stack", "repro", "repro_sha256", "cache_key",
               "status", "stages", "signature", "workaround", "message", "traceback", "duration_s",
               "exit_code", "signal", "env", "image", "backend", "harness_version", "host",
               "started_at", "finished_at"}


def torch_python() -> str:
    for name in ("REPROMATRIX_TEST_PY_T213", "REPROMATRIX_TEST_PY_T214"):
        py = os.environ.get(name)
        if py and Path(py).exists():
            return py
    pytest.skip("no torch interpreter: set REPROMATRIX_TEST_PY_T213 or _T214")


@pytest.fixture
def repros_dir(tmp_path: Path) -> Path:
    """The real protocol and runner next to the fixture repros."""
    d = tmp_path / "repros"
    d.mkdir()
    for p in list((ROOT / "repros").glob("*.py")) + list((ROOT / "tests/data/repros").glob("*.py")):
        shutil.copy(p, d)
    return d


def make_ctx(tmp_path: Path, repros_dir: Path, python: str | None, out: list) -> RunContext:
    return RunContext(run_id="run1", settings=Settings(), repros_dir=repros_dir,
                      repro_hashes={"fx_checked": "abc"}, emit=out.append, work_dir=tmp_path / "work",
                      repro_timeout=8, python=python, log=lambda line: None)


@pytest.mark.torch
def test_local_backend_emits_one_record_per_repro(tmp_path, repros_dir):
    out: list = []
    ctx = make_ctx(tmp_path, repros_dir, torch_python(), out)
    group = StackGroup(Stack(id="local", kind="local"),
                       ("fx_checked", "fx_segfault", "fx_hang", "fx_garbage", "fx_missing"))
    backend = LocalBackend()
    backend.preflight([group], ctx)
    backend.run([group], ctx)
    by = {r["repro"]: r for r in out}
    assert [r["repro"] for r in out] == list(group.repros)  # emitted as each finished, in order
    assert {k: by[k]["status"] for k in by} == {"fx_checked": "fail", "fx_segfault": "crash",
                                                "fx_hang": "timeout", "fx_garbage": "error",
                                                "fx_missing": "error"}
    for rec in out:
        assert set(rec) == RECORD_KEYS and rec["schema_version"] == SCHEMA_VERSION
        assert rec["backend"] == "local" and rec["cell"] == f"local--{rec['repro']}"
        assert rec["env"]["torch"] and rec["image"] is None
    assert by["fx_checked"]["repro_sha256"] == "abc" and by["fx_checked"]["signature"] == "known_bug"
    assert by["fx_segfault"]["signal"] == "SIGSEGV"
    assert "torch=" in backend.fingerprint(group.stack, ctx)


@pytest.mark.torch
def test_pin_mismatch_is_broken_not_mislabelled(tmp_path, repros_dir):
    out: list = []
    ctx = make_ctx(tmp_path, repros_dir, torch_python(), out)
    group = StackGroup(Stack(id="pip-old", kind="pip", torch="1.13.1"), ("fx_checked",))
    LocalBackend().run([group], ctx)
    assert out[0]["status"] == "broken" and "stack pins 1.13.1" in out[0]["message"]


def test_interpreter_without_torch_gives_broken_records(tmp_path, repros_dir):
    out: list = []
    site = tmp_path / "site" / "torch"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text("raise ImportError('no libtorch here')\n")
    ctx = make_ctx(tmp_path, repros_dir, sys.executable, out)
    os.environ["PYTHONPATH"], old = str(tmp_path / "site"), os.environ.get("PYTHONPATH")
    try:
        LocalBackend().run([StackGroup(Stack(id="local", kind="local"), ("fx_checked",))], ctx)
    finally:
        if old is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old
    assert [r["status"] for r in out] == ["broken"] and "no libtorch here" in out[0]["message"]


def test_preflight_rejects_a_missing_interpreter(tmp_path, repros_dir):
    ctx = make_ctx(tmp_path, repros_dir, "/nonexistent/python", [])
    with pytest.raises(UsageError):
        LocalBackend().preflight([StackGroup(Stack(id="l", kind="local"), ("fx_checked",))], ctx)


def test_records_from_outdir_only_and_missing(tmp_path, repros_dir):
    outdir = tmp_path / "out"
    outdir.mkdir()
    (outdir / "env.json").write_text(json.dumps({"torch": "2.14.1"}))
    (outdir / "a.json").write_text(json.dumps({"repro": "a", "status": "pass", "stages": [
        {"name": "s", "status": "pass", "duration_s": 1, "message": "", "evidence": {}}]}))
    (outdir / "b.json").write_text("{garbage")
    ctx = make_ctx(tmp_path, repros_dir, None, [])
    group = StackGroup(Stack(id="st", kind="pip"), ("a", "b", "c"))
    kw = dict(ctx=ctx, backend="docker", image={"tag": "t", "id": "i"},
              started_at="2026-01-01T00:00:00+00:00")
    only = records_from_outdir(group, outdir, only=["a", "c"], **kw)
    assert [r["repro"] for r in only] == ["a"]
    full = {r["repro"]: r for r in records_from_outdir(group, outdir, **kw)}
    assert (full["a"]["status"], full["b"]["status"], full["c"]["status"]) == ("pass", "error", "error")
    assert full["a"]["env"] == {"torch": "2.14.1"} and full["a"]["image"] == {"tag": "t", "id": "i"}
    broken = broken_records(group, reason="image build failed", log_tail="E: x", **kw)
    assert {r["status"] for r in broken} == {"broken"} and broken[0]["traceback"] == "E: x"


def test_pin_mismatches():
    env = {"torch": "2.4.0a0+07cecf4168", "torchvision": "0.19.1+cu121", "python": "3.10.12"}
    assert pin_mismatches({"torch": "2.4", "torchvision": "0.19.1", "python": "3.10"}, env) == []
    assert pin_mismatches({"torch": "2.4.1"}, env) == ["torch: stack pins 2.4.1, interpreter has "
                                                      "2.4.0a0+07cecf4168"]
    assert pin_mismatches({"torch_tensorrt": "2.4.0"}, env)[0].endswith("interpreter has none")


@pytest.mark.torch
def test_env_probe_of_a_torch_interpreter():
    env = env_probe(torch_python())
    assert env["torch"] and env["python_executable"] and "error" not in env
