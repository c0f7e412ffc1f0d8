"""The docker engine against a real daemon: build, cache, run, broken stacks, timeouts, cleanup.

Every test drives the real run stage (``run.run_plan``) with ``--backend docker``.

The pip stack under test is torch 2.13.0 (the CPU wheel this machine carries, given
through the wheelhouse setting) on a local Debian base image mapped onto
python:3.11-slim; its dependencies come from PyPI through the host network and the
machine's CA bundle.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from repromatrix.config.catalog import load_catalog
from repromatrix.config.matrix import Matrix, load_matrix
from repromatrix.config.options import RunOptions
from repromatrix.engines.docker.build import LABEL_CA
from repromatrix.engines.docker.daemon import LABEL_RUN, cleanup
from repromatrix.engines.images import image_spec
from repromatrix.model import Plan, Settings, Stack, StackGroup, Status
from repromatrix.run.cells import RunSummary, prepare_plan, run_plan
from repromatrix.store.record import Result

ROOT = Path(__file__).resolve().parents[2]
STATUSES = {s.value for s in Status}
# cuda as the compatibility table fills it in for a matrix file: the Ctrl-C test's
# `repromatrix run` of the same stack finds the image the first run built
CPU = Stack(id="pip-rmtest-torch2.13.0-cpu", kind="pip", python="3.11", torch="2.13.0",
            cuda="13.0", index="pypi")
BAD = Stack(id="pip-rmtest-torch0.0.1", kind="pip", python="3.11", torch="0.0.1", index="pypi")

OK_REPRO = '''"""Harness test repro: torch imports and adds on the CPU."""
from __future__ import annotations

import protocol

META = {"id": "rmtest_ok", "title": "torch adds", "upstream": [], "description": "",
        "requires": [], "expect": []}


def body(r):
    def add(s):
        import torch
        s.note("torch", torch.__version__)
        s.check_close(torch.ones(2) + torch.ones(2), torch.full((2,), 2.0), "1 + 1 == 2")
    r.stage("add", add)


if __name__ == "__main__":
    raise SystemExit(protocol.main(META, [], body))
'''

SLEEP_REPRO = '''"""Harness test repro: never finishes (for the stack timeout)."""
from __future__ import annotations

import time

import protocol

META = {"id": "rmtest_sleep", "title": "sleeps", "upstream": [], "description": "",
        "requires": [], "expect": []}


def body(r):
    r.stage("sleep", lambda s: time.sleep(3600))


if __name__ == "__main__":
    raise SystemExit(protocol.main(META, [], body))
'''

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def repros_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's runner, protocol and repros, plus two harness-test repros."""
    src = ROOT / "repros"
    if not (src / "harness" / "runner.py").is_file():
        pytest.fail("repros/harness/runner.py is missing")
    d = tmp_path_factory.mktemp("repros")
    for f in src.glob("*.py"):
        shutil.copy2(f, d / f.name)
    (d / "rmtest_ok.py").write_text(OK_REPRO)
    (d / "rmtest_sleep.py").write_text(SLEEP_REPRO)
    return d


def project_repros() -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in (ROOT / "repros").glob("*.py")
                        if not p.name.startswith("_")))


def matrix_for(settings: Settings, repros_dir: Path, *stacks: Stack) -> Matrix:
    return Matrix(repros_dir.parent / "matrix.yaml", settings, stacks, load_catalog(repros_dir),
                  repros_dir)


def drive(settings: Settings, repros_dir: Path, tmp: Path, groups: list[StackGroup],
          log: Any = None, **options: Any) -> RunSummary:
    """Run ``groups`` through the run stage with the docker engine; a fresh store in ``tmp``."""
    matrix = matrix_for(settings, repros_dir, *(g.stack for g in groups))
    opts = RunOptions(backend="docker", results=tmp / "results", work_dir=tmp / "work", **options)
    return run_plan(matrix, Plan(tuple(groups)), opts,
                    log=log or (lambda line: print(line, flush=True)))


def run_containers(client: Any, run_id: str) -> list[Any]:
    return client.containers.list(all=True, filters={"label": f"{LABEL_RUN}={run_id}"},
                                  ignore_removed=True)


def managed_run_ids(client: Any) -> set[str]:
    return {c.labels.get(LABEL_RUN, "") for c in client.containers.list(  # one may end meanwhile
        all=True, filters={"label": "repromatrix.managed=1"}, ignore_removed=True)}


@pytest.fixture(scope="module")
def first_run(docker_client: Any, docker_settings: Settings, repros_dir: Path,
              tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Build the CPU stack's image from scratch (layer cache allowed) and run every repro."""
    spec = image_spec(CPU, docker_settings)
    if docker_client.images.list(name=spec.tag):
        docker_client.images.remove(spec.tag, force=True)
    group = StackGroup(CPU, ("rmtest_ok", *project_repros()))
    tmp = tmp_path_factory.mktemp("run1")
    t0 = time.monotonic()
    summary = drive(docker_settings, repros_dir, tmp, [group])
    return {"group": group, "tmp": tmp, "results": summary.results, "spec": spec,
            "elapsed": time.monotonic() - t0}


def test_pip_stack_builds_runs_and_records_every_repro(first_run: dict[str, Any],
                                                        docker_client: Any) -> None:
    results, group, spec = first_run["results"], first_run["group"], first_run["spec"]
    assert sorted(r.repro for r in results) == sorted(group.repros)
    image = docker_client.images.get(spec.tag)
    for r in results:
        assert r.status in STATUSES and r.status != Status.BROKEN.value, r
        assert r.backend == "docker" and r.image == {"tag": spec.tag, "id": image.id}
        assert r.env["torch"].startswith("2.13.0"), r.env
        assert r.stack["id"] == CPU.id and r.cache_key
    ok = next(r for r in results if r.repro == "rmtest_ok")
    assert ok.status == "pass", ok
    assert (first_run["tmp"] / "work" / "logs" / f"{CPU.id}.log").is_file()
    print(f"first run (build + run): {first_run['elapsed']:.1f}s")


def test_built_in_catalog_is_the_harness_folder_and_runs(first_run: dict[str, Any],
                                                         docker_settings: Settings,
                                                         tmp_path: Path) -> None:
    """Only built-in repros (the default path): nothing is staged, the catalog folder is the
    harness folder, and the runner still finds both (one mount, not two on one host path)."""
    group = StackGroup(CPU, ("torchscript_device_mix",))
    summary = drive(docker_settings, ROOT / "repros", tmp_path, [group])
    [result] = summary.results
    assert result.status in STATUSES - {Status.BROKEN.value}, result
    assert result.env["torch"].startswith("2.13.0") and result.stages
    assert not (tmp_path / "work" / "repros").exists(), "nothing was staged"


def test_image_carries_labels_and_ca_bundle(first_run: dict[str, Any], docker_client: Any,
                                            docker_settings: Settings) -> None:
    spec = first_run["spec"]
    labels = docker_client.images.get(spec.tag).labels
    assert {k: labels.get(k) for k in spec.labels} == spec.labels  # every label the spec names
    assert json.loads(labels["repromatrix.stack"]) == CPU.spec()
    assert labels["repromatrix.harness_version"] == spec.labels["repromatrix.harness_version"]
    assert labels["repromatrix.inputs_hash"] == spec.inputs_hash
    # The CA bundle is part of the image's identity (its bytes are hashed into the tag), so
    # whichever process built this tag built it with exactly these bytes; the label says so.
    bundle = Path(docker_settings.ca_bundle).read_bytes() if docker_settings.ca_bundle else None
    assert spec.ca_sha256 == (hashlib.sha256(bundle).hexdigest() if bundle else None)
    assert labels[LABEL_CA] == (spec.ca_sha256 or "none")
    if bundle:
        # Not containers.run(remove=True): it removes the container before reading the rest of
        # its log stream, which cuts an output this size (a whole system bundle, twice).
        container = docker_client.containers.run(
            spec.tag, ["sh", "-c", "cat /usr/local/share/ca-certificates/repromatrix-extra.crt; "
                       "echo ---; cat $PIP_CERT"], detach=True, network_mode="none")
        try:
            assert container.wait()["StatusCode"] == 0
            out = container.logs(stdout=True, stderr=False)
        finally:
            container.remove(force=True)
        extra, _, trusted = out.partition(b"\n---\n")
        assert extra + b"\n" == bundle or extra == bundle
        assert trusted.rstrip().endswith(bundle.rstrip())


def test_second_run_reuses_the_image(first_run: dict[str, Any], docker_settings: Settings,
                                     repros_dir: Path, tmp_path: Path) -> None:
    group = StackGroup(CPU, ("rmtest_ok",))
    matrix = matrix_for(docker_settings, repros_dir, CPU)
    opts = RunOptions(backend="docker", results=tmp_path / "results", work_dir=tmp_path / "work")
    [prepared] = prepare_plan(matrix, Plan((group,)), opts, log=lambda _: None)
    assert prepared.ok and prepared.cached and prepared.handle == first_run["spec"].tag
    first_id = first_run["results"][0].image["id"]
    assert prepared.image["id"] == first_id
    t0 = time.monotonic()
    summary = drive(docker_settings, repros_dir, tmp_path, [group])
    elapsed = time.monotonic() - t0
    assert [r.image["id"] for r in summary.results] == [first_id]
    assert not (tmp_path / "work" / "logs" / f"{CPU.id}.log").exists()  # no build happened
    print(f"second run: {elapsed:.1f}s vs first {first_run['elapsed']:.1f}s")


def test_unresolvable_stack_is_broken_and_the_other_goes_on(
        first_run: dict[str, Any], docker_settings: Settings, repros_dir: Path,
        tmp_path: Path) -> None:
    groups = [StackGroup(BAD, ("rmtest_ok",)), StackGroup(CPU, ("rmtest_ok",))]
    by_stack = {r.stack_id: r for r in drive(docker_settings, repros_dir, tmp_path, groups).results}
    assert set(by_stack) == {BAD.id, CPU.id}
    bad = by_stack[BAD.id]
    assert bad.status == "broken"
    assert "torch==0.0.1" in bad.message and "No matching distribution" in bad.message
    assert "No matching distribution found for torch==0.0.1" in bad.traceback
    assert by_stack[CPU.id].status == "pass"
    assert "torch==0.0.1" in (tmp_path / "work" / "logs" / f"{BAD.id}.log").read_text()


def test_overrunning_container_is_killed_and_removed(
        first_run: dict[str, Any], docker_client: Any, docker_settings: Settings,
        repros_dir: Path, tmp_path: Path) -> None:
    seen_running: list[bool] = []

    def log(item: object) -> None:
        line = str(item)  # plain lines and typed stack events alike
        if line.startswith("  ") and ": " in line:  # one line per recorded cell
            live = [c for c in docker_client.containers.list(
                filters={"label": "repromatrix.managed=1"}, ignore_removed=True) if CPU.id in c.name]
            seen_running.append(bool(live))

    group = StackGroup(CPU, ("rmtest_ok", "rmtest_sleep"))
    t0 = time.monotonic()
    summary = drive(docker_settings, repros_dir, tmp_path, [group], log=log, stack_timeout=20.0)
    assert time.monotonic() - t0 < 120
    status = {r.repro: r for r in summary.results}
    assert {k: r.status for k, r in status.items()} == {"rmtest_ok": "pass", "rmtest_sleep": "timeout"}
    assert status["rmtest_sleep"].signal == "SIGKILL" and "20s" in status["rmtest_sleep"].message
    assert seen_running[0], "rmtest_ok's record should be emitted while the container still runs"
    assert run_containers(docker_client, summary.run_id) == []


def foreground_job() -> None:
    """SIGINT as a terminal's foreground job has it: a shell that starts a job in the
    background without job control (CI runners do) leaves SIGINT ignored in all it starts."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_removes_the_container(first_run: dict[str, Any], docker_client: Any,
                                      docker_settings: Settings, tmp_path: Path) -> None:
    """A real SIGINT to a `repromatrix run` process group, as a terminal sends on Ctrl-C, while
    its container runs a repro that never ends: exit 130, no container left, nothing recorded.
    The stack's own limit is 50 s, so a run that ignored the signal fails this test quickly."""
    (tmp_path / "repros").mkdir()
    (tmp_path / "repros" / "rmtest_sleep.py").write_text(SLEEP_REPRO)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(json.dumps({
        "defaults": {"python": "3.11", "base_images": dict(docker_settings.base_images),
                     "ca_bundle": docker_settings.ca_bundle, "extra_index_urls": [],
                     "find_links": list(docker_settings.find_links), "packages": [],
                     "shm_size": docker_settings.shm_size, "repro_timeout": 40, "stack_timeout": 50},
        "repros": ["rmtest_sleep"],
        "stacks": [{"kind": "pip", "id": CPU.id, "torch": CPU.torch, "torchvision": "none",
                    "torch_tensorrt": "none", "index": CPU.index, "tags": ["default"]}]}))
    loaded = load_matrix(matrix)
    assert image_spec(loaded.stacks[0], loaded.settings).tag == first_run["spec"].tag, \
        "the run must find the image the first run built"
    before = managed_run_ids(docker_client)
    proc = subprocess.Popen(
        [sys.executable, "-m", "repromatrix.cli", "run", "--matrix", str(matrix), "--backend", "docker",
         "--results", str(tmp_path / "results")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=foreground_job)
    try:
        deadline = time.monotonic() + 120
        # the runner writes a repro's partial record once its stage runs: the repro is running
        while not (managed_run_ids(docker_client) - before
                   and list((tmp_path / "results").rglob(".rmtest_sleep.partial.json"))):
            assert proc.poll() is None, f"the run ended before its repro ran: {proc.communicate()}"
            assert time.monotonic() < deadline, "the repro did not start within 120 s"
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)  # the terminal's Ctrl-C: the whole foreground group
        out, err = proc.communicate(timeout=45)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, f"exit {proc.returncode}\n{out}\n{err}"
    assert "interrupted" in err
    assert managed_run_ids(docker_client) <= before, "no container of the interrupted run is left"
    assert not list((tmp_path / "results").rglob("*.jsonl")), "the cell in flight is not recorded"


def test_keep_leaves_the_container_for_debugging(first_run: dict[str, Any], docker_client: Any,
                                                 docker_settings: Settings, repros_dir: Path,
                                                 tmp_path: Path) -> None:
    summary = drive(docker_settings, repros_dir, tmp_path, [StackGroup(CPU, ("rmtest_ok",))],
                    keep=True)
    try:
        kept = run_containers(docker_client, summary.run_id)
        assert len(kept) == 1 and kept[0].status == "exited"
    finally:
        cleanup(docker_client, summary.run_id)
    assert run_containers(docker_client, summary.run_id) == []


def test_two_jobs_run_stacks_side_by_side(first_run: dict[str, Any], docker_client: Any,
                                          docker_settings: Settings, repros_dir: Path,
                                          tmp_path: Path) -> None:
    twin = Stack(**{**CPU.__dict__, "id": CPU.id + "-twin"})
    groups = [StackGroup(CPU, ("rmtest_ok",)), StackGroup(twin, ("rmtest_ok",))]
    summary = drive(docker_settings, repros_dir, tmp_path, groups, jobs=2)
    assert sorted((r.stack_id, r.status) for r in summary.results) == \
        [(CPU.id, "pass"), (twin.id, "pass")]
    assert run_containers(docker_client, summary.run_id) == []
    assert all(isinstance(r, Result) for r in summary.results)


HOG_REPRO = '''"""Harness test repro: allocates far past the container's memory limit."""
from __future__ import annotations

import protocol

META = {"id": "rmtest_hog", "title": "memory hog", "upstream": [], "description": "",
        "requires": [], "expect": []}


def body(r):
    r.stage("hog", lambda s: bytearray(6 * 2 ** 30))


if __name__ == "__main__":
    raise SystemExit(protocol.main(META, [], body))
'''


def test_memory_limit_kills_the_hog_and_says_so(first_run: dict[str, Any], docker_client: Any,
                                                docker_settings: Settings, repros_dir: Path,
                                                tmp_path: Path) -> None:
    (repros_dir / "rmtest_hog.py").write_text(HOG_REPRO)
    settings = Settings(**{**docker_settings.__dict__, "memory": "1g", "pids": 256})
    group = StackGroup(CPU, ("rmtest_ok", "rmtest_hog"))
    summary = drive(settings, repros_dir, tmp_path, [group])
    by = {r.repro: r for r in summary.results}
    assert by["rmtest_ok"].status == "pass"
    hog = by["rmtest_hog"]
    assert (hog.status, hog.signal) == ("crash", "SIGKILL") and "out of memory" in hog.message, hog
    assert run_containers(docker_client, summary.run_id) == []


CHILD = """
import json, sys
sys.path.insert(0, {src!r})
from pathlib import Path
from repromatrix.config.catalog import load_catalog
from repromatrix.config.matrix import Matrix, load_matrix
from repromatrix.model import Plan, Settings, Stack, StackGroup
from repromatrix.config.options import RunOptions
from repromatrix.run.cells import prepare_plan, run_plan
settings = Settings(**json.loads({settings!r}))
stack = Stack(**json.loads({stack!r}))
repros = Path({repros!r})
matrix = Matrix(repros.parent / "matrix.yaml", settings, (stack,), load_catalog(repros), repros)
"""


def child_script(call: str, settings: Settings, stack: Stack, repros_dir: Path) -> str:
    """A `python -c` program that builds the test's Matrix for one stack, then runs ``call``."""
    def plain(obj: Any) -> str:
        return json.dumps({k: (list(v) if isinstance(v, tuple) else v) for k, v in obj.__dict__.items()})

    return CHILD.format(src=str(ROOT / "src"), settings=plain(settings), stack=plain(stack),
                        repros=str(repros_dir)) + call


KILLED_RUN = """
run_plan(matrix, Plan((StackGroup(stack, ("rmtest_sleep",)),)),
         RunOptions(backend="docker", results=Path(sys.argv[1])), log=print)
"""


def test_kill_9_of_the_harness_leaves_no_container_after_the_next_run_starts(
        first_run: dict[str, Any], docker_client: Any, docker_settings: Settings,
        repros_dir: Path, tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    script = child_script(KILLED_RUN, docker_settings, CPU, repros_dir)
    before = managed_run_ids(docker_client)
    proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "results")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (managed_run_ids(docker_client) - before):
        time.sleep(0.2)
    orphans = managed_run_ids(docker_client) - before
    assert orphans, "the harness started its container"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert managed_run_ids(docker_client) - before == orphans, "the container outlives kill -9"
    drive(docker_settings, repros_dir, tmp_path / "next", [StackGroup(CPU, ("rmtest_ok",))])
    assert not (managed_run_ids(docker_client) & orphans), "the next run removed the orphan"


def test_push_then_pull_instead_of_building_and_the_image_budget(
        first_run: dict[str, Any], docker_client: Any, docker_settings: Settings, repros_dir: Path,
        tmp_path: Path, registry: str) -> None:
    import urllib.request

    shared = Stack(**{**CPU.__dict__, "id": CPU.id + "-shared"})
    tag = image_spec(shared, docker_settings).tag
    if docker_client.images.list(name=tag):
        docker_client.images.remove(tag, force=True)
    matrix = matrix_for(docker_settings, repros_dir, shared)
    group = StackGroup(shared, ("rmtest_ok",))
    prefix = f"{registry}/rmtest"
    build = RunOptions(backend="docker", results=tmp_path / "b", work_dir=tmp_path / "bw", push=prefix)
    [prepared] = prepare_plan(matrix, Plan((group,)), build, log=lambda _: None)
    assert prepared.ok and prepared.handle == tag
    repo, _, short = tag.rpartition(":")
    listing = urllib.request.urlopen(f"http://{registry}/v2/rmtest/{repo}/tags/list", timeout=10)
    assert short in json.loads(listing.read())["tags"]

    docker_client.images.remove(tag, force=True)  # another machine: the image is not here
    lines: list[str] = []
    summary = drive(docker_settings, repros_dir, tmp_path, [group], log=lambda line: lines.append(str(line)),
                    registry=prefix, image_budget_gb=0.0)
    assert [(r.cell, r.status) for r in summary.results] == [(f"{shared.id}--rmtest_ok", "pass")]
    assert any(f"pulled {prefix}/{repo}:{short}" in line for line in lines), lines
    assert not any("building" in line for line in lines), "pulled, never built"
    assert any(f"removed image {tag}" in line for line in lines), "over budget once finished"
    assert not docker_client.images.list(name=tag)
    assert docker_client.images.list(name=first_run["spec"].tag), "an image it found is kept"


PREPARE_ONE = """
[p] = prepare_plan(matrix, Plan((StackGroup(stack, ("rmtest_ok",)),)),
                   RunOptions(backend="docker", results=Path(sys.argv[1])))
print("RESULT", "cached" if p.cached else "built", p.ok, flush=True)
"""


def test_two_processes_never_build_one_image_twice(first_run: dict[str, Any], docker_client: Any,
                                                   docker_settings: Settings, repros_dir: Path,
                                                   tmp_path: Path) -> None:
    import subprocess
    import sys

    twin = Stack(**{**CPU.__dict__, "id": CPU.id + "-locktwin"})
    tag = image_spec(twin, docker_settings).tag
    if docker_client.images.list(name=tag):
        docker_client.images.remove(tag, force=True)
    script = child_script(PREPARE_ONE, docker_settings, twin, repros_dir)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path / f"r{i}")],
                              stdout=subprocess.PIPE, text=True) for i in range(2)]
    outs = [p.communicate(timeout=900)[0] for p in procs]
    results = sorted(line for out in outs for line in out.splitlines() if line.startswith("RESULT"))
    assert results == ["RESULT built True", "RESULT cached True"], outs
    assert any("waiting for it to finish" in out for out in outs), "the second one waited"
    docker_client.images.remove(tag, force=True)
