"""Bisect a repro across released versions (`repromatrix bisect`).

``search`` is the pure, stable bisection; ``candidates`` turns an axis of the
compatibility table into stacks; ``report`` formats the outcome; ``command``
runs each probe as a normal cell through the run stage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .command import BisectRequest, main

__all__ = ["BisectRequest", "main"]


def __getattr__(name: str) -> Any:
    """``BisectRequest`` and ``main``, imported when first asked for: every command's parser
    reads ``candidates.AXES`` and ``command`` brings the run stage with it (about 0.13 s of
    each command's start)."""
    if name in __all__:
        from . import command

        return getattr(command, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
