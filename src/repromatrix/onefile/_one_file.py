#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# <title>
# One-file export of the repromatrix repro `<rid>`: needs only the stack under test.
# Run: python <name>   -> exit 0 pass (bug absent), 1 fail (bug reproduced), 125 cannot tell.
"""Container side: the frame of a repro exported as one file (``standalone.py``), for
upstream bug reports. Standard library only, Python 3.8+. The host never imports this
file: it fills the ``<...>`` placeholders of the comment lines above, writes one
``_module(...)`` line per embedded module where the ``<modules>`` block is, and the
repro's own source where the ``<repro>`` block is (placeholders, so this file lints).
"""
import importlib.abc as _abc
import importlib.util as _util
import json as _json
import os as _os
import sys as _sys
import tempfile as _tempfile

_SOURCES = {}


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


# <modules>
_module("protocol", "def main(meta, signatures, body, argv=None):\n    body(None)\n")
# </modules>

_protocol = __import__("protocol")
_protocol_main = _protocol.main


def _main_with_exit_code(meta, signatures, body, argv=None):
    fd, path = _tempfile.mkstemp(suffix=".json")
    _os.close(fd)
    _protocol_main(meta, signatures, body, ["--result", path])
    with open(path) as f:
        status = _json.load(f)["status"]
    _os.unlink(path)
    _sys.exit({"pass": 0, "fail": 1}.get(status, 125))


_protocol.main = _main_with_exit_code
# <repro>
__file__ = "repro.py"
_REPRO = "pass\n"
# </repro>
exec(compile(_REPRO, __file__, "exec"))
