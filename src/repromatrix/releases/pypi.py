"""Published package metadata from a Python package index, live or recorded.

Used by ``releases.update`` only. A project's files come from the simple API in its
JSON form (PEP 691): versions, file names, upload times, ``requires-python``, yanked.
A wheel's core metadata (Requires-Dist, Requires-Python) comes from its PEP 658
``.metadata`` file where the index offers one; where it does not (PyPI does not for
these projects as of 2026-11), from the wheel itself, reading only the zip's directory
and its ``METADATA`` member with HTTP range requests (a few hundred KB of a 500 MB wheel).

``LiveIndex`` talks HTTPS through urllib with the host's CA bundle (TLS-intercepting
proxies); ``RecordedIndex`` reads the same answers from a folder that ``Recorder``
wrote (trimmed to what ``releases.update`` reads), so the tests run offline.
"""

from __future__ import annotations

import email.parser
import http.client
import io
import json
import re
import socket
import ssl
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import Any, Protocol

from repromatrix.errors import InfraError

PYPI = "https://pypi.org"
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
TIMEOUT_S = 60
RETRY_WAITS_S = (1.0, 3.0)  # before the second and third try of a request that failed transiently
RANGE_BLOCK = 256 * 1024
METADATA_FIELDS = ("Metadata-Version", "Name", "Version", "Requires-Python", "Requires-Dist")
_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-(?P<py>[^-]+)-(?P<abi>[^-]+)"
                    r"-(?P<plat>[^-]+)\.whl$")


class IndexUnavailable(InfraError):
    """The index could not be reached or answered nonsense (exit 3)."""


@dataclass(frozen=True)
class File:
    """One file of a release as the simple API lists it."""

    filename: str
    url: str
    requires_python: str | None
    upload_time: str | None
    yanked: bool
    core_metadata: bool

    @property
    def wheel_tags(self) -> tuple[str, str, str] | None:
        """(python tag, abi tag, platform tag) of a wheel; None for an sdist."""
        m = _WHEEL.match(self.filename)
        return (m["py"], m["abi"], m["plat"]) if m else None

    def to_json(self) -> dict[str, Any]:
        return {"filename": self.filename, "url": self.url, "requires-python": self.requires_python,
                "upload-time": self.upload_time, "yanked": self.yanked,
                "core-metadata": self.core_metadata}


def parse_simple(name: str, data: Any) -> dict[str, list[File]]:
    """A PEP 691 project page as {version: [File, ...]} (files grouped by their version)."""
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        raise IndexUnavailable(f"the index's page for {name} is not a PEP 691 project page")
    out: dict[str, list[File]] = {v: [] for v in data.get("versions") or () if isinstance(v, str)}
    for f in data["files"]:
        if not isinstance(f, dict) or not isinstance(f.get("filename"), str):
            continue
        version = file_version(name, f["filename"])
        if version is None:
            continue
        meta = f.get("core-metadata", f.get("data-dist-info-metadata", False))
        out.setdefault(version, []).append(File(
            filename=f["filename"], url=str(f.get("url", "")),
            requires_python=f.get("requires-python") or None,
            upload_time=f.get("upload-time") or None, yanked=bool(f.get("yanked")),
            core_metadata=bool(meta)))
    return out


def file_version(project: str, filename: str) -> str | None:
    """The version in a wheel or sdist file name of ``project``; None for anything else."""
    m = _WHEEL.match(filename)
    if m:
        return m["version"]
    stem = re.sub(r"\.(tar\.gz|zip|tar\.bz2)$", "", filename)
    prefix = re.sub(r"[-_.]+", "_", project).lower() + "-"
    norm = re.sub(r"[-_.]+", "_", stem.split("-")[0]).lower() + "-"
    return stem.split("-", 1)[1] if stem != filename and norm == prefix and "-" in stem else None


def parse_metadata(text: str) -> Message:
    """Core metadata (RFC 822 headers) as a Message; read with ``get``/``get_all``."""
    return email.parser.HeaderParser().parsestr(text)


def trim_metadata(text: str) -> str:
    """Only the header lines ``releases.update`` reads (for recording)."""
    msg = parse_metadata(text)
    return "".join(f"{k}: {v}\n" for k in METADATA_FIELDS for v in msg.get_all(k) or ())


class Index(Protocol):
    def project(self, name: str) -> dict[str, list[File]]: ...
    def metadata(self, file: File) -> str: ...


def transient(exc: BaseException) -> bool:
    """Whether a failed request may well succeed if tried again shortly."""
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code == 429 or exc.code >= 500
    if isinstance(exc, http.client.IncompleteRead):  # the connection dropped mid-body
        return True
    reason = getattr(exc, "reason", exc)
    if isinstance(reason, socket.gaierror):
        return reason.errno == socket.EAI_AGAIN  # "temporary failure in name resolution"
    return isinstance(reason, (TimeoutError, ConnectionError))


class LiveIndex:
    """An index over HTTPS (default PyPI), trusting ``cafile`` (the host's CA bundle)."""

    def __init__(self, base: str = PYPI, cafile: str | None = None) -> None:
        self.base = base.rstrip("/")
        self.context = ssl.create_default_context(cafile=cafile)

    def _get(self, url: str, headers: dict[str, str],
             check: Callable[[Any], None] | None = None) -> tuple[bytes, Any]:
        """The body and headers of one GET, the body read in full inside the retries: a
        transient failure (a DNS lookup that timed out, a connection dropped before or while
        the body came, a 5xx or 429) is tried again, twice, before it counts. ``check``
        refuses a response before its body is read."""
        request = urllib.request.Request(url, headers={"User-Agent": "repromatrix", **headers})
        waits = iter(RETRY_WAITS_S)
        while True:
            try:
                with urllib.request.urlopen(request, context=self.context, timeout=TIMEOUT_S) as resp:
                    if check is not None:
                        check(resp)
                    return resp.read(), resp.headers
            except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
                if isinstance(exc, urllib.error.HTTPError):
                    exc.close()
                wait = next(waits, None)
                if wait is None or not transient(exc):
                    reason = getattr(exc, "reason", None) or exc
                    raise IndexUnavailable(f"{url}: {reason}") from None
                time.sleep(wait)

    def project(self, name: str) -> dict[str, list[File]]:
        url = f"{self.base}/simple/{name}/"
        body, _ = self._get(url, {"Accept": SIMPLE_JSON})
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise IndexUnavailable(f"{url}: not JSON ({exc})") from None
        return parse_simple(name, data)

    def metadata(self, file: File) -> str:
        """The wheel's METADATA: its PEP 658 file if offered, else read from the wheel."""
        if file.core_metadata:
            return self._get(file.url + ".metadata", {})[0].decode("utf-8")
        with zipfile.ZipFile(RangeFile(self, file.url)) as zf:  # type: ignore[arg-type]
            names = [n for n in zf.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
            if len(names) != 1:
                raise IndexUnavailable(f"{file.filename}: no single .dist-info/METADATA")
            return zf.read(names[0]).decode("utf-8")

    def read_range(self, url: str, start: int, end: int) -> tuple[bytes, int]:
        """Bytes [start, end] of ``url`` and the file's total size (from Content-Range)."""
        def partial(resp: Any) -> None:  # never read a whole wheel the server sends instead
            if resp.status != 206 or not _TOTAL.search(resp.headers.get("Content-Range", "")):
                raise IndexUnavailable(f"{url}: the server does not answer range requests")

        body, headers = self._get(url, {"Range": f"bytes={start}-{end}"}, partial)
        return body, int(_TOTAL.search(headers.get("Content-Range", ""))[1])


_TOTAL = re.compile(r"/(\d+)$")  # a Content-Range's total size


class RangeFile(io.RawIOBase):
    """A read-only, seekable view of a remote file, fetched in blocks on demand."""

    def __init__(self, index: LiveIndex, url: str) -> None:
        self.index, self.url, self.pos = index, url, 0
        self.blocks: dict[int, bytes] = {}
        first, self.size = index.read_range(url, 0, 0)
        del first

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.pos, 2: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        out = bytearray()
        while self.pos < end:
            block = self.pos // RANGE_BLOCK
            if block not in self.blocks:
                lo = block * RANGE_BLOCK
                hi = min(self.size, lo + RANGE_BLOCK) - 1
                self.blocks[block] = self.index.read_range(self.url, lo, hi)[0]
            data = self.blocks[block][self.pos - block * RANGE_BLOCK:end - block * RANGE_BLOCK]
            if not data:
                break
            out += data
            self.pos += len(data)
        return bytes(out)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


class RecordedIndex:
    """Answers recorded by ``Recorder``: ``<dir>/simple/<name>.json`` and
    ``<dir>/metadata/<wheel file name>.metadata``."""

    def __init__(self, folder: Path | str) -> None:
        self.folder = Path(folder)

    def project(self, name: str) -> dict[str, list[File]]:
        path = self.folder / "simple" / f"{name}.json"
        try:
            return parse_simple(name, json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise IndexUnavailable(f"{path}: {exc}") from None

    def metadata(self, file: File) -> str:
        path = self.folder / "metadata" / f"{file.filename}.metadata"
        try:
            return path.read_text(encoding="utf-8")
        except OSError as exc:
            raise IndexUnavailable(f"{path}: not recorded ({exc.strerror})") from None


class Recorder:
    """Passes through to ``index`` and writes what was read, trimmed, into ``folder``:
    each project page keeps only the files ``keep`` names; metadata keeps the fields read."""

    def __init__(self, index: Index, folder: Path | str) -> None:
        self.index, self.folder = index, Path(folder)
        self.pages: dict[str, dict[str, list[File]]] = {}

    def project(self, name: str) -> dict[str, list[File]]:
        self.pages[name] = self.index.project(name)
        return self.pages[name]

    def metadata(self, file: File) -> str:
        text = self.index.metadata(file)
        out = self.folder / "metadata" / f"{file.filename}.metadata"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(trim_metadata(text), encoding="utf-8")
        return text

    def save_pages(self, keep: dict[str, set[str]]) -> None:
        """Write each project page with only the files named in ``keep[name]``."""
        for name, versions in self.pages.items():
            files = [f.to_json() for fs in versions.values() for f in fs
                     if f.filename in keep.get(name, set())]
            page = {"meta": {"api-version": "1.1"}, "name": name, "versions": list(versions),
                    "files": files}
            out = self.folder / "simple" / f"{name}.json"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(page, indent=1) + "\n", encoding="utf-8")
