"""A requirements file, or ``pip freeze`` output, read as the versions it pins.

Flow: ``check -r FILE`` -> **check.requirements** -> check.environment. pip's syntax:
comments (``#`` at the start or after a space), ``\\`` continuations, per-requirement
options (``--hash=...``) dropped, extras ignored, environment markers evaluated for this
interpreter (a line whose marker is false is left out, and said), ``name @ URL`` and a bare
wheel URL or path read from the wheel's file name, ``-r``/``--requirement`` files followed
(relative to the file that names them, each once; ``-`` is standard input, its includes
relative to the working folder). What cannot give a version is named,
never guessed: an editable line (``-e``), a URL that is not a wheel, a constraints file
(``-c``, not read). A file that is not a regular file, not UTF-8 or not a requirement
line is a UsageError naming the file and line (exit 2).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from repromatrix.config.catalog import package_name
from repromatrix.config.validate import read_regular
from repromatrix.errors import ConfigError, UsageError
from repromatrix.textsafe import bounded

HINT = "give a requirements file (pip freeze > requirements.txt)"
STDIN = "-"  # ``-r -``: the requirements from standard input
_COMMENT = re.compile(r"(^|\s)#.*$")
_OPTION = re.compile(r"\s+(?=--?[A-Za-z])")  # where a requirement's own options begin
_INCLUDE = ("-r", "--requirement")
_UNREAD = {"-c": "a constraints file is not read", "--constraint": "a constraints file is not read",
           "-e": "an editable requirement has no version to check",
           "--editable": "an editable requirement has no version to check"}


def read_requirements(path: Path, seen: frozenset[Path] = frozenset()
                      ) -> tuple[dict[str, str | None], dict[str, str], list[str]]:
    """(package -> pinned version or None, package -> where it is named, notes)."""
    text = _text(path)
    packages: dict[str, str | None] = {}
    where: dict[str, str] = {}
    notes: list[str] = []
    for number, line in _logical_lines(text):
        at = f"{path}:{number}"
        if line.startswith("-"):
            flag, _, arg = line.partition(" ") if " " in line else line.partition("=")
            arg = arg.strip().lstrip("=").strip()
            if flag in _INCLUDE:
                nested = (path.parent / arg)
                if nested.resolve() not in seen | {path.resolve()}:
                    more, more_where, more_notes = read_requirements(
                        nested, seen | {path.resolve()})
                    packages.update(more)
                    where.update(more_where)
                    notes += more_notes
            elif flag in _UNREAD:
                notes.append(f"{at}: {bounded(line, 200)}: {_UNREAD[flag]}")
            continue  # --index-url, --find-links, ...: where pip looks, not what it installs
        name, version = _requirement(_OPTION.split(line, maxsplit=1)[0], at, notes)
        if name:
            packages[name], where[name] = version, at
    return packages, where, notes


def _text(path: Path) -> str:
    try:
        data = _stdin() if str(path) == STDIN else read_regular(path, HINT)
    except ConfigError as exc:
        raise UsageError(f"-r {exc}") from None
    except OSError as exc:
        raise UsageError(f"-r {path}: cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise UsageError(f"-r {path}: line {line}: not UTF-8; {HINT}") from None


def _stdin() -> bytes:
    """Standard input (``-r -``: ``pip freeze | repromatrix check -r -``); a terminal is
    refused rather than waited on."""
    if sys.stdin is None or sys.stdin.isatty():
        raise UsageError(f"-r -: standard input is a terminal: pipe the requirements in "
                         f"(pip freeze | repromatrix check -r -), or {HINT}")
    return sys.stdin.buffer.read()


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, the line with its continuations joined and comment cut)."""
    out: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _COMMENT.sub("", raw)
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        joined = (pending + line).strip()
        pending = ""
        if joined:
            out.append((start, joined))
    if pending.strip():
        out.append((start, pending.strip()))
    return out


def _requirement(text: str, at: str, notes: list[str]) -> tuple[str | None, str | None]:
    """(name, pinned version) of one requirement; (None, None) when it is left out."""
    if _is_location(text):
        return _from_wheel(text, at, notes)
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise UsageError(f"-r {at}: not a requirement: {bounded(text, 200)} ({exc})") from None
    name = package_name(req.name)
    if req.marker is not None and not req.marker.evaluate():
        notes.append(f"{at}: {req.name} left out: its marker ({req.marker}) is false here")
        return None, None
    if req.url:
        found = _from_wheel(req.url, at, notes)
        return name, found[1] if found[0] == name else None
    clauses = list(req.specifier)
    if len(clauses) == 1 and clauses[0].operator in ("==", "===") and "*" not in clauses[0].version:
        return name, clauses[0].version
    return name, None


def _is_location(text: str) -> bool:
    return "://" in text.split("@", 1)[0] or text.endswith(".whl") or text.startswith((".", "/"))


def _from_wheel(location: str, at: str, notes: list[str]) -> tuple[str | None, str | None]:
    """A wheel's name and version from its URL or path; (None, None) and a note otherwise."""
    file = unquote(urlparse(location).path.rsplit("/", 1)[-1])
    try:
        name, version, _, _ = parse_wheel_filename(file)
    except InvalidWheelFilename:
        notes.append(f"{at}: {bounded(location, 200)}: not a wheel, its version is not known")
        return None, None
    return package_name(str(name)), str(version)
