"""Why an environment could not be built: the cause and the fix, read from the build log.

Images and venv builds fail for reasons that have nothing to do with the bug
under test: a TLS-intercepting proxy, no DNS, a refused connection, a version
that does not exist on the index, a full disk, memory. ``diagnose`` names the
first such cause found in a log and what to do about it, so a ``broken`` cell
and the one-line summary say it instead of a bare exit code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Diagnosis:
    cause: str
    fix: str

    def __str__(self) -> str:
        return f"{self.cause}; {self.fix}"


_RULES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"CERTIFICATE_VERIFY_FAILED|certificate verify failed|invalid peer certificate|"
                r"self[- ]signed certificate|unable to get local issuer certificate", re.I),
     "TLS certificate verification failed (a TLS-intercepting proxy?)",
     "give the proxy's CA bundle with --ca-bundle PEM or defaults.ca_bundle (the host's bundle "
     "is forwarded by default unless --ca-bundle none)"),
    (re.compile(r"Temporary failure in name resolution|Name or service not known|"
                r"Could not resolve host|nodename nor servname|no such host|"
                r"failed to lookup address|dns error", re.I),
     "the package index's host name could not be resolved (no DNS or no network)",
     "check the network, or use a local wheelhouse (--find-links DIR) or a reachable mirror "
     "(defaults.extra_index_urls)"),
    (re.compile(r"Connection refused|Network is unreachable|Connection timed out|"
                r"Read timed out|Max retries exceeded", re.I),
     "the package index could not be reached (connection refused, timed out or no route)",
     "check the proxy settings (HTTPS_PROXY) and the network, or use --find-links DIR"),
    (re.compile(r"No space left on device", re.I),
     "the disk is full",
     "free space (`docker system prune`, old venvs under the venv cache) and run again"),
    (re.compile(r"MemoryError|Cannot allocate memory|out of memory", re.I),
     "the build ran out of memory",
     "give the builder more memory, or build fewer environments at once"),
    (re.compile(r"No matching distribution found for (\S+)|"
                r"Because (\S+==\S+) was not found in the package registry|"
                r"no version of (\S+==\S+)", re.I),
     "a pinned version does not exist on the configured indexes: {0}",
     "check the stack's pins and its CUDA index (`index:`), or add the index that has it"),
)


def diagnose(log_text: str) -> Diagnosis | None:
    """The first known cause of a failed build in ``log_text``, or None."""
    for pattern, cause, fix in _RULES:
        found = pattern.search(log_text or "")
        if found:
            named = next((g for g in found.groups() if g), "") if found.groups() else ""
            return Diagnosis(cause.format(named.rstrip(".,;:")), fix)
    return None


def explain(reason: str, log_text: str, log_path: object | None = None) -> str:
    """``reason`` with the diagnosed cause and fix, and where the log is."""
    found = diagnose(log_text)
    where = f" (log: {log_path})" if log_path else ""
    return f"{reason} — {found}{where}" if found else f"{reason}{where}"
