"""What the tests share that is not a fixture: constants and plain helper functions.

Fixtures live in ``conftest.py`` files (``tests/conftest.py`` for the whole suite, a
folder's own for its tests); no test module imports another test module.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
