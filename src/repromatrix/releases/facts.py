"""What the package index says about torch, torchvision, torch-tensorrt and tensorrt.

Used by ``releases.update``: ``gather`` reads each project's release list (simple API)
and the core metadata of the Linux x86_64 wheels it needs (``pypi``), and turns them
into ``Facts``: per release its upload date, the Python versions of its wheels, and
from Requires-Dist the torch it requires, the CUDA it pins (``nvidia-*`` / ``cuda-toolkit``)
and the TensorRT it requires. No judgement here: ``releases.update`` compares with the table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from repromatrix.config.compat import CompatTable
from repromatrix.model import ONNX_PACKAGES

from .pypi import File, Index, parse_metadata

# the ONNX packages' projects give release lists only (the table's `onnx` section)
PROJECTS = ("torch", "torchvision", "torch-tensorrt", "tensorrt", *ONNX_PACKAGES)
LINUX = re.compile(r"manylinux.*x86_64|linux_x86_64")
_CP = re.compile(r"^cp3(\d+)$")
_CUDA_PIN = re.compile(r"^(cuda-toolkit|nvidia-cuda-runtime(-cu\d+)?)$")
_TENSORRT = re.compile(r"^tensorrt(-cu\d+)?$")
WORKERS = 8


def is_linux_wheel(f: File) -> bool:
    """A wheel for Linux x86_64 (the platform the table is about)."""
    return bool(f.wheel_tags and LINUX.search(f.wheel_tags[2]))


@dataclass(frozen=True)
class Release:
    """One final release of a project on the index."""

    project: str
    version: str
    uploaded: str            # date of its first file, YYYY-MM-DD ('' if the index says none)
    files: tuple[File, ...]

    def linux_wheel(self) -> File | None:
        """The Linux x86_64 wheel whose metadata stands for the release (CPython 3.11 if any)."""
        wheels = [f for f in self.files if is_linux_wheel(f)]
        wheels.sort(key=lambda f: (f.wheel_tags[0] != "cp311", f.filename))  # type: ignore[index]
        return wheels[0] if wheels else None

    def python_range(self) -> str | None:
        """">=3.10,<3.15" from the CPython tags of its Linux x86_64 wheels (free-threaded
        builds left out); None for pure-Python or sdist-only releases."""
        minors = sorted({int(m[1]) for f in self.files if is_linux_wheel(f)
                         and not f.wheel_tags[1].endswith("t")  # type: ignore[index]
                         for m in [_CP.match(f.wheel_tags[0])] if m})  # type: ignore[index]
        return f">=3.{minors[0]},<3.{minors[-1] + 1}" if minors else None


@dataclass(frozen=True)
class Requires:
    """What one release's Requires-Dist (and Requires-Python) says, read from ``source``."""

    source: str                      # the wheel file whose metadata this is
    requires_python: str | None
    torch: SpecifierSet | None       # the torch it requires (None: does not require torch)
    cuda: str | None                 # "13.2" from cuda-toolkit==13.2.2 / nvidia-cuda-runtime-cu12==12.8.90
    tensorrt: SpecifierSet | None    # tensorrt / tensorrt-cuXY requirement
    tensorrt_cuda: str | None        # "13" from tensorrt-cu13


@dataclass
class Facts:
    """Releases per project (version order) and the Requires of those whose metadata was read."""

    releases: dict[str, list[Release]] = field(default_factory=dict)
    requires: dict[tuple[str, str], Requires] = field(default_factory=dict)
    unread: list[str] = field(default_factory=list)   # "torch 2.3.0: no Linux x86_64 wheel"

    def newest(self, project: str) -> Release | None:
        found = self.releases.get(project) or []
        return found[-1] if found else None

    def versions(self, project: str) -> list[str]:
        return [r.version for r in self.releases.get(project, [])]


def final_releases(project: str, files: dict[str, list[File]], floor: str | None) -> list[Release]:
    """Final (not pre/dev), not wholly yanked releases at or above ``floor``, oldest first."""
    out = []
    for raw, fs in files.items():
        try:
            v = Version(raw)
        except InvalidVersion:
            continue
        live = [f for f in fs if not f.yanked]
        if v.is_prerelease or v.is_devrelease or not live or (floor and v < Version(floor)):
            continue
        dates = sorted(f.upload_time for f in live if f.upload_time)
        out.append(Release(project, raw, dates[0][:10] if dates else "", tuple(live)))
    return sorted(out, key=lambda r: Version(r.version))


def parse_requires(source: str, metadata: str) -> Requires:
    """The parts of a wheel's core metadata the table is about."""
    msg = parse_metadata(metadata)
    torch = trt = None
    cuda = trt_cuda = None
    for line in msg.get_all("Requires-Dist") or ():
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker and "extra" in str(req.marker):
            continue
        name = canonicalize_name(req.name)
        if name == "torch":
            torch = req.specifier if torch is None else torch & req.specifier
        elif _CUDA_PIN.match(name) and cuda is None:
            pins = [s.version for s in req.specifier if s.operator == "=="]
            cuda = ".".join(pins[0].split(".")[:2]) if pins else None
        elif _TENSORRT.match(name):
            trt = req.specifier if trt is None else trt & req.specifier
            if "-cu" in name:
                trt_cuda = name.rsplit("-cu", 1)[1]
    return Requires(source, msg.get("Requires-Python"), torch, cuda, trt, trt_cuda)


def floors(table: CompatTable) -> dict[str, str | None]:
    """The oldest release of each project the table speaks of (older ones are not read)."""
    tvs = [v for r in table.torch.values() for v in r.torchvision]
    return {"torch": table.torch_versions()[0],
            "torchvision": min(tvs, key=Version) if tvs else None,
            "torch-tensorrt": table.trt_versions()[0], "tensorrt": None,
            **{p: (table.onnx.get(p) or (None,))[0] for p in ONNX_PACKAGES}}


def to_read(table: CompatTable, releases: dict[str, list[Release]]) -> list[Release]:
    """Releases whose metadata is needed: every torchvision (its torch requirement is the
    pairing), and the torch / torch-tensorrt releases the table lacks plus the newest one."""
    known = {"torch": set(table.torch), "torch-tensorrt": set(table.torch_tensorrt)}
    out = list(releases.get("torchvision", []))
    for project, have in known.items():
        rels = releases.get(project, [])
        out += [r for r in rels if r.version not in have or r is rels[-1]]
    return out


def gather(index: Index, table: CompatTable, projects: Iterable[str] = PROJECTS) -> Facts:
    """Read the index: release lists, then the needed metadata (a few requests at a time)."""
    facts = Facts()
    low = floors(table)
    for name in projects:
        facts.releases[name] = final_releases(name, index.project(name), low.get(name))
    wanted: list[tuple[Release, File]] = []
    for rel in to_read(table, facts.releases):
        wheel = rel.linux_wheel()
        if wheel is None:
            facts.unread.append(f"{rel.project} {rel.version}: no Linux x86_64 wheel to read")
        else:
            wanted.append((rel, wheel))
    with ThreadPoolExecutor(WORKERS) as pool:
        texts = list(pool.map(lambda rw: index.metadata(rw[1]), wanted))
    for (rel, wheel), text in zip(wanted, texts, strict=True):
        facts.requires[(rel.project, rel.version)] = parse_requires(wheel.filename, text)
    return facts
