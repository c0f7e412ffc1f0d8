"""Fixture: passes only while fx_meet_b runs at the same time (the runner's --parallel)."""
import os
import time

import protocol

META = {"id": "fx_meet_a", "title": "meets fx_meet_b", "upstream": [], "description": "",
        "requires": [], "expect": []}
HERE, OTHER = "a", "b"


def _meet(s):
    folder = os.environ["REPROMATRIX_TEST_MEET"]  # set by the test, passed on by the runner
    open(os.path.join(folder, HERE), "w").close()
    deadline = time.time() + float(os.environ.get("REPROMATRIX_TEST_MEET_S", "60"))
    while not os.path.exists(os.path.join(folder, OTHER)) and time.time() < deadline:
        time.sleep(0.05)
    s.check(os.path.exists(os.path.join(folder, OTHER)), "fx_meet_%s ran beside this one" % OTHER)
    import torch  # a pass needs one output checked numerically

    s.check_close(torch.ones(2), torch.ones(2), what="the meeting's numeric check")


def main(r):
    r.stage("meet", _meet)


if __name__ == "__main__":
    protocol.main(META, [], main)
