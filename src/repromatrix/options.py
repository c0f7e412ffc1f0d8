"""Run options: resolved once (command line, then environment, then matrix.yaml) and frozen.

Every stage below the CLI takes a ``RunOptions`` (and the loaded ``Matrix``),
never an argparse namespace. Each timeout has one meaning:

    repro_timeout   one repro script inside the runner
    stack_timeout   the whole runner process of one stack (container or local process)
    build_timeout   making one environment (an image build, a venv install)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import envvars
from .config import Matrix, load_matrix, with_overrides
from .errors import UsageError

DEFAULT_RESULTS = Path("results")


@dataclass(frozen=True)
class RunOptions:
    """How cells are run; the matrix file says what is run."""

    backend: str = "docker"
    python: str | None = None
    results: Path = DEFAULT_RESULTS
    work_dir: Path | None = None
    rerun: bool = False
    repro_timeout: float = 600.0
    stack_timeout: float = 3600.0
    build_timeout: float = 3600.0
    jobs: int = 1
    gpus: tuple[str, ...] = ()
    keep: bool = False

    @property
    def work(self) -> Path:
        """Build contexts, logs and runner output: ``<results>/.work`` unless given."""
        return self.work_dir or self.results / ".work"

    @property
    def local_python(self) -> str:
        """The interpreter `--backend local` runs pip/ngc stacks' repros with."""
        return self.python or envvars.read("REPROMATRIX_PYTHON") or "python3"


def load_matrix_with(path: Path | str | None, *, base_images: Sequence[str] = (),
                     ca_bundle: str | None = None, find_links: Sequence[str] = (),
                     repros: Sequence[Path | str] = ()) -> Matrix:
    """The matrix file (its catalog joined with the ``repros`` folders) with command-line
    and environment overrides applied to its defaults."""
    matrix = load_matrix(path, extra_repros=repros)
    settings = with_overrides(matrix.settings, base_images=base_images, ca_bundle=ca_bundle,
                              find_links=find_links)
    return replace(matrix, settings=settings)


def run_options(matrix: Matrix, args: Mapping[str, Any] | Any) -> RunOptions:
    """RunOptions from parsed arguments (a namespace or mapping), falling back to the matrix."""
    get = (args.get if isinstance(args, Mapping) else lambda k, d=None: getattr(args, k, d))
    s = matrix.settings
    options = RunOptions(
        backend=get("backend") or "docker",
        python=get("python"),
        results=Path(get("results") or DEFAULT_RESULTS),
        work_dir=Path(get("work_dir")) if get("work_dir") else None,
        rerun=bool(get("rerun", False)),
        repro_timeout=_seconds(get("timeout") or s.repro_timeout, "--timeout"),
        stack_timeout=_seconds(get("stack_timeout") or s.stack_timeout, "--stack-timeout"),
        build_timeout=_seconds(get("build_timeout") or s.build_timeout, "--build-timeout"),
        jobs=int(get("jobs") or 1),
        gpus=tuple(g for g in str(get("gpus") or "").split(",") if g.strip()),
        keep=bool(get("keep", False)),
    )
    if options.jobs < 1:
        raise UsageError(f"--jobs {options.jobs}: must be at least 1")
    return options


def _seconds(value: Any, flag: str) -> float:
    seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise UsageError(f"{flag} {value}: must be a positive number of seconds")
    return seconds


def reproduce_args(matrix: Matrix, options: RunOptions) -> list[str]:
    """The options a pasted command needs to see what this run saw: the matrix, its
    catalog folders (and script), the mirror map, the CA bundle, the wheelhouses, the
    backend and the results folder."""
    s = matrix.settings
    args = ["--matrix", str(Path(matrix.path).resolve()), *matrix.catalog_args]
    for public, local in s.base_images.items():
        args += ["--base-image", f"{public}={local}"]
    if s.ca_bundle:
        args += ["--ca-bundle", s.ca_bundle]
    for link in s.find_links:
        args += ["--find-links", link]
    if options.backend != "docker":
        args += ["--backend", options.backend]
    if options.backend == "local" and options.python:
        args += ["--python", options.python]
    return args + ["--results", str(options.results.resolve())]  # absolute: pasted anywhere


def rerun_command(matrix: Matrix, options: RunOptions, stack_id: str, repro: str) -> list[str]:
    """`repromatrix run` that re-runs one cell with this run's options. A cell of the
    stack `--backend local` folds pip/ngc stacks into (``local``) is selected by its repro."""
    from .model import cell_id

    folded = options.backend == "local" and stack_id == "local"
    args = reproduce_args(matrix, options)
    if folded and "--python" not in args:
        args += ["--python", options.local_python]
    return ["repromatrix", "run", *args, "-k", repro if folded else cell_id(stack_id, repro),
            "--rerun"]
