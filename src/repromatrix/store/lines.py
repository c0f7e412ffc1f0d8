"""The store's one parser and damaged-line policy: a results file's lines as record data.

Every reader of ``<results>/<host>/<run id>.jsonl`` parses through these definitions
(``store.reader`` orders, settles and tells the history of what they read): a line is a
record (upgraded through ``store.record.MIGRATIONS``) or a ``Skipped`` that says why not
(not UTF-8, invalid JSON, a truncated last line with no newline (run interrupted?), not an
object, an unknown schema version or a missing key). A damaged line is named and skipped,
never fatal; ``scan`` walks a file line by line, so a large one is never held whole, and a
line over ``LINE_LIMIT`` is skipped unread.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from .record import Result, _problem, escaped, finite, migrate

try:  # a fast parser when installed; the standard library decides anything it refuses
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency
    _orjson = None

LINE_LIMIT = 16 * 1024 * 1024  # bytes of one line a reader holds; a longer one is skipped unread


@dataclass(frozen=True)
class Skipped:
    """A line (or whole file, line 0) the loader could not use, and why."""

    file: str
    line: int
    reason: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.reason}"


def loads(raw: bytes) -> Any:
    """JSON from bytes: orjson when it accepts them, else the standard library (which explains)."""
    return _loads(raw)[0]


def record_data(raw: bytes) -> Any:
    """``loads`` of a record line, with the numbers JSON cannot hold kept as text
    (``finite``) and text that cannot be UTF-8 escaped (``escaped``), as ``parse`` reads them."""
    obj, lenient = _loads(raw)
    return _readable(obj)[0] if lenient else obj


def _readable(obj: Any) -> tuple[Any, bool]:
    """A line only the standard library read (``_loads``) as every reader sees it: numbers
    JSON cannot hold as text (``finite``), lone surrogates as visible escapes (``escaped``:
    as the runner writes them, so an id or a text can go to SQLite, a page or a terminal);
    and whether that changed it."""
    changed = False
    if _nonfinite(obj):
        obj, changed = finite(obj), True
    fixed = escaped(obj)
    return fixed, changed or fixed != obj


def _loads(raw: bytes) -> tuple[Any, bool]:
    """``loads``, and whether the standard library read it (the only reader of the two that
    takes NaN and Infinity)."""
    if _orjson is not None:
        try:
            return _orjson.loads(raw), False
        except _orjson.JSONDecodeError:
            pass  # lone surrogates, NaN, huge ints, bad UTF-8: let json decide and explain
    return json.loads(raw.decode("utf-8")), True


def dumps(data: Any) -> bytes:
    """A record's JSON line (no newline), the one way an upgraded record is written back out:
    UTF-8 as it is, anything JSON lacks as its text."""
    if _orjson is not None:
        try:
            return _orjson.dumps(data, default=str)
        except (TypeError, _orjson.JSONEncodeError):
            pass  # a lone surrogate, a huge int: the standard library, escaping what it must
    return json.dumps(data, default=str, separators=(",", ":")).encode("utf-8")


def parse(raw: bytes, name: str, number: int) -> dict[str, Any] | Skipped:
    """One JSONL line as record data (upgraded to the current schema), or why it is not one.

    A line with no newline that does not parse is named as truncated: the last line
    of a file whose run was interrupted mid-write."""
    data = parse_upgraded(raw, name, number)
    return data if isinstance(data, Skipped) else data[0]


def _nonfinite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_nonfinite(v) for v in value.values())
    if isinstance(value, list):
        return any(_nonfinite(v) for v in value)
    return False


def parse_upgraded(raw: bytes, name: str, number: int) -> tuple[dict[str, Any], bool] | Skipped:
    """``parse``, also saying whether the record's line is not to be copied as it is: upgraded
    from an older schema, holding a number JSON cannot (``finite``; lines written before
    records were kept finite) or a lone surrogate (``escaped``; a record written by another
    tool than the runner)."""
    try:
        obj, lenient = _loads(raw)
    except UnicodeDecodeError:
        return Skipped(name, number, "not valid UTF-8")
    except ValueError as exc:
        truncated = not raw.endswith(b"\n")
        hint = "truncated last line (run interrupted?)" if truncated else "invalid JSON"
        return Skipped(name, number, f"{hint}: {exc}")
    if not isinstance(obj, dict):
        return Skipped(name, number, f"not a JSON object ({type(obj).__name__})")
    rewritten = False
    if lenient:
        obj, rewritten = _readable(obj)
    data = migrate(obj)
    problem = _problem(data)
    if problem:
        return Skipped(name, number, problem)
    return data, rewritten or obj.get("schema_version") != data["schema_version"]


def parse_line(raw: bytes, name: str, number: int) -> Result | Skipped:
    """One JSONL line as a Result, or the Skipped that says why it is not one."""
    data = parse(raw, name, number)
    return data if isinstance(data, Skipped) else record(data, name, number)


def record(data: dict[str, Any], name: str, number: int) -> Result | Skipped:
    """Parsed record data (``parse``) as a Result, or the Skipped that says why it is not one."""
    try:
        return Result.from_dict(data)
    except (ValueError, TypeError) as exc:
        return Skipped(name, number, str(exc))


def scan(fh: BinaryIO, name: str, number: int = 0, limit: int = -1
         ) -> Iterator[tuple[int, int, bytes, dict[str, Any] | Skipped]]:
    """Each non-blank line of ``fh`` from its position: (line number, byte offset, raw
    bytes, the record data or why it was skipped). ``number`` is the count of lines before;
    ``limit``: read at most this many bytes at a time (a longer line comes in pieces, each
    skipped as not JSON), so a file with no newline is never read whole; without it, a line
    over ``LINE_LIMIT`` is skipped unread (``read_lines``)."""
    offset = fh.tell()
    lines = iter(lambda: fh.readline(limit), b"") if limit > 0 else read_lines(fh)
    for raw in lines:
        number += 1
        if isinstance(raw, Overlong):
            start, offset = offset, offset + raw.size
            yield number, start, b"", Skipped(name, number, raw.reason())
            continue
        start, offset = offset, offset + len(raw)
        if raw.strip():
            yield number, start, raw, parse(raw, name, number)


class Overlong(NamedTuple):
    """A line longer than ``LINE_LIMIT``: its size in bytes, and whether a newline ended it
    (a line without one may still be being written)."""

    size: int
    complete: bool

    def reason(self) -> str:
        return f"a line of {self.size} bytes, over the {LINE_LIMIT}-byte limit: not read"


def read_lines(fh: BinaryIO) -> Iterator[bytes | Overlong]:
    """Each line of ``fh`` from its position, newline included; a line longer than
    ``LINE_LIMIT`` as an ``Overlong``, read through in pieces and never held whole (a file
    with no newline, a foreign file in a results folder)."""
    limit, readline = LINE_LIMIT, fh.readline
    while raw := readline(limit + 1):
        if len(raw) <= limit:
            yield raw
            continue
        size = len(raw)
        while not raw.endswith(b"\n"):
            raw = fh.readline(1 << 20)
            if not raw:
                break
            size += len(raw)
        yield Overlong(size, raw.endswith(b"\n"))


def digest(raw: bytes) -> str:
    """A hash of one record line (surrounding whitespace ignored)."""
    return hashlib.sha1(raw.strip()).hexdigest()


def iter_result_files(paths: Iterable[Path | str]) -> tuple[list[Path], list[Skipped]]:
    """Expand files and folders (recursively, ``*.jsonl``) in a stable order.

    Folders whose name starts with a dot are not entered: they hold the run's work
    files (``.work``), never records (host folders are written without a leading dot).
    """
    files: list[Path] = []
    missing: list[Skipped] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            files.extend(walk_jsonl(p))
        elif p.is_file():
            files.append(p)
        else:
            missing.append(Skipped(str(p), 0, "no such file or directory"))
    unique: dict[Path, Path] = {}
    for f in files:
        unique.setdefault(f.resolve(), f)
    return list(unique.values()), missing


def walk_jsonl(root: Path) -> list[Path]:
    """Every ``*.jsonl`` file under ``root``, sorted, skipping dot-folders."""
    found: list[Path] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        base = Path(folder)
        found.extend(base / n for n in names if n.endswith(".jsonl") and (base / n).is_file())
    return sorted(found)


def line_at(source: str) -> bytes:
    """The raw line a ``file:line`` source names (rare path: comparing duplicate records)."""
    name, _, number = source.rpartition(":")
    with open(name, "rb") as fh:
        for n, raw in enumerate(fh, start=1):
            if n == int(number):
                return raw
    return b""


def canonical(raw: bytes) -> str:
    """A record line in one canonical form: two writers' spellings of one record compare equal."""
    try:
        return canonical_record(Result.from_dict(record_data(raw)))
    except (ValueError, TypeError):
        return raw.decode("utf-8", "replace")


def canonical_record(result: Result) -> str:
    """A Result in the canonical form ``canonical`` compares."""
    return json.dumps(result.to_dict(), sort_keys=True, default=str)
