"""A repro as one file that needs only the stack under test (for upstream bug reports).

Host side, pure text. A protocol repro needs ``protocol.py`` and the ``_*.py``
helpers beside it; the export embeds them as modules ahead of the repro, so an
upstream maintainer runs ``python <id>.py`` without this repository. It prints
the repro's stage lines and exits 0 on ``pass``, 1 on ``fail`` (the bug
reproduced) and 125 otherwise (cannot tell), the ``git bisect run`` convention,
so the export itself also works with ``repromatrix bisect --script``.

A generated script repro (``script.py``) exports as the user's own script.
"""

from __future__ import annotations

from pathlib import Path

from repromatrix.config.catalog import user_helpers

from .plain import read_wrapper

HEAD = '''#!/usr/bin/env python3
# {title}
# One-file export of the repromatrix repro `{rid}`: needs only the stack under test.
# Run: python {name}   -> exit 0 pass (bug absent), 1 fail (bug reproduced), 125 cannot tell.
import importlib.abc as _abc
import importlib.util as _util
import json as _json
import os as _os
import sys as _sys
import tempfile as _tempfile

_SOURCES = {{}}


class _Embedded(_abc.MetaPathFinder, _abc.Loader):
    """Imports the modules embedded below, whatever order they import each other in."""

    def find_spec(self, name, path, target=None):
        return _util.spec_from_loader(name, self) if name in _SOURCES else None

    def create_module(self, spec):
        return None

    def exec_module(self, mod):
        mod.__file__ = mod.__name__ + ".py"
        exec(compile(_SOURCES[mod.__name__], mod.__file__, "exec"), mod.__dict__)


_sys.meta_path.insert(0, _Embedded())


def _module(name, source):
    _SOURCES[name] = source

'''

TAIL = '''

_protocol = __import__("protocol")
_protocol_main = _protocol.main


def _main_with_exit_code(meta, signatures, body, argv=None):
    fd, path = _tempfile.mkstemp(suffix=".json")
    _os.close(fd)
    _protocol_main(meta, signatures, body, ["--result", path])
    with open(path) as f:
        status = _json.load(f)["status"]
    _os.unlink(path)
    _sys.exit({{"pass": 0, "fail": 1}}.get(status, 125))


_protocol.main = _main_with_exit_code
__file__ = {name!r}
exec(compile({repro}, {name!r}, "exec"))
'''


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
    parts = [HEAD.format(title=title or path.stem, rid=path.stem, name=name)]
    for mod in modules:
        parts.append(f"_module({mod.stem!r}, {literal(mod.read_text())})\n")
    parts.append(TAIL.format(name=name, repro=literal(path.read_text())))
    return name, "".join(parts)
