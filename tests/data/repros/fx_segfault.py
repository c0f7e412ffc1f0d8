"""Fixture: dies by SIGSEGV in the middle of a stage (runner classification test)."""
import os
import signal

import protocol

META = {"id": "fx_segfault", "title": "segfaults", "upstream": [], "description": "", "requires": [],
        "expect": []}


def _boom(s):
    s.note("about_to", "segfault")
    os.kill(os.getpid(), signal.SIGSEGV)


def main(r):
    r.stage("before", lambda s: None, role="info")
    r.stage("explode", _boom)


if __name__ == "__main__":
    protocol.main(META, [], main)
