"""Small real uv environments (one pure-Python package each) for the venv engine's disk tests."""

from __future__ import annotations

from pathlib import Path

from repromatrix.config.options import RunOptions, host_ca_bundle
from repromatrix.engines import EngineContext
from repromatrix.engines.venv import VenvEngine
from repromatrix.model import Settings, Stack
from repromatrix.paths import harness_dir, repros_dir

SMALL = {name: Stack(id=f"pip-{name}", kind="pip", python="3.11", packages=(pin,))
         for name, pin in (("a", "six==1.16.0"), ("b", "idna==3.7"), ("c", "packaging==24.0"))}


def engine(root: Path, budget_gb: float | None, log: list[str] | None = None) -> VenvEngine:
    """A venv engine over ``root`` with a budget of ``budget_gb`` (None: the default)."""
    ca = host_ca_bundle()
    ctx = EngineContext(settings=Settings(ca_bundle=ca[0] if ca else None),
                        options=RunOptions(backend="venv", env_budget_gb=budget_gb),
                        harness_dir=harness_dir(), repros_dir=repros_dir(), run_id="t",
                        log=(log.append if log is not None else lambda line: None))
    return VenvEngine(ctx, root)
