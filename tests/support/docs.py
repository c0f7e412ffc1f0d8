"""The commands a Markdown page documents, as argv: what the docs tests parse and run.

A command is a line of a ``sh``/``bash``/``shell``/``console`` block, or of an untagged
block whose first line is such a command (continuation lines joined, comments dropped, a
leading ``$ `` prompt taken off). A block tagged ``text`` (a synopsis) is a picture, not
commands. HTML comments are not read.
"""

from __future__ import annotations

import re
import shlex

SHELL_TAGS = {"sh", "bash", "shell", "console"}
FENCE = re.compile(r"^(```+|~~~+)[ \t]*([\w+-]*)[^\n]*\n(.*?)^\1[ \t]*$", re.S | re.M)
COMMENT = re.compile(r"<!--.*?-->", re.S)


def shell_commands(text: str, programs: tuple[str, ...] = ("repromatrix",)) -> list[list[str]]:
    """Every command line of ``programs`` in the page's shell blocks, as argv."""
    starts = tuple(f"{p} " for p in programs)
    out = []
    for _fence, tag, block in FENCE.findall(COMMENT.sub("", text)):
        first = next((line.strip() for line in block.splitlines() if line.strip()), "")
        if tag.lower() not in SHELL_TAGS and not (tag == "" and first.startswith(starts)):
            continue
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            line = line.strip().removeprefix("$ ")
            if line.startswith(starts):
                out.append(shlex.split(line, comments=True))
    return out
