"""The stand-in lane: TensorRT stood in so torch-tensorrt's own code runs without a GPU.

Container side (repros/harness/_standin.py, protocol): the native stand-ins are compiled with the
host's C compiler and loaded for real by a library that links against TensorRT; signatures
tied to a torch-tensorrt frame match real exceptions. Host side: install specs, options,
records (schema 3, evidence levels), the page's choice between a real and a stand-in record,
and bisect's reading of a stand-in record.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.standins import fake_torch_tensorrt

from repromatrix.bisect.command import classify, verdict_status
from repromatrix.bisect.search import Verdict
from repromatrix.cli import main as cli_main
from repromatrix.config.flags import reproduce_args
from repromatrix.config.matrix import parse_settings
from repromatrix.config.options import RunOptions
from repromatrix.engines import EngineContext
from repromatrix.engines.venv import VenvEngine, install_spec
from repromatrix.errors import ConfigError
from repromatrix.model import Settings, Stack
from repromatrix.onefile.plain import NOT_LOADED
from repromatrix.paths import harness_dir, repros_dir
from repromatrix.report.feed import shown
from repromatrix.report.load import reduce_records
from repromatrix.store.reader import Span
from repromatrix.store.record import SCHEMA_VERSION, STANDIN_BAD, STANDIN_GOOD, Result

REPROS = harness_dir()  # the harness: protocol, _standin
sys.path.insert(0, str(REPROS))
import _standin  # noqa: E402
import protocol  # noqa: E402

STACK = Stack(id="pip-torch2.4.1-trt2.4.0-pypi-py3.11", kind="pip", python="3.11", torch="2.4.1",
              torchvision="0.19.1", torch_tensorrt="2.4.0", tensorrt="10.1.0", index="pypi")
CC = shutil.which("cc")


# -- native stand-ins, made and loaded for real --------------------------------------------

@pytest.mark.skipif(CC is None, reason="needs a C compiler (cc)")
def test_make_compiles_what_libtorchtrt_needs_and_it_loads(tmp_path) -> None:
    pkg = fake_torch_tensorrt(tmp_path, CC)
    dest = tmp_path / "standins"
    env = dict(os.environ, PYTHONPATH=str(pkg.parent))
    subprocess.run([sys.executable, str(REPROS / "_standin.py"), "make", str(dest), CC],
                   check=True, env=env, capture_output=True)
    manifest = json.loads((dest / "standins.json").read_text())
    assert manifest["nvinfer"] == {"libnvinfer": "10", "libnvinfer_plugin": "10"}
    assert manifest["tensorrt_version"] == "10.1.0" and manifest["standins"] == ["tensorrt"]
    assert "preload" not in manifest  # this torch-tensorrt does not ask the CUDA runtime itself
    code = ("import ctypes, sys, tensorrt; lib = ctypes.CDLL(sys.argv[1]); "
            "assert lib.uses_tensorrt() == 1; "
            "assert tensorrt.__standin__ and tensorrt.__version__ == '10.1.0'; "
            "assert tensorrt.tensorrt.ITensor is tensorrt.ITensor; "
            "assert not hasattr(tensorrt, 'tensorrt_rtx'); "
            "import tensorrt.plugin as trtp; f = trtp.register('x')(len); "
            "from tensorrt.plugin import TensorDesc; assert trtp.TensorDesc is TensorDesc; "
            "print('loaded')")
    run_env = dict(os.environ, LD_LIBRARY_PATH=str(dest / "lib"), PYTHONPATH=str(dest / "python"))
    out = subprocess.run([sys.executable, "-c", code, str(pkg / "lib" / "libtorchtrt.so")],
                         env=run_env, capture_output=True, text=True)
    assert out.stdout.strip() == "loaded", out.stderr
    # without the stand-ins the library does not load (what the lane is for)
    bare = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                           str(pkg / "lib" / "libtorchtrt.so")], capture_output=True, text=True)
    assert "libnvinfer" in bare.stderr


def test_nothing_is_made_where_a_real_tensorrt_imports(tmp_path) -> None:
    real = tmp_path / "real" / "tensorrt"
    real.mkdir(parents=True)
    (real / "__init__.py").write_text('__version__ = "10.1.0"\n')
    env = dict(os.environ, PYTHONPATH=str(real.parent))
    subprocess.run([sys.executable, str(REPROS / "_standin.py"), "make", str(tmp_path / "s")],
                   check=True, env=env, capture_output=True)
    manifest = json.loads((tmp_path / "s" / "standins.json").read_text())
    assert manifest["standins"] == [] and "real TensorRT 10.1.0" in manifest["not_made"]


# -- stages that opt in --------------------------------------------------------------------

def test_a_standin_stage_skips_without_standins(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv(_standin.ENV, raising=False)
    r = protocol.Repro("x", [], None)
    r.stage("on_standins", lambda s: None, standins=["tensorrt"])
    stage = r.stages[0].to_dict()
    assert stage["status"] == "skip" and "--standin tensorrt" in stage["message"]
    assert stage["standins"] == []


def _raise_in_torch_tensorrt(tmp_path: Path) -> BaseException:
    pkg = tmp_path / "torch_tensorrt" / "ts"
    pkg.mkdir(parents=True)
    code = "def _from(d):\n    return d.gpu_id\n"
    (pkg / "_Device.py").write_text(code)
    namespace: dict = {}
    exec(compile(code, str(pkg / "_Device.py"), "exec"), namespace)
    try:
        namespace["_from"](object())
    except AttributeError as exc:
        return exc
    raise AssertionError("no exception")


def test_a_frame_signature_matches_only_the_named_torch_tensorrt_frame(tmp_path) -> None:
    exc = _raise_in_torch_tensorrt(tmp_path)
    where = protocol.raised_in(exc)
    assert where is not None and where.startswith("torch_tensorrt/ts/_Device.py:2 in _from:")
    good = protocol.Signature("a", exc="AttributeError", pattern="gpu_id",
                              frame=r"torch_tensorrt/ts/_Device\.py:\d+ in _from: .*d\.gpu_id")
    near = protocol.Signature("b", exc="AttributeError", pattern="gpu_id",
                              frame=r"torch_tensorrt/_Device\.py:\d+ in _from")
    assert good.matches_exception(exc) and not near.matches_exception(exc)
    try:
        raise AttributeError("'torch.device' object has no attribute 'gpu_id'")
    except AttributeError as elsewhere:  # the same text raised outside torch-tensorrt
        assert not good.matches_exception(elsewhere)
    assert protocol.Signature.from_dict(good.to_dict()).frame == good.frame


def test_a_standin_stage_is_matched_only_by_frame_signatures(tmp_path) -> None:
    exc = _raise_in_torch_tensorrt(tmp_path)
    loose = protocol.Signature("loose", exc="AttributeError", pattern="gpu_id")
    r = protocol.Repro("x", [loose], None)
    s = protocol.Stage("st")
    s.standins = ["tensorrt"]
    r._record_exception(s, exc)
    assert s.status == "error" and s.evidence["raised_in"].startswith("torch_tensorrt/ts/_Device.py")
    plain = protocol.Stage("real")
    r._record_exception(plain, exc)
    assert plain.status == "fail"


def test_stop_at_ends_a_stage_as_skip_past_the_point_never_pass() -> None:
    class Native:
        @staticmethod
        def compile_graph(*args):
            raise AssertionError("the real native call must not run")

    def stage(s):
        with _standin.stop_at(Native, "compile_graph", "_C.compile_graph") as state:
            Native.compile_graph(1)
        _standin.past(s, state, "the device parse")

    r = protocol.Repro("x", [], None)
    r.execute(s := protocol.Stage("st"), stage, (), {})
    assert s.status == "skip" and "needs real TensorRT" in s.message
    assert s.evidence["cleared"] == "the device parse" and s.evidence["stopped_at"] == "_C.compile_graph"
    r.execute(s2 := protocol.Stage("unstopped"), lambda st: _standin.past(st, {}, "x"), (), {})
    assert s2.status == "error"  # a block that never reached its tripwire proves nothing


def test_stop_at_keeps_what_was_passed_and_decides_at_the_call_site(tmp_path) -> None:
    """The tripwire keeps the call's arguments and the real call's value; a check made on
    them inside the call is raised through torch-tensorrt's call site, the frame a stand-in
    stage's signature names."""
    pkg = tmp_path / "torch_tensorrt" / "dynamo"
    pkg.mkdir(parents=True)
    code = ("def compile_module(partitioning, gm):\n"
            "    return partitioning.fast_partition(gm, min_block_size=1)\n")
    (pkg / "_compiler.py").write_text(code)
    namespace: dict = {}
    exec(compile(code, str(pkg / "_compiler.py"), "exec"), namespace)

    class Partitioning:
        @staticmethod
        def fast_partition(gm, min_block_size=3):
            return gm + ["_run_on_gpu_1"]

    real = Partitioning.fast_partition
    kept: dict = {}

    def no_torch_segment(s, state):
        kept.update(state)
        s.check("_run_on_gpu_1" not in state["value"], "no PyTorch-run segment")

    def stage(s, decide):
        with _standin.stop_at(Partitioning, "fast_partition", "after fast_partition", run_first=True,
                              decide=None if decide is None else lambda state: decide(s, state)) as state:
            namespace["compile_module"](Partitioning, ["_run_on_acc_0"])
        kept.update(state)
        _standin.past(s, state, "the partition")

    sig = protocol.Signature("hybrid", exc="CheckFailed", pattern="no PyTorch-run segment",
                             frame=r"torch_tensorrt/dynamo/_compiler\.py:\d+ in compile_module: "
                                   r".*fast_partition\(")
    r = protocol.Repro("x", [sig], None)
    decided = protocol.Stage("decided")
    decided.standins = ["tensorrt"]
    r.execute(decided, stage, (no_torch_segment,), {})
    assert decided.status == "fail" and decided.signature == "hybrid", decided.message
    assert decided.evidence["raised_in"].startswith("torch_tensorrt/dynamo/_compiler.py:2 in compile_module")
    assert kept["args"] == (["_run_on_acc_0"],) and kept["kwargs"] == {"min_block_size": 1}
    assert kept["value"] == ["_run_on_acc_0", "_run_on_gpu_1"] and "reached" not in kept
    assert Partitioning.fast_partition is real  # put back, whatever the block raised
    kept.clear()
    r.execute(plain := protocol.Stage("kept"), stage, (None,), {})
    assert plain.status == "skip" and plain.evidence["stopped_at"] == "after fast_partition"
    assert kept["args"] == (["_run_on_acc_0"],) and kept["value"][-1] == "_run_on_gpu_1"


# -- host side -----------------------------------------------------------------------------

def _engine(tmp_path: Path, standins: tuple[str, ...]) -> VenvEngine:
    ctx = EngineContext(settings=Settings(), options=RunOptions(results=tmp_path, standins=standins),
                        harness_dir=REPROS, repros_dir=repros_dir(), run_id="r", log=lambda line: None)
    return VenvEngine(ctx, tmp_path / "venvs")


def test_the_lane_is_a_different_environment_without_torch_tensorrt_deps(tmp_path) -> None:
    real, lane = _engine(tmp_path, ()), _engine(tmp_path, ("tensorrt",))
    assert real.fingerprint(STACK) != lane.fingerprint(STACK)
    spec = install_spec(STACK, Settings(), ("tensorrt",), REPROS)
    assert "torch-tensorrt==2.4.0" not in spec["requirements"]
    assert spec["standins"]["torch_tensorrt"] == "torch-tensorrt==2.4.0"
    assert spec["standins"]["tensorrt"] == "10.1.0" and spec["standins"]["excluded"] == ["triton"]
    plain = Stack(id="pip-torch2.4.1-pypi-py3.11", kind="pip", python="3.11", torch="2.4.1",
                  index="pypi")
    assert "standins" not in install_spec(plain, Settings(), ("tensorrt",), REPROS)
    assert not (tmp_path / "venvs").exists()


def test_standins_are_checked_before_anything_is_built(tmp_path, capsys) -> None:
    with pytest.raises(ConfigError, match=r"unknown stand-in 'tensorrtt'.*did you mean"):
        parse_settings({"standins": ["tensorrtt"]}, "m.yaml", tmp_path)
    assert parse_settings({"standins": ["tensorrt"]}, "m.yaml", tmp_path).standins == ("tensorrt",)
    with pytest.raises(SystemExit) as exit_:
        cli_main(["run", "--standin", "cuda", "--results", str(tmp_path)])
    assert exit_.value.code == 2 and "--standin" in capsys.readouterr().err


def test_the_lane_is_never_silently_ignored(tmp_path, capsys) -> None:
    code = cli_main(["run", "--standin", "tensorrt", "--backend", "local", "--results", str(tmp_path)])
    assert code == 2 and "built by the docker and venv engines" in capsys.readouterr().err


def test_a_pasted_command_keeps_the_lane(tmp_path) -> None:
    from repromatrix.config.matrix import load_matrix

    matrix = load_matrix(None)
    args = reproduce_args(matrix, RunOptions(results=tmp_path, standins=("tensorrt",)))
    assert args[args.index("--standin") + 1] == "tensorrt"


def record(status: str, stages: list[dict], finished: str = "2026-01-01T00:00:00+00:00",
           run_id: str = "r1") -> dict:
    return {"schema_version": SCHEMA_VERSION, "run_id": run_id, "cell": "s--x", "repro": "x",
            "status": status, "stack": {"id": "s"}, "stages": stages, "finished_at": finished}


STOOD_IN_FAIL = {"name": "a", "status": "fail", "role": "main", "standins": ["tensorrt"]}
STOOD_IN_CLEARED = {"name": "a", "status": "skip", "role": "main", "standins": ["tensorrt"],
                    "evidence": {"cleared": "run_decompositions"}}
REAL_FAIL = {"name": "b", "status": "fail", "role": "main", "standins": []}


def test_evidence_levels() -> None:
    assert Result.from_dict(record("fail", [STOOD_IN_FAIL])).standin_note == STANDIN_BAD
    assert Result.from_dict(record("skip", [STOOD_IN_CLEARED])).standin_note == STANDIN_GOOD
    assert Result.from_dict(record("fail", [REAL_FAIL])).evidence_level == "real"
    unclear = dict(STOOD_IN_CLEARED, evidence={})
    assert Result.from_dict(record("skip", [unclear])).evidence_level == ""
    info = dict(STOOD_IN_FAIL, role="info")
    assert Result.from_dict(record("skip", [info])).evidence_level == ""
    script_passed = {"name": "script", "status": "pass", "role": "main", "standins": ["tensorrt"]}
    assert Result.from_dict(record("pass", [script_passed])).standin_note == STANDIN_GOOD
    assert Result.from_dict(record("pass", [dict(script_passed, standins=[])])).evidence_level == "real"


def test_old_records_stood_nothing_in() -> None:
    old = record("fail", [{"name": "a", "status": "fail", "role": "main"}])
    old["schema_version"] = 2
    rec = Result.from_dict(old)
    assert rec.stages[0].standins == () and rec.evidence_level == "real"
    assert rec.to_dict()["stages"][0]["standins"] == []


def test_a_real_record_outranks_a_newer_standin_one(tmp_path) -> None:
    real = record("fail", [REAL_FAIL], "2026-01-01T00:00:00+00:00", "old")
    stood_in = record("skip", [STOOD_IN_CLEARED], "2026-02-01T00:00:00+00:00", "new")
    (tmp_path / "a.jsonl").write_text(json.dumps(real) + "\n" + json.dumps(stood_in) + "\n")
    with reduce_records([tmp_path]) as reduced:
        assert reduced.result("s--x").run_id == "old"
    later_error = record("error", [], "2026-03-01T00:00:00+00:00", "newest")
    (tmp_path / "b.jsonl").write_text(json.dumps(later_error) + "\n")
    with reduce_records([tmp_path]) as reduced:
        assert reduced.result("s--x").run_id == "newest"  # otherwise the latest


def test_bisect_reads_a_record_by_the_one_verdict_rule() -> None:
    cleared = Result.from_dict(record("skip", [STOOD_IN_CLEARED]))
    failed = Result.from_dict(record("fail", [STOOD_IN_FAIL]))
    assert verdict_status(cleared, "skip", None) == "pass"  # as the page and check read it
    assert verdict_status(failed, "fail", None) == "fail"
    assert verdict_status(cleared, "skip", "a") == "skip"  # a stage's own status
    assert verdict_status(cleared, "flaky", None) == "flaky"
    not_loaded = Result.from_dict(record("error", [dict(STOOD_IN_FAIL, status="error", evidence={
        NOT_LOADED: "ModuleNotFoundError: No module named 'tensorrt'"})]))
    assert verdict_status(not_loaded, "error", None) == "skip"  # never bad: cannot tell
    assert classify(verdict_status(not_loaded, "error", None), ("fail", "error"), False) is Verdict.SKIP


def test_the_feed_says_when_tensorrt_was_stood_in() -> None:
    seg = Span("fail", 1, "r", "t", "r", "t", "standin")
    assert shown(seg) == "fail (TensorRT stood in)"
    assert shown(Span("fail", 1, "r", "t", "r", "t")) == "fail"


def test_the_page_and_feed_mark_a_standin_verdict(tmp_path) -> None:
    from repromatrix.report.render import render_site

    before = record("skip", [], "2026-01-01T00:00:00+00:00", "r0")
    after = record("fail", [STOOD_IN_FAIL], "2026-01-02T00:00:00+00:00", "r1")
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "a.jsonl").write_text(json.dumps(before) + "\n" + json.dumps(after) + "\n")
    render_site([tmp_path / "r"], tmp_path / "site")
    index = (tmp_path / "site" / "index.html").read_text()
    assert 'class="cell st-fail standin"' in index and STANDIN_BAD.replace("'", "&#39;") in index
    assert "mark-standin" in index  # the legend
    feed = (tmp_path / "site" / "changes.atom").read_text()
    assert "skip → fail (TensorRT stood in)" in feed


def test_check_names_the_evidence_level_of_a_contradiction(tmp_path, capsys) -> None:
    cell = "pip-torch2.5.1-trt2.5.0-pypi-py3.11--deform_conv2d_device"
    stood_in = dict(record("fail", [STOOD_IN_FAIL]), cell=cell, repro="deform_conv2d_device",
                    stack={"id": cell.split("--")[0], "torch_tensorrt": "2.5.0", "torch": "2.5.1"},
                    env={"torch_tensorrt": "2.5.0", "torch": "2.5.1"})
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "a.jsonl").write_text(json.dumps(stood_in) + "\n")
    code = cli_main(["report", "--results", str(tmp_path / "r"), "--out", str(tmp_path / "site"),
                     "--check"])
    out, err = capsys.readouterr()
    assert code == 4 and "1 cell(s) decided with TensorRT stood in" in out
    assert f"contradicts its expectation: {cell} [◇ {STANDIN_BAD}]" in err


def test_the_matrix_lane_is_a_wish_and_standin_insists(tmp_path):
    """The shipped matrix asks for the lane (defaults.standins): every engine that builds it
    (docker, venv) takes the wish, but only where no NVIDIA GPU is here; `--standin` insists
    everywhere; `--backend local` builds nothing, so `--standin` with it is refused."""
    from repromatrix.config.matrix import load_matrix
    from repromatrix.config.resolve import run_options
    from repromatrix.engines import standins
    from repromatrix.errors import UsageError

    matrix = load_matrix()
    assert matrix.settings.standins == ("tensorrt",)
    results = str(tmp_path / "r")
    wish = run_options(matrix, {"results": results, "backend": "docker"})
    assert wish.standins == ("tensorrt",) and wish.standins_from_matrix
    forced = run_options(matrix, {"results": results, "backend": "docker", "standin": ["tensorrt"]})
    assert forced.standins == ("tensorrt",) and not forced.standins_from_matrix
    assert run_options(matrix, {"results": results, "backend": "local"}).standins == ()
    with pytest.raises(UsageError, match="docker and venv engines"):
        run_options(matrix, {"results": results, "backend": "local", "standin": ["tensorrt"]})
    said: list[str] = []
    assert standins.lane_here(("tensorrt",), True, False, said.append, "docker") == ("tensorrt",)
    assert standins.lane_here(("tensorrt",), False, True, said.append, "docker") == ("tensorrt",)
    assert not said
    assert standins.lane_here(("tensorrt",), True, True, said.append, "docker") == ()
    assert "builds real TensorRT" in said[0] and "--standin tensorrt" in said[0]


def test_the_docker_lane_image_is_its_own_and_says_how_it_is_made():
    """A lane image installs torch-tensorrt's own wheel without its dependencies, makes the
    stand-ins in the image and points the runner at them; it never shares a tag with the
    real-TensorRT image of the same stack, and a stack off the lane keeps its tag."""
    from repromatrix import paths
    from repromatrix.engines.images import image_spec
    from repromatrix.model import Settings, Stack

    settings = Settings(extra_index_urls=(), packages=())
    trt = Stack(id="t", kind="pip", torch="2.4.1", torchvision="0.19.1", torch_tensorrt="2.4.0",
                tensorrt="10.1.0", index="pypi", python="3.11")
    plain = Stack(id="p", kind="pip", torch="2.4.1", torchvision="0.19.1", index="pypi",
                  python="3.11")
    harness = paths.harness_dir()
    real = image_spec(trt, settings)
    lane = image_spec(trt, settings, standin=("tensorrt",), harness_dir=harness)
    assert real.tag != lane.tag and lane.labels["repromatrix.standins"] == "tensorrt"
    assert "torch-tensorrt==2.4.0" in real.dockerfile and "_standin.py" not in real.dockerfile
    steps = lane.dockerfile
    no_deps = steps.index("--no-deps")
    assert steps.index("torch==2.4.1") < no_deps < steps.index("torch-tensorrt==2.4.0")
    assert "_standin.py deps" in steps
    assert "_standin.py make /opt/repromatrix/repromatrix-standins" in steps
    assert "ENV REPROMATRIX_STANDINS=/opt/repromatrix/repromatrix-standins" in steps
    assert "command -v cc" in steps and lane.standin_source == harness / "_standin.py"
    assert image_spec(plain, settings, standin=("tensorrt",), harness_dir=harness).tag == \
        image_spec(plain, settings).tag


@pytest.mark.parametrize("gpu", [False, True])
def test_each_engine_drops_the_matrix_wish_where_a_gpu_is(gpu, tmp_path, monkeypatch):
    """The engines ask the machine (venv: the NVIDIA driver's device; docker: the daemon's
    NVIDIA runtime): with a GPU the matrix's wish gives way to real TensorRT, said once;
    --standin tensorrt insists either way."""
    from repromatrix.config.matrix import load_matrix
    from repromatrix.config.resolve import run_options
    from repromatrix.engines import standins
    from repromatrix.engines.docker import engine as docker_engine

    monkeypatch.setattr(standins, "gpu_on_host", lambda: gpu)
    monkeypatch.setattr(docker_engine, "has_nvidia_runtime", lambda client: gpu)
    matrix = load_matrix()
    for flags, lane in (({}, () if gpu else ("tensorrt",)),
                        ({"standin": ["tensorrt"]}, ("tensorrt",))):
        options = run_options(matrix, {"results": str(tmp_path / "r"), "backend": "docker|venv",
                                       **flags})
        said: list[str] = []
        ctx = EngineContext(settings=matrix.settings, options=options,
                            harness_dir=harness_dir(), repros_dir=repros_dir(),
                            run_id="r1", log=said.append)
        engines = (VenvEngine(ctx, tmp_path / "venvs"),
                   docker_engine.DockerEngine(ctx, client=object()))
        assert [e.lane for e in engines] == [lane, lane]
        assert len([s for s in said if "builds real TensorRT" in s]) == (2 if gpu and not flags else 0)
