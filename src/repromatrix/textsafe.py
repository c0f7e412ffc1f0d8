"""Text that is safe to print and bounded in size.

Used wherever text that the harness does not control (record fields, YAML
values, subprocess output) reaches a terminal, an error message or a record:

- ``printable``: control characters (ESC, BEL, CR, NUL, C1, bidi overrides,
  lone surrogates, ...) written as Python-style escapes, so a record cannot
  retitle, clear or rewrite the user's terminal;
- ``bounded``: the head and tail of a long text, saying how much was cut;
- ``brief``: a short ``repr`` of any value (lists, mappings, aliased YAML
  structures) that stops early instead of rendering everything;
- ``first_line``, ``file_tail``, ``signal_name``: the line of an error, the end of a
  log and the signal of a return code that messages and records quote (the host's
  one copy of each; the container side's are in ``repros/harness/_outcome.py``).
"""

from __future__ import annotations

import os
import reprlib
import signal
import unicodedata
from pathlib import Path
from typing import Any

#: Unicode categories never printed raw: controls, format (bidi overrides,
#: zero-width), line/paragraph separators, lone surrogates, unassigned.
UNPRINTABLE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
BRIEF_LIMIT = 200


def is_unprintable(ch: str) -> bool:
    """True for a character that must not reach a terminal or a one-line value raw."""
    if " " <= ch <= "~":  # fast path: printable ASCII
        return False
    return unicodedata.category(ch) in UNPRINTABLE_CATEGORIES


def _escape(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def printable(text: Any, *, newlines: bool = False) -> str:
    """``text`` with every control character escaped (``ESC`` -> ``\\x1b``).

    With ``newlines=True``, newlines and tabs are kept (multi-line reports);
    everything else unprintable is still escaped.
    """
    s = text if isinstance(text, str) else str(text)
    if s.isprintable():  # the common case, in C
        return s
    keep = "\n\t" if newlines else ""
    return "".join(_escape(ch) if ch not in keep and is_unprintable(ch) else ch for ch in s)


def cut_marker(n: int) -> str:
    """The text standing for ``n`` removed characters."""
    return f"…[cut {n:,} characters]…"


def bounded(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` characters, else its head and tail around a
    marker saying how many characters were cut.

    The result is at most ``limit`` characters long whenever ``limit`` leaves room
    for the marker (about 40 characters); below that, it is the marker alone.
    """
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    while True:  # the marker's own length depends on the count it shows
        room = limit - len(cut_marker(cut))
        if room <= 0:
            return cut_marker(len(text))
        if len(text) - room == cut:
            break
        cut = len(text) - room
    head = (room + 1) // 2
    tail = room - head
    return text[:head] + cut_marker(cut) + (text[-tail:] if tail else "")


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict = 3, 6, 6, 6
_REPR.maxset = _REPR.maxfrozenset = _REPR.maxdeque = _REPR.maxarray = 6
_REPR.maxstring, _REPR.maxother, _REPR.maxlong = 80, 80, 40


def brief(value: Any, limit: int = BRIEF_LIMIT) -> str:
    """A short ``repr`` of ``value`` for an error message: nested and long values are
    elided early (never rendered whole), control characters escaped."""
    return printable(bounded(_REPR.repr(value), limit))


def first_line(text: Any, limit: int | None = 500, *, past_intro: bool = False) -> str:
    """The first non-blank line of ``text`` (an exception's too), at most ``limit``
    characters (None: whole); ``past_intro``: the next line when the first only
    introduces it (ends with ":")."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    if past_intro and len(lines) > 1 and lines[0].endswith(":"):
        lines = lines[1:]
    return lines[0][:limit] if lines else ""


def file_tail(path: Path, limit: int, *, chars: bool = False) -> str:
    """The end of the file at ``path``: its last ``limit`` bytes, decoded (a character cut
    in two shows as U+FFFD), or with ``chars`` its last ``limit`` characters; "" when it
    cannot be read. Only the end is read, however long the file."""
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - (4 * limit + 3 if chars else limit)))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return text[-limit:] if chars else text


def signal_name(returncode: int | None, shell_status: bool = False) -> str | None:
    """The signal that ended a process (``"SIGSEGV"``), from its return code; else None.

    ``subprocess`` reports a death by signal N of its own child as ``-N``: always read
    (the local runner, an interpreter's probe). A process that runs its work in a child
    of its own reports that child's death as exit status ``128 + N`` (a shell,
    ``docker run``, the runner itself after SIGTERM): read only with ``shell_status``.
    The host reads no such status today: a local runner's 143 stays an exit code.
    """
    if returncode is None:
        return None
    if returncode < 0:
        num = -returncode
    elif shell_status and 128 < returncode < 160:
        num = returncode - 128
    else:
        return None
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"SIG{num}"


def listed(items: list[str], shown: int = 3) -> str:
    """``a, b, c and 4 more``: a few items of a long list, the rest counted."""
    head = ", ".join(items[:shown])
    return head + (f" and {len(items) - shown} more" if len(items) > shown else "")
