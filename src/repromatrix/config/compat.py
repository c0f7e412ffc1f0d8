"""The compatibility table (data/compat.yaml) and stack resolution against it.

Used by config (every stack is resolved and checked before anything is built)
and by bisect (candidate stacks between two versions). Pure functions over the
table: no I/O besides reading the packaged YAML once. A malformed row of the
table is a ConfigError naming the file and the row (exit 2), not a crash.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from importlib import resources
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from repromatrix.errors import ConfigError, did_you_mean
from repromatrix.model import ONNX_PACKAGES
from repromatrix.textsafe import brief

from .yamlfile import load_yaml

PYPI_INDEX = "pypi"
TABLE_FILE = "data/compat.yaml"
SECTIONS = ("torch", "indexes", "torch_tensorrt", "ngc")


class CompatError(ValueError):
    """An impossible or unknown combination; `key` is the offending stack key."""

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        super().__init__(message)


CONFIDENCE = {"V": "checked against package metadata or a primary file",
              "S": "secondary source", "M": "derived, unconfirmed"}


@dataclass(frozen=True)
class TorchRelease:
    version: str
    torchvision: tuple[str, ...]
    python: SpecifierSet
    pypi_cuda: str
    indexes: tuple[str, ...]
    src: str = "M"               # confidence of the row (CONFIDENCE)
    pairing_src: str = "M"       # confidence of the torchvision pairing (defaults to src)
    pairing_note: str = ""       # how the pairing was made when it is not a joint release


@dataclass(frozen=True)
class TrtRelease:
    version: str
    torch: SpecifierSet
    tensorrt: str
    python: SpecifierSet
    index: str
    broken: str | None = None  # a known reason its wheel does not work (with its source)


@dataclass(frozen=True)
class NgcRelease:
    tag: str
    torch: str
    torch_tensorrt: str | None
    tensorrt: str | None
    cuda: str | None
    python: str
    pip_constraint: bool


@dataclass(frozen=True)
class CompatTable:
    torch: dict[str, TorchRelease]
    torch_tensorrt: dict[str, TrtRelease]
    ngc: dict[str, NgcRelease]
    indexes: dict[str, str | None]
    onnx: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)  # ONNX_PACKAGES

    def torch_versions(self) -> list[str]:
        return sorted(self.torch, key=Version)

    def trt_versions(self) -> list[str]:
        return sorted(self.torch_tensorrt, key=Version)

    def ngc_tags(self) -> list[str]:
        return sorted(self.ngc, key=Version)


@functools.cache
def load_table() -> CompatTable:
    """The packaged table, parsed once."""
    ref = resources.files("repromatrix").joinpath(TABLE_FILE)
    return parse_table(load_yaml(ref.read_bytes(), str(ref)), str(ref))


class _BadField(ValueError):
    def __init__(self, name: str, message: str) -> None:
        self.name = name
        super().__init__(message)


def parse_table(raw: Any, file: str) -> CompatTable:
    """Check and convert the parsed YAML; ConfigError naming ``file`` and the row."""
    if not isinstance(raw, dict):
        raise ConfigError(f"must be a mapping with keys {', '.join(SECTIONS)}", file=file)
    for name in SECTIONS:
        if not isinstance(raw.get(name), dict) or not raw[name]:
            raise ConfigError(f"expected a non-empty mapping, got {brief(raw.get(name))}",
                              file=file, key=name)
    indexes = {k: _row(file, "indexes", k, v, _index_cuda, versioned=False)
               for k, v in raw["indexes"].items()}
    known = {*indexes, PYPI_INDEX}
    return CompatTable(
        torch={v: _row(file, "torch", v, r, lambda v, r: _torch_release(v, r, known))
               for v, r in raw["torch"].items()},
        torch_tensorrt={v: _row(file, "torch_tensorrt", v, r,
                                lambda v, r: _trt_release(v, r, known))
                        for v, r in raw["torch_tensorrt"].items()},
        ngc={t: _row(file, "ngc", t, r, _ngc_release) for t, r in raw["ngc"].items()},
        indexes=indexes,
        onnx=_onnx_releases(raw.get("onnx", {}), file),
    )


def _onnx_releases(raw: Any, file: str) -> dict[str, tuple[str, ...]]:
    """Section ``onnx``: each of ``ONNX_PACKAGES`` to its releases, sorted (optional)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"expected a mapping, got {brief(raw)}", file=file, key="onnx")
    out: dict[str, tuple[str, ...]] = {}
    for name, versions in raw.items():
        where = f"onnx.{name}"
        if name not in ONNX_PACKAGES:
            raise ConfigError(f"unknown package{did_you_mean(str(name), ONNX_PACKAGES)}; use "
                              f"{' or '.join(ONNX_PACKAGES)}", file=file, key=where)
        if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
            raise ConfigError(f"expected a list of quoted versions, got {brief(versions)}",
                              file=file, key=where)
        for v in versions:
            try:
                Version(v)
            except InvalidVersion:
                raise ConfigError(f"{brief(v)} is not a version", file=file, key=where) from None
        out[name] = tuple(sorted(set(versions), key=Version))
    return out


def _row(file: str, section: str, version: Any, row: Any, build: Any,
         versioned: bool = True) -> Any:
    where = f"{section}.{version if isinstance(version, str) else brief(version)}"
    if not isinstance(version, str):
        raise ConfigError(f"the key {brief(version)} must be a quoted string", file=file, key=where)
    if versioned:
        try:
            Version(version)
        except InvalidVersion:
            raise ConfigError(f"{brief(version)} is not a version", file=file, key=where) from None
        if not isinstance(row, dict):
            raise ConfigError(f"expected a mapping, got {brief(row)}", file=file, key=where)
    try:
        return build(version, row)
    except _BadField as exc:
        raise ConfigError(str(exc), file=file, key=f"{where}.{exc.name}") from None


_REQUIRED = object()


def _field(row: dict[str, Any], name: str, kind: type | tuple[type, ...],
           default: Any = _REQUIRED) -> Any:
    if name not in row:
        if default is _REQUIRED:
            raise _BadField(name, "missing")
        return default
    value = row[name]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise _BadField(name, f"unexpected value {brief(value)}")
    return value


def _spec(row: dict[str, Any], name: str) -> SpecifierSet:
    text = _field(row, name, str)
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise _BadField(name, f"{brief(text)} is not a version specifier like >=3.9,<3.13") from None


def _str_tuple(row: dict[str, Any], name: str) -> tuple[str, ...]:
    items = _field(row, name, list)
    if not all(isinstance(x, str) for x in items):
        raise _BadField(name, f"expected a list of strings, got {brief(items)}")
    return tuple(items)


def _known_index(name: str, index: str, known: set[str]) -> str:
    if index not in known:
        raise _BadField(name, f"{brief(index)} is not under `indexes:`")
    return index


def _index_cuda(name: str, cuda: Any) -> str | None:
    if cuda is not None and not isinstance(cuda, str):
        raise _BadField("cuda", f"expected a quoted CUDA version or null, got {brief(cuda)}")
    return cuda


def _torch_release(v: str, r: dict[str, Any], known: set[str]) -> TorchRelease:
    indexes = _str_tuple(r, "indexes")
    for i in indexes:
        _known_index("indexes", i, known)
    src = _confidence(r, "src", None)
    return TorchRelease(v, _str_tuple(r, "torchvision"), _spec(r, "python"),
                        _field(r, "pypi_cuda", str), indexes, src,
                        _confidence(r, "torchvision_src", src), _field(r, "torchvision_note", str, ""))


def _confidence(row: dict[str, Any], name: str, default: str | None) -> str:
    value = _field(row, name, str) if default is None else _field(row, name, str, default)
    if value not in CONFIDENCE:
        raise _BadField(name, f"{brief(value)} is not a confidence mark ({', '.join(CONFIDENCE)})")
    return value


def pairing_note(torch: str | None, torchvision: str | None) -> str:
    """A line saying how far a torch/torchvision pair can be trusted, when the table pairs
    them with less than V confidence (e.g. by torchvision's published requirement alone);
    "" for a checked pairing or a pair the table does not hold."""
    rel = load_table().torch.get(str(torch)) if torch else None
    if rel is None or not torchvision or torchvision not in rel.torchvision or rel.pairing_src == "V":
        return ""
    how = f": {rel.pairing_note}" if rel.pairing_note else ""
    return (f"torchvision {torchvision} with torch {torch}: pairing confidence {rel.pairing_src} "
            f"({CONFIDENCE[rel.pairing_src]}){how}")


def _trt_release(v: str, r: dict[str, Any], known: set[str]) -> TrtRelease:
    index = _known_index("index", _field(r, "index", str), known)
    broken = _field(r, "broken", str, None)
    if broken is not None:
        broken += f" ({_field(r, 'broken_src', str)})"
    return TrtRelease(v, _spec(r, "torch"), _field(r, "tensorrt", str), _spec(r, "python"), index,
                      broken)


def _ngc_release(t: str, r: dict[str, Any]) -> NgcRelease:
    opt = (str, type(None))
    return NgcRelease(t, _field(r, "torch", str), _field(r, "torch_tensorrt", opt, None),
                      _field(r, "tensorrt", opt, None), _field(r, "cuda", opt, None),
                      _field(r, "python", str), _field(r, "pip_constraint", bool, False))


def resolve_release(known: list[str], value: str, key: str) -> str:
    """Exact version, or shorthand "2.5" -> newest "2.5.x" in `known`."""
    value = str(value)
    if value in known:
        return value
    prefix = value + "."
    matches = [v for v in known if v.startswith(prefix)]
    if matches:
        return max(matches, key=Version)
    raise CompatError(key, f"{value} is not a known release{did_you_mean(value, known)}; "
                           f"known: {_span(known)}")


def _span(versions: list[str]) -> str:
    return f"{versions[0]} .. {versions[-1]}" if len(versions) > 3 else ", ".join(versions)


def newest_trt_for(table: CompatTable, torch: str) -> str | None:
    """The newest torch-tensorrt release whose torch requirement admits `torch`."""
    fits = [v for v in table.trt_versions() if table.torch_tensorrt[v].torch.contains(torch)]
    return fits[-1] if fits else None


def pypi_same_build(torch: str, index: str) -> str:
    """Why PyPI's wheel of ``torch`` may stand in for the one on CUDA wheel index ``index``
    (the table says both are the same CUDA build), or "" when they differ or are unknown."""
    table = load_table()
    rel = table.torch.get(torch)
    cuda = table.indexes.get(index)
    if rel is None or not cuda or rel.pypi_cuda != cuda:
        return ""
    return f"PyPI's torch {torch} is the CUDA {cuda} build, the same as {index}, per the compat table"


def pypi_cuda(torch: str) -> str:
    """The CUDA build of PyPI's wheel of ``torch`` per the table ("" when unknown)."""
    rel = load_table().torch.get(torch)
    return rel.pypi_cuda if rel is not None else ""


def resolve_pip(fields: dict[str, Any], python_default: str) -> dict[str, Any]:
    """Complete and check the pins of a `pip` stack; raise CompatError naming the key.

    `fields` holds the user's keys (torch required; torchvision, torch_tensorrt
    may be a version, a shorthand, or null/"none" to leave it out, and are
    derived when absent; index, python optional).
    """
    table = load_table()
    torch = resolve_release(table.torch_versions(), fields["torch"], "torch")
    rel = table.torch[torch]
    out: dict[str, Any] = {"torch": torch}
    out["torchvision"] = _resolve_torchvision(rel, fields.get("torchvision", _DERIVE))
    out["torch_tensorrt"] = trt = _resolve_trt(table, torch, fields)
    out["tensorrt"] = table.torch_tensorrt[trt].tensorrt if trt else None
    out["index"] = index = _resolve_index(table, rel, trt, fields.get("index"))
    out["cuda"] = rel.pypi_cuda if index == PYPI_INDEX else table.indexes[index]
    for name in ONNX_PACKAGES:  # a pin of the ONNX path's own releases (absent: none)
        if not _is_none(fields.get(name)):
            out[name] = resolve_release(list(table.onnx.get(name, ())), str(fields[name]), name)
    out["python"] = python = str(fields.get("python") or python_default)
    _check_python(python, f"torch {torch}", rel.python)
    if trt:
        _check_python(python, f"torch_tensorrt {trt}", table.torch_tensorrt[trt].python)
    return out


_DERIVE = object()  # key absent: derive the pin from the table


def _is_none(value: Any) -> bool:
    """An explicit "leave it out": null, false, "none"."""
    return value is None or value is False or str(value).lower() in ("none", "false", "")


def _resolve_torchvision(rel: TorchRelease, value: Any) -> str | None:
    if value is not _DERIVE and _is_none(value):
        return None
    if not rel.torchvision:
        if value is _DERIVE:
            return None
        raise CompatError("torchvision", f"no torchvision release is known for torch {rel.version}")
    if value is _DERIVE:
        return rel.torchvision[0]
    value = str(value)
    match = [v for v in rel.torchvision if v == value or v.startswith(value + ".")]
    if not match:
        raise CompatError("torchvision", f"{value} does not install with torch {rel.version} "
                                         f"(needs {' or '.join(rel.torchvision)})")
    return match[-1]


def _resolve_trt(table: CompatTable, torch: str, fields: dict[str, Any]) -> str | None:
    value = fields.get("torch_tensorrt", _DERIVE)
    if value is not _DERIVE and _is_none(value):
        return None
    if value is _DERIVE:
        return newest_trt_for(table, torch)
    trt = resolve_release(table.trt_versions(), value, "torch_tensorrt")
    need = table.torch_tensorrt[trt].torch
    if not need.contains(torch):
        raise CompatError("torch_tensorrt", f"{trt} needs torch {spec_text(need)}, got {torch}")
    return trt


def _resolve_index(table: CompatTable, rel: TorchRelease, trt: str | None, value: Any) -> str:
    if value is None:
        return table.torch_tensorrt[trt].index if trt else PYPI_INDEX
    index = str(value)
    if index == PYPI_INDEX:
        return index
    if index not in table.indexes:
        known = [*table.indexes, PYPI_INDEX]
        raise CompatError("index", f"{index} is not a wheel index{did_you_mean(index, known)}; "
                                   f"known: {', '.join(known)}")
    if index != "cpu" and index not in rel.indexes:
        raise CompatError("index", f"torch {rel.version} was never published for {index} "
                                   f"(published: {', '.join(rel.indexes) or 'none known'})")
    if trt and index == "cpu":
        raise CompatError("index", f"torch_tensorrt {trt} needs a CUDA build of torch, not cpu")
    return index


def spec_text(spec: SpecifierSet) -> str:
    """Lower bound first: ">=2.4.0,<2.5.0" (SpecifierSet's str sorts alphabetically)."""
    return ",".join(sorted((str(s) for s in spec), key=lambda s: not s.startswith((">", "=", "~"))))


def _check_python(python: str, what: str, spec: SpecifierSet) -> None:
    try:
        ok = spec.contains(Version(python))
    except InvalidVersion:
        raise CompatError("python", f"{python!r} is not a Python version like 3.11") from None
    if not ok:
        raise CompatError("python", f"{what} has no wheels for Python {python} (supports {spec_text(spec)})")


def resolve_ngc(tag: Any) -> NgcRelease:
    table = load_table()
    tag = str(tag)
    if tag not in table.ngc:
        known = table.ngc_tags()
        raise CompatError("ngc", f"{tag} is not a known NGC PyTorch release"
                                 f"{did_you_mean(tag, known)}; known: {_span(known)}")
    return table.ngc[tag]
