"""`repromatrix init`: a starter matrix, repros folder and noxfile in the user's folder.

Copies the files under ``data/init/`` (shipped in the package) into a folder, never
over an existing file: a folder that already has any of them is refused, naming them,
before anything is written.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from repromatrix.errors import UsageError
from repromatrix.paths import init_dir


def starter_files() -> list[Path]:
    """The starter's files, relative to its folder."""
    root = init_dir()
    return sorted(p.relative_to(root) for p in root.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts)


def write_starter(dest: Path) -> list[Path]:
    """Write the starter into ``dest`` (made if absent); returns the files written."""
    if dest.exists() and not dest.is_dir():
        raise UsageError(f"{dest}: not a folder")
    files = starter_files()
    taken = [f for f in files if (dest / f).exists() or (dest / f).is_symlink()]
    if taken:
        raise UsageError(f"{dest}: already has {', '.join(map(str, taken))}; nothing was written "
                         f"(init never overwrites: move them away or init another folder)")
    for f in files:
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(init_dir() / f, dest / f)
    return [dest / f for f in files]
