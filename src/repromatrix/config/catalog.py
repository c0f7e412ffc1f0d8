"""The repro catalog: every `repros/<id>.py`, described by its META literal.

The host never imports a repro (it would import torch): META is read with
`ast.literal_eval`. Source hashes feed the cell cache key, so an edited repro,
protocol module or runner makes its cells stale.

A file whose name is not a plain id (the name is the repro id: it becomes part
of cell ids, file names and the runner's comma-separated ``--repros`` list), a
file that is not UTF-8, or a META of the wrong shape is a ConfigError naming
the file (exit 2).

A repro is a top-level ``<id>.py`` of a repro folder (``repro_files``); the harness
it runs on is the built-in folder's ``harness/`` (``paths.harness_dir``), never a repro.
A catalog may span several folders (``join_catalogs``): the built-in one and a
user's (``--repros DIR``, a ``repros/`` beside a user's matrix). A user folder
contributes its repro scripts and its own ``_*.py`` helpers; its copies of a harness
module (``protocol.py``, ``runner.py``, a harness helper) are never used.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from repromatrix import paths
from repromatrix.errors import ConfigError
from repromatrix.model import KINDS, Repro
from repromatrix.textsafe import brief

from . import boundaries
from .validate import check_id, read_regular, regular_file

REPRO_FILES = "a repro folder holds plain .py files"
# META `requires` entries that name no package to install, and those the stack pins itself
NOT_PACKAGES = ("cuda", "cuda-build", "fake-cuda", "gpus", "python", "ngc")  # protocol's own
STACK_PINS = {"torchvision": "torchvision", "torch-tensorrt": "torch_tensorrt",
              "tensorrt": "torch_tensorrt"}  # TensorRT comes with torch-tensorrt
META_KEYS = {"id", "title", "kind", "upstream", "description", "requires", "expect",
             *boundaries.COMMIT_KEYS}
# `expect` keys a bug with commits never types: its rules on them come from data/boundaries.json
DERIVED_KEYS = ("torch_tensorrt", "ngc")


def repro_files(repros_dir: Path) -> list[Path]:
    """The folder's repro scripts: its top-level ``*.py`` files but its own helpers
    (``_*.py``) and copies of a harness module (a user's stray ``protocol.py``: the
    harness's own is always used). One that is not a regular file is a ConfigError."""
    harness = harness_modules(paths.harness_dir())
    return sorted(plain_file(p) for p in repros_dir.glob("*.py")
                  if not p.name.startswith("_") and p.name not in harness)


def harness_modules(harness_dir: Path) -> set[str]:
    """The file names of the harness's modules: a repro imports them by these names."""
    return {p.name for p in harness_dir.glob("*.py")}


def harness_files(harness_dir: Path) -> list[Path]:
    """Every source of the harness (``harness_dir``'s files, its subfolders' too, by path;
    no byte-code): what the image content hash and each repro's hash cover."""
    return sorted(p for p in harness_dir.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


def plain_file(path: Path) -> Path:
    """``path`` if it is (or links to) a regular file; else a ConfigError naming it, decided
    by ``stat`` alone: a FIFO, a device (``/dev/zero``), a socket or a folder is never opened."""
    return regular_file(path, REPRO_FILES)


def read_plain(path: Path) -> bytes:
    """The bytes of a regular file of a repro folder (see ``validate.read_regular``)."""
    return read_regular(path, REPRO_FILES)


def load_catalog(repros_dir: Path) -> dict[str, Repro]:
    """All repros in `repros_dir`, by id; a malformed META is a ConfigError."""
    return {r.id: r for r in (read_repro(p) for p in repro_files(repros_dir))}


@functools.lru_cache(maxsize=4096)
def package_name(req: str) -> str:
    """The normalised project name a requirement starts with (the text itself if none)."""
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
    return re.sub(r"[-_.]+", "-", m.group(1)).lower() if m else req


def needed_packages(repros: Iterable[Repro]) -> tuple[str, ...]:
    """What the repros' META ``requires`` names that pip installs beside the torch family
    (``onnx``, ``onnxscript``, ...): not ``cuda``/``gpus``/``python``, not the pinned stack."""
    out = [req.strip() for r in repros for req in r.requires
           if package_name(req) not in (*NOT_PACKAGES, *STACK_PINS, "torch")]
    return tuple(dict.fromkeys(out))


def join_catalogs(dirs: Sequence[Path]) -> dict[str, Repro]:
    """The repros of every folder, in folder order; an id found twice is a ConfigError
    naming both files."""
    out: dict[str, Repro] = {}
    for folder in dirs:
        for rid, repro in load_catalog(folder).items():
            if rid in out:
                raise ConfigError(f"repro id {rid!r} is also {out[rid].path}: rename one of them "
                                  f"(the id is the file name)", file=repro.path, key="META.id")
            out[rid] = repro
    return out


def read_repro(path: Path) -> Repro:
    try:
        check_id(path.stem, "file name")
    except ConfigError as exc:
        raise ConfigError(f"{exc.detail}: the file name is the repro id; rename the file",
                          file=str(path)) from None
    meta = _read_meta(path)
    unknown = [k for k in meta if k not in META_KEYS]
    if unknown:
        names = sorted(brief(k) if not isinstance(k, str) else k for k in unknown)
        raise ConfigError(f"unknown META keys {names}", file=str(path), key="META")
    if meta.get("id", path.stem) != path.stem:
        raise ConfigError(f"id {brief(meta['id'])} must equal the file name {path.stem!r}",
                          file=str(path), key="META.id")
    _check_meta_types(meta, str(path))
    kind = meta.get("kind", "bug")
    if kind not in KINDS:
        raise ConfigError(f"unknown kind {brief(kind)}; one of {', '.join(KINDS)}",
                          file=str(path), key="META.kind")
    return Repro(
        id=path.stem,
        path=str(path),
        title=str(meta.get("title", path.stem)),
        upstream=tuple(meta.get("upstream", ())),
        expect=tuple(expect_rules(path, meta)),
        requires=tuple(meta.get("requires", ())),
        description=str(meta.get("description", "")),
        kind=kind,
    )


def expect_rules(path: Path, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """META's own ``expect`` rules, then, for a bug that names its commits (``introduced_by``,
    ``fixed_by``), the NGC and torch-tensorrt release rules derived from
    ``data/boundaries.json``; such a bug typing a rule on those keys is a ConfigError."""
    typed = [dict(r) for r in meta.get("expect", ())]
    commits = {k: boundaries.check_commits(meta[k], str(path), k)
               for k in boundaries.COMMIT_KEYS if k in meta}
    if not commits:
        return typed
    for i, rule in enumerate(typed):
        clash = [k for k in rule.get("when", {}) if k in DERIVED_KEYS]
        if clash:
            raise ConfigError(f"a rule on {clash[0]} for a bug with {', '.join(commits)}: those "
                              f"rules are derived from {boundaries.DATA_FILE.name}; remove it",
                              file=str(path), key=f"META.expect[{i}].when")
    bug = boundaries.entry(path.stem, commits, str(path))
    notes = {k: v["note"] for k, v in commits.items()}
    return typed + boundaries.derived_rules(path.stem, bug, notes)


def read_meta(path: Path) -> dict[str, Any]:
    """A repro's META literal as written (``scripts/derive-boundaries.py`` reads its commits)."""
    return _read_meta(path)


_META_TYPES: dict[str, tuple[type, type | None]] = {
    # key: (container or scalar type, item type)
    "id": (str, None), "title": (str, None), "description": (str, None), "kind": (str, None),
    "upstream": ((list, tuple), str), "requires": ((list, tuple), str),
    "expect": ((list, tuple), dict),
}


def _check_meta_types(meta: dict[Any, Any], file: str) -> None:
    for key, (kind, item) in _META_TYPES.items():
        if key not in meta:
            continue
        value = meta[key]
        ok = isinstance(value, kind) and (item is None or all(isinstance(x, item) for x in value))
        if not ok:
            want = f"a list of {item.__name__}" if item else f"a {kind.__name__}"
            raise ConfigError(f"expected {want}, got {brief(value)}", file=file, key=f"META.{key}")


def _read_source(path: Path) -> str:
    try:
        data = read_plain(path)
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"line {line}: not UTF-8 (byte 0x{data[exc.start]:02x}); "
                          f"save the file as UTF-8", file=str(path)) from None


def _read_meta(path: Path) -> dict:
    try:
        tree = ast.parse(_read_source(path), filename=str(path))
    except SyntaxError as exc:
        raise ConfigError(f"syntax error on line {exc.lineno}: {exc.msg}", file=str(path)) from None
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
        raise ConfigError(f"cannot parse: {type(exc).__name__}: {brief(str(exc))}",
                          file=str(path)) from None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "META" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError) as exc:
                why = "an unhashable key" if isinstance(exc, TypeError) else "a non-literal value"
                raise ConfigError(f"META must be a pure literal dict (it has {why})",
                                  file=str(path), key="META") from None
            if not isinstance(value, dict):
                raise ConfigError("META must be a dict", file=str(path), key="META")
            return value
    raise ConfigError("no top-level META = {...} literal", file=str(path))


def shared_sources(harness_dir: Path, repros_dir: Path | None = None) -> list[Path]:
    """What every repro depends on: the harness's files (``harness_files``), plus the
    ``_*.py`` helpers of the repros folder."""
    out = harness_files(harness_dir)
    if repros_dir is not None and repros_dir.resolve() != harness_dir.resolve():
        out += sorted(repros_dir.glob("_*.py"))
    return out


def _shared_hash(harness_dir: Path, repros_dir: Path | None = None) -> Any:
    """sha256 over the shared sources, each by its path in the harness (or its name)."""
    shared = hashlib.sha256()
    for p in shared_sources(harness_dir, repros_dir):
        name = p.relative_to(harness_dir).as_posix() if p.is_relative_to(harness_dir) else p.name
        shared.update(name.encode() + b"\0" + read_plain(p))
    return shared


def source_hashes(repros_dir: Path, harness_dir: Path | None = None) -> dict[str, str]:
    """sha256 of each repro's source plus every shared source (see shared_sources)."""
    shared = _shared_hash(harness_dir or paths.harness_dir(), repros_dir)
    out = {}
    for p in repro_files(repros_dir):
        h = shared.copy()
        h.update(read_plain(p))
        out[p.stem] = h.hexdigest()
    return out


def user_helpers(folder: Path, harness_dir: Path) -> list[Path]:
    """A user folder's own ``_*.py`` helpers, never one named like a harness module (the
    harness's copy wins)."""
    taken = harness_modules(harness_dir)
    return sorted(plain_file(p) for p in folder.glob("_*.py") if p.name not in taken)


def catalog_hashes(repros: Mapping[str, Repro], harness_dir: Path) -> dict[str, str]:
    """sha256 per repro of a (possibly joined) catalog: the harness's shared sources, the
    ``_*.py`` helpers of the repro's own folder, and the repro's source."""
    shared = _shared_hash(harness_dir)
    out = {}
    for rid, repro in repros.items():
        path = Path(repro.path)
        h = shared.copy()
        for helper in user_helpers(path.parent, harness_dir):
            h.update(helper.name.encode() + b"\0" + read_plain(helper))
        h.update(read_plain(path))
        out[rid] = h.hexdigest()
    return out
