#!/usr/bin/env python3
"""Write src/repromatrix/data/boundaries.json from a git clone of pytorch/TensorRT.

For every repro whose META names ``introduced_by`` / ``fixed_by`` commits, lists each
release tag (``vX.Y.Z``) and each ``release/ngc/YY.MM`` branch that contains each commit
(``git tag --contains``, ``git branch -a --contains``). The catalog's torch-tensorrt
release rules and NGC rules are made from this file (``repromatrix.config.boundaries``).
The ``first_release`` section (torch and torchvision bugs, read from released wheels or
tags) is kept as it is.

    python3 scripts/derive-boundaries.py --clone DIR            # print what would be written
    python3 scripts/derive-boundaries.py --clone DIR --write    # write it
    python3 scripts/derive-boundaries.py --clone DIR --check    # exit 1 if the file differs

DIR is a clone (bare or not) with the tags and the release/ngc branches, e.g.
``git clone --bare https://github.com/pytorch/TensorRT``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from repromatrix.config import boundaries, catalog  # noqa: E402

TAG = re.compile(r"v\d+\.\d+\.\d+")
NGC = re.compile(r"(?:remotes/)?(?:origin/)?release/ngc/(\d\d\.\d\d)")


def git(clone: Path, *args: str) -> list[str]:
    out = subprocess.run(["git", "-C", str(clone), *args], check=True, text=True,
                         capture_output=True).stdout
    return [line.strip().lstrip("* ").strip() for line in out.splitlines() if line.strip()]


def tags_of(clone: Path, *args: str) -> list[str]:
    return sorted({t for t in git(clone, "tag", *args) if TAG.fullmatch(t)},
                  key=lambda t: tuple(int(p) for p in t[1:].split(".")))


def ngc_of(clone: Path, *args: str) -> list[str]:
    found = {m.group(1) for b in git(clone, "branch", "-a", *args) if (m := NGC.fullmatch(b))}
    return sorted(found)


def containing(clone: Path, commits: list[str], where: str) -> dict[str, Any]:
    """The tags and NGC branches that hold any of ``commits`` (a fix and its cherry-picks)."""
    tags: set[str] = set()
    ngc: set[str] = set()
    for commit in commits:
        if subprocess.run(["git", "-C", str(clone), "cat-file", "-e", f"{commit}^{{commit}}"],
                          capture_output=True).returncode:
            sys.exit(f"{where}: commit {commit} is not in {clone}")
        tags.update(tags_of(clone, "--contains", commit))
        ngc.update(ngc_of(clone, "--contains", commit))
    return {"commits": commits,
            "tags": [t for t in tags_of(clone) if t in tags],
            "ngc": sorted(ngc)}


def derive(clone: Path, old: dict[str, Any], repros: Path) -> dict[str, Any]:
    head = git(clone, "log", "-1", "--format=%H %cs", "HEAD")[0].split()
    bugs: dict[str, Any] = {}
    for path in catalog.repro_files(repros):
        meta = catalog.read_meta(path)
        entry = {}
        for key in boundaries.COMMIT_KEYS:
            if key in meta:
                commits = boundaries.check_commits(meta[key], str(path), key)["commits"]
                entry[key] = containing(clone, commits, f"{path}: META.{key}")
        if entry:
            bugs[path.stem] = entry
    return {
        "source": {"repository": "https://github.com/pytorch/TensorRT", "head": head[0],
                   "head_date": head[1], "made_by": boundaries.MAKER},
        "tags": tags_of(clone),
        "ngc": ngc_of(clone),
        "bugs": bugs,
        "first_release": old.get("first_release", {}),
    }


def dumps(data: dict[str, Any]) -> str:
    """JSON, a list of names on one line (a diff shows which ref came or went)."""
    text = json.dumps(data, indent=1, sort_keys=True)
    return re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + " ".join(m.group(1).split()) + "]",
                  text) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clone", type=Path, required=True, help="a git clone of pytorch/TensorRT")
    parser.add_argument("--write", action="store_true", help="write the data file")
    parser.add_argument("--check", action="store_true", help="exit 1 if the file differs")
    parser.add_argument("--repros", type=Path, default=ROOT / "repros", help="the repro folder")
    parser.add_argument("--out", type=Path, default=boundaries.DATA_FILE, help="the data file")
    args = parser.parse_args()
    target = args.out.resolve()
    old = json.loads(target.read_text(encoding="utf-8")) if target.exists() else {}
    text = dumps(derive(args.clone, old, args.repros))
    if args.write:
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target}")
    elif args.check:
        same = target.exists() and target.read_text(encoding="utf-8") == text
        print(f"{target} is {'current' if same else 'stale: run with --write'}")
        return 0 if same else 1
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
