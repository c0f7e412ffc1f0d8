"""Bisect a repro across released versions (`repromatrix bisect`).

``search`` is the pure, stable bisection; ``candidates`` turns an axis of the
compatibility table into stacks; ``report`` formats the outcome; ``command``
runs each probe as a normal cell through the run stage.
"""

from __future__ import annotations

from .command import BisectRequest, main

__all__ = ["BisectRequest", "main"]
