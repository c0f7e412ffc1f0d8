"""Bug boundaries derived from the source, not typed: ``data/boundaries.json``.

A torch-tensorrt bug's META names the commits of github.com/pytorch/TensorRT that brought
it (``introduced_by``) and that fixed it (``fixed_by``: the fix and its cherry-picks). The
maintainer command ``scripts/derive-boundaries.py`` reads a clone and writes, per bug and
per commit, every release tag (``vX.Y.Z``) and every ``release/ngc/YY.MM`` branch that
contains it. The catalog's torch-tensorrt release rules and NGC rules are made here from
that file (``derived_rules``), never typed. A ref (tag or branch) with the fix is not
affected; one with the bug and not the fix is, unless it is newer than a ref with the fix;
one with neither is not affected when it is older than every ref with the bug; any other
ref gets no claim (a branch whose history was rewritten says nothing). For torch and
torchvision bugs the file keeps the first release with the fix (or the change), as read
from the released wheels or tags (``first_release``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from packaging.version import Version

from repromatrix.errors import ConfigError

DATA_FILE = Path(__file__).resolve().parents[1] / "data" / "boundaries.json"
MAKER = "scripts/derive-boundaries.py"
COMMIT_KEYS = ("introduced_by", "fixed_by")
_COMMIT = re.compile(r"[0-9a-f]{40}")
_TAG = re.compile(r"v(\d+\.\d+\.\d+)")
_NGC = re.compile(r"\d\d\.\d\d")


def check_commits(value: Any, file: str, key: str) -> dict[str, Any]:
    """META's ``introduced_by`` / ``fixed_by``: ``{"commits": [40-hex, ...], "note": str}``;
    anything else is a ConfigError naming the file and key."""
    if not isinstance(value, dict) or set(value) - {"commits", "note"} or "commits" not in value:
        raise ConfigError("expected {'commits': [full commit ids of pytorch/TensorRT], "
                          "'note': 'the source it cites'}", file=file, key=f"META.{key}")
    commits = value["commits"]
    if not isinstance(commits, (list, tuple)) or not commits:
        raise ConfigError("expected a non-empty list of commit ids", file=file,
                          key=f"META.{key}.commits")
    for commit in commits:
        if not isinstance(commit, str) or not _COMMIT.fullmatch(commit):
            raise ConfigError(f"{commit!r} is not a full 40-hex commit id of pytorch/TensorRT",
                              file=file, key=f"META.{key}.commits")
    if not isinstance(value.get("note", ""), str):
        raise ConfigError("expected a str", file=file, key=f"META.{key}.note")
    return {"commits": list(commits), "note": value.get("note", "")}


@functools.lru_cache(maxsize=4)
def load(path: Path = DATA_FILE) -> dict[str, Any]:
    """The derived data file, checked for shape (a ConfigError names the file and key)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read: {exc}", file=str(path)) from None
    for key in ("source", "tags", "ngc", "bugs", "first_release"):
        if key not in data:
            raise ConfigError(f"no {key!r}: remake it with {MAKER}", file=str(path), key=key)
    for tag in data["tags"]:
        if not _TAG.fullmatch(tag):
            raise ConfigError(f"{tag!r} is not a release tag vX.Y.Z", file=str(path), key="tags")
    for name in data["ngc"]:
        if not _NGC.fullmatch(name):
            raise ConfigError(f"{name!r} is not an NGC release YY.MM", file=str(path), key="ngc")
    return data


def entry(rid: str, meta_commits: Mapping[str, Any], file: str,
          path: Path = DATA_FILE) -> dict[str, Any]:
    """The file's entry for bug ``rid``; a ConfigError when it lacks the bug or lists other
    commits than META (the file is stale: remake it)."""
    bug = load(path)["bugs"].get(rid)
    for key in COMMIT_KEYS:
        want = meta_commits.get(key, {}).get("commits")
        have = (bug or {}).get(key, {}).get("commits")
        if want != have:
            raise ConfigError(f"{path.name} lists {have} for this bug, META {want}: run "
                              f"{MAKER} --clone DIR --write", file=file, key=f"META.{key}")
    return bug or {}


def ref_status(refs: Sequence[str], bug: Mapping[str, Any], kind: str) -> list[str | None]:
    """Per ref (oldest first), what its commits say: ``pass`` (has the fix), ``fail`` (has
    the bug and not the fix; every ref without the fix when META names no introducing
    commit), ``pass`` for one with neither older than every ref with the bug, else None: a
    ref newer than one with the fix that lacks it (release/ngc/25.11's history was rewritten:
    it holds the old commits and not the fixes' although its code has them) is no claim."""
    fixed = set(bug.get("fixed_by", {}).get(kind, ()))
    intro = bug.get("introduced_by")
    brought = set(intro.get(kind, ())) if intro else set(refs)
    first_bad = min((i for i, r in enumerate(refs) if r in brought), default=len(refs))
    first_fix = min((i for i, r in enumerate(refs) if r in fixed), default=len(refs))
    out: list[str | None] = []
    for i, ref in enumerate(refs):
        if ref in fixed:
            out.append("pass")
        elif i > first_fix:  # a later ref without the fix: its history was rewritten
            out.append(None)
        elif ref in brought:
            out.append("fail")
        else:
            out.append("pass" if i < first_bad else None)
    return out


def _segments(refs: Sequence[str], status: Sequence[str | None]
              ) -> list[tuple[int, int, str]]:
    """Runs of one status: (first index, index after the last, status), None runs dropped."""
    out: list[tuple[int, int, str]] = []
    start = 0
    for i in range(1, len(refs) + 1):
        if i == len(refs) or status[i] != status[start]:
            if status[start] is not None:
                out.append((start, i, str(status[start])))
            start = i
    return out


def _bound(version: str) -> str:
    """``2.5.0`` -> ``2.5`` (the same bound), ``2.6.1`` stays."""
    return version[:-2] if version.endswith(".0") and version.count(".") == 2 else version


def _spec(refs: Sequence[str], start: int, stop: int, exact: bool = False) -> str:
    """The specifier of refs[start:stop]: ``<next``, ``>=first,<next``, ``>=first``; one
    NGC release between two others is ``==`` (NGC tags have no patch releases)."""
    if exact and stop - start == 1 and 0 < start and stop < len(refs):
        return f"=={refs[start]}"
    low = f">={refs[start]}" if start > 0 else ""
    high = f"<{refs[stop]}" if stop < len(refs) else ""
    return ",".join(p for p in (low, high) if p) or ">=0"


def _range_words(names: Sequence[str], start: int, stop: int) -> str:
    return names[start] if stop - start == 1 else f"{names[start]} to {names[stop - 1]}"


def derived_rules(rid: str, bug: Mapping[str, Any], notes: Mapping[str, str],
                  path: Path = DATA_FILE) -> list[dict[str, Any]]:
    """The NGC rules (first) and the torch-tensorrt release rules of bug ``rid``, made from
    the file's refs: one rule per run of refs with one status, its note saying which refs
    hold which commit and the source META cites."""
    data = load(path)
    tags = sorted(data["tags"], key=lambda t: Version(t[1:]))
    ngc = sorted(data["ngc"], key=Version)
    short = {k: ", ".join(c[:10] for c in bug.get(k, {}).get("commits", ())) for k in COMMIT_KEYS}
    out: list[dict[str, Any]] = []
    for key, names, refs, shown in (
            ("ngc", ngc, ngc, [f"release/ngc/{n}" for n in ngc]),
            ("torch_tensorrt", tags, [_bound(t[1:]) for t in tags], tags)):
        kind = "ngc" if key == "ngc" else "tags"
        status = ref_status(names, bug, kind)
        for start, stop, said in _segments(names, status):
            where = _range_words(shown, start, stop)
            has = "has" if stop - start == 1 else "have"
            if said == "fail":
                why = (f"{where} {has} {short['introduced_by'] or 'the code'} (introduced_by) "
                       f"and not {short['fixed_by'] or 'a fix'}")
                cite = notes.get("introduced_by", "")
            elif any(n in bug.get("fixed_by", {}).get(kind, ()) for n in names[start:stop]):
                why = f"{where} {has} {short['fixed_by']} (fixed_by)"
                cite = notes.get("fixed_by", "")
            else:
                verb = "predates" if has == "has" else "predate"
                why = f"{where} {verb} {short['introduced_by']} (introduced_by)"
                cite = ""
            note = f"derived ({DATA_FILE.name}): {why}" + (f". {cite}" if cite else "")
            spec = _spec(refs, start, stop, exact=key == "ngc")
            out.append({"when": {key: spec}, "status": said, "note": note})
    return out


def first_release(rid: str, path: Path = DATA_FILE) -> dict[str, Any] | None:
    """A torch, torchvision or onnxscript bug's first release with the fix or change, as read:
    ``{"package", "version", "status", "read"}``; None when the file has none."""
    found = load(path)["first_release"].get(rid)
    return dict(found) if isinstance(found, Mapping) else None
