"""Run options (frozen) and how each option's value is parsed and checked.

``config.resolve.run_options`` fills a ``RunOptions`` from the declarations in
``config/flags.py`` (command line, then environment, then matrix.yaml, then the
default), each value through its option's parser here. Every stage below the CLI
takes a ``RunOptions`` (and the loaded ``Matrix``), never an argparse namespace.
Each timeout has one meaning:

    repro_timeout   one repro script inside the runner
    stack_timeout   the whole runner process of one stack (container or local process)
    build_timeout   making one environment (an image build, a venv install)
"""

from __future__ import annotations

import configparser
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from repromatrix import envvars
from repromatrix.errors import UsageError, did_you_mean
from repromatrix.model import Settings

from .matrix import Matrix, check_plain, check_timeout, load_matrix, with_overrides

DEFAULT_RESULTS = Path("results")
COMMAND_LINE = "command line"  # a value's source (RunOptions.sources)
MAX_REPEAT = 100


ENGINE_NAMES = ("docker", "venv", "local")  # `--backend` choices; engines registers each
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
    repro_jobs: int | None = None  # repros one runner runs at once; None: run.schedule decides
    gpus: tuple[str, ...] = ()
    keep: bool = False
    repeat: int = 1
    registry: str | None = None  # pull missing images from here before building
    push: str | None = None  # push prepared images here (repromatrix build --push)
    image_budget_gb: float | None = None  # remove this run's finished images past this size
    env_budget_gb: float | None = None  # venv: environments + uv cache (None: from free disk)
    standins: tuple[str, ...] = ()  # stand-ins for what is absent (--standin tensorrt)
    # the stand-ins are the matrix's wish (defaults.standins), not --standin: an engine
    # then builds the lane only where this machine has no NVIDIA GPU (engines/standins.py)
    standins_from_matrix: bool = False
    # where each option's value came from, by field: "command line", a REPROMATRIX_*
    # variable, "matrix.yaml defaults.<key>" or "default" (config.resolve)
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)

    def source(self, name: str) -> str:
        """Where field ``name`` came from; options made in code were given by their caller."""
        return self.sources.get(name, COMMAND_LINE)

    @property
    def work(self) -> Path:
        """Build contexts, logs and runner output: ``<results>/.work`` unless given."""
        return self.work_dir or self.results / ".work"

    @property
    def local_python(self) -> str:
        """The interpreter `--backend local` runs pip/ngc stacks' repros with."""
        return self.python or "python3"  # REPROMATRIX_PYTHON: resolved into ``python``


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


def backend_chain(value: Any, where: str) -> str:
    """An engine or a fallback chain, checked (``parse_backend``) and written back."""
    return CHAIN_SEPARATOR.join(parse_backend(str(value), where))


def folder(value: Any, where: str) -> Path | None:
    """A folder that is or can be made (``writable_folder``); None stays None."""
    return writable_folder(Path(value), where) if value else None


def registry(value: Any, where: str) -> str | None:
    """REGISTRY/PREFIX (no scheme, no tag), its trailing ``/`` dropped; None when empty."""
    if not value:
        return None
    text = check_plain(str(value), where, spaces=False).rstrip("/")
    if "://" in text or ":" in text.rsplit("/", 1)[-1] or text.startswith("/"):
        raise UsageError(f"{where} {text}: give REGISTRY/PREFIX, e.g. 127.0.0.1:5000/team "
                         f"(no scheme, no tag)")
    return text


def seconds(value: Any, where: str) -> float:
    """A time limit in seconds (``check_timeout``)."""
    return check_timeout(value, where)


def jobs(value: Any, where: str) -> int:
    """How many stacks run at once: 1 or more."""
    count = int(value)
    if count < 1:
        raise UsageError(f"{where} {count}: must be at least 1")
    return count


def repro_jobs(value: Any, where: str) -> int | None:
    """How many repros one runner runs at once: 1 or more, or None (run.schedule decides)."""
    return None if value is None else jobs(value, where)


def repeat(value: Any, where: str) -> int:
    """How many times each cell runs: 1 to MAX_REPEAT."""
    if not 1 <= int(value) <= MAX_REPEAT:
        raise UsageError(f"{where} {value}: run each cell 1 to {MAX_REPEAT} times")
    return int(value)


def budget(value: Any, where: str) -> float | None:
    """A size in GB, 0 or more; None: no budget."""
    if value is not None and not (isinstance(value, (int, float)) and value >= 0):
        raise UsageError(f"{where} {value}: a size in GB, 0 or more")
    return value


def gpus(value: Any, where: str) -> tuple[str, ...]:
    """GPU ids, ``0,1`` (or already a list of them)."""
    ids = value if isinstance(value, (tuple, list)) else str(value or "").split(",")
    return tuple(g for g in ids if g.strip())


def standins(value: Any, where: str) -> tuple[str, ...]:
    """Stand-in names, in order, once each (argparse and matrix.yaml checked each name)."""
    return tuple(dict.fromkeys(value or ()))


def flag(value: Any, where: str) -> bool:
    """An on/off switch."""
    return bool(value)
