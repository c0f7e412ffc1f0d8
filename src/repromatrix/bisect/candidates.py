"""Bisect candidates: every release on an axis, each resolved to a complete stack.

Pure (reads only the packaged compatibility table). The candidate list is the
whole axis in release order (patch releases included), so positions, and with
them the probe order, do not depend on the bounds. A release that does not
resolve to an installable stack with the given pins stays in the list with
the reason, and is never probed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from packaging.version import Version

from repromatrix.config import compat
from repromatrix.config.catalog import NOT_PACKAGES, STACK_PINS
from repromatrix.config.matrix import parse_stack
from repromatrix.errors import ConfigError, UsageError, did_you_mean
from repromatrix.model import ONNX_PACKAGES, Repro, Settings, Stack

AXES = ("torch", "torch_tensorrt", "ngc", *ONNX_PACKAGES)
PIP_BASE_KEYS = ("torch", "torchvision", "torch_tensorrt", *ONNX_PACKAGES, "index", "python",
                 "packages")
BISECT_TAG = "bisect"
WHERE = "bisect"


@dataclass(frozen=True)
class Candidate:
    """One release on the axis: its stack, or why it has none."""

    version: str
    stack: Stack | None
    reason: str = ""


def axis_versions(axis: str) -> list[str]:
    """Every known release on ``axis``, oldest first."""
    table = compat.load_table()
    if axis in ONNX_PACKAGES:  # the ONNX path's own releases, the rest of the stack fixed
        return list(table.onnx.get(axis, ()))
    return {"torch": table.torch_versions, "torch_tensorrt": table.trt_versions,
            "ngc": table.ngc_tags}[axis]()


def resolve_bound(axis: str, value: str, flag: str) -> str:
    """A bound given as an exact release or a shorthand ("2.5" -> newest 2.5.x)."""
    known = axis_versions(axis)
    if axis == "ngc":
        if value in known:
            return value
        raise UsageError(f"{flag} {value}: not an NGC release on the ngc axis"
                         f"{did_you_mean(value, known)}; known: {known[0]} .. {known[-1]}")
    try:
        return compat.resolve_release(known, value, axis)
    except compat.CompatError:
        raise UsageError(f"{flag} {value}: not a {axis} release on the {axis} axis"
                         f"{did_you_mean(value, known)}; known: {known[0]} .. {known[-1]}") from None


def parse_base(items: Sequence[str], axis: str) -> dict[str, Any]:
    """``--base KEY=VALUE`` pins for the stack keys that are not the axis."""
    base: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        allowed = ("packages",) if axis == "ngc" else tuple(k for k in PIP_BASE_KEYS if k != axis)
        if not sep or not key:
            raise UsageError(f"--base {item!r}: expected KEY=VALUE, e.g. torch_tensorrt=none")
        if key not in allowed:
            raise UsageError(f"--base {key}: not a pin of the {axis} axis' stacks"
                             f"{did_you_mean(key, allowed)}; allowed: {', '.join(allowed)}")
        if key == "packages":
            base[key] = [p.strip() for p in value.split(",") if p.strip()]
        else:
            base[key] = value
    return base




def _name_spec(req: str, flag: str) -> tuple[str, str]:
    m = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*)$", req)
    if not m:
        raise UsageError(f"{flag} {req!r}: expected a package, e.g. onnx or numpy==1.26.4")
    return re.sub(r"[-_.]+", "-", m.group(1)).lower(), m.group(2).strip()


def bug_base(axis: str, requires: Sequence[str], with_: Sequence[str],
             base: Mapping[str, Any]) -> dict[str, Any]:
    """The candidates' pins from what the bug needs, nothing else: the axis package, the
    repro's META ``requires`` that are packages, ``--with PKG[==V]``; torchvision and
    torch-tensorrt only when one of those names them. ``--base`` pins win."""
    out: dict[str, Any] = {}
    wanted: dict[str, str] = {}
    packages: list[str] = []
    for req, flag in [*((r, "META requires") for r in requires), *((w, "--with") for w in with_)]:
        name, spec = _name_spec(req, flag)
        if name in NOT_PACKAGES or name == "torch" or name.replace("-", "_") == axis:
            continue
        if name in STACK_PINS:
            pin = STACK_PINS[name]
            if name != "tensorrt" and flag == "--with" and spec.startswith("=="):
                wanted[pin] = spec[2:].strip()
            else:
                wanted.setdefault(pin, "")
        else:
            packages.append(req.strip())
    if axis != "ngc":
        for key in ("torchvision", "torch_tensorrt"):
            if key == axis:
                continue
            if key not in wanted:
                out[key] = "none"
            elif wanted[key]:
                out[key] = wanted[key]
    if packages or base.get("packages"):
        out["packages"] = list(dict.fromkeys([*packages, *base.get("packages", [])]))
    out.update({k: v for k, v in base.items() if k != "packages"})
    if axis in ONNX_PACKAGES and "torch" not in out:
        raise UsageError(f"--axis {axis} walks {axis} releases with the rest of the stack fixed: "
                         f"give its torch, e.g. --base torch=2.9.1")
    return out


def probe_settings(settings: Settings, stack: Stack) -> Settings:
    """The matrix defaults a probe's environment takes: never ``defaults.packages`` (the bug's
    needs are the stack's own packages); extra indexes only for torch-tensorrt (TensorRT)."""
    keep_indexes = stack.kind != "pip" or bool(stack.torch_tensorrt)
    return replace(settings, packages=(),
                   extra_index_urls=settings.extra_index_urls if keep_indexes else ())


def stack_entry(axis: str, version: str, base: Mapping[str, Any]) -> dict[str, Any]:
    """The matrix.yaml entry a candidate stands for."""
    if axis == "ngc":
        return {"kind": "ngc", "ngc": version, **base}
    entry = {"kind": "pip", **base, axis: version}
    if axis == "torch_tensorrt" and "torch" not in base:
        entry["torch"] = _newest_torch_for(version)
    return entry


def _newest_torch_for(trt: str) -> str:
    table = compat.load_table()
    need = table.torch_tensorrt[trt].torch
    fits = [v for v in table.torch_versions() if need.contains(v)]
    return fits[-1] if fits else str(need)


def resolve(axis: str, version: str, base: Mapping[str, Any], settings: Settings,
            catalog: Mapping[str, Repro], repro: str) -> Candidate:
    """One candidate: its complete, checked stack, or the reason it has none."""
    entry = stack_entry(axis, version, base)
    try:
        stack = parse_stack(entry, settings, catalog, (repro,), WHERE, f"{axis} {version}")
    except ConfigError as exc:
        return Candidate(version, None, exc.detail)
    stack = replace(stack, repros=(repro,), tags=(BISECT_TAG,))
    return Candidate(version, stack)


def candidates(axis: str, base: Mapping[str, Any], settings: Settings,
               catalog: Mapping[str, Repro], repro: str) -> list[Candidate]:
    """The whole axis, oldest first, each release resolved."""
    return [resolve(axis, v, base, settings, catalog, repro) for v in axis_versions(axis)]


def check_order(axis: str, good: str, bad: str, find_fix: bool) -> None:
    """A regression goes from an older good to a newer bad; --find-fix the other way round."""
    if good == bad:
        raise UsageError(f"--good and --bad are the same {axis} release ({good})")
    good_first = Version(good) < Version(bad)
    if not find_fix and not good_first:
        raise UsageError(f"--good {good} is newer than --bad {bad}: a regression goes from an older "
                         f"good release to a newer bad one (add --find-fix to find where it was fixed)")
    if find_fix and good_first:
        raise UsageError(f"--good {good} is older than --bad {bad}: with --find-fix the bad release "
                         f"comes first (drop --find-fix to hunt a regression)")
