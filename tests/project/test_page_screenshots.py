"""The README's pictures of the page are made by a script from the published records."""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT

pytestmark = pytest.mark.browser


def png_size(path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", path
    return struct.unpack(">II", head[16:24])


def test_the_script_makes_the_readme_s_pictures(tmp_path):
    pytest.importorskip("playwright.sync_api", reason="Playwright's Python package is not installed")
    if not (shutil.which("chromium") or Path("/usr/bin/chromium").is_file()):
        pytest.skip("chromium not found (apt-get install chromium)")
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "page-screenshots.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert png_size(tmp_path / "page-1400.png") == (1400, 900)
    assert png_size(tmp_path / "page-400.png") == (400, 900)
    for name in ("page-1400.png", "page-400.png"):  # the committed ones are the script's, sized alike
        assert png_size(ROOT / "docs" / name) == png_size(tmp_path / name)
    assert "docs/page-1400.png" in (ROOT / "README.md").read_text(encoding="utf-8")
