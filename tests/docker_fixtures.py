"""Fixtures for real-docker tests: the daemon, a local base image, the CA bundle, a wheelhouse.

Use from a test module with ``from docker_fixtures import *`` (tests/ is on sys.path),
or from tests/conftest.py the same way. Tests that need a daemon are skipped with a
reason when none can run here, and FAIL instead when REPROMATRIX_REQUIRE_DOCKER=1 (CI).

The base image is made once per machine by scripts/make-base-image.sh (debootstrap +
docker import; idempotent) and the pip template's public base ``python:3.11-slim``
is mapped to it. When the session ends, no container carrying the harness label of a
test run may survive: the ``docker_client`` fixture's teardown removes leftovers and fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BASE_IMAGE = os.environ.get("REPROMATRIX_TEST_BASE_IMAGE", "repromatrix-local/bookworm-python:3.11")
PUBLIC_BASE = "python:3.11-slim"
TORCH_WHEEL = "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
TEST_RUN_PREFIX = "pytest-"

__all__ = ["docker_client", "local_base_image", "test_ca_bundle", "torch_wheelhouse",
           "docker_settings", "new_run_id", "unavailable"]


def unavailable(reason: str) -> None:
    """Skip (here) or fail (CI: REPROMATRIX_REQUIRE_DOCKER=1) a test whose docker setup is missing."""
    if os.environ.get("REPROMATRIX_REQUIRE_DOCKER") == "1":
        pytest.fail(f"REPROMATRIX_REQUIRE_DOCKER=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def new_run_id() -> str:
    return f"{TEST_RUN_PREFIX}{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="session")
def docker_client() -> Iterator[object]:
    """A pinged client; at session end, no test-run container may be left behind."""
    from repromatrix.backends.docker.daemon import LABEL_MANAGED, LABEL_RUN, connect
    from repromatrix.errors import DockerUnavailable

    try:
        client = connect(timeout=600)
    except DockerUnavailable as exc:
        unavailable(f"no docker daemon: {str(exc).splitlines()[0]}")
    yield client
    leftovers = [c for c in client.containers.list(all=True, filters={"label": f"{LABEL_MANAGED}=1"})
                 if c.labels.get(LABEL_RUN, "").startswith(TEST_RUN_PREFIX)]
    for c in leftovers:
        c.remove(force=True)
    assert not leftovers, f"harness containers survived the test session: {[c.name for c in leftovers]}"


@pytest.fixture(scope="session")
def local_base_image(docker_client: object) -> str:
    """The local stand-in for python:3.11-slim (made once by scripts/make-base-image.sh)."""
    script = ROOT / "scripts" / "make-base-image.sh"
    if shutil.which("debootstrap") is None:
        from repromatrix.backends.docker.daemon import find_image

        if find_image(docker_client, BASE_IMAGE) is None:
            unavailable(f"debootstrap is not installed and {BASE_IMAGE} does not exist")
        return BASE_IMAGE
    proc = subprocess.run(["bash", str(script), BASE_IMAGE], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"{script} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}", pytrace=False)
    return BASE_IMAGE


def _pip_config(key: str) -> str | None:
    try:
        out = subprocess.run(["python3", "-m", "pip", "config", "get", key], capture_output=True,
                             text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = out.stdout.strip()
    return value if out.returncode == 0 and value else None


@pytest.fixture(scope="session")
def test_ca_bundle() -> str | None:
    """The extra CA bundle from the machine's pip configuration (TLS may be intercepted)."""
    for cand in (os.environ.get("PIP_CERT"), _pip_config("global.cert"),
                 os.environ.get("REQUESTS_CA_BUNDLE")):
        if cand and Path(cand).is_file():
            return cand
    return None


@pytest.fixture(scope="session")
def torch_wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheelhouse holding only the torch 2.13.0 CPU wheel (hard link), keeping contexts small."""
    dirs = [os.environ.get("REPROMATRIX_TEST_WHEELS"), "/opt/wheels"]
    dirs += (_pip_config("global.find-links") or "").split()
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
                    shm_size="1g", repro_timeout=300.0, stack_timeout=900.0)
