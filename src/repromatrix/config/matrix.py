"""Stage 1: read matrix.yaml strictly into a frozen Matrix.

Every error names the file, the key path and the value, with "did you mean"
for unknown keys, and is raised before anything expensive happens. Every stack
is resolved against the compatibility table here (see compat).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from repromatrix import envvars, paths
from repromatrix.errors import ConfigError, did_you_mean
from repromatrix.model import STACK_KINDS, Repro, Settings, Stack
from repromatrix.textsafe import brief

from . import compat
from .catalog import join_catalogs, needed_packages
from .validate import check_id, check_plain, check_timeout, check_version
from .yamlfile import read_yaml

__all__ = ["Matrix", "load_matrix", "parse_settings", "parse_stack", "with_overrides",
           "check_plain", "check_id", "check_timeout", "check_version"]

TOP_KEYS = ("defaults", "repros", "stacks")
DEFAULT_KEYS = {
    "python": str, "backend": str, "base_images": dict, "ca_bundle": (str, type(None)),
    "extra_index_urls": list, "find_links": list, "packages": list,
    "shm_size": str, "repro_timeout": (int, float), "stack_timeout": (int, float),
    "build_timeout": (int, float), "memory": str, "pids": int, "standins": list,
}
STANDINS = ("tensorrt",)  # what the stand-in lane can stand in (repros/harness/_standin.py)
STACK_KEYS = {
    "pip": ("kind", "id", "torch", "torchvision", "torch_tensorrt", "onnxscript", "onnxruntime",
            "index", "python", "packages", "repros", "tags"),
    "ngc": ("kind", "id", "ngc", "packages", "repros", "tags"),
    "local": ("kind", "id", "interpreter", "repros", "tags"),
}
SCALAR_VERSION_KEYS = ("torch", "torchvision", "torch_tensorrt", "onnxscript", "onnxruntime",
                       "index", "python", "ngc")
# docker's RAMInBytes: "8g", "512m", "1.5GiB"
SHM_SIZE = re.compile(r"[0-9]+(\.[0-9]+)? ?[kKmMgGtTpP]?[iI]?[bB]?")


@dataclass(frozen=True)
class Matrix:
    """A parsed, validated matrix file."""

    path: Path
    settings: Settings
    stacks: tuple[Stack, ...]
    repros: Mapping[str, Repro]  # the joined catalog: built-in repros first, then the user's
    repros_dir: Path  # the matrix's own catalog folder (beside it, else the built-in one)
    repro_dirs: tuple[Path, ...] = ()  # every catalog folder, built-in first
    catalog_args: tuple[str, ...] = ()  # what a pasted command needs to see this catalog
    defaults_given: frozenset[str] = frozenset()  # the `defaults` keys the file sets


def load_matrix(path: Path | str | None = None, repros_dir: Path | None = None,
                extra_repros: Sequence[Path | str] = ()) -> Matrix:
    """Read, validate and resolve a matrix file (default: the project's matrix.yaml).

    Its catalog is the built-in repros (or ``repros_dir`` instead: tests, benchmarks)
    joined with a ``repros/`` folder beside the matrix and every ``extra_repros``
    folder (``--repros DIR``)."""
    path = Path(path) if path else paths.default_matrix()
    extras = [_repros_folder(Path(d)) for d in extra_repros]
    base = repros_dir or paths.repros_dir()
    repros_dir = repros_dir or _repros_dir_for(path)
    dirs = tuple(dict.fromkeys(d.resolve() for d in (base, _repros_dir_for(path), *extras)))
    raw = _read_yaml(path)
    f = str(path)
    _check_keys(raw, TOP_KEYS, f, "")
    catalog = join_catalogs(dirs)
    settings = parse_settings(raw.get("defaults") or {}, f, path.parent)
    all_repros = _parse_repro_list(raw.get("repros", "all"), catalog, f, "repros")
    stacks = _parse_stacks(raw.get("stacks"), settings, catalog, all_repros, f)
    args = tuple(a for d in dict.fromkeys(d.resolve() for d in extras) for a in ("--repros", str(d)))
    return Matrix(path, settings, stacks, catalog, repros_dir, dirs, args,
                  frozenset(raw.get("defaults") or {}))


def _repros_dir_for(path: Path) -> Path:
    beside = path.resolve().parent / "repros"
    return beside if beside.is_dir() else paths.repros_dir()


def _repros_folder(folder: Path) -> Path:
    if not folder.is_dir():
        raise ConfigError(f"{str(folder)!r} is not a folder of repro scripts", key="--repros")
    return folder


def _read_yaml(path: Path) -> dict[str, Any]:
    raw = read_yaml(path)
    if not isinstance(raw, dict):
        raise ConfigError("must be a mapping with keys " + ", ".join(TOP_KEYS), file=str(path))
    return raw


def _check_keys(raw: Mapping[str, Any], allowed: Sequence[str], f: str, where: str) -> None:
    for key in raw:
        if key not in allowed:
            name = key if isinstance(key, str) else brief(key)
            at = f"{where}.{name}" if where else name
            raise ConfigError(f"unknown key{did_you_mean(name, allowed)}; "
                              f"allowed: {', '.join(allowed)}", file=f, key=at)


def _type_name(t: Any) -> str:
    ts = t if isinstance(t, tuple) else (t,)
    names = {str: "a string", dict: "a mapping", list: "a list", int: "a number",
             float: "a number", bool: "true/false", type(None): "null"}
    return " or ".join(dict.fromkeys(names[x] for x in ts))


def _typed(value: Any, t: Any, f: str, key: str) -> Any:
    if isinstance(value, bool) and t in ((int, float), int, float):
        ok = False
    else:
        ok = isinstance(value, t)
    if not ok:
        raise ConfigError(f"expected {_type_name(t)}, got {brief(value)}", file=f, key=key)
    return value


def parse_settings(raw: Any, f: str, base: Path) -> Settings:
    """The `defaults` mapping, with relative paths taken from the matrix file's folder."""
    _typed(raw, dict, f, "defaults")
    _check_keys(raw, tuple(DEFAULT_KEYS), f, "defaults")
    if "python" in raw:
        check_version(raw["python"], "defaults.python", f)
    vals = {k: _typed(v, DEFAULT_KEYS[k], f, f"defaults.{k}") for k, v in raw.items()}
    _check_plain_settings(vals, f)
    for key in ("repro_timeout", "stack_timeout", "build_timeout"):
        if key in vals:
            vals[key] = check_timeout(vals[key], f"defaults.{key}", f)
    if vals.get("ca_bundle"):
        vals["ca_bundle"] = str(_local_path(vals["ca_bundle"], base, f, "defaults.ca_bundle"))
    vals["find_links"] = tuple(str(_local_path(p, base, f, f"defaults.find_links[{i}]"))
                               for i, p in enumerate(vals.get("find_links", [])))
    for key in ("extra_index_urls", "packages"):
        vals[key] = tuple(vals.get(key, ()))
    vals["standins"] = check_standins(vals.get("standins", ()), "defaults.standins", f)
    if "python" in vals:
        vals["python"] = str(vals["python"])
    return Settings(**vals)


def check_standins(names: Any, where: str, f: str | None = None) -> tuple[str, ...]:
    """Stand-in names (``tensorrt``), each known, in order, once."""
    out: list[str] = []
    for i, name in enumerate(names):
        if name not in STANDINS:
            raise ConfigError(f"unknown stand-in {brief(name)}{did_you_mean(str(name), STANDINS)}; "
                              f"known: {', '.join(STANDINS)}", file=f, key=f"{where}[{i}]")
        out += [] if name in out else [name]
    return tuple(out)


def _check_plain_settings(vals: Mapping[str, Any], f: str) -> None:
    """Every settings value that reaches a Dockerfile, a command line or a path."""
    for key in ("extra_index_urls", "find_links", "packages"):
        for i, item in enumerate(vals.get(key, [])):
            check_plain(item, f"defaults.{key}[{i}]", f, spaces=key == "packages")
    for name, image in vals.get("base_images", {}).items():
        where = f"defaults.base_images.{check_plain(name, 'defaults.base_images', f, spaces=False)}"
        check_plain(image, where, f, spaces=False)
    for key in ("python", "ca_bundle", "backend"):
        if vals.get(key) is not None:
            check_plain(vals[key], f"defaults.{key}", f, spaces=key == "ca_bundle")
    for key in ("shm_size", "memory"):
        if key in vals:
            check_plain(vals[key], f"defaults.{key}", f, limit=40)
            if not SHM_SIZE.fullmatch(vals[key]):
                raise ConfigError(f"expected a size like 8g or 512m, got {brief(vals[key])}",
                                  file=f, key=f"defaults.{key}")
    if "pids" in vals and not 16 <= vals["pids"] <= 1_000_000:
        raise ConfigError(f"expected a process limit from 16 to 1000000, got {brief(vals['pids'])}",
                          file=f, key="defaults.pids")


def _local_path(value: str, base: Path, f: str, key: str) -> Path:
    p = (base / os.path.expanduser(value)).resolve()
    if not p.exists():
        raise ConfigError(f"{brief(value)} does not exist", file=f, key=key)
    return p


def with_overrides(settings: Settings, *, base_images: Sequence[str] = (),
                   ca_bundle: str | None = None, find_links: Sequence[str] = (),
                   ca_from_env: bool = True) -> Settings:
    """Apply command-line and environment overrides (REPROMATRIX_BASE_IMAGES,
    REPROMATRIX_CA_BUNDLE, REPROMATRIX_FIND_LINKS) on top of matrix.yaml."""
    env_images = [x for x in (envvars.read("REPROMATRIX_BASE_IMAGES") or "").split(",") if x]
    mapping = dict(settings.base_images)
    for item, key in [*((x, "REPROMATRIX_BASE_IMAGES") for x in env_images),
                      *((x, "--base-image") for x in base_images)]:
        name, sep, image = check_plain(item, key).partition("=")
        name, image = name.strip(), image.strip()
        if not sep or not name or not image:
            raise ConfigError(f"expected PUBLIC=LOCAL, got {brief(item)}", key=key)
        mapping[check_plain(name, key, spaces=False)] = check_plain(image, key, spaces=False)
    ca_key = "--ca-bundle" if ca_bundle else "REPROMATRIX_CA_BUNDLE"
    ca = ca_bundle or (envvars.read("REPROMATRIX_CA_BUNDLE") if ca_from_env else None) \
        or settings.ca_bundle
    if ca and not Path(check_plain(ca, ca_key)).is_file():
        raise ConfigError(f"{brief(ca)} is not a file", key=ca_key)
    env_links = [x for x in (envvars.read("REPROMATRIX_FIND_LINKS") or "").split(os.pathsep) if x]
    links = [*settings.find_links]
    for item, key in [*((x, "REPROMATRIX_FIND_LINKS") for x in env_links),
                      *((x, "--find-links") for x in find_links)]:
        if not Path(check_plain(item, key)).exists():
            raise ConfigError(f"{brief(item)} does not exist", key=key)
        links.append(str(Path(item).resolve()))
    return replace(settings, base_images=mapping, ca_bundle=str(Path(ca).resolve()) if ca else None,
                   find_links=tuple(dict.fromkeys(links)))


def _parse_repro_list(raw: Any, catalog: Mapping[str, Repro], f: str, key: str) -> tuple[str, ...]:
    if raw == "all":
        return tuple(catalog)
    _typed(raw, list, f, key)
    for i, rid in enumerate(raw):
        _typed(rid, str, f, f"{key}[{i}]")
        if rid not in catalog:
            raise ConfigError(f"unknown repro {brief(rid)}{did_you_mean(rid, catalog)}; "
                              f"known: {', '.join(catalog)}", file=f, key=f"{key}[{i}]")
    return tuple(raw)


def _parse_stacks(raw: Any, settings: Settings, catalog: Mapping[str, Repro],
                  all_repros: tuple[str, ...], f: str) -> tuple[Stack, ...]:
    if not raw:
        raise ConfigError("no stacks: add at least one under `stacks:`", file=f, key="stacks")
    _typed(raw, list, f, "stacks")
    stacks: list[Stack] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(raw):
        stack = parse_stack(entry, settings, catalog, all_repros, f, f"stacks[{i}]")
        if stack.id in seen:
            raise ConfigError(f"duplicate stack id {stack.id!r} (also stacks[{seen[stack.id]}]); "
                              f"give one an explicit `id:`", file=f, key=f"stacks[{i}]")
        seen[stack.id] = i
        stacks.append(stack)
    return tuple(stacks)


def parse_stack(entry: Any, settings: Settings, catalog: Mapping[str, Repro],
                all_repros: tuple[str, ...], f: str, where: str) -> Stack:
    """One `stacks[i]` entry, resolved against the compat table."""
    _typed(entry, dict, f, where)
    kind = entry.get("kind")
    if kind not in STACK_KINDS:
        raise ConfigError(f"unknown stack kind {brief(kind)}"
                          f"{did_you_mean(kind if isinstance(kind, str) else '', STACK_KINDS)}; "
                          f"use one of {', '.join(STACK_KINDS)}", file=f, key=f"{where}.kind")
    _check_keys(entry, STACK_KEYS[kind], f, where)
    for key in SCALAR_VERSION_KEYS:
        if key in entry:
            check_version(entry[key], f"{where}.{key}", f)
    if "id" in entry:
        check_id(entry["id"], f"{where}.id", f)
    if "interpreter" in entry and isinstance(entry["interpreter"], str):
        check_plain(entry["interpreter"], f"{where}.interpreter", f)
    common = {
        "packages": tuple(_str_list(entry.get("packages", []), f, f"{where}.packages")),
        "repros": _parse_repro_list(entry.get("repros", list(all_repros)), catalog, f,
                                    f"{where}.repros"),
        "tags": tuple(_str_list(entry.get("tags", []), f, f"{where}.tags", spaces=False)),
    }
    try:
        fields = _KIND_PARSERS[kind](entry, settings)
    except compat.CompatError as exc:
        raise ConfigError(str(exc), file=f, key=f"{where}.{exc.key}") from None
    except ConfigError as exc:
        if exc.file:  # about another file (the compat table): keep it as it is
            raise
        raise ConfigError(exc.detail, file=f, key=f"{where}.{exc.key}") from None
    stack = Stack(kind=kind, **fields, **common)
    if kind == "pip":  # a pip environment meets its repros' needs (an NGC image has its own)
        stack = replace(stack, repro_packages=needed_packages(catalog[r] for r in stack.repros))
    if common["packages"]:  # extra packages change the environment, so the derived id
        digest = hashlib.sha256("\n".join(sorted(common["packages"])).encode()).hexdigest()
        stack = replace(stack, id=f"{stack.id}-pkgs{digest[:8]}")
    if "id" in entry:
        stack = replace(stack, id=entry["id"])
    return stack


def _str_list(value: Any, f: str, key: str, spaces: bool = True) -> list[str]:
    _typed(value, list, f, key)
    for i, item in enumerate(value):
        _typed(item, str, f, f"{key}[{i}]")
        check_plain(item, f"{key}[{i}]", f, spaces=spaces)
    return value


def _pip_fields(entry: Mapping[str, Any], settings: Settings) -> dict[str, Any]:
    if "torch" not in entry:
        raise ConfigError("a pip stack needs `torch:` (a release like 2.5.1 or 2.5)", key="torch")
    pins = compat.resolve_pip(dict(entry), settings.python)
    return {"id": _pip_id(pins), **pins}


def _pip_id(pins: Mapping[str, Any]) -> str:
    """e.g. pip-torch2.5.1-trt2.5.0-cu124-py3.11; a torchvision other than the
    table's pairing shows as -tvX (or -notv), so two environments never share an id."""
    trt = f"-trt{pins['torch_tensorrt']}" if pins["torch_tensorrt"] else ""
    sid = f"pip-torch{pins['torch']}{trt}-{pins['index']}-py{pins['python']}"
    for key, short in (("onnxscript", "osc"), ("onnxruntime", "ort")):
        if pins.get(key):
            sid += f"-{short}{pins[key]}"
    paired = compat.load_table().torch[pins["torch"]].torchvision[:1]
    tv = pins["torchvision"]
    if tv is None and paired:
        sid += "-notv"
    elif tv is not None and (tv,) != paired:
        sid += f"-tv{tv}"
    return sid


def _ngc_fields(entry: Mapping[str, Any], settings: Settings) -> dict[str, Any]:
    if "ngc" not in entry:
        raise ConfigError("an ngc stack needs `ngc:` (a release tag like \"24.05\")", key="ngc")
    rel = compat.resolve_ngc(entry["ngc"])
    return {"id": f"ngc-{rel.tag}", "ngc": rel.tag, "torch": rel.torch,
            "torch_tensorrt": rel.torch_tensorrt, "tensorrt": rel.tensorrt,
            "cuda": rel.cuda, "python": rel.python}


def _local_fields(entry: Mapping[str, Any], settings: Settings) -> dict[str, Any]:
    interp = entry.get("interpreter")
    if not isinstance(interp, str) or not interp:
        raise ConfigError("a local stack needs `interpreter:` (a Python executable path)",
                          key="interpreter")
    return {"id": str(entry.get("id") or "local"), "interpreter": interp}


_KIND_PARSERS = {"pip": _pip_fields, "ngc": _ngc_fields, "local": _local_fields}
