"""The sample answers in docs/check.md (and README.md) are what the named command prints on
the shipped snapshot, run for real.

A sample is a fenced block right after a marker naming its command::

    <!-- check-sample: repromatrix check torch==2.4.1 ... -->

Regenerate every sample after a change of the output or the snapshot:
``PYTHONPATH=src:tests python3 tests/check/test_docs_sample.py --write``.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest
from support.cli import repromatrix

ROOT = Path(__file__).resolve().parents[2]
PAGES = (ROOT / "docs" / "check.md", ROOT / "README.md")
SAMPLE = re.compile(r"<!-- check-sample: (?P<command>[^\n]+?) -->\n(?P<fence>`{3,})[a-z]*\n"
                    r"(?P<body>.*?)(?P=fence)\n", re.S)  # a longer fence holds Markdown's own


def samples(text: str) -> list[re.Match[str]]:
    return list(SAMPLE.finditer(text))


def output(command: str) -> str:
    """What ``command`` (``repromatrix check ...``) prints: exit 0 or 1, nothing on stderr."""
    words = shlex.split(command)
    assert words[:2] == ["repromatrix", "check"], command
    proc = repromatrix(*words[1:], env={"GITHUB_ACTIONS": ""})
    assert proc.returncode in (0, 1) and not proc.stderr, proc.stderr
    return proc.stdout


def rewritten(text: str) -> str:
    """``text`` with every sample remade from its command."""
    def fresh(found: re.Match[str]) -> str:
        whole, body = found.group(0), found.start("body") - found.start()
        return whole[:body] + output(found.group("command")) + found.group("fence") + "\n"

    return SAMPLE.sub(fresh, text)


def test_the_check_page_has_samples_of_the_table_and_the_markdown():
    commands = [m.group("command") for m in samples(PAGES[0].read_text(encoding="utf-8"))]
    assert any("--format markdown" in c for c in commands)
    assert any("--format" not in c and "--verbose" not in c for c in commands)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_each_sample_is_its_commands_output(page):
    for found in samples(page.read_text(encoding="utf-8")):
        assert found.group("body") == output(found.group("command")), (
            f"{page.name}: the sample of `{found.group('command')}` is out of date; "
            f"regenerate: PYTHONPATH=src:tests python3 tests/check/test_docs_sample.py --write")


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        if samples(text):
            page.write_text(rewritten(text), encoding="utf-8")
            print(f"wrote {page.relative_to(ROOT)}")
