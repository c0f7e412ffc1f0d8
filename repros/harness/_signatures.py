"""Signatures: a known bug's fingerprint as data, and how it is matched.

Part of the repro protocol (``protocol.py`` re-exports every public name here): a
``Signature`` is matched against a live exception (its chain, its text, the torch-tensorrt
frame it passed through), against recorded text, or against a death by a signal.
Standard library only, Python 3.8+.
"""

from __future__ import annotations

import os
import re
import traceback
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from _versions import when_matches

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Signature:
    """A known bug's fingerprint, as data.

    id       short name recorded in the result when it matches
    exc      exception type name(s), simple ('RuntimeError') or qualified
             ('torch.jit.Error'); any exception in the chain may match
    pattern  regex (or list of regexes, all required) searched in the text of
             the exception chain ('Type: message' lines, ANSI codes removed),
             or, for a signal signature, in the process's output tail
    stage    stage name(s) the signature applies to (None: any stage)
    signal   e.g. 'SIGSEGV': the signature describes a process death
    when     {package: spec}: only on these versions (e.g. {'torch': '<2.13'})
    log      regex (or list, all required) searched in what an isolated stage
             printed (the TensorRT logger reports errors there, not in the
             exception); only isolated stages have that output
    frame    regex searched in the innermost torch-tensorrt frame the exception
             passed through ('torch_tensorrt/ts/_Device.py:66 in _from: <source
             line>'): where the bug is. Only signatures with a frame can match a
             stage that runs on stand-ins (``r.stage(..., standins=[...])``)
    """

    def __init__(self, id: str, exc: Union[str, Sequence[str], None] = None,
                 pattern: Union[str, Sequence[str], None] = None,
                 stage: Union[str, Sequence[str], None] = None,
                 signal: Optional[str] = None, when: Optional[Dict[str, str]] = None,
                 note: str = "", log: Union[str, Sequence[str], None] = None,
                 frame: Optional[str] = None) -> None:
        self.id = id
        self.exc = _tuple(exc)
        self.patterns = _tuple(pattern)
        self.stage = _tuple(stage)
        self.signal = signal
        self.when = dict(when or {})
        self.note = note
        self.logs = _tuple(log)
        self.frame = frame
        for p in self.patterns + self.logs + _tuple(frame):
            re.compile(p)

    def to_dict(self) -> Dict[str, Any]:
        return {"id": self.id, "exc": list(self.exc), "pattern": list(self.patterns),
                "stage": list(self.stage), "signal": self.signal, "when": self.when,
                "note": self.note, "log": list(self.logs), "frame": self.frame}

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> Signature:
        return cls(d["id"], exc=d.get("exc"), pattern=d.get("pattern"), stage=d.get("stage"),
                   signal=d.get("signal"), when=d.get("when"), note=d.get("note", ""),
                   log=d.get("log"), frame=d.get("frame"))

    def _applies(self, stage: Optional[str], versions: Optional[Dict[str, Optional[str]]]) -> bool:
        if self.stage and stage not in self.stage:
            return False
        return when_matches(self.when, versions)

    def _text_matches(self, text: str, log: str = "") -> bool:
        return all(re.search(p, text, re.S) for p in self.patterns) \
            and all(re.search(p, strip_ansi(log), re.S) for p in self.logs)

    def matches_exception(self, exc: BaseException, stage: Optional[str] = None,
                          versions: Optional[Dict[str, Optional[str]]] = None, log: str = "") -> bool:
        """Whether this (non-signal) signature describes ``exc`` raised in ``stage``
        (``log``: what the stage printed, for ``log`` patterns)."""
        if self.signal or not self._applies(stage, versions):
            return False
        if self.exc and not any(_type_matches(e, self.exc) for e in exception_chain(exc)):
            return False
        if self.frame and not re.search(self.frame, raised_in(exc) or ""):
            return False
        return self._text_matches(exception_text(exc), log)

    def matches_text(self, exc_types: Sequence[str], text: str, stage: Optional[str] = None,
                     versions: Optional[Dict[str, Optional[str]]] = None, log: str = "",
                     frame: str = "") -> bool:
        """Match recorded text (type names + message, and the recorded ``raised_in``
        frame) instead of a live exception."""
        if self.signal or not self._applies(stage, versions):
            return False
        if self.frame and not re.search(self.frame, frame):
            return False
        if self.exc and not any(_name_matches(t, self.exc) for t in exc_types):
            return False
        return self._text_matches(strip_ansi(text), log)

    def matches_signal(self, signal_name: str, output: str, stage: Optional[str] = None,
                       versions: Optional[Dict[str, Optional[str]]] = None) -> bool:
        """Whether this signature describes a death by ``signal_name`` with ``output``."""
        if not self.signal or self.signal != signal_name or not self._applies(stage, versions):
            return False
        return self._text_matches(strip_ansi(output))


def _tuple(v: Union[str, Sequence[str], None]) -> Tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, str):
        return (v,)
    return tuple(v)


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def exception_chain(exc: BaseException) -> List[BaseException]:
    """``exc`` and its causes/contexts, outermost first, without cycles."""
    out: List[BaseException] = []
    cur: Optional[BaseException] = exc
    while cur is not None and all(cur is not e for e in out):
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def type_names(exc: BaseException) -> List[str]:
    """Simple and qualified names of the exception's classes (MRO), chain included."""
    names: List[str] = []
    for e in exception_chain(exc):
        for cls in type(e).__mro__:
            names.extend([cls.__name__, "%s.%s" % (cls.__module__, cls.__qualname__)])
    return names


def _type_matches(exc: BaseException, wanted: Tuple[str, ...]) -> bool:
    for cls in type(exc).__mro__:
        if cls.__name__ in wanted or "%s.%s" % (cls.__module__, cls.__qualname__) in wanted:
            return True
    return False


def _name_matches(name: str, wanted: Tuple[str, ...]) -> bool:
    return name in wanted or name.rsplit(".", 1)[-1] in wanted


def exception_text(exc: BaseException) -> str:
    """'module.Type: message' for every exception in the chain, ANSI codes removed."""
    lines = []
    for e in exception_chain(exc):
        cls = type(e)
        lines.append("%s.%s: %s" % (cls.__module__, cls.__qualname__, e))
    return strip_ansi("\n".join(lines))


def raised_in(exc: BaseException, package: str = "torch_tensorrt") -> Optional[str]:
    """'torch_tensorrt/<file>:<line> in <function>: <source line>' of the innermost frame of
    ``package`` the exception (or the first of its chain that has one) passed through."""
    marker = os.sep + package + os.sep
    for e in exception_chain(exc):
        frames = [f for f in traceback.extract_tb(e.__traceback__) if marker in f.filename]
        if frames:
            f = frames[-1]
            where = package + os.sep + f.filename.rsplit(marker, 1)[1]
            return "%s:%s in %s: %s" % (where, f.lineno, f.name, (f.line or "").strip())
    return None


def match_exception(signatures: Iterable[Signature], exc: BaseException, stage: Optional[str] = None,
                    versions: Optional[Dict[str, Optional[str]]] = None,
                    log: str = "") -> Optional[Signature]:
    """The first signature describing ``exc`` in ``stage``, or None."""
    for sig in signatures:
        if sig.matches_exception(exc, stage, versions, log):
            return sig
    return None


def match_signal(signatures: Iterable[Signature], signal_name: str, output: str,
                 stage: Optional[str] = None,
                 versions: Optional[Dict[str, Optional[str]]] = None) -> Optional[Signature]:
    """The first signal signature describing a death by ``signal_name``, or None."""
    for sig in signatures:
        if sig.matches_signal(signal_name, output, stage, versions):
            return sig
    return None
