"""Package-index preflight: every index a build will use answers, or exit 3 in seconds.

Run stage, before any build (called from the engines' ``preflight``). The indexes
of a stack are exactly the ones its install command gets (``images.index_options``,
plus PyPI when no ``--index-url`` replaces it). Each distinct host is checked once,
all hosts in parallel, from this machine, which is where environments are built
(docker builds use the host network; venvs are made on the host): the name
resolves (DNS), a TCP connection opens, and for https a TLS handshake succeeds with
the CA bundle the build trusts (the system store plus ``Settings.ca_bundle``).
Each step has a short timeout, so a run whose indexes are all unreachable ends
within seconds instead of after pip's retries, naming the host, the stacks that
need it and the fixes that apply.
"""

from __future__ import annotations

import os
import shlex
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from repromatrix.errors import InfraError, UsageError
from repromatrix.model import Settings, Stack

from .images import PYPI_INDEX, TORCH_INDEX, index_options, requirements

CHECK_TIMEOUT_S = 5.0  # each of DNS, TCP and TLS; all hosts are checked at once
RECHECK_AFTER_S = 120.0  # a host's outcome is reused this long (one run asks per stack)
_outcomes: dict[tuple[str, int, bool, str | None], tuple[str | None, float]] = {}
_outcomes_lock = threading.Lock()
_said: set[str] = set()
NVIDIA_INDEX_HOST = "pypi.nvidia.com"


class IndexUnreachable(InfraError):
    """A package index a planned build needs does not answer (exit 3)."""


@dataclass(frozen=True)
class IndexUse:
    """One index url one stack's install uses, and in which role."""

    url: str
    role: str  # "index" (replaces PyPI), "pypi", "extra" (--extra-index-url), "find-links"

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or ""

    @property
    def port(self) -> int:
        parts = urlsplit(self.url)
        return parts.port or (443 if parts.scheme == "https" else 80)

    @property
    def tls(self) -> bool:
        return urlsplit(self.url).scheme == "https"


@dataclass
class HostCheck:
    """Every use of one host:port by the planned stacks, and what its check found."""

    host: str
    port: int
    tls: bool
    uses: dict[str, list[str]] = field(default_factory=dict)  # url -> stack ids
    roles: set[str] = field(default_factory=set)
    problem: str | None = "no answer"


def stack_indexes(stack: Stack, settings: Settings, default_index: str = PYPI_INDEX) -> list[IndexUse]:
    """The remote indexes the stack's install command uses (none when it installs nothing);
    ``default_index`` is what the installer uses when no ``--index-url`` is given."""
    if stack.kind not in ("pip", "ngc") or not requirements(stack, settings):
        return []
    words = [w for opt in index_options(stack, settings) for w in shlex.split(opt)]
    uses: list[IndexUse] = []
    replaced = False
    for flag, value in zip(words[::2], words[1::2], strict=True):  # flag/value pairs
        if flag == "--index-url":
            uses.append(IndexUse(value, "index"))
            replaced = True
        elif flag == "--extra-index-url":
            uses.append(IndexUse(value, "pypi" if value == PYPI_INDEX else "extra"))
        elif flag == "--find-links" and "://" in value and not value.startswith("file://"):
            uses.append(IndexUse(value, "find-links"))
    if not replaced:
        uses.insert(0, IndexUse(default_index, "pypi"))
    return [u for u in uses if u.host]


def check_indexes(stacks: Sequence[Stack], settings: Settings, *, where: str,
                  optional_extras: bool = False, default_index: str = PYPI_INDEX,
                  log: Callable[[str], None] = print, timeout: float = CHECK_TIMEOUT_S) -> None:
    """Raise IndexUnreachable naming each unreachable host, its stacks and the fixes.

    ``optional_extras``: an unreachable ``--extra-index-url`` is only said (the venv
    engine leaves such an index out of its install); every other use is required."""
    hosts: dict[tuple[str, int], HostCheck] = {}
    for stack in stacks:
        for use in stack_indexes(stack, settings, default_index):
            check = hosts.setdefault((use.host, use.port), HostCheck(use.host, use.port, use.tls))
            check.uses.setdefault(use.url, []).append(stack.id)
            check.roles.add(use.role)
    if not hosts:
        return
    _check_cached(list(hosts.values()), settings.ca_bundle, timeout)
    failed = [h for h in hosts.values() if h.problem]
    required = [h for h in failed if not (optional_extras and h.roles <= {"extra"})]
    for h in failed:
        line = f"extra index {', '.join(h.uses)} is unreachable ({h.problem}): left out of the installs"
        if h not in required and line not in _said:
            _said.add(line)  # once a process: a fallback chain asks stack by stack
            log(line)
    if required:
        raise IndexUnreachable(unreachable_message(required, where))


def unreachable_message(failed: Sequence[HostCheck], where: str) -> str:
    lines = [f"{len(failed)} package index host(s) cannot be reached from {where}; "
             "nothing was built:"]
    for h in failed:
        lines.append(f"  {h.host}:{h.port}: {h.problem}")
        for url, ids in h.uses.items():
            lines.append(f"    {describe(url, h.host)} {url}, needed by {_stacks(ids)}")
        lines += [f"    fix: {fix}" for fix in fixes(h)]
    return "\n".join(lines)


def describe(url: str, host: str) -> str:
    if url.startswith(TORCH_INDEX):
        return "the PyTorch wheel index"
    if url == PYPI_INDEX:
        return "PyPI"
    if url == uv_default_index():
        return "uv's default index (UV_DEFAULT_INDEX / UV_INDEX_URL)"
    if host == NVIDIA_INDEX_HOST:
        return "NVIDIA's index"
    return "the index"


def fixes(h: HostCheck) -> list[str]:
    """What the user can change, for each role this host plays."""
    out = []
    if "index" in h.roles:
        out.append("`index: pypi` in the stacks above (PyPI's torch wheels), or `index: <mirror url>`")
    if "extra" in h.roles or "find-links" in h.roles:
        out.append("drop the url from `extra_index_urls` / `find_links` in the matrix's `defaults`, "
                   "or replace it by a mirror there")
    if "pypi" in h.roles:
        out.append("a PyPI mirror in the matrix's `defaults.extra_index_urls`, or a stack "
                   "`index: <mirror url>`")
    out.append("the wheels in a folder: --find-links DIR (or REPROMATRIX_FIND_LINKS)")
    return out


def uv_default_index() -> str:
    """The index uv installs from when none is given: its own setting, else PyPI."""
    return os.environ.get("UV_DEFAULT_INDEX") or os.environ.get("UV_INDEX_URL") or PYPI_INDEX


def _stacks(ids: Sequence[str], limit: int = 4) -> str:
    ids = list(dict.fromkeys(ids))
    more = f" and {len(ids) - limit} more" if len(ids) > limit else ""
    return ", ".join(ids[:limit]) + more


def _check_cached(hosts: Sequence[HostCheck], ca_bundle: str | None, timeout: float) -> None:
    """Check the hosts not checked in the last RECHECK_AFTER_S (a fallback chain asks its
    engines stack by stack: each host is still checked once)."""
    now = time.monotonic()
    todo = []
    with _outcomes_lock:
        for h in hosts:
            seen = _outcomes.get((h.host, h.port, h.tls, ca_bundle))
            if seen is not None and now - seen[1] < RECHECK_AFTER_S:
                h.problem = seen[0]
            else:
                todo.append(h)
    if not todo:
        return
    _check_all(todo, ca_bundle, timeout)
    with _outcomes_lock:
        for h in todo:
            _outcomes[(h.host, h.port, h.tls, ca_bundle)] = (h.problem, time.monotonic())


def _check_all(hosts: Sequence[HostCheck], ca_bundle: str | None, timeout: float) -> None:
    """Check every host in its own daemon thread (a stuck resolver never holds the run)."""
    context = ssl.create_default_context()
    if ca_bundle:
        try:
            context.load_verify_locations(cafile=ca_bundle)
        except (ssl.SSLError, OSError) as exc:
            raise UsageError(f"CA bundle {ca_bundle}: not a readable PEM bundle ({exc})") from None
    threads = [threading.Thread(target=_check_one, args=(h, context, timeout), daemon=True)
               for h in hosts]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 3 * timeout + 1
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))


def _check_one(h: HostCheck, context: ssl.SSLContext, timeout: float) -> None:
    h.problem = f"no answer within {timeout:g}s (name lookup)"
    try:
        infos = socket.getaddrinfo(h.host, h.port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        h.problem = f"DNS: the name does not resolve ({exc.strerror})"
        return
    except OSError as exc:
        h.problem = f"DNS: {exc}"
        return
    family, kind, proto, _, address = infos[0]
    h.problem = f"TCP: no connection to {address[0]} port {h.port} within {timeout:g}s"
    try:
        sock = socket.socket(family, kind, proto)
        sock.settimeout(timeout)
        sock.connect(address)
    except TimeoutError:
        return
    except OSError as exc:
        h.problem = f"TCP: cannot connect to {address[0]} port {h.port} ({exc.strerror or exc})"
        return
    with sock:
        if not h.tls:
            h.problem = None
            return
        h.problem = f"TLS: no handshake with {address[0]} port {h.port} within {timeout:g}s"
        try:
            with context.wrap_socket(sock, server_hostname=h.host):
                h.problem = None
        except ssl.SSLCertVerificationError as exc:
            h.problem = (f"TLS: its certificate is not trusted ({exc.verify_message}); behind a "
                         "TLS-intercepting proxy give its CA bundle: --ca-bundle PEM")
        except TimeoutError:
            return
        except (ssl.SSLError, OSError) as exc:
            h.problem = f"TLS: handshake failed ({exc})"
