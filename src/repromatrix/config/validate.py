"""Checks for single values that reach a Dockerfile, a command line or a file name.

Used by config (matrix.yaml), catalog (repro file names) and for command-line
and environment overrides. Each raises a ConfigError naming the file (when
there is one), the key and a short, escaped rendering of the value.
"""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path
from typing import Any

from repromatrix.errors import ConfigError
from repromatrix.model import CELL_SEPARATOR, SAFE_ID
from repromatrix.textsafe import brief, is_unprintable, printable

MAX_VALUE_LEN = 4096   # a path, a URL, a requirement
MAX_ID_LEN = 100       # stack and repro ids: image tags, file names, cell ids
MAX_VERSION_LEN = 100
MAX_TIMEOUT_S = 7 * 24 * 3600.0


def check_plain(value: Any, key: str, file: str | None = None, *, spaces: bool = True,
                limit: int = MAX_VALUE_LEN) -> str:
    """``value`` if it is a string of at most ``limit`` characters without control
    characters (newline, ESC, NUL, bidi overrides, ...), and without whitespace
    when ``spaces`` is false; else a ConfigError naming ``file``/``key``."""
    if not isinstance(value, str):
        raise ConfigError(f"expected a string, got {brief(value)}", file=file, key=key)
    if len(value) > limit:
        raise ConfigError(f"too long ({len(value):,} characters, limit {limit:,}): {brief(value)}",
                          file=file, key=key)
    if value.isprintable() and (spaces or not any(ch.isspace() for ch in value)):
        return value
    for i, ch in enumerate(value):
        if is_unprintable(ch):
            raise ConfigError(f"control character {printable(ch)} at position {i} in "
                              f"{brief(value)}: not allowed in a value that reaches a "
                              f"Dockerfile, a command line or a file name", file=file, key=key)
        if not spaces and ch.isspace():
            raise ConfigError(f"whitespace at position {i} in {brief(value)}: not allowed here",
                              file=file, key=key)
    return value


def check_id(value: Any, key: str, file: str | None = None) -> str:
    """A stack or repro id: letters, digits, '.', '_', '+', '-', no '--', bounded length."""
    check_plain(value, key, file, spaces=False, limit=MAX_ID_LEN)
    if not SAFE_ID.fullmatch(value) or CELL_SEPARATOR in value:
        raise ConfigError(f"id {brief(value)} must be letters, digits, '.', '_', '+', '-' "
                          f"(no '--'), starting with a letter or digit", file=file, key=key)
    return value


def check_timeout(value: Any, key: str, file: str | None = None) -> float:
    """A time limit in seconds: a finite number > 0, at most a week."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"expected a number of seconds, got {brief(value)}", file=file, key=key)
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"expected a number of seconds > 0, got {brief(value)}",
                          file=file, key=key)
    if value > MAX_TIMEOUT_S:
        raise ConfigError(f"{value:g} s is more than a week ({MAX_TIMEOUT_S:g} s)",
                          file=file, key=key)
    return float(value)


def check_version(value: Any, key: str, file: str | None = None) -> Any:
    """A version value: a short plain string; null/false pass through (they mean
    "derive" or "leave out" to the resolver). A YAML number is refused: unquoted
    ``24.10`` reads as 24.1, so the message says to quote it."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        name = key.rsplit(".", 1)[-1]
        raise ConfigError(f"expected a version string, got the number {brief(value)}: quote it, "
                          f"e.g. {name}: \"{value}\" (unquoted, YAML reads 24.10 as 24.1)",
                          file=file, key=key)
    if not isinstance(value, str):
        raise ConfigError(f"expected a version string, got {brief(value)}", file=file, key=key)
    return check_plain(value, key, file, spaces=False, limit=MAX_VERSION_LEN)


def regular_file(path: Path, hint: str) -> Path:
    """``path`` if it is (or links to) a regular file; else a ConfigError naming it and
    ending with ``hint``, decided by ``stat`` alone: a FIFO, a device (``/dev/zero``), a
    socket or a folder is never opened."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    if not stat.S_ISREG(mode):
        raise ConfigError(f"not a regular file ({_file_kind(mode)}); {hint}", file=str(path))
    return path


def _file_kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))
    return next((name for test, name in kinds if test(mode)), "not a plain file")


def read_regular(path: Path, hint: str) -> bytes:
    """The bytes of a regular file (``regular_file``), opened without blocking: a FIFO
    swapped in after the check is refused, not waited on."""
    regular_file(path, hint)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(f"not a regular file; {hint}", file=str(path))
        return fh.read()
