"""A repro as one file that needs only the stack under test (for upstream bug reports).

Host side, pure text. A protocol repro needs ``protocol.py`` and the ``_*.py``
helpers beside it; the export embeds them as modules ahead of the repro, so an
upstream maintainer runs ``python <id>.py`` without this repository. It prints
the repro's stage lines and exits 0 on ``pass``, 1 on ``fail`` (the bug
reproduced) and 125 otherwise (cannot tell), the ``git bisect run`` convention,
so the export itself also works with ``repromatrix bisect --script``.

A generated script repro (``plain.py``) exports as the user's own script. The export's
frame is ``_one_file.py``, a real (linted) file.
"""

from __future__ import annotations

import ast
from pathlib import Path

from repromatrix.config.catalog import user_helpers

from .plain import read_wrapper

FRAME = Path(__file__).with_name("_one_file.py")  # container side: the export's frame


def literal(text: str) -> str:
    """``text`` as a readable Python literal: a raw triple-quoted string where possible."""
    for quote in ("'''", '"""'):
        if quote not in text and not text.endswith("\\") and not text.endswith(quote[0]):
            return f"r{quote}{text}{quote}"
    return repr(text)


def export(repro_path: Path | str, harness_dir: Path, title: str = "") -> tuple[str, str]:
    """(file name, text) of the one-file form of the repro at ``repro_path``."""
    path = Path(repro_path)
    script = read_wrapper(path)
    if script is not None:
        return script.name, script.source
    name = path.name
    modules = [harness_dir / "protocol.py", *sorted(harness_dir.glob("_*.py")),
               *user_helpers(path.parent, harness_dir)]
    frame = _frame().replace("`<rid>`", f"`{path.stem}`", 1) \
        .replace("python <name>", f"python {name}", 1)
    return name, _fill(frame, {
        "title": comment(title or path.stem),
        "modules": "".join(f"_module({mod.stem!r}, {literal(mod.read_text())})\n"
                           for mod in modules),
        "repro": f"__file__ = {name!r}\n_REPRO = {literal(path.read_text())}\n"})


def comment(text: str) -> str:
    """``text`` as Python comment lines: a title of several lines (a repro's META title
    holding a newline) stays a comment, never code."""
    return "".join(f"# {line}".rstrip() + "\n" for line in text.splitlines() or [""])


def _frame() -> str:
    """``_one_file.py`` without its docstring (it speaks to this project, not to the reader)."""
    text = FRAME.read_text(encoding="utf-8")
    doc = ast.parse(text).body[0]
    lines = text.splitlines(keepends=True)
    return "".join(lines[:doc.lineno - 1] + lines[doc.end_lineno:])


def _fill(frame: str, blocks: dict[str, str]) -> str:
    """``frame`` with each ``# <block>`` line, through its ``# </block>`` line where the frame
    has one, replaced by the block's content (``blocks`` in frame order). Only the frame is
    searched for markers, so content holding a marker's text (a helper with a ``# <repro>``
    line) is never cut."""
    out, rest = [], frame
    for block, content in blocks.items():
        head, rest = rest.split(f"# <{block}>\n", 1)
        end = f"# </{block}>\n"
        if end in rest:
            rest = rest.split(end, 1)[1]
        out += [head, content]
    return "".join(out) + rest
