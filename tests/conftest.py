"""Shared test setup: where the torch interpreters are, and the docker requirement.

Torch interpreters: REPROMATRIX_TEST_PY_T214 (torch 2.14.1 + torchvision 0.29.1)
and REPROMATRIX_TEST_PY_T213 (torch 2.13.0 CPU). When unset, the project's
`.venvs/t214` / `.venvs/t213` (made by .ci/run) are used if present.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

for _name, _venv in (("REPROMATRIX_TEST_PY_T214", "t214"), ("REPROMATRIX_TEST_PY_T213", "t213")):
    _py = ROOT / ".venvs" / _venv / "bin" / "python"
    if not os.environ.get(_name) and _py.exists():
        os.environ[_name] = str(_py)
