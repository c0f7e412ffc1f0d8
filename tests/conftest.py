"""Shared test setup: where the torch interpreters are, what CI requires, and the fixtures
of real-docker tests (the daemon, a local base image, the CA bundle, a wheelhouse).

Tests mirror the packages they test (tests/store/, tests/report/, ...); plain helpers they
share are in tests/support/, fixtures in conftest.py files, and no test module imports
another.

Torch interpreters: REPROMATRIX_TEST_PY_T214 (torch 2.14.1 + torchvision 0.29.1),
REPROMATRIX_TEST_PY_T213 (torch 2.13.0 CPU), REPROMATRIX_TEST_PY_T212 (torch 2.12.1 +
torchvision 0.27.1) and REPROMATRIX_TEST_PY_T29 (torch 2.9.1 + torchvision 0.24.1).
When unset, the project's `.venvs/<name>` (made by .ci/run) are used if present.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import ROOT
from support.docker import BASE_IMAGE, PUBLIC_BASE, TEST_RUN_PREFIX, TORCH_WHEEL, pip_config, unavailable

# The suite's own cache, never the user's ~/.cache/repromatrix: the environments the tests
# build (venv engine, bisect probes) and the compiled templates land here and are shared by
# the tests that make the same stack. REPROMATRIX_TEST_CACHE moves it.
SUITE_CACHE = Path(os.environ.get("REPROMATRIX_TEST_CACHE") or Path.home() / ".cache" / "repromatrix-tests")
os.environ["REPROMATRIX_VENV_DIR"] = str(SUITE_CACHE / "venvs")
os.environ["XDG_CACHE_HOME"] = str(SUITE_CACHE / "xdg")

TORCH_VENVS = ("t214", "t213", "t212", "t29")
for _venv in TORCH_VENVS:
    _name = "REPROMATRIX_TEST_PY_" + _venv.upper()
    _py = ROOT / ".venvs" / _venv / "bin" / "python"
    if not os.environ.get(_name) and _py.exists():
        os.environ[_name] = str(_py)

# In CI (.ci/run) the daemon, the torch interpreters and the browser are installed, so a
# test marked for them that skips is a failure there: nothing is silently skipped in CI.
REQUIRED = {
    "docker": "REPROMATRIX_REQUIRE_DOCKER",
    "torch": "REPROMATRIX_REQUIRE_TORCH",
    "browser": "REPROMATRIX_REQUIRE_BROWSER",
    "slurm": "REPROMATRIX_REQUIRE_SLURM",
    "pypi": "REPROMATRIX_REQUIRE_PYPI",
}


# Under pytest-xdist (`nox -s tests` runs on every core, `--dist loadgroup`) each test module
# runs on one worker, so that its module- and session-scoped fixtures (a catalog run on a torch
# interpreter, a wheel, a rendered site) are made once, not once per worker; the tests that
# share one machine-wide thing run on one worker, one after another, with every test of their
# modules: docker's (one daemon, its image budget, the registry's port, the base image) and
# Slurm's (one cluster). The workers take the groups in the order set here (the session passes
# `--no-loadscope-reorder`): the two chains, then the modules with a test marked `slow`, then
# the quick ones, which even out the workers' ends.
SERIAL_GROUPS = ("docker", "slurm")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into node ids
def pytest_collection_modifyitems(config, items):  # noqa: D103
    def module(item) -> str:
        return item.nodeid.split("::", 1)[0]

    # a module with one docker (or Slurm) test joins that chain whole: its other tests share
    # its fixtures (the first run's images and logs)
    chains: dict[str, str] = {}
    slow: set[str] = set()
    for item in items:
        marked = next((m for m in SERIAL_GROUPS if item.get_closest_marker(m)), None)
        if marked is not None:
            chains.setdefault(module(item), marked)
        if item.get_closest_marker("slow"):
            slow.add(module(item))

    def serial(item) -> str | None:
        return chains.get(module(item))

    for item in items:
        item.add_marker(pytest.mark.xdist_group(serial(item) or module(item)))
    order = {name: n for n, name in enumerate(SERIAL_GROUPS)}
    items.sort(key=lambda item: order.get(serial(item) or "",  # stable otherwise
                                          len(order) + (module(item) not in slow)))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # noqa: D103
    report = (yield).get_result()
    if not report.skipped:
        return
    for marker, env in REQUIRED.items():
        if item.get_closest_marker(marker) and os.environ.get(env):
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
            report.outcome = "failed"
            report.longrepr = f"skipped although {env} is set (required in CI): {reason}"
            return


@pytest.fixture
def rewrite_after_blocks(monkeypatch):
    """Arm a rewrite of one result file (its "fail" statuses made "pass") right after the
    first ``StoreIndex.blocks``: a file changed between a render's read of its index and the
    copy into results.json.gz. ``arm(path)`` returns the list of files rewritten (one, or none
    when no render read the blocks)."""
    from repromatrix.store.index import StoreIndex

    blocks, rewritten = StoreIndex.blocks, []

    def arm(path):
        def then_rewrite(self):
            found = blocks(self)
            if not rewritten:
                rewritten.append(path)
                path.write_bytes(path.read_bytes().replace(b'"fail"', b'"pass"'))
            return found

        monkeypatch.setattr(StoreIndex, "blocks", then_rewrite)
        return rewritten

    return arm


# ------------------------------------------------------------ real docker

@pytest.fixture(scope="session")
def docker_client() -> Iterator[object]:
    """A pinged client; at session end, no test-run container may be left behind."""
    from repromatrix.engines.docker.daemon import LABEL_MANAGED, LABEL_RUN, connect
    from repromatrix.errors import DockerUnavailable

    try:
        client = connect(timeout=600)
    except DockerUnavailable as exc:
        unavailable(f"no docker daemon: {str(exc).splitlines()[0]}")
    yield client
    leftovers = [c for c in client.containers.list(all=True, filters={"label": f"{LABEL_MANAGED}=1"},
                                                   ignore_removed=True)
                 if c.labels.get(LABEL_RUN, "").startswith(TEST_RUN_PREFIX)]
    for c in leftovers:
        c.remove(force=True)
    assert not leftovers, f"harness containers survived the test session: {[c.name for c in leftovers]}"


@pytest.fixture(scope="session")
def local_base_image(docker_client: object) -> str:
    """The local stand-in for python:3.11-slim (made once by scripts/make-base-image.sh)."""
    script = ROOT / "scripts" / "make-base-image.sh"
    if shutil.which("debootstrap") is None:
        from repromatrix.engines.docker.daemon import find_image

        if find_image(docker_client, BASE_IMAGE) is None:
            unavailable(f"debootstrap is not installed and {BASE_IMAGE} does not exist")
        return BASE_IMAGE
    proc = subprocess.run(["bash", str(script), BASE_IMAGE], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"{script} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}", pytrace=False)
    return BASE_IMAGE



@pytest.fixture(scope="session")
def test_ca_bundle() -> str | None:
    """The extra CA bundle from the machine's pip configuration (TLS may be intercepted)."""
    for cand in (os.environ.get("PIP_CERT"), pip_config("global.cert"),
                 os.environ.get("REQUESTS_CA_BUNDLE")):
        if cand and Path(cand).is_file():
            return cand
    return None


@pytest.fixture(scope="session")
def torch_wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheelhouse holding only the torch 2.13.0 CPU wheel (hard link), keeping contexts small."""
    dirs = [os.environ.get("REPROMATRIX_TEST_WHEELS"), "/opt/wheels"]
    dirs += (pip_config("global.find-links") or "").split()
    wheel = next((Path(d) / TORCH_WHEEL for d in dirs if d and (Path(d) / TORCH_WHEEL).is_file()),
                 None)
    if wheel is None:
        unavailable(f"{TORCH_WHEEL} not found in {[d for d in dirs if d]} "
                    "(set REPROMATRIX_TEST_WHEELS to its folder)")
    # A stable folder, so the image tag (which hashes the wheelhouse) is stable across sessions.
    wh = Path(os.environ.get("REPROMATRIX_TEST_WHEELHOUSE", "/tmp/repromatrix-test-wheelhouse"))
    wh.mkdir(parents=True, exist_ok=True)
    target = wh / TORCH_WHEEL
    if not target.exists():
        try:
            os.link(wheel, target)
        except OSError:
            shutil.copy2(wheel, target)
    return wh


@pytest.fixture(scope="session")
def docker_settings(local_base_image: str, test_ca_bundle: str | None, torch_wheelhouse: Path):
    """Settings for test stacks: local base image, CA bundle, the torch wheelhouse."""
    from repromatrix.model import Settings

    return Settings(python="3.11", base_images={PUBLIC_BASE: local_base_image},
                    ca_bundle=test_ca_bundle, find_links=(str(torch_wheelhouse),), packages=(),
                    shm_size="1g", repro_timeout=60.0, stack_timeout=300.0)
