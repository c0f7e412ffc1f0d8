"""Where the project's non-Python parts live: repros/, images/, report/.

From a source checkout (the supported install, `pip install -e .`) they sit at
the repository root, two levels above this package.
"""

from __future__ import annotations

from pathlib import Path

from . import envvars

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def repros_dir() -> Path:
    return PROJECT_ROOT / "repros"


def images_dir() -> Path:
    """The Dockerfile templates (REPROMATRIX_IMAGES_DIR overrides)."""
    return Path(envvars.read("REPROMATRIX_IMAGES_DIR") or PROJECT_ROOT / "images")


def report_dir() -> Path:
    """The page templates and static assets (REPROMATRIX_REPORT_DIR overrides)."""
    return Path(envvars.read("REPROMATRIX_REPORT_DIR") or PROJECT_ROOT / "report")


def default_matrix() -> Path:
    return PROJECT_ROOT / "matrix.yaml"


def cache_dir() -> Path:
    """Per-user cache: ``$XDG_CACHE_HOME/repromatrix`` (``~/.cache/repromatrix``)."""
    import os

    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "repromatrix"
