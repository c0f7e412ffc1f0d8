"""What the last render wrote into an ``--out`` folder, so the next render rewrites only what changed.

Flow: report -> **report_state** -> out/. ``out/.render-state.json`` (not part of
the page) remembers each file the report wrote: its size and mtime. ``RenderState.write``
leaves a file alone when the file on disk is still the one written (same size and mtime)
and holds the new bytes already. For
``results.json.gz`` it also remembers how many records the file lists, a hash chain
over their digests and where the list ends, so a render whose records begin with
the same ones appends the rest instead of writing the whole file again. A detail chunk
(``data/c<N>.js``) is made only when the digest of what it is made from (its cells' pieces, their scopes)
changed (``write_made``): an unchanged one is not even read from the store, and a
changed one is written without hashing its bytes.

The page a render leaves is byte for byte what a render into an empty folder writes;
the state file is the only difference, and deleting it only costs a full write.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

STATE_NAME = ".render-state.json"
# Bumped whenever the bytes a render writes for the same records change (2: records in an
# older schema are written by orjson; 3: NaN and Infinity kept as text; 4: files made from
# kept pieces remember the digest of what they were made from; 5: a lone surrogate in a
# record is written as its visible escape; 6: the records gzip-compressed, results.json.gz,
# and the detail chunks deflated), so an --out folder of another format is written anew.
FORMAT = 6


class RenderState:
    """The files of one ``--out`` folder as the last render left them."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.path = out / STATE_NAME
        self._prefix = str(out) + os.sep if os.sep == "/" else "\0"  # (a POSIX path's name)
        self.files: dict[str, list[Any]] = {}
        self.results: dict[str, Any] = {}
        self.written: set[str] = set()  # names this render wrote or kept
        self.rewritten: list[str] = []  # names this render actually wrote
        with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if data.get("format") == FORMAT:
                self.files = {str(k): list(v) for k, v in data["files"].items()}
                self.results = dict(data.get("results") or {})

    def name(self, path: Path) -> str:
        text = str(path)
        if text.startswith(self._prefix):  # (pathlib's relative_to: a tenth of a ms each)
            return text[len(self._prefix):]
        return path.relative_to(self.out).as_posix()

    def unchanged(self, path: Path) -> bool:
        """Whether ``path`` is still the file the last render wrote (same size and mtime)."""
        known = self.files.get(self.name(path))
        try:
            st = path.stat()
        except OSError:
            return False
        return known is not None and known[1:3] == [st.st_size, st.st_mtime_ns]

    def write(self, path: Path, data: str | bytes) -> bool:
        """Write ``data`` to ``path`` unless the file already holds it; True when written."""
        raw = data.encode("utf-8") if isinstance(data, str) else data
        name = self.name(path)
        self.written.add(name)
        # compared with the file's bytes, not by a hash of them: most writes are of pages
        # that changed (another size: nothing read) or of a new folder's (nothing to read)
        if self.unchanged(path) and self.files[name][1] == len(raw):
            with contextlib.suppress(OSError):
                if path.read_bytes() == raw:
                    return False
        path.write_bytes(raw)
        self.noted(path, "")
        return True

    def kept(self, path: Path, source: str) -> bool:
        """Whether ``path`` is still the file the last render made from ``source`` (a digest
        of every input of its bytes, see ``write_made``): then it counts as written."""
        known = self.files.get(self.name(path))
        if known is not None and known[3:] == [source] and self.unchanged(path):
            self.written.add(self.name(path))
            return True
        return False

    def holds(self, path: Path, source: str) -> bool:
        """``kept`` without counting the file as written: whether it may be read back as
        made from ``source``."""
        known = self.files.get(self.name(path))
        return known is not None and known[3:] == [source] and self.unchanged(path)

    def write_made(self, path: Path, source: str, data: str | bytes) -> bool:
        """Write ``data``, made from ``source`` (``kept``): made only because its source
        changed, so written without hashing it to compare (a detail chunk's bytes are most of
        a cold render's; one rarely comes out the same from another source). True."""
        raw = data.encode("utf-8") if isinstance(data, str) else data
        path.write_bytes(raw)
        self.noted(path, "")
        self.files[self.name(path)][3:] = [source]
        return True

    def noted(self, path: Path, digest: str) -> None:
        """``path`` was just written with content hashing to ``digest``."""
        name = self.name(path)
        st = path.stat()
        self.files[name] = [digest, st.st_size, st.st_mtime_ns]
        self.written.add(name)
        self.rewritten.append(name)

    def remove_others(self, folder: Path, pattern: str) -> None:
        """Delete the files in ``folder`` matching ``pattern`` that this render did not write."""
        for path in folder.glob(pattern):
            name = self.name(path)
            if name not in self.written:
                with contextlib.suppress(OSError):
                    path.unlink()
                self.files.pop(name, None)

    def save(self) -> None:
        """Write the state (only what this render wrote or kept)."""
        files = {k: v for k, v in sorted(self.files.items()) if k in self.written}
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps({"format": FORMAT, "files": files, "results": self.results}),
                       encoding="utf-8")
        os.replace(tmp, self.path)
