"""Helpers for real-docker tests (their fixtures are in tests/conftest.py): the local base
image's name, the torch wheel, run ids, and the rule for a missing daemon. Tests that need
a daemon are skipped with a reason when none can run here, and FAIL instead when
REPROMATRIX_REQUIRE_DOCKER=1 (CI).

The base image is made once per machine by scripts/make-base-image.sh (debootstrap +
docker import; idempotent) and the pip template's public base ``python:3.11-slim``
is mapped to it. When the session ends, no container carrying the harness label of a
test run may survive: the ``docker_client`` fixture's teardown removes leftovers and fails.
"""

from __future__ import annotations

import os
import subprocess
import uuid

import pytest

BASE_IMAGE = os.environ.get("REPROMATRIX_TEST_BASE_IMAGE", "repromatrix-local/bookworm-python:3.11")
PUBLIC_BASE = "python:3.11-slim"
TORCH_WHEEL = "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
TEST_RUN_PREFIX = "pytest-"


def unavailable(reason: str) -> None:
    """Skip (here) or fail (CI: REPROMATRIX_REQUIRE_DOCKER=1) a test whose docker setup is missing."""
    if os.environ.get("REPROMATRIX_REQUIRE_DOCKER") == "1":
        pytest.fail(f"REPROMATRIX_REQUIRE_DOCKER=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def new_run_id() -> str:
    return f"{TEST_RUN_PREFIX}{uuid.uuid4().hex[:10]}"


def pip_config(key: str) -> str | None:
    """One key of the machine's pip configuration, or None."""
    try:
        out = subprocess.run(["python3", "-m", "pip", "config", "get", key], capture_output=True,
                             text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = out.stdout.strip()
    return value if out.returncode == 0 and value else None
