"""Stages: one named step of a repro, the evidence and checks it records, and how it ends early.

Part of the repro protocol (``protocol.py`` re-exports every public name here). A stage
function receives its ``Stage`` to note evidence, check outputs (``check_close``: the
numeric check a pass needs) and skip. Standard library only (tensors are only touched
through the objects a repro hands in), Python 3.8+.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

from _requirements import requirement_reason

ROLES = ("main", "workaround", "info")


class Skip(Exception):
    """Raised inside a stage to end it as ``skip`` with a reason."""


class CheckFailed(AssertionError):
    """A stage's check did not hold (an output differed, a precondition broke)."""


class Stage:
    """One named step: a repro's stage function receives it to record evidence and checks."""

    def __init__(self, name: str, role: str = "main") -> None:
        if role not in ROLES:
            raise ValueError("role must be one of %s" % (ROLES,))
        self.name = name
        self.role = role
        self.status = ""
        self.message = ""
        self.evidence: Dict[str, Any] = {}
        self.checks: List[Dict[str, Any]] = []
        self.signature: Optional[str] = None
        self.traceback = ""
        self.duration_s = 0.0
        self.standins: List[str] = []  # what was stood in while it ran (_standin.py)

    def note(self, key: str, value: Any) -> None:
        """Record a piece of evidence (kept JSON-safe)."""
        self.evidence[key] = _jsonable(value)

    def skip(self, reason: str) -> None:
        raise Skip(reason)

    def require(self, *reqs: str) -> None:
        """Skip this stage unless every requirement holds."""
        for req in reqs:
            reason = requirement_reason(req)
            if reason:
                raise Skip(reason)

    def check(self, condition: Any, what: str, **evidence: Any) -> None:
        """A non-numerical assertion; raises ``CheckFailed`` when it does not hold."""
        ok = bool(condition)
        entry = {"what": what, "ok": ok, "numeric": False}
        entry.update({k: _jsonable(v) for k, v in evidence.items()})
        self.checks.append(entry)
        if not ok:
            raise CheckFailed("check failed: %s %s" % (what, _brief(evidence)))

    def check_close(self, actual: Any, expected: Any, what: str = "output vs eager",
                    rtol: float = 1e-3, atol: float = 1e-4) -> float:
        """Check tensors (or nested tuples/lists of them) agree within tolerance.

        |actual - expected| <= atol + rtol * |expected| elementwise, shapes
        equal. Returns the largest absolute difference.
        """
        pairs = list(_flatten_pairs(actual, expected))
        worst, ok, why = 0.0, True, ""
        for a, e in pairs:
            if tuple(a.shape) != tuple(e.shape):
                ok, why = False, "shape %s != %s" % (tuple(a.shape), tuple(e.shape))
                break
            a32, e32 = a.detach().float().cpu(), e.detach().float().cpu()
            diff = (a32 - e32).abs()
            if diff.numel():
                worst = max(worst, float(diff.max().item()))
                if not bool((diff <= atol + rtol * e32.abs()).all().item()):
                    ok, why = False, "values differ beyond tolerance"
        entry = {"what": what, "ok": ok and bool(pairs), "numeric": True, "tensors": len(pairs),
                 "max_abs_diff": worst, "rtol": rtol, "atol": atol}
        self.checks.append(entry)
        if not pairs:
            raise CheckFailed("check_close(%s): no tensors to compare" % (what,))
        if not ok:
            raise CheckFailed("check_close(%s): %s (max abs diff %.3g, rtol %g, atol %g)"
                              % (what, why, worst, rtol, atol))
        return worst

    @property
    def checked_numerically(self) -> bool:
        return any(c["numeric"] and c["ok"] for c in self.checks)

    def to_dict(self) -> Dict[str, Any]:
        d = {"name": self.name, "role": self.role, "status": self.status,
             "duration_s": round(self.duration_s, 3), "message": self.message,
             "evidence": self.evidence, "checks": self.checks, "standins": list(self.standins)}
        if self.signature:
            d["signature"] = self.signature
        return d


def _flatten_pairs(a: Any, e: Any) -> Iterable[Tuple[Any, Any]]:
    if isinstance(a, (list, tuple)) and isinstance(e, (list, tuple)):
        if len(a) != len(e):
            raise CheckFailed("check_close: %d outputs vs %d expected" % (len(a), len(e)))
        for x, y in zip(a, e):
            for pair in _flatten_pairs(x, y):
                yield pair
    elif isinstance(a, dict) and isinstance(e, dict):
        for k in sorted(e):
            for pair in _flatten_pairs(a.get(k), e[k]):
                yield pair
    elif hasattr(a, "shape") and hasattr(e, "shape"):
        yield a, e
    else:
        raise CheckFailed("check_close: cannot compare %s with %s" % (type(a).__name__, type(e).__name__))


def _brief(evidence: Dict[str, Any]) -> str:
    return ", ".join("%s=%s" % (k, v) for k, v in evidence.items())


def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set)):
        return [_jsonable(x) for x in v]
    return str(v)
