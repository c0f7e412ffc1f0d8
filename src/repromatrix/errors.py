"""Every exit code, and the harness faults that end a command with one; faults are caught
only at the entry point (cli.main).

    HarnessError (1, unexpected harness fault)
    ├── UsageError (2, bad input: config file, arguments)
    │   └── ConfigError (2, names file, key path and value)
    ├── InfraError (3, infrastructure unavailable)
    │   ├── EngineUnavailable (the engine cannot work on this machine at all)
    │   │   └── DockerUnavailable
    │   ├── BaseImageMissing
    │   └── ResultsBusy (another run holds the results folder)

A failing repro is a result, never an exception. A failed image build is not an
exception either: it turns that stack's cells into `broken` records.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from enum import IntEnum

from repromatrix.textsafe import bounded

MESSAGE_LIMIT = 4000  # an error message never echoes a whole huge value
KEY_LIMIT = 200


class Exit(IntEnum):
    """repromatrix's exit codes (docs/command-line.md "Exit codes" lists the same; a test holds
    them equal)."""

    OK = 0  # done: bugs reproducing is a normal outcome
    FAULT = 1  # an unexpected harness fault
    BEHIND = 1  # `compat update --check`: the table or matrix is behind the index
    AFFECTED = 1  # `check`: a known bug affects the environment
    USAGE = 2  # bad input: matrix file, arguments
    INFRA = 3  # infrastructure unavailable, or an environment failed in `build`
    CONTRADICTION = 4  # `report --check`: a cell contradicts its documented expectation
    INTERRUPTED = 130  # Ctrl-C, SIGTERM: recorded results are kept

    @property
    def meaning(self) -> str:
        """A few words for a log line (nox says them when repromatrix fails)."""
        return _MEANINGS[self]


_MEANINGS = {Exit.OK: "done", Exit.FAULT: "a harness fault, or `compat update --check`: behind, "
                                          "or `check`: a known bug affects it",
             Exit.USAGE: "bad input", Exit.INFRA: "infrastructure unavailable",
             Exit.CONTRADICTION: "a cell contradicts its expectation",
             Exit.INTERRUPTED: "interrupted"}


class HarnessError(Exception):
    exit_code = Exit.FAULT


class UsageError(HarnessError):
    exit_code = Exit.USAGE


class ConfigError(UsageError):
    """A bad value in a config file, located as `file: key.path: message`."""

    def __init__(self, message: str, *, file: str | None = None, key: str | None = None) -> None:
        key = bounded(key, KEY_LIMIT) if key else key
        message = bounded(message, MESSAGE_LIMIT)
        self.file, self.key, self.detail = file, key, message
        where = ": ".join(p for p in (file, key) if p)
        super().__init__(f"{where}: {message}" if where else message)


class InfraError(HarnessError):
    exit_code = Exit.INFRA


class EngineUnavailable(InfraError):
    """An engine that cannot serve any stack here (no daemon, no uv): a fallback chain
    (``--backend docker|venv``) moves on to its next engine for every stack at once."""


class DockerUnavailable(EngineUnavailable):
    pass


class BaseImageMissing(InfraError):
    missing: dict[str, list[str]] = {}  # public base image -> the stack ids that need it


class ResultsBusy(InfraError):
    """Another `repromatrix run` holds the results folder's lock."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """' (did you mean "x"?)' when a close match exists, else ''.

    A long word (a pasted blob, not a typo) gets no suggestion: difflib's cost
    grows with its length.
    """
    if len(word) > 100:
        return ""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f' (did you mean "{close[0]}"?)' if close else ""
