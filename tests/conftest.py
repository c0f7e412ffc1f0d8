"""Shared test setup: where the torch interpreters are, and the docker requirement.

Torch interpreters: REPROMATRIX_TEST_PY_T214 (torch 2.14.1 + torchvision 0.29.1),
REPROMATRIX_TEST_PY_T213 (torch 2.13.0 CPU), REPROMATRIX_TEST_PY_T212 (torch 2.12.1 +
torchvision 0.27.1) and REPROMATRIX_TEST_PY_T29 (torch 2.9.1 + torchvision 0.24.1).
When unset, the project's `.venvs/<name>` (made by .ci/run) are used if present.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

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
    copy into results.json. ``arm(path)`` returns the list of files rewritten (one, or none
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
