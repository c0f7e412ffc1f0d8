"""Nox sessions: thin wrappers over the `repromatrix` command line.

`nox -s matrix` builds what is missing, runs what is stale and renders the page;
arguments after `--` pass through (`nox -s matrix -- --all -k deform`).
When repromatrix fails, nox exits with repromatrix's own code (3: infrastructure
unavailable, 2: bad input...), not nox's 1.
One `stack(<id>)` session per stack in matrix.yaml runs that stack alone.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nox
import nox.command

ROOT = Path(__file__).parent
LINTED = ("src", "tests", "repros", "noxfile.py", "benchmarks")  # what the lint session checks
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["matrix"]
nox.options.reuse_venv = "yes"


def _stack_ids() -> list[str]:
    """Stack ids from matrix.yaml, read with the harness when it is importable."""
    sys.path.insert(0, str(ROOT / "src"))
    try:
        from repromatrix.config.matrix import load_matrix

        return [s.id for s in load_matrix(ROOT / "matrix.yaml").stacks]
    except Exception as exc:  # nox -l must still work with a broken matrix.yaml
        print(f"noxfile: cannot list stacks: {exc}", file=sys.stderr)
        return []
    finally:
        sys.path.pop(0)


def _install(session: nox.Session, *extras: str) -> None:
    if session.venv_backend == "none":  # `nox --no-venv`: the interpreter nox runs in has it
        return
    spec = f".[{','.join(extras)}]" if extras else "."
    session.install("-e", spec)


def _meaning(code: int) -> str:
    """What repromatrix's exit ``code`` means (errors.Exit); nox itself only knows 0 and 1."""
    sys.path.insert(0, str(ROOT / "src"))
    try:
        from repromatrix.errors import Exit

        return Exit(code).meaning
    except (ImportError, ValueError):
        return "failed"
    finally:
        sys.path.pop(0)


def _repromatrix(session: nox.Session, *args: str) -> None:
    """Run repromatrix; when it fails, say its exit code and end nox with that same code
    (nox would exit 1 for any failure, hiding a 3 "infrastructure unavailable")."""
    try:
        session.run("repromatrix", *args)
    except nox.command.CommandFailed as exc:
        code = exc.return_code if exc.return_code is not None else 1
        session.log(f"repromatrix exited {code} ({_meaning(code)}): "
                    "its message is above; nox exits with the same code")
        raise SystemExit(code) from None


def _cli(session: nox.Session, command: str) -> None:
    _install(session)
    _repromatrix(session, command, *session.posargs)


@nox.session
def matrix(session: nox.Session) -> None:
    """Build missing images, run stale cells, render the page (repromatrix matrix)."""
    _cli(session, "matrix")


@nox.session
def build(session: nox.Session) -> None:
    """Build the images of the selected stacks (repromatrix build)."""
    _cli(session, "build")


@nox.session
def run(session: nox.Session) -> None:
    """Run the selected cells and record results (repromatrix run)."""
    _cli(session, "run")


@nox.session
def report(session: nox.Session) -> None:
    """Render the static compatibility site (repromatrix report)."""
    _cli(session, "report")


@nox.session
def bisect(session: nox.Session) -> None:
    """Find the release where a repro changed outcome (repromatrix bisect)."""
    _cli(session, "bisect")


@nox.session
@nox.parametrize("stack_id", [nox.param(s, id=s) for s in _stack_ids()])
def stack(session: nox.Session, stack_id: str) -> None:
    """Run one stack of matrix.yaml and render the page."""
    _install(session)
    _repromatrix(session, "matrix", "-k", stack_id, *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite (real docker, torch, chromium where present) on every core."""
    # `-- -n 0`: one process; the docker tests, and the Slurm ones, each keep to one worker,
    # and the groups start in the order tests/conftest.py sets (SERIAL_GROUPS, then the slow)
    _install(session, "test")
    session.run("pytest", "-n", "auto", "--dist", "loadgroup", "--no-loadscope-reorder",
                *session.posargs)


# What `fast` leaves out: every test that needs something slow to make or start.
SLOW_MARKERS = ("docker", "torch", "browser", "slow", "slurm", "pypi")


@nox.session
def fast(session: nox.Session) -> None:
    """The quick tests (no docker, torch, browser or slow ones) on every core (`-- -n 0`: one)."""
    _install(session, "test")
    session.run("pytest", "-n", "auto", "-m", " and ".join(f"not {m}" for m in SLOW_MARKERS),
                *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over the harness, tests and repros (repros/ruff.toml: the container side, 3.8)."""
    session.install("ruff")
    session.run("ruff", "check", *LINTED)
