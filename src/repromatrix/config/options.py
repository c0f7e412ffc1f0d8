"""Run options: resolved once (command line, then environment, then matrix.yaml) and frozen.

Every stage below the CLI takes a ``RunOptions`` (and the loaded ``Matrix``),
never an argparse namespace. Each timeout has one meaning:

    repro_timeout   one repro script inside the runner
    stack_timeout   the whole runner process of one stack (container or local process)
    build_timeout   making one environment (an image build, a venv install)
"""

from __future__ import annotations

import configparser
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from repromatrix import envvars
from repromatrix.errors import ConfigError, UsageError, did_you_mean
from repromatrix.model import Settings

from .matrix import Matrix, check_plain, check_timeout, load_matrix, with_overrides

DEFAULT_RESULTS = Path("results")
MAX_REPEAT = 100


ENGINE_NAMES = ("docker", "venv", "local")  # `--backend` choices; backends registers each
CHAIN_SEPARATOR = "|"


def parse_backend(spec: str, where: str = "--backend") -> tuple[str, ...]:
    """``docker``, or a fallback chain like ``docker|venv``: each stack gets the first engine
    of the chain whose preflight passes for it (nox's ``uv|virtualenv``). UsageError names
    ``where`` and the value when a name is unknown, repeated, or ``local`` is chained."""
    names = tuple(n.strip() for n in str(spec).split(CHAIN_SEPARATOR))
    for name in names:
        if name not in ENGINE_NAMES:
            raise UsageError(f"{where} {spec!r}: unknown engine {name!r}"
                             f"{did_you_mean(name, ENGINE_NAMES)}; choose from "
                             f"{', '.join(ENGINE_NAMES)}, or a fallback chain such as docker|venv")
    if len(set(names)) != len(names):
        raise UsageError(f"{where} {spec!r}: an engine appears twice in the chain")
    if len(names) > 1 and "local" in names:
        raise UsageError(f"{where} {spec!r}: local folds every stack into one interpreter and "
                         f"cannot be part of a fallback chain")
    return names


@dataclass(frozen=True)
class RunOptions:
    """How cells are run; the matrix file says what is run."""

    backend: str = "docker"
    python: str | None = None
    results: Path = DEFAULT_RESULTS
    work_dir: Path | None = None
    rerun: bool = False
    repro_timeout: float = Settings.repro_timeout  # defaults: matrix.yaml's own (model.Settings)
    stack_timeout: float = Settings.stack_timeout
    build_timeout: float = Settings.build_timeout
    jobs: int = 1
    gpus: tuple[str, ...] = ()
    keep: bool = False
    repeat: int = 1
    registry: str | None = None  # pull missing images from here before building
    push: str | None = None  # push prepared images here (repromatrix build --push)
    image_budget_gb: float | None = None  # remove this run's finished images past this size
    env_budget_gb: float | None = None  # venv: environments + uv cache (None: from free disk)
    standins: tuple[str, ...] = ()  # stand-ins for what is absent (--standin tensorrt)
    # the stand-ins are the matrix's wish (defaults.standins), not --standin: an engine
    # then builds the lane only where this machine has no NVIDIA GPU (backends/standins.py)
    standins_from_matrix: bool = False

    @property
    def work(self) -> Path:
        """Build contexts, logs and runner output: ``<results>/.work`` unless given."""
        return self.work_dir or self.results / ".work"

    @property
    def local_python(self) -> str:
        """The interpreter `--backend local` runs pip/ngc stacks' repros with."""
        return self.python or envvars.read("REPROMATRIX_PYTHON") or "python3"


NO_CA = "none"


def load_matrix_with(path: Path | str | None, *, base_images: Sequence[str] = (),
                     ca_bundle: str | None = None, find_links: Sequence[str] = (),
                     repros: Sequence[Path | str] = (),
                     log: Callable[[str], None] | None = None) -> Matrix:
    """The matrix file (its catalog joined with the ``repros`` folders) with command-line
    and environment overrides applied to its defaults.

    No CA bundle from the command line, the environment or the matrix: the host's own
    (PIP_CERT, SSL_CERT_FILE, REQUESTS_CA_BUNDLE, pip's ``cert``) is forwarded into builds,
    said once through ``log``; ``--ca-bundle none`` turns that off.
    """
    matrix = load_matrix(path, extra_repros=repros)
    off = (ca_bundle or envvars.read("REPROMATRIX_CA_BUNDLE") or "").lower() == NO_CA
    settings = with_overrides(matrix.settings, base_images=base_images,
                              ca_bundle=None if off else ca_bundle, find_links=find_links,
                              ca_from_env=not off)
    if off:
        settings = replace(settings, ca_bundle=None)
    elif settings.ca_bundle is None:
        found = host_ca_bundle()
        if found:
            settings = replace(settings, ca_bundle=str(Path(found[0]).resolve()))
            (log or _stderr)(f"forwarding the host's CA bundle {found[0]} (from {found[1]}) into "
                             f"builds; --ca-bundle none turns this off")
    return replace(matrix, settings=settings)


def host_ca_bundle() -> tuple[str, str] | None:
    """The CA bundle the host's pip and Python use, and where that was found; None if none."""
    for name in envvars.HOST_CA_VARIABLES:
        value = envvars.host(name)
        if value and Path(value).is_file():
            return value, name
    for conf in _pip_config_files():
        parser = configparser.ConfigParser()
        try:
            parser.read(conf, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            continue
        for section in ("global", "install"):
            value = parser.get(section, "cert", fallback=None)
            if value and Path(value).is_file():
                return value, f"pip's config {conf}"
    return None


def _pip_config_files() -> list[Path]:
    home = Path.home()
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    files = [Path(p) for p in (os.environ.get("PIP_CONFIG_FILE"),) if p]
    files += [Path("/etc/pip.conf"), Path("/etc/xdg/pip/pip.conf"), xdg / "pip" / "pip.conf",
              home / ".pip" / "pip.conf", Path(sys.prefix) / "pip.conf"]
    return [f for f in files if f.is_file()]


def _stderr(line: str) -> None:
    print(f"repromatrix: {line}", file=sys.stderr)


def run_options(matrix: Matrix, args: Mapping[str, Any] | Any) -> RunOptions:
    """RunOptions from parsed arguments (a namespace or mapping), falling back to the matrix."""
    get = (args.get if isinstance(args, Mapping) else lambda k, d=None: getattr(args, k, d))
    s = matrix.settings
    options = RunOptions(
        backend=_backend(get("backend"), matrix),
        python=get("python"),
        results=writable_folder(Path(get("results") or DEFAULT_RESULTS), "--results"),
        work_dir=writable_folder(Path(get("work_dir")), "--work-dir") if get("work_dir") else None,
        rerun=bool(get("rerun", False)),
        repro_timeout=_seconds(get("timeout") or s.repro_timeout, "--timeout"),
        stack_timeout=_seconds(get("stack_timeout") or s.stack_timeout, "--stack-timeout"),
        build_timeout=_seconds(get("build_timeout") or s.build_timeout, "--build-timeout"),
        jobs=int(get("jobs") or 1),
        gpus=tuple(g for g in str(get("gpus") or "").split(",") if g.strip()),
        keep=bool(get("keep", False)),
        standins=tuple(dict.fromkeys(get("standin") or ())) or s.standins,
        standins_from_matrix=not get("standin") and bool(s.standins),
    )
    if options.jobs < 1:
        raise UsageError(f"--jobs {options.jobs}: must be at least 1")
    if options.standins and options.backend == "local":
        if get("standin"):
            raise UsageError(f"--standin {','.join(options.standins)}: the stand-in lane is built "
                             f"by the docker and venv engines; --backend local runs an "
                             f"interpreter as it is")
        options = replace(options, standins=())  # the matrix's wish: no engine here builds it
    repeat = get("repeat") or 1
    if not 1 <= int(repeat) <= MAX_REPEAT:
        raise UsageError(f"--repeat {repeat}: run each cell 1 to {MAX_REPEAT} times")
    budget, env_budget = get("image_budget"), get("env_budget")
    for flag, value in (("--image-budget", budget), ("--env-budget", env_budget)):
        if value is not None and not (isinstance(value, (int, float)) and value >= 0):
            raise UsageError(f"{flag} {value}: a size in GB, 0 or more")
    return replace(options, repeat=int(repeat), registry=_registry(get("registry"), "--registry"),
                   push=_registry(get("push"), "--push"), image_budget_gb=budget,
                   env_budget_gb=env_budget)


def _backend(flag: Any, matrix: Matrix) -> str:
    """``--backend``, else the matrix's ``defaults.backend``, else docker; checked here so
    a bad chain is refused (naming where it came from) before anything runs."""
    if flag:
        return "|".join(parse_backend(str(flag)))
    spec = matrix.settings.backend
    if not spec:
        return "docker"
    try:
        return "|".join(parse_backend(spec, "defaults.backend"))
    except UsageError as exc:
        raise ConfigError(str(exc), file=str(matrix.path), key="defaults.backend") from None


def writable_folder(path: Path, flag: str) -> Path:
    """``path`` if it is a folder or can be made one (every existing part of it a folder);
    else a UsageError naming it: a file, a dangling symlink, a FIFO, ..."""
    for part in (path, *path.parents):
        if part.is_symlink() and not part.exists():
            raise UsageError(f"{flag} {path}: {part} is a symlink to {os.readlink(part)}, "
                             f"which does not exist")
        if part.exists():
            if not part.is_dir():
                raise UsageError(f"{flag} {path}: {part} is not a folder (give a folder, or a "
                                 f"path where one can be made)")
            return path
    return path


def _registry(value: Any, flag: str) -> str | None:
    if not value:
        return None
    text = check_plain(str(value), flag, spaces=False).rstrip("/")
    if "://" in text or ":" in text.rsplit("/", 1)[-1] or text.startswith("/"):
        raise UsageError(f"{flag} {text}: give REGISTRY/PREFIX, e.g. 127.0.0.1:5000/team "
                         f"(no scheme, no tag)")
    return text


def _seconds(value: Any, flag: str) -> float:
    return check_timeout(value, flag)
