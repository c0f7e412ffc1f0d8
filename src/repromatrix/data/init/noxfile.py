"""Nox sessions for this compatibility matrix (written by `repromatrix init`).

`nox -s matrix` builds what is missing, runs what is stale and renders site/index.html;
arguments after `--` go to `repromatrix matrix` (`nox -s matrix -- --all -k my_first_bug`).
The sessions use the repromatrix you installed (no virtualenv of their own).
"""

from __future__ import annotations

import nox

nox.options.sessions = ["matrix"]


@nox.session(venv_backend="none")
def matrix(session: nox.Session) -> None:
    """Build missing environments, run stale cells, render the page."""
    session.run("repromatrix", "matrix", *session.posargs, external=True)


@nox.session(venv_backend="none")
def plan(session: nox.Session) -> None:
    """List the cells matrix.yaml selects."""
    session.run("repromatrix", "plan", *session.posargs, external=True)
