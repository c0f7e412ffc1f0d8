"""Text that is safe to print and bounded in size.

Used wherever text that the harness does not control (record fields, YAML
values, subprocess output) reaches a terminal, an error message or a record:

- ``printable``: control characters (ESC, BEL, CR, NUL, C1, bidi overrides,
  lone surrogates, ...) written as Python-style escapes, so a record cannot
  retitle, clear or rewrite the user's terminal;
- ``bounded``: the head and tail of a long text, saying how much was cut;
- ``brief``: a short ``repr`` of any value (lists, mappings, aliased YAML
  structures) that stops early instead of rendering everything.
"""

from __future__ import annotations

import reprlib
import unicodedata
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


def first_line(text: Any, limit: int = 500) -> str:
    """The first non-blank line of ``text`` (an exception's too), at most ``limit`` characters."""
    return next((line.strip()[:limit] for line in str(text).splitlines() if line.strip()), "")


def listed(items: list[str], shown: int = 3) -> str:
    """``a, b, c and 4 more``: a few items of a long list, the rest counted."""
    head = ", ".join(items[:shown])
    return head + (f" and {len(items) - shown} more" if len(items) > shown else "")
