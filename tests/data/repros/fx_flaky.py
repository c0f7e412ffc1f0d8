"""Fixture: fails with its signature on odd attempts, passes on even ones (a counter file);
needs torch."""
import os

import protocol

META = {"id": "fx_flaky", "title": "flaky", "upstream": [], "description": "", "requires": [],
        "expect": []}
SIGNATURES = [protocol.Signature("flaky_bug", exc="ValueError", pattern=r"flaky bug", stage="work")]


def _work(s):
    path = os.environ["FX_FLAKY_COUNTER"]
    n = int(open(path).read() or 0) + 1 if os.path.exists(path) else 1
    with open(path, "w") as f:
        f.write(str(n))
    if n % 2:
        raise ValueError("flaky bug on attempt %d" % n)
    import torch

    s.check_close(torch.ones(2), torch.ones(2), what="same")


def main(r):
    r.stage("work", _work)


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
