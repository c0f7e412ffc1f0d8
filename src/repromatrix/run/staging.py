"""One folder of repro scripts per catalog, for the runner's ``--dir``.

Run stage. A joined catalog spans the built-in folder and a user's; the runner
takes one folder. When any repro lives outside the built-in folder, every repro
script and the user folders' own ``_*.py`` helpers are copied into
``<work>/repros/<content hash>/`` (made once, then reused; copies, not links, so
a docker bind mount sees them). What is never copied: files named like a harness
module (``protocol.py``, ``runner.py``, the harness's ``_*.py``), so a user's stray
copies cannot shadow the harness (Python puts a script's own folder first on
``sys.path``; the staged folder holds no harness module, and the runner adds the
harness folder, ``paths.harness_dir()``, to ``PYTHONPATH``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from repromatrix import paths
from repromatrix.config.catalog import read_plain, user_helpers
from repromatrix.errors import ConfigError
from repromatrix.model import Repro

STAGE_DIR = "repros"


def staged_files(repros: Mapping[str, Repro], harness_dir: Path) -> dict[str, Path]:
    """File name in the staged folder -> its source; a helper name used twice is an error."""
    files = {f"{rid}.py": Path(r.path) for rid, r in repros.items()}
    for folder in dict.fromkeys(Path(r.path).parent for r in repros.values()):
        for helper in user_helpers(folder, harness_dir):
            other = files.get(helper.name)
            if other is not None and other.resolve() != helper.resolve():
                raise ConfigError(f"helper {helper.name} is also {other}: the runner sees one folder, "
                                  f"rename one of them", file=str(helper))
            files[helper.name] = helper
    return files


def staged_dir(repros: Mapping[str, Repro], harness_dir: Path, work: Path) -> Path:
    """The folder the runner's ``--dir`` gets (nothing is written): the built-in folder
    itself when every repro is built in, else ``<work>/repros/<content hash>``."""
    built_in = paths.repros_dir()
    if all(Path(r.path).resolve().parent == built_in.resolve() for r in repros.values()):
        return built_in
    files = staged_files(repros, harness_dir)
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + read_plain(files[name]) + b"\0")
    return work / STAGE_DIR / h.hexdigest()[:16]


def stage_catalog(repros: Mapping[str, Repro], harness_dir: Path, work: Path) -> Path:
    """Make ``staged_dir`` (copies, once; a concurrent run making it too is harmless)."""
    target = staged_dir(repros, harness_dir, work)
    if target == paths.repros_dir() or target.is_dir():
        return target
    tmp = target.parent / f".{target.name}.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name, src in staged_files(repros, harness_dir).items():
        shutil.copyfile(src, tmp / name)
    try:
        os.replace(tmp, target)
    except OSError:  # made meanwhile by a concurrent run: same content
        shutil.rmtree(tmp, ignore_errors=True)
    return target
