"""textsafe: escaping what reaches a terminal, bounding what reaches a record."""

from __future__ import annotations

import pytest

from repromatrix.textsafe import bounded, brief, cut_marker, printable

HOSTILE = "cell\x1b]0;pwned\x07\x1b[2J\rdone"


def test_printable_escapes_terminal_sequences():
    out = printable(HOSTILE)
    assert out == "cell\\x1b]0;pwned\\x07\\x1b[2J\\rdone"
    assert out.isprintable()


@pytest.mark.parametrize("raw, shown", [
    ("a\nb", "a\\nb"), ("\x00", "\\x00"), ("\x9b2J", "\\x9b2J"),  # C1 CSI
    ("x\u202eevil", "x\\u202eevil"), ("\u2028", "\\u2028"), ("\udcff", "\\udcff"),
    ("plain ünïcode ✓ text", "plain ünïcode ✓ text"),
])
def test_printable_escapes_every_control_character(raw, shown):
    assert printable(raw) == shown


def test_printable_can_keep_line_structure():
    assert printable("a\n\tb\x1b[1m", newlines=True) == "a\n\tb\\x1b[1m"
    assert printable(42) == "42"


def test_the_escaped_text_survives_a_strict_ascii_or_utf8_encode():
    printable("\udcff\x1b").encode("ascii")  # a lone surrogate would not encode raw


def test_bounded_keeps_short_text_whole():
    assert bounded("short", 10) == "short"
    assert bounded("x" * 100, 100) == "x" * 100


@pytest.mark.parametrize("size, limit", [(10_000_000, 4000), (1000, 999), (5000, 80), (200, 60)])
def test_bounded_keeps_head_and_tail_and_says_how_much_was_cut(size, limit):
    text = "H" + "m" * (size - 2) + "T"
    out = bounded(text, limit)
    assert len(out) <= limit
    assert out.startswith("H") and out.endswith("T")
    _, _, rest = out.partition("…[cut ")
    count = int(rest.split(" ")[0].replace(",", ""))
    assert len(out) - len(cut_marker(count)) + count == size  # every cut character counted


def test_bounded_marker_reads_well():
    out = bounded("a" * 10_000_000 + "b" * 10, 100)
    assert "…[cut 9,999,9" in out and out.endswith("b" * 10)


def test_bounded_too_small_a_limit_is_the_marker_alone_and_negative_is_refused():
    assert bounded("x" * 1000, 5) == cut_marker(1000)
    with pytest.raises(ValueError):
        bounded("x", -1)


def test_brief_renders_an_alias_bomb_shape_without_expanding_it():
    level = ["lol"] * 10
    for _ in range(9):  # 10**9 leaves if rendered whole
        level = [level] * 10
    out = brief(level)
    assert len(out) <= 200 and out.startswith("[[[")


def test_brief_escapes_and_bounds_strings():
    assert brief("abc\n") == "'abc\\n'"
    assert len(brief("x" * 50_000_000)) <= 200
    assert "\x1b" not in brief({"k": "\x1b[2J"})
