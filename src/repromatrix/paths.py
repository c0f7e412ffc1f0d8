"""Where the harness's non-Python parts live, and which matrix file a command reads.

The built-in repros (``repros/*.py``) with the harness in their ``harness/`` folder
(runner, protocol and helpers: the container side), the
Dockerfile templates (``images/``) and the page templates (``report/``) sit at the
top of a source checkout and ship inside the package as ``repromatrix/resources/``
(pyproject's ``package-dir`` maps one onto the other), so a wheel installed
anywhere finds them the same way an editable checkout does.

The matrix file is ``./matrix.yaml`` (like nox's ``noxfile.py``), else ``--matrix``;
in a source checkout the project's own published matrix is the fallback.
"""

from __future__ import annotations

import os
from pathlib import Path

from repromatrix import envvars
from repromatrix.errors import UsageError

PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = PACKAGE_DIR.parents[1]  # the checkout's root, when this is one
RESOURCES = PACKAGE_DIR / "resources"
MATRIX_FILE = "matrix.yaml"
HARNESS = "harness"  # the container side's folder inside the built-in repros folder


def is_checkout() -> bool:
    """Whether this package runs from a source checkout (editable install, PYTHONPATH)."""
    return (PROJECT_ROOT / "pyproject.toml").is_file() \
        and (PROJECT_ROOT / "repros" / HARNESS / "runner.py").is_file()


def _resource(name: str, checkout_name: str) -> Path:
    return PROJECT_ROOT / checkout_name if is_checkout() else RESOURCES / name


def repros_dir() -> Path:
    """The built-in repros: one ``<id>.py`` per bug (the harness is its ``harness/`` folder)."""
    return _resource("repros", "repros")


def harness_dir() -> Path:
    """The container side: ``runner.py``, ``protocol.py`` and the ``_*.py`` helpers, which
    every repro runs on (the runner puts this folder on the repros' ``sys.path``)."""
    return repros_dir() / HARNESS


def images_dir() -> Path:
    """The Dockerfile templates (REPROMATRIX_IMAGES_DIR overrides)."""
    return Path(envvars.read("REPROMATRIX_IMAGES_DIR") or _resource("images", "images"))


def report_dir() -> Path:
    """The page templates and static assets (REPROMATRIX_REPORT_DIR overrides)."""
    return Path(envvars.read("REPROMATRIX_REPORT_DIR") or _resource("report", "report"))


def init_dir() -> Path:
    """The starter files `repromatrix init` writes (matrix.yaml, repros/, noxfile.py)."""
    return PACKAGE_DIR / "data" / "init"


def default_matrix() -> Path:
    """``./matrix.yaml``; in a source checkout, the project's published matrix otherwise."""
    here = Path.cwd() / MATRIX_FILE
    if here.is_file():
        return here
    if is_checkout():
        return PROJECT_ROOT / MATRIX_FILE
    raise UsageError(f"no {MATRIX_FILE} in {Path.cwd()}: give one with --matrix FILE, or write a "
                     f"starter here with `repromatrix init`")


def cache_dir() -> Path:
    """Per-user cache: ``$XDG_CACHE_HOME/repromatrix`` (``~/.cache/repromatrix``)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "repromatrix"
