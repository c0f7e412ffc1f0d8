"""Fixture: a repro with a signature failure, a skip, a checked pass and a workaround."""
import protocol

META = {"id": "fx_checked", "title": "stdlib-only stages", "upstream": [], "description": "",
        "requires": [], "expect": []}
SIGNATURES = [protocol.Signature("known_bug", exc="ValueError", pattern=r"known bug \d+", stage="buggy")]


class _T:
    """A tiny tensor stand-in (shape, float ops) so the fixture needs no torch."""

    def __init__(self, v):
        self.v, self.shape = list(v), (len(v),)

    def detach(self):
        return self

    float = cpu = detach


def _buggy(s):
    raise ValueError("known bug 42 happened")


def _never(s):
    s.require("no_such_package_xyz")


def main(r):
    r.stage("buggy", _buggy)
    r.stage("needs_pkg", _never)
    r.stage("after_buggy", lambda s: None, after=["buggy"])
    r.stage("workaround", lambda s: s.check(True, "ran"), role="workaround")


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
